"""The BEAR report: ``python -m eval.bear_report`` (``kgprobe bear report``).

SQL over the results file only (the metric files of ``eval/bear``). Per finished run of a
``bear/*`` probe:

- lm-pub-quiz's figures: its aggregate (``bear_accuracy``: the relations' accuracies weighted by
  support, i.e. the share of all (instance, template) rows right), the same under its "mean"
  reduction, and its per-domain figures (``bear_accuracy_domain``: support split over a
  relation's domains);
- kgprobe's own beside them, over instances: the accuracy with its 95 % interval (the Wilson
  interval when every instance is right or wrong, one template; else the percentile bootstrap
  over instances), chance (the mean of 1 / answer-space size) and the shortcut ceiling (the
  model-free rule chosen on the other fold of relations, eval/bear/_shortcuts.sql), overall and per
  domain (an instance counts in each domain of its relation), and per relation with the spread
  over its templates;
- one PNG per run: per-domain accuracy with its interval, chance and ceiling.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import profile_chart
from eval.report import Rendered, Rows, report_command
from eval.sqlfile import MetricError
from eval.stats import bootstrap_ci, proportion_ci
from kg import options

METRIC_DIR = Path(__file__).with_name("bear")
CEILING_NOTE = ("shortcut ceiling: the rule of BEAR's shortcut panel (longest answer, shortest "
                "answer, the relation's most frequent gold answer fitted leave-one-out, the answer "
                "sharing most word tokens with the subject) chosen by 2-fold cross-fitting over "
                "relations: a relation is scored by the rule best on the other fold of "
                "relations (BEAR has no train split; no label of a relation or of its fold "
                "picks its rule).")


def interval(values: Sequence[float]) -> tuple[float, float] | None:
    """Wilson when every value is 0 or 1, else the percentile bootstrap over the values.

    >>> [round(v, 3) for v in interval([1.0, 0.0, 1.0, 1.0])]
    [0.301, 0.954]
    """
    if values and all(v in (0.0, 1.0) for v in values):
        return proportion_ci(int(sum(values)), len(values))
    return bootstrap_ci(values)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    """n, accuracy, interval, chance and ceiling over instance rows of ``bear_instances``."""
    values = [float(r["value"]) for r in items]
    ceil = [float(r["ceiling"]) for r in items if r["ceiling"] is not None]
    return {"n": len(items), "value": _mean(values), "ci": interval(values),
            "chance": _mean([float(r["chance"]) for r in items]),
            "ceiling": _mean(ceil) if len(ceil) == len(items) else None}


def domain_groups(items: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """("all relations", every item), then each domain with its items, alphabetically."""
    domains = sorted({d for r in items for d in r["domains"] or []})
    return [("all relations", items)] + [
        (d, [r for r in items if d in (r["domains"] or [])]) for d in domains]


def _by_run(rows: list[dict[str, Any]], run: str) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("run_id") == run]


def run_section(con: duckdb.DuckDBPyConnection, rows: Rows, run: str, out: Path
                ) -> tuple[list[str], Path]:
    """The markdown and the PNG of one run."""
    items = _by_run(rows.get("bear_instances", []), run)
    model, probe = con.execute("SELECT model, probe FROM runs WHERE run_id = ?",
                               [run]).fetchone() or ("?", "?")
    agg = _by_run(rows.get("bear_accuracy", []), run)
    mean = _by_run(rows.get("bear_accuracy_mean", []), run)
    lpq_domain = {r["domain"]: r["value"] for r in _by_run(rows.get("bear_accuracy_domain", []),
                                                           run)}
    parts = [f"## {model} on {probe} (run {run})", "",
             f"lm-pub-quiz's aggregate (support-weighted mean of the relation accuracies = share "
             f"of (instance, template) rows right): **{_f(agg[0]['value'] if agg else None)}** "
             f"over {agg[0]['rows'] if agg else 0:,} rows; under its \"mean\" reduction "
             f"(score / scored tokens): {_f(mean[0]['value'] if mean else None)}.", "",
             "| domain | n | accuracy | 95% CI | lm-pub-quiz's domain figure | chance | "
             "shortcut ceiling |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines = []
    for name, group in domain_groups(items):
        s = summary(group)
        lpq = _f(agg[0]["value"]) if name == "all relations" and agg else _f(lpq_domain.get(name))
        parts.append(f"| {name} | {s['n']:,} | {_f(s['value'])} | {_ci(s['ci'])} | {lpq} | "
                     f"{_f(s['chance'])} | {_f(s['ceiling'])} |")
        lines.append((name, s))
    spread = {r["relation"]: r for r in _by_run(rows.get("bear_template_spread", []), run)}
    rel_items: dict[str, list[dict[str, Any]]] = {}
    for r in items:
        rel_items.setdefault(str(r["relation"]), []).append(r)
    parts += ["", "| relation | domains | n | accuracy | 95% CI | templates (min–max) | "
              "chance | shortcut ceiling (rule) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for rel in sorted(rel_items, key=lambda c: (len(c), c)):
        group = rel_items[rel]
        s = summary(group)
        sp = spread.get(rel)
        tmpl = f"{sp['template_min']:.3f}–{sp['template_max']:.3f}" if sp else "–"
        rule = group[0].get("ceiling_rule") or "–"
        parts.append(f"| {rel} | {', '.join(group[0]['domains'] or [])} | {s['n']:,} | "
                     f"{_f(s['value'])} | {_ci(s['ci'])} | {tmpl} | {_f(s['chance'])} | "
                     f"{_f(s['ceiling'])} ({rule}) |")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"bear_{model}_{probe}_{run}")[:120]
    png = profile_chart(
        [(f"{name}, n = {s['n']}", s["value"], s["ci"], s["chance"], None, None)
         for name, s in lines],
        f"BEAR accuracy of {model} on {probe} (95% intervals over instances)",
        out / f"{slug}.png", model=str(model), ceilings=[s["ceiling"] for _, s in lines],
        caption="Per domain: the mean over the instances of the domain's relations (an "
                "instance counts in each domain of its relation). Ceiling: the model-free rule "
                "chosen on the other fold of relations.")
    parts += ["", f"![per-domain accuracy]({png.name})", ""]
    return parts, png


def render(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
    """The report's markdown and figures (one section per finished BEAR run)."""
    runs = sorted({str(r["run_id"]) for r in rows.get("bear_instances", [])})
    if not runs:
        raise MetricError("no finished BEAR run in this results file: export and score first, "
                          "e.g. `kgprobe export -p bear/bear-sample` and `kgprobe run -m "
                          "smollm2-135m -p bear/bear-sample` (needs `kgprobe build -s bear`)")
    parts = ["# BEAR report", "",
             "BEAR (Wiland, Ploner and Akbik 2024) ranks each instance's statements over its "
             "relation's whole answer space; definitions as lm-pub-quiz 0.3.3 (docs/bear.md). "
             "accuracy: the mean over instances of the share of its templates whose best-scored "
             "answer is gold (a tie to the earlier answer); 95% CI over instances (Wilson where "
             "every instance is right or wrong, else the percentile bootstrap); chance: the mean "
             "of 1 / answer-space size. " + CEILING_NOTE, ""]
    figures = []
    for run in runs:
        section, png = run_section(con, rows, run, out)
        parts += section
        figures.append(png)
    return Rendered("\n".join(parts), figures)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe bear report`` / ``python -m eval.bear_report``."""
    parser.description = __doc__.split("\n\n")[0].replace("\n", " ")
    options.add_results(parser)
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for bear.md and the PNGs (default: a new folder per call "
                        "under $KGPROBE_HOME/reports)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    return report_command(args.results, "bear", argv, args.out, [METRIC_DIR], render, "bear.md")


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.bear_report", add_arguments, argv)


if __name__ == "__main__":
    raise SystemExit(main())
