"""A one-page knowledge profile of one model across the three benchmarks:
``python -m eval.profile --model smollm2-135m``.

SQL over the results file only (the metric files of ``eval/profile_sql``, run by the report
runner of :mod:`eval.report`): per sampled item (a semrel word, an OntoLAMA instance, a COPEN
instance) its score, then per key measure the mean with a 95 % bootstrap interval over the items
(:func:`eval.stats.bootstrap_ci`), beside chance, the shortcut ceiling (the best model-free rule
fitted on train, docs/shortcuts.md; OntoLAMA and COPEN, where the probe has a train split) and,
for the semantic relations, the human ceiling on the same words. Writes ``profile.md`` and
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import profile_chart
from eval.report import Render, Rendered, Rows, report_command
from eval.stats import bootstrap_ci
from kg import config

PROFILE_DIR = Path(__file__).with_name("profile_sql")
DEFAULT_MODEL = "smollm2-135m"
SEMREL_RELATIONS = ("HYP", "HPO", "HOL", "MER", "ANT", "SYN")
COPEN_TASKS = (("copen/csj", "CSJ: most similar entity"), ("copen/cpj", "CPJ: property true?"),
               ("copen/cic", "CiC: concept in context"))


@dataclass(frozen=True)
class ProfileLine:
    """One key measure of the profile: the model's mean over ``n`` items with its 95 %
    interval, chance on the same items, and the human value (with its interval) where there
    is one."""

    benchmark: str
    measure: str
    n: int
    value: float | None
    ci: tuple[float, float] | None
    chance: float | None
    human: float | None = None
    human_ci: tuple[float, float] | None = None
    ceiling: float | None = None


Items = list[tuple[str, str, str]]
"""(probe, split, instance_id) of a profile line's items."""


def shortcut_ceiling(rows: list[dict[str, Any]], items: Items) -> float | None:
    """The best rule's mean over ``items`` (rows of ``profile_shortcuts``: one per item and
    rule); None when no rule covers every item (no train split).

    >>> r = [{"probe": "p", "split": "test", "instance_id": i, "rule": rule, "value": v}
    ...      for i, rule, v in (("a", "x", 1.0), ("b", "x", 0.0), ("a", "y", 1.0),
    ...                         ("b", "y", 1.0), ("a", "z", 1.0))]
    >>> shortcut_ceiling(r, [("p", "test", "a"), ("p", "test", "b")])
    1.0
    >>> shortcut_ceiling(r, [("p", "test", "c")]) is None
    True
    """
    wanted = set(items)
    by_rule: dict[str, list[float]] = {}
    for r in rows:
        if (r["probe"], r["split"], r["instance_id"]) in wanted:
            by_rule.setdefault(r["rule"], []).append(float(r["value"]))
    means = [sum(v) / len(v) for v in by_rule.values() if len(v) == len(wanted)]
    return max(means) if means and wanted else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _line(benchmark: str, measure: str, values: Sequence[float], chance: float | None,
          human: Sequence[float] | None = None, ceiling: float | None = None) -> ProfileLine:
    return ProfileLine(benchmark, measure, len(values), _mean(values), bootstrap_ci(values),
                       chance, _mean(human) if human else None,
                       bootstrap_ci(human) if human else None, ceiling)


def _semrel(rows: list[dict[str, Any]], model: str) -> list[ProfileLine]:
    mine = {(r["relation"], r["word"]): float(r["value"]) for r in rows
            if r["model"] == model and not r["is_human"]}
    human = {(r["relation"], r["word"]): float(r["value"]) for r in rows if r["is_human"]}
    out = []
    for rel in (*SEMREL_RELATIONS, None):
        keys = [k for k in mine if rel is None or k[0] == rel]
        if not keys:
            continue
        both = [k for k in keys if k in human]
        out.append(_line("semrel", f"{rel or 'all six'}: soundness S (top-1 answer right)",
                         [mine[k] for k in keys], 0.0, [human[k] for k in both] or None))
    return out


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


def profile_lines(rows: Rows, model: str) -> list[ProfileLine]:
    """The profile's measures for ``model`` from the rows of the profile metrics (a benchmark
    without rows for the model has no line)."""
    return (_semrel(rows.get("profile_semrel", []), model)
            + _ontolama(rows.get("profile_ontolama", []), model,
                        rows.get("profile_shortcuts", []))
            + _copen(rows.get("profile_copen", []), model, rows.get("profile_shortcuts", [])))


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


#: Fewer items than this: the interval is marked (a bootstrap over a handful of items
#: understates the uncertainty; four right answers out of four give 1.000-1.000).
FEW_ITEMS = 10


def profile_table(lines: Sequence[ProfileLine], model: str) -> str:
    """The profile as one markdown table; intervals over fewer than :data:`FEW_ITEMS` items
    are marked with a dagger."""
    out = [f"| benchmark | measure | n | {model} | 95% CI | chance | human (95% CI) | "
           "shortcut ceiling |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for p in lines:
        human = "–" if p.human is None else f"{p.human:.3f} ({_ci(p.human_ci)})"
        few = " †" if p.n < FEW_ITEMS else ""
        out.append(f"| {p.benchmark} | {p.measure} | {p.n:,} | {_num(p.value)} | {_ci(p.ci)}{few} "
                   f"| {_num(p.chance)} | {human} | {_num(p.ceiling)} |")
    return "\n".join(out)


NOTES = ("n: items (semrel: sampled words; OntoLAMA, COPEN: instances). 95% CI: percentile "
         "bootstrap over those items, 1,000 seeded resamples. chance: semrel ≈ 0 (a top-1 "
         "word drawn from the whole vocabulary), OntoLAMA the majority class of the sampled "
         "instances, COPEN a uniform pick among each instance's candidates. human: Cao et al.'s "
         "annotators on the same words (pooled answers ranked by frequency). †: fewer than "
         f"{FEW_ITEMS} items, so the interval understates the uncertainty (COPEN here: the "
         "labelled train and dev instances of the released-format sample in the repository). "
         "shortcut ceiling: the best model-free rule fitted on the probe's train split "
         "(docs/shortcuts.md) on the same items; – where the probe has no train split.")


def render_profile(model: str, results: str) -> Render:
    """The render function of the runner for ``model``: the table, the notes and the chart."""

    def render(_con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
        lines = profile_lines(rows, model)
        parts = [f"# Knowledge profile: {model}", "", f"Results file: `{results}`.", ""]
        if not lines:
            parts.append(f"No profile rows for {model}: run the benchmarks' samples first "
                         "(scripts/main.sh shows how).")
            return Rendered("\n".join(parts))
        chart = profile_chart(
            [(f"{p.benchmark}: {p.measure}, n = {p.n}", p.value, p.ci, p.chance, p.human,
              p.human_ci) for p in lines],
            f"What {model} knows (95% intervals)", out / "profile.png", model=model,
            ceilings=[p.ceiling for p in lines])
        parts += [profile_table(lines, model), "", NOTES, "", f"![profile]({chart.name})"]
        return Rendered("\n".join(parts), [chart])

    return render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.profile", description=__doc__.split(
        "\n\n")[0].replace("\n", " "))
    parser.add_argument("--model", "-m", default=DEFAULT_MODEL,
                        help=f"the model profiled (default {DEFAULT_MODEL})")
    parser.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file (default: $KGPROBE_RESULTS or "
                        ".kgprobe/results.duckdb)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for profile.md and profile.png (default: a new folder "
                        "per call under $KGPROBE_HOME/reports)")
    args = parser.parse_args(argv)
    results = str(args.results or config.results_path())
    return report_command(Path(results), "profile", argv, args.out, [PROFILE_DIR],
                          render_profile(args.model, results), "profile.md")


if __name__ == "__main__":
    raise SystemExit(main())
