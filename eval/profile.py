"""A one-page knowledge profile of one model across the four benchmarks:
``python -m eval.profile --model smollm2-135m``.

SQL over the results file only (the metric files of ``eval/profile_sql``, run by the report
runner of :mod:`eval.report`): per sampled item (a semrel word, an OntoLAMA instance, a COPEN
or BEAR instance) its score, then per key measure the mean with a 95 % interval over the items (the
Wilson interval when every item is right or wrong, :func:`eval.stats.proportion_ci`; else the
bootstrap over the items, :func:`eval.stats.bootstrap_ci`), beside chance, the shortcut ceiling
(the best model-free rule fitted on train, docs/shortcuts.md; OntoLAMA and COPEN, where the
probe has a train split; for BEAR, which has none, the rule chosen on the other relations)
and, for the semantic relations, the human ceiling on the same words. A measure over fewer
than :data:`MIN_ITEMS` items is no figure: the chart draws it as a hatched band, not a bar,
and says why under the axes; the table marks it. Writes ``profile.md`` and
``profile.png`` into a folder of their own (see :func:`eval.report.report_folder`) and prints
the table.

>>> rows = {"profile_ontolama": [
...     {"model": "m", "probe": "ontolama/pizza-atomic", "instance_id": "a", "value": 1.0,
...      "gold": "1"},
...     {"model": "m", "probe": "ontolama/pizza-atomic", "instance_id": "b", "value": 0.5,
...      "gold": "0"}]}
>>> [(p.measure, p.value, p.chance) for p in profile_lines(rows, "m")]
[('pizza-atomic: accuracy, zero-shot', 0.75, 0.5)]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import profile_chart
from eval.report import Render, Rendered, Rows, report_command
from eval.sqlfile import MetricError, load_metric, run_metric
from eval.stats import bootstrap_ci, proportion_ci
from kg import config, options
from kg.benchmark import benchmarks
from kg.relations import RELATIONS, relation_probe

PROFILE_DIR = Path(__file__).with_name("profile_sql")
DEFAULT_MODEL = "smollm2-135m"
COPEN_TASKS = (("copen/csj", "CSJ: most similar entity"), ("copen/cpj", "CPJ: property true?"),
               ("copen/cic", "CiC: concept in context"))


@dataclass(frozen=True)
class ProfileLine:
    """One key measure of the profile: the model's mean over ``n`` items with its 95 %
    interval, chance on the same items, and the human value (with its interval) where there
    is one. ``ceiling``: the model-free rule chosen on the probe's dev split (or train) on the
    same items (the shortcut ceiling, :func:`shortcut_ceiling`), where the probe has a train
    split."""

    benchmark: str
    measure: str
    n: int
    value: float | None
    ci: tuple[float, float] | None
    chance: float | None
    human: float | None = None
    human_ci: tuple[float, float] | None = None
    ceiling: float | None = None
    #: the lines of one benchmark that share a ``group`` count their items once (the generic
    #: builder's measures of one probe, over the same facts)
    group: str | None = None

    @property
    def too_few(self) -> bool:
        """Fewer than :data:`MIN_ITEMS` items: not drawn as a bar."""
        return self.n < MIN_ITEMS


def _interval(values: Sequence[float]) -> tuple[float, float] | None:
    """Wilson for items that are each right or wrong (never zero-width), else the bootstrap.

    >>> [round(v, 3) for v in _interval([1.0, 1.0, 1.0, 1.0])]
    [0.51, 1.0]
    >>> _interval([0.5, 0.5])
    (0.5, 0.5)
    """
    if values and all(v in (0.0, 1.0) for v in values):
        return proportion_ci(int(sum(values)), len(values))
    return bootstrap_ci(values)


Items = list[tuple[str, str, str]]
"""(probe, split, instance_id) of a profile line's items."""


def shortcut_ceiling(rows: list[dict[str, Any]], items: Items) -> float | None:
    """The mean over ``items`` of the rule chosen for each item's probe (rows of
    ``profile_shortcuts``: one per item, of the rule chosen on the probe's dev split or
    train); None when an item has no row (its probe has no train split).

    >>> r = [{"probe": "p", "split": "test", "instance_id": i, "rule": rule, "value": v}
    ...      for i, rule, v in (("a", "x", 1.0), ("b", "x", 0.0))]
    >>> r.append({"probe": "q", "split": "test", "instance_id": "a", "rule": "y", "value": 1.0})
    >>> shortcut_ceiling(r, [("p", "test", "a"), ("p", "test", "b"), ("q", "test", "a")])
    0.6666666666666666
    >>> shortcut_ceiling(r, [("p", "test", "c")]) is None
    True
    """
    wanted = set(items)
    values = {(r["probe"], r["split"], r["instance_id"]): float(r["value"]) for r in rows
              if (r["probe"], r["split"], r["instance_id"]) in wanted}
    return sum(values.values()) / len(values) if wanted and len(values) == len(wanted) \
        else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _line(benchmark: str, measure: str, values: Sequence[float], chance: float | None,
          human: Sequence[float] | None = None, ceiling: float | None = None) -> ProfileLine:
    return ProfileLine(benchmark, measure, len(values), _mean(values), _interval(values),
                       chance, _mean(human) if human else None,
                       _interval(human) if human else None, ceiling)


def _semrel(rows: list[dict[str, Any]], model: str,
            constant: dict[str, float] | None = None) -> list[ProfileLine]:
    """The semrel lines; ``constant``: the leave-one-out constant-answer baseline's S by probe
    (``semrel/hyp``, ..., ``micro`` for all six; :func:`semrel_constant_answer`), each
    relation's ceiling."""
    mine = {(r["relation"], r["word"]): float(r["value"]) for r in rows
            if r["model"] == model and not r["is_human"]}
    human = {(r["relation"], r["word"]): float(r["value"]) for r in rows if r["is_human"]}
    constant = constant or {}
    out = []
    for rel in (*RELATIONS, None):
        keys = [k for k in mine if rel is None or k[0] == rel]
        if not keys:
            continue
        both = [k for k in keys if k in human]
        out.append(_line("semrel", f"{rel or 'all six'}: soundness S (top-1 answer right)",
                         [mine[k] for k in keys], 0.0, [human[k] for k in both] or None,
                         constant.get(relation_probe(rel) if rel else "micro")))
    return out


SEMREL_CONSTANT = Path(__file__).with_name("semrel") / "semrel_constant_answer.sql"


def semrel_constant_answer(con: duckdb.DuckDBPyConnection) -> dict[str, float]:
    """The leave-one-out constant-answer baseline's soundness S per relation probe and
    ``micro`` (eval/semrel/semrel_constant_answer.sql, docs/shortcuts.md): the semrel rows'
    ceiling. Empty when the file has no semrel instances."""
    cols, rows = run_metric(con, load_metric(SEMREL_CONSTANT))
    at, value = cols.index("probe"), cols.index("value")
    return {str(r[at]): float(r[value]) for r in rows if r[value] is not None}


def _ontolama(rows: list[dict[str, Any]], model: str,
              shortcuts: list[dict[str, Any]]) -> list[ProfileLine]:
    out = []
    for probe in sorted({r["probe"] for r in rows if r["model"] == model}):
        mine = [r for r in rows if r["model"] == model and r["probe"] == probe]
        golds = [str(r["gold"]) for r in mine]
        majority = max(golds.count(g) for g in set(golds)) / len(golds)
        items = [(probe, "test", r["instance_id"]) for r in mine]
        out.append(_line("OntoLAMA", f"{probe.removeprefix('ontolama/')}: accuracy, zero-shot",
                         [float(r["value"]) for r in mine], majority,
                         ceiling=shortcut_ceiling(shortcuts, items)))
    return out


def _copen(rows: list[dict[str, Any]], model: str,
           shortcuts: list[dict[str, Any]]) -> list[ProfileLine]:
    out = []
    for probe, measure in COPEN_TASKS:
        mine = [r for r in rows if r["model"] == model and r["probe"] == probe]
        if mine:
            items = [(probe, r["split"], r["instance_id"]) for r in mine]
            out.append(_line("COPEN", f"{measure} (accuracy)", [float(r["value"]) for r in mine],
                             _mean([float(r["chance"]) for r in mine]),
                             ceiling=shortcut_ceiling(shortcuts, items)))
    return out


def _bear(rows: list[dict[str, Any]], model: str) -> list[ProfileLine]:
    """BEAR: the model's BEAR probe with the most scored instances (the whole of BEAR over the
    main job's sample when both are there), all relations and then each domain (an instance
    counts in every domain of its relation); chance and ceiling over the same instances."""
    mine = [r for r in rows if r["model"] == model]
    if not mine:
        return []
    sizes: dict[str, int] = {}
    for r in mine:
        sizes[r["probe"]] = sizes.get(r["probe"], 0) + 1
    probe = max(sorted(sizes), key=lambda p: sizes[p])
    mine = [r for r in mine if r["probe"] == probe]
    name = probe.removeprefix("bear/")
    groups: list[tuple[str, list[dict[str, Any]]]] = [("all relations", mine)]
    for domain in sorted({d for r in mine for d in r["domains"] or []}):
        groups.append((domain, [r for r in mine if domain in (r["domains"] or [])]))
    out = []
    for measure, items in groups:
        ceiling = [float(r["ceiling"]) for r in items if r["ceiling"] is not None]
        values = [float(r["value"]) for r in items]
        out.append(_line("BEAR", f"{measure}: accuracy ({name})", values,
                         _mean([float(r["chance"]) for r in items]),
                         ceiling=_mean(ceiling) if len(ceiling) == len(items) else None))
    return out


def _generate(rows: list[dict[str, Any]], model: str) -> list[ProfileLine]:
    """Generation: per generate probe of the model, two lines, the mean over instances of the
    share of prompts whose answer is an exact match of an accepted form, and of the share
    whose answer contains one (the "said" rule of format_agreement: a completion such as "a
    bird that lives in trees" says "bird" without matching it), with the share not attempted
    in the names; no chance (an open answer has no uniform guess).

    >>> rows = [{"model": "m", "probe": "g/capitals", "value": v, "contains": c,
    ...          "not_attempted": na} for v, c, na in ((1.0, 1.0, 0.0), (0.0, 0.5, 1.0))]
    >>> [(p.measure, p.value) for p in _generate(rows, "m")]  # doctest: +NORMALIZE_WHITESPACE
    [('g/capitals: exact match, generated (50% not attempted)', 0.5),
     ('g/capitals: answer contains an accepted form, generated', 0.75)]
    """
    out = []
    for probe in sorted({r["probe"] for r in rows if r["model"] == model}):
        mine = [r for r in rows if r["model"] == model and r["probe"] == probe]
        skipped = _mean([float(r["not_attempted"]) for r in mine]) or 0.0
        out.append(_line("generation", f"{probe}: exact match, generated ({skipped:.0%} not "
                         "attempted)", [float(r["value"]) for r in mine], None))
        out.append(_line("generation", f"{probe}: answer contains an accepted form, generated",
                         [float(r["contains"]) for r in mine], None))
    return out


def _generic(rows: list[dict[str, Any]], model: str, label: str) -> list[ProfileLine]:
    """The lines of a profile metric of the generic shape: one row per (model, probe,
    measure, item) with ``value``, ``chance`` and ``ceiling`` (either may be null); one line
    per probe and measure, in the rows' order, named ``measure (probe's name)``."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["model"] == model:
            groups.setdefault((str(r["probe"]), str(r["measure"])), []).append(r)
    out = []
    for (probe, measure), items in groups.items():
        chance = [float(r["chance"]) for r in items if r.get("chance") is not None]
        ceiling = [float(r["ceiling"]) for r in items if r.get("ceiling") is not None]
        line = _line(label, f"{measure} ({probe.split('/', 1)[-1]})",
                     [float(r["value"]) for r in items],
                     _mean(chance) if len(chance) == len(items) else None,
                     ceiling=_mean(ceiling) if len(ceiling) == len(items) else None)
        out.append(replace(line, group=probe))
    return out


#: The profile metrics whose rows need a line builder of their own, by metric name; the
#: rows of any other profile metric a benchmark record names are of the generic shape
#: (:func:`_generic`). Which metrics make a benchmark's lines, in which order, and its label:
#: the records (:mod:`kg.benchmark`, ``[profile]``).
BUILDERS: dict[str, Callable[[Rows, str, dict[str, float]], list[ProfileLine]]] = {
    "profile_semrel": lambda rows, model, constant: _semrel(
        rows.get("profile_semrel", []), model, constant),
    "profile_ontolama": lambda rows, model, constant: _ontolama(
        rows.get("profile_ontolama", []), model, rows.get("profile_shortcuts", [])),
    "profile_copen": lambda rows, model, constant: _copen(
        rows.get("profile_copen", []), model, rows.get("profile_shortcuts", [])),
    "profile_bear": lambda rows, model, constant: _bear(rows.get("profile_bear", []), model),
}


def profile_lines(rows: Rows, model: str, constant: dict[str, float] | None = None
                  ) -> list[ProfileLine]:
    """The profile's measures for ``model`` from the rows of the profile metrics, benchmark by
    benchmark in the records' order (a benchmark without rows for the model has no line);
    ``constant``: the semrel rows' ceilings (:func:`semrel_constant_answer`). A record's first
    ``rows`` metric makes its lines; the others are what that builder reads beside it."""
    out: list[ProfileLine] = []
    for b in benchmarks():
        if b.profile is None:
            continue
        first = b.profile.rows[0]
        if first in BUILDERS:
            out += BUILDERS[first](rows, model, constant or {})
        else:
            out += _generic(rows.get(first, []), model, b.profile.label)
    # generation is a format across benchmarks, not one: its lines come last
    # generation and the layer probes are views across benchmarks, not benchmarks: they come last
    return (out + _generate(rows.get("profile_generate", []), model)
            + _layers(rows.get("profile_layers", []), model))


def _layers(rows: list[dict[str, Any]], model: str) -> list[ProfileLine]:
    """Linear probes per layer (eval.layers): the dev-chosen layer's test accuracy, chance,
    the selectivity in the measure's name."""
    from eval.layers import profile_layer_lines

    return [_line("Layers", measure, values, chance)
            for _probe, measure, values, chance, _control in profile_layer_lines(rows, model)]


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


#: The fewest items a measure is drawn with: below it the chart draws a hatched band, not a
#: bar (four right answers out of four are no evidence of "CPJ 1.00"), and the table marks it.
MIN_ITEMS = 10
UNITS = {**{b.profile.label: b.profile.unit for b in benchmarks() if b.profile},
         "generation": "instances", "Layers": "statements"}


def per_benchmark(lines: Sequence[ProfileLine]) -> str:
    """The items per benchmark (the semrel ``all six`` line counts every word once).

    >>> per_benchmark([ProfileLine("COPEN", "a", 4, 1.0, None, 0.5),
    ...                ProfileLine("COPEN", "b", 5, 0.2, None, 0.5)])
    'n per benchmark: COPEN 9 instances'
    """
    counts: dict[str, int] = {}
    grouped: dict[tuple[str, str], int] = {}
    for p in lines:
        if p.group is not None:
            key = (p.benchmark, p.group)
            counts[p.benchmark] = counts.get(p.benchmark, 0) - grouped.get(key, 0) + max(
                grouped.get(key, 0), p.n)
            grouped[key] = max(grouped.get(key, 0), p.n)
        elif p.benchmark == "semrel":
            if p.measure.startswith("all six"):
                counts["semrel"] = p.n
        elif p.benchmark == "BEAR":
            if p.measure.startswith("all relations"):
                counts["BEAR"] = p.n
        else:
            counts[p.benchmark] = counts.get(p.benchmark, 0) + p.n
    return "n per benchmark: " + ", ".join(f"{b} {n:,} {UNITS.get(b, 'items')}"
                                          for b, n in counts.items())


def profile_table(lines: Sequence[ProfileLine], model: str) -> str:
    """The profile as one markdown table; measures over fewer than :data:`MIN_ITEMS` items
    are marked with a dagger (no bar in the chart)."""
    out = [f"| benchmark | measure | n | {model} | 95% CI | chance | human (95% CI) | "
           "shortcut ceiling |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for p in lines:
        human = "–" if p.human is None else f"{p.human:.3f} ({_ci(p.human_ci)})"
        few = " †" if p.too_few else ""
        out.append(f"| {p.benchmark} | {p.measure} | {p.n:,} | {_num(p.value)}{few} | "
                   f"{_ci(p.ci)} | {_num(p.chance)} | {human} | {_num(p.ceiling)} |")
    return "\n".join(out)


NOTES = ("n: items (semrel: sampled words; OntoLAMA, COPEN: instances). 95% CI: the Wilson "
         "interval where every item is right or wrong (COPEN), else the percentile bootstrap "
         "over the items, 1,000 seeded resamples (semrel: per-word soundness; OntoLAMA: the "
         "share of prompts right per instance). chance: semrel ≈ 0 (a top-1 "
         "word drawn from the whole vocabulary), OntoLAMA the majority class of the sampled "
         "instances, COPEN a uniform pick among each instance's candidates. human: Cao et al.'s "
         "annotators on the same words (pooled answers ranked by frequency). †: fewer than "
         f"{MIN_ITEMS} items: no figure, drawn as a hatched band instead of a bar in "
         "profile.png (COPEN from `scripts/profile.sh`: the labelled train and dev instances "
         "of the released-format sample in the repository, 4 to 5 per task; load the released "
         "COPEN files for a real COPEN row). shortcut ceiling: on the same items, the "
         "model-free rule fitted on the probe's train split (docs/shortcuts.md) that is most "
         "accurate on its dev split (on train where there is no dev), never chosen on these "
         "items' labels; – where the probe has no train split; for the semrel rows the "
         "leave-one-out constant-answer baseline's S (eval/semrel/semrel_constant_answer.sql) "
         "over the relation's words (all six: over every word), the chart's orange tick. "
         "BEAR (Wiland et al. 2024): the share of an instance's "
         "templates whose best-scored answer of the relation's whole answer space is gold "
         "(lm-pub-quiz's rule), per instance, over all relations and per domain (an instance "
         "counts in each domain of its relation; lm-pub-quiz's own domain figures weight "
         "relations differently: eval/bear/bear_accuracy_domain.sql); chance the mean of "
         "1 / answer-space size; its shortcut ceiling is the model-free rule chosen on "
         "the other fold of relations (2-fold cross-fitting: BEAR has no train split; "
         "eval/bear/_shortcuts.sql), "
         "not one fitted on train. The main job scores bear/bear-sample: one seeded instance "
         "per relation, template 0 only." + "".join(
             f" {b.profile.note}" for b in benchmarks() if b.profile and b.profile.note))


def caption(lines: Sequence[ProfileLine]) -> str:
    """The text under the chart: the minimum, the measures it hides, the items per benchmark."""
    few = [f"{p.benchmark} {p.measure.split(':')[0]} (n = {p.n})" for p in lines if p.too_few]
    parts = [per_benchmark(lines) + "."]
    if few:
        parts.append(f"Hatched, no bar: fewer than {MIN_ITEMS} items, too few for a figure: "
                     + ", ".join(few) + ".")
    return "\n".join(parts)


def chart_lines(lines: Sequence[ProfileLine]) -> list[tuple[str, ProfileLine]]:
    """The chart's rows with their labels: a benchmark's measures over too few items (fewer
    than :data:`MIN_ITEMS`) are one hatched row after the benchmark's drawn rows, which names
    them once (issue 46: 9 of 21 rows hatched, the BEAR sample's domains and COPEN's fixtures), not
    one row each.

    >>> few = [ProfileLine("BEAR", f"domain {d}: accuracy", 3, 0.5, None, 0.1) for d in "ab"]
    >>> big = ProfileLine("BEAR", "domain c: accuracy", 12, 0.5, None, 0.1)
    >>> [label for label, _ in chart_lines([ProfileLine("BEAR", "all: acc", 60, 0.4, None, 0.1),
    ...                                     few[0], big, few[1]])]  # doctest: +NORMALIZE_WHITESPACE
    ['BEAR: all: acc, n = 60', 'BEAR: domain c: accuracy, n = 12',
     'BEAR: 2 measures over too few items (domain a, domain b; n = 3)']
    """
    out: list[tuple[str, ProfileLine]] = []
    grouped: dict[str, list[ProfileLine]] = {}
    for i, p in enumerate(lines):
        if not p.too_few:
            out.append((f"{p.benchmark}: {p.measure}, n = {p.n}", p))
        else:
            grouped.setdefault(p.benchmark, []).append(p)
        last_of_block = i + 1 == len(lines) or lines[i + 1].benchmark != p.benchmark
        if last_of_block and grouped.get(p.benchmark) and not any(
                q is grouped[p.benchmark][0] for _, q in out):
            # after the benchmark's drawn rows, labelled below once all of its are known
            out.append(("", grouped[p.benchmark][0]))
    labelled = []
    for label, p in out:
        few = grouped.get(p.benchmark, []) if p.too_few else []
        if len(few) > 1:
            ns = sorted({q.n for q in few})
            n = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
            label = (f"{p.benchmark}: {len(few)} measures over too few items "
                     f"({', '.join(q.measure.split(':')[0] for q in few)}; n = {n})")
        elif few:
            label = f"{p.benchmark}: {p.measure}, n = {p.n}"
        labelled.append((label, p))
    return labelled


def render_profile(model: str, results: str, html: Path | None = None) -> Render:
    """The render function of the runner for ``model``: the table, the notes and the chart
    (and with ``html`` the offline HTML file: eval.html_report.write_profile_html)."""

    def render(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
        constant = (semrel_constant_answer(con) if con is not None and rows.get("profile_semrel")
                    else {})
        lines = profile_lines(rows, model, constant)
        parts = [f"# Knowledge profile: {model}", "", f"Results file: `{results}`.", ""]
        if not lines:
            others = sorted({str(r["model"]) for rs in rows.values() for r in rs
                             if r.get("model") and not r.get("is_human")})
            raise MetricError(
                f"no profile rows for {model} in {results}"
                + (f" (models with rows: {', '.join(others)}; choose one with --model)"
                   if others else "")
                + f": score the benchmarks' samples first with `scripts/profile.sh {model}` "
                "(it needs a built store, `python -m kg.build`, and the model's weights)")
        drawn = chart_lines(lines)
        chart = profile_chart(
            [(label, p.value, p.ci, p.chance, p.human, p.human_ci) for label, p in drawn],
            f"What {model} knows (95% intervals)", out / "profile.png", model=model,
            few=[i for i, (_, p) in enumerate(drawn) if p.too_few],
            few_label=f"n < {MIN_ITEMS}: too few items, not drawn", caption=caption(lines),
            ceilings=[p.ceiling for _, p in drawn],
            ceiling_label="model-free ceiling")
        parts += [profile_table(lines, model), "", per_benchmark(lines) + ".", "", NOTES, "",
                  f"![profile]({chart.name})"]
        if html is not None:
            from eval.html_report import write_profile_html
            parts += ["", f"HTML: {write_profile_html(html, con, lines, model, chart, results)}"]
        return Rendered("\n".join(parts), [chart])

    return render


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.profile", add_arguments, argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m eval.profile``."""
    parser.description = __doc__.split("\n\n")[0].replace("\n", " ")
    parser.add_argument("--model", "-m", default=DEFAULT_MODEL,
                        help=f"the model profiled (default {DEFAULT_MODEL})")
    options.add_results(parser)
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for profile.md and profile.png (default: a new folder "
                        "per call under $KGPROBE_HOME/reports)")
    parser.add_argument("--html", type=Path, default=None, metavar="FILE",
                        help="also write one self-contained HTML file: the profile's rows and "
                        "chart, and an instance browser over the model's predictions")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """The profile printed and written (an error: one line, status 2, from the runner)."""
    results = str(args.results or config.results_path())
    return report_command(Path(results), "profile", argv, args.out, [PROFILE_DIR],
                          render_profile(args.model, results, args.html), "profile.md")


if __name__ == "__main__":
    raise SystemExit(main())
