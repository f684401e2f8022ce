"""Metrics over the results file: ``python -m eval.report``.

What a report holds (the metrics' rows with their n and intervals, the baselines and ceilings
beside them, the paired comparisons, the warnings) is built once by :mod:`eval.report_model`,
which this Markdown renderer and the HTML one (:mod:`eval.html_report`, ``--html FILE``) both
read; html_report never imports this module.

The report runner that the benchmark reports share (:func:`metric_rows`,
:func:`report_folder`, :func:`write_report`, :func:`run_report`, :func:`report_command`) lives
in :mod:`eval.report_runner` and is re-exported here.

The generic report runs every metric file (eval/metrics/*.sql, see eval.sqlfile, plus the
folders of ``--metrics``) over the results DuckDB file, prints markdown tables (one per grain
and task: model x probe x split for the first metrics, one column per metric that applies,
its 95 % interval over instances and its spread across prompts beside it (eval.items), the
chance baseline ``chance_accuracy`` and the shortcut ceiling ``shortcut_ceiling`` (the
model-free rule chosen on dev or train, scored on the run's instances, docs/shortcuts.md) beside
choice and binary accuracy), the per-prompt values
(:func:`prompt_tables`) and the paired comparisons of runs on the same instances
(:func:`comparisons`), and writes ``report.md`` and one PNG bar chart per metric (chance and the
ceiling as two dashed ticks). A report without rows is an error (exit 2) that says what is
missing (:func:`empty_reason`).

>>> from probes.results import connect
>>> con = connect(":memory:")
>>> report = build_report(con)
>>> [r.metric.name for r in report.results], report.skipped[:1]
([], ['binary_accuracy (no binary runs)'])
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval import sqlfile
from eval.calibration_plot import reliability_plot
from eval.headlines import beside_metrics, headline_metrics
from eval.html_report import write_report_html
from eval.plots import bar_chart
from eval.report_format import (
    CALIBRATION_NOTE,
    NOTES,
    PAIRED_NOTE,
    PAIRED_POINTS_HEAD,
    _fmt,
    _fmt_ci,
    _fmt_spread,
    calibration_table,
    comparison_table,
    paired_points,
    shift_section,
)
from eval.report_model import (
    BASELINE_OF,
    CALIBRATION_METRICS,
    CEILING_OF,
    CI_IN_OWN_TABLE,
    CONSISTENCY_HEAD,
    MetricResult,
    Report,
    ambiguous,
    build_report,
    calibration_rows,
    comparisons,
    consistency_rows,
    find,
    interval,
    key_columns,
    overall_rows,
)
from eval.report_runner import (
    Render,
    Rendered,
    Rows,
    metric_rows,
    report_command,
    report_folder,
    run_report,
    write_report,
)
from eval.sqlfile import MetricError, default_metric_dir, discover_metrics
from kg import config, options
from probes.results import ProbeError, connect

__all__ = ["PAIRED_NOTE", "PAIRED_POINTS_HEAD", "Render", "Rendered", "Report",
           "Rows", "build_report", "comparison_table", "metric_rows", "paired_points",
           "report_command", "report_folder", "run_report", "write_report"]



def _groups(report: Report) -> dict[tuple[tuple[str, ...], str | None],
                                    list[tuple[MetricResult, list[dict[str, Any]]]]]:
    """The report's rows by (grain, task of the row's run): one table each, so a table shows
    only the metrics that apply to its probes (relatum, choice and binary probes apart)."""
    groups: dict[tuple[tuple[str, ...], str | None],
                 list[tuple[MetricResult, list[dict[str, Any]]]]] = {}
    for r in report.results:
        if r.metric.name in CALIBRATION_METRICS:
            continue  # a table of their own (calibration_rows)
        by_task: dict[str | None, list[dict[str, Any]]] = {}
        for row in r.rows:
            by_task.setdefault(row.get("task"), []).append(row)
        for task, rows in by_task.items():
            groups.setdefault((tuple(r.metric.grain), task), []).append((r, rows))
    return groups


def _row_key(row: dict[str, Any], keys: list[str]) -> tuple[Any, ...]:
    row = {**row, "run": row.get("run", str(row.get("run_id", ""))[:8])}
    return tuple(row.get(c) for c in keys)


def _sort(keys: Any) -> list[Any]:
    return sorted(keys, key=lambda k: tuple("" if v is None else str(v) for v in k))


def tables(report: Report) -> list[tuple[list[str], str]]:
    """One markdown table per grain and task: (metric names, table text). Only metrics with
    rows in the table are columns; a metric with intervals gets a ``95% CI`` column right
    after its own, and one with several prompts a ``prompts`` column (the spread across
    prompts: min–max and sd; the values are in :func:`prompt_tables`)."""
    out = []
    for (grain, _), results in _groups(report).items():
        keys = key_columns(list(grain))
        if ambiguous([r for r, _ in results], keys):
            keys = [*keys, "run"]
        cells: dict[tuple, dict[str, Any]] = {}
        columns: list[str] = []
        for r, rows in results:
            name = r.metric.name
            with_ci = name not in CI_IN_OWN_TABLE and any(interval(name, row) is not None
                                                         for row in rows)
            with_spread = any((row.get("n_prompts") or 0) > 1 for row in rows)
            columns += [name, *([f"{name} 95% CI"] if with_ci else []),
                        *([f"{name} prompts"] if with_spread else [])]
            for row in rows:
                cell = cells.setdefault(_row_key(row, keys), {})
                cell[name] = _fmt(row["value"])
                cell[f"{name} 95% CI"] = _fmt_ci(interval(name, row))
                cell[f"{name} prompts"] = _fmt_spread(row)
                if row.get("n") is not None:
                    cell["n"] = max(cell.get("n", 0), row["n"])
        head = [*keys, "n", *columns]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join("---" if c in keys else "---:" for c in head) + "|"]
        for k in _sort(cells):
            cell = cells[k]
            lines.append("| " + " | ".join([*(_fmt(v) for v in k), _fmt(cell.get("n")),
                                            *(cell.get(c, "–") for c in columns)]) + " |")
        out.append(([r.metric.name for r, _ in results], "\n".join(lines)))
    return out


def _template(report: Report, row: dict[str, Any], prompt_id: int) -> str:
    templates = report.prompts.get(str(row.get("run_id")), [])
    return templates[prompt_id] if 0 <= prompt_id < len(templates) else "–"


def prompt_tables(report: Report) -> list[str]:
    """Per grain and task, the metrics with items per prompt: a row per (model, probe, split,
    prompt) with the prompt's template (from the run's config), its n (instances) and each
    metric's value under that prompt alone; the mean over prompts is the main table's."""
    out = []
    for (grain, _), results in _groups(report).items():
        results = [(r, rows) for r, rows in results if any(row.get("per_prompt")
                                                          for row in rows)]
        if not results:
            continue
        keys = key_columns(list(grain))
        if ambiguous([r for r, _ in results], keys):
            keys = [*keys, "run"]
        cells: dict[tuple, dict[str, Any]] = {}
        for r, rows in results:
            for row in rows:
                for p in row.get("per_prompt") or []:
                    k = (*_row_key(row, keys), p["prompt_id"])
                    cell = cells.setdefault(k, {"template": _template(report, row,
                                                                      p["prompt_id"])})
                    cell[r.metric.name] = _fmt(p["value"])
                    cell["n"] = max(cell.get("n", 0), p["n"])
        names = [r.metric.name for r, _ in results]
        head = [*keys, "prompt", "template", "n", *names]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join("---" if c in (*keys, "template") else "---:"
                                for c in head) + "|"]
        for k in _sort(cells):
            cell = cells[k]
            lines.append("| " + " | ".join([*(_fmt(v) for v in k), _fmt(cell["template"]),
                                            _fmt(cell.get("n")),
                                            *(cell.get(c, "–") for c in names)]) + " |")
        out.append("\n".join(lines))
    return out



def plots(report: Report, out: Path) -> list[Path]:
    """One bar chart per metric (x: probe and the other grain columns, bars: models, named in
    the legend). The charts show the same rows as the tables: when a model has several runs of
    one probe (a full and a ``--limit`` run), each is a bar of its own, labelled by run; the
    95 % interval is an error bar and the chance baseline a black tick over each group whose
    runs share one (runs over different instances can differ: then only the table shows it)."""
    paths = []
    for r in report.results:
        if not r.metric.plot or not r.rows:
            continue
        keys = [c for c in key_columns(r.metric.grain) if c != "model"]
        by_run = ambiguous([r], key_columns(r.metric.grain))

        def series(row: dict[str, Any], r: MetricResult = r, by_run: bool = by_run) -> str:
            return (str(row.get("model", r.metric.name))
                    + (f" [{row.get('run')}]" if by_run and row.get("run") else ""))

        def group(row: dict[str, Any], keys: list[str] = keys) -> str:
            return "/".join(str(row.get(c)) for c in keys)

        points = sorted(((series(row), group(row), None if row["value"] is None
                          else float(row["value"])) for row in r.rows),
                        key=lambda p: (p[1], p[0]))  # the table's order: groups, then models
        errors = {(series(row), group(row)): ci for row in r.rows
                  if (ci := interval(r.metric.name, row)) is not None}
        base = find(report, BASELINE_OF.get(r.metric.name, ""))
        ceiling = find(report, CEILING_OF.get(r.metric.name, ""))
        paths.append(bar_chart(points, r.metric.name, out / f"{r.metric.name}.png",
                               ylabel=r.metric.name, errors=errors,
                               baselines=_ticks(base, group),
                               baseline_label=base.metric.name if base else "baseline",
                               ceilings=_ticks(ceiling, group)))
    if report.reliability:
        by_run = len({(r["model"], r["probe"], r["split"], r["bin"]) for r in report.reliability}
                     ) < len(report.reliability)
        paths.append(reliability_plot(report.reliability, out / "reliability_diagram.png",
                                      lambda row: str(row["model"]) + (f" [{row['run']}]"
                                                                       if by_run else "")))
    return paths




def _ticks(base: MetricResult | None, group: Callable[[dict[str, Any]], str]
           ) -> dict[str, float]:
    """One tick per group, where its runs share one value of ``base`` (else the table tells
    them apart)."""
    per_group: dict[str, set[float]] = {}
    for row in overall_rows(base):
        if row["value"] is not None:
            per_group.setdefault(group(row), set()).add(round(float(row["value"]), 9))
    return {g: next(iter(v)) for g, v in per_group.items() if len(v) == 1}


HEADLINE_NOTE = ("Each benchmark's headline rows (eval/headlines.py): its accuracy with n "
                 "(instances) and the 95 % interval over instances, beside it chance and "
                 "the shortcut ceiling (the model-free figures named in the last column: "
                 "BEAR's chance is the mean of 1 / answer-space size over the probe's "
                 "instances, lm-pub-quiz's random baseline, and its ceiling the shortcut "
                 "rule chosen by 2-fold cross-fitting over relations; OntoLAMA's chance is "
                 "the majority class, its ceiling the rule fitted on train, chosen on dev).")


def headline_table(report: Report) -> str:
    """The headline rows (eval.report_model.headline_rows) as one markdown table; "" without
    any."""
    if not report.headlines:
        return ""
    by_run = len({(h.model, h.probe, h.split, h.measure) for h in report.headlines}
                 ) < len(report.headlines)
    head = ["benchmark", "measure", "model", *(["run"] if by_run else []), "probe", "split",
            "value", "n", "95% CI", "chance", "shortcut ceiling", "chance, ceiling"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---:" if c in ("value", "n", "95% CI", "chance",
                                            "shortcut ceiling") else "---"
                            for c in head) + "|"]
    for h in report.headlines:
        lines.append("| " + " | ".join([
            h.benchmark, _fmt(h.measure), _fmt(h.model), *([_fmt(h.run)] if by_run else []),
            _fmt(h.probe), _fmt(h.split), _fmt(h.value), _fmt(h.n), _fmt_ci(h.ci),
            _fmt(h.chance), _fmt(h.ceiling), f"{h.chance_metric}, {h.ceiling_metric}"]) + " |")
    return "\n".join(lines)


CONSISTENCY_NOTE = ("prompt_consistency: per instance the share of its prompt pairs that "
                    "give it the same answer, averaged over instances; n: the instances with "
                    "two or more prompts, pairs: their prompt pairs; 95% CI over instances "
                    "(the pairs of one instance are not independent): Wilson where every "
                    "instance's share is 0 or 1, else the cluster bootstrap over instances.")


def consistency_table(report: Report) -> str:
    """prompt_consistency's n, pairs, value and interval (eval.report_model.consistency_rows)
    as a markdown table; "" without rows."""
    rows = consistency_rows(report)
    if not rows:
        return ""
    lines = ["| " + " | ".join(CONSISTENCY_HEAD) + " |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(report: Report, images: list[Path], results_path: str) -> str:
    """The report.md text: tables, metric definitions, plots."""
    parts = ["# kgprobe report", "",
             f"Results file: `{results_path}`; generated "
             f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    parts += [f"**Warning:** {w}." for w in report.warnings] + [""] * bool(report.warnings)
    if not report.results:
        parts += ["No metric has results yet: score probes with `python -m probes.engine.run` "
                  "first.",
                  ""]
    if report.results:
        parts += [NOTES, ""]
    if report.headlines:
        parts += ["## Headlines", "", HEADLINE_NOTE, "", headline_table(report), ""]
    for _, text in tables(report):
        parts += [text, ""]
    parts += shift_section(report.results)
    consistency = consistency_table(report)
    if consistency:
        parts += ["## Prompt consistency", "", CONSISTENCY_NOTE, "", consistency, ""]
    prompts = prompt_tables(report)
    if prompts:
        parts += ["## Per prompt", "", "Each metric under each prompt alone (n: instances); "
                  "the tables above give their mean and spread.", ""]
        for text in prompts:
            parts += [text, ""]
    pairs = comparisons(report)
    if pairs:
        parts += ["## Paired comparisons", "", PAIRED_NOTE, "", comparison_table(pairs), ""]
    calibration = calibration_rows(report)
    if calibration:
        parts += ["## Calibration", "", CALIBRATION_NOTE, "", calibration_table(calibration),
                  ""]
    if report.results:
        parts += ["## Metrics", ""]
        parts += [f"- **{r.metric.name}** ({', '.join(r.metric.tasks)}; per "
                  f"{', '.join(r.metric.grain)}): {r.metric.description}"
                  for r in report.results]
        parts.append("")
    if report.skipped:
        parts += [f"Skipped: {', '.join(report.skipped)}.", ""]
    for p in images:
        parts += [f"![{p.stem}]({p.name})", ""]
    return "\n".join(parts)


def empty_reason(report: Report, probes: Sequence[str] | None, models: Sequence[str] | None,
                 results_path: str) -> str:
    """Why a report has no rows, and what to run: the filters matched nothing, or no run of a
    task some metric applies to has finished.

    >>> empty_reason(Report(), ["x/*"], None, "r.duckdb")[:40]
    'no metric rows for --probe x/* in r.duck'
    """
    chosen = " ".join([*(f"--probe {p}" for p in probes or []),
                       *(f"--model {m}" for m in models or [])])
    if chosen:
        return (f"no metric rows for {chosen} in {results_path}: check the names with "
                "`python -m probes.engine.run --list probes` and `SELECT DISTINCT model, probe, "
                "status FROM runs`, or score them with `python -m probes.engine.run`")
    return (f"no metric rows in {results_path}: no finished run of a task the metrics apply "
            "to (" + (", ".join(report.skipped) or "no metrics") + "); score probes with "
            "`python -m probes.engine.run -m MODEL -p PROBE` first")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe report`` / ``python -m eval.report``."""
    parser.description = ("Run the SQL metric files over the results DuckDB file, print "
                          "markdown tables and write report.md and PNG plots into a folder of "
                          "their own.")
    options.add_results(parser)
    parser.add_argument("--metrics", type=Path, action="append", metavar="DIR",
                        help="folder of own metric files (*.sql), run besides the built-in "
                        "eval/metrics; repeatable")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for report.md and the plots (default: a new folder per "
                        "call, $KGPROBE_HOME/reports/report-<time>-<arguments hash>); PNGs "
                        "that an earlier report wrote there and this one does not are removed")
    parser.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                        help="only these probes (name or glob pattern); repeatable")
    parser.add_argument("--model", "-m", action="append", metavar="NAME",
                        help="only these models (name or glob pattern); repeatable")
    parser.add_argument("--no-plots", action="store_true", help="write no PNG files")
    parser.add_argument("--metric-timeout", type=float, default=sqlfile.METRIC_TIMEOUT_S,
                        metavar="SECONDS", help="the most seconds one metric may run "
                        f"(default: {sqlfile.METRIC_TIMEOUT_S:g}; 0: no limit)")
    parser.add_argument("--html", type=Path, default=None, metavar="FILE",
                        help="also write one self-contained HTML file (opens offline from "
                        "disk): the leaderboard, per probe the per-prompt values and paired "
                        "comparisons, the charts, and an instance browser with each "
                        "prediction's prompt, candidates, gold, answer and provenance")
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.report", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``kgprobe report``: the tables printed, report.md and the plots written (a MetricError
    or ProbeError: one error line, status 2, from the command's runner)."""
    results_path = str(args.results or config.results_path())
    out = report_folder(args.out, "report", argv)
    if args.metric_timeout < 0:
        raise MetricError(f"--metric-timeout must be a positive number (got "
                          f"{args.metric_timeout:g})")
    sqlfile.METRIC_TIMEOUT_S = args.metric_timeout or None
    folders = dict.fromkeys(d.resolve() for d in [default_metric_dir(), *(args.metrics or [])])
    metrics = discover_metrics(list(folders))  # the built-in folder given again: once
    con = connect(results_path, read_only=True)
    try:
        names = {m.name for m in metrics}
        metrics += [m for m in headline_metrics(con) if m.name not in names]
        names = {m.name for m in metrics}
        report = build_report(con, metrics, args.probe, args.model, beside=[
            m for m in beside_metrics(con) if m.name not in names])
    finally:
        con.close()
    if not any(r.rows for r in report.results):
        return options.error_line(empty_reason(report, args.probe, args.model, results_path))
    out.mkdir(parents=True, exist_ok=True)
    images = [] if args.no_plots else plots(report, out)
    path = write_report(out, "report.md", Rendered(
        render_markdown(report, images, results_path), images))
    if args.html is not None:
        try:
            print(f"wrote {write_report_html(args.html, report, images, results_path, args)}")
        except (MetricError, ProbeError, OSError) as e:
            return options.error_line(f"the HTML report {args.html} could not be written: {e}")
    if report.headlines:
        print(headline_table(report) + "\n")
    for _, table in tables(report):
        print(table + "\n")
    if report.warnings:
        print("\n".join(f"warning: {w}" for w in report.warnings), file=sys.stderr)
    for line in shift_section(report.results)[4:5]:  # the table
        print(line + "\n")
    if consistency_rows(report):
        print(consistency_table(report) + "\n")
    for table in prompt_tables(report):
        print(table + "\n")
    pairs = comparisons(report)
    if pairs:
        print(comparison_table(pairs) + "\n")
    if calibration_rows(report):
        print(calibration_table(calibration_rows(report)) + "\n")
    if report.skipped:
        print(f"skipped: {', '.join(report.skipped)}")
    print(f"wrote {path}" + (f" and {len(images)} plot(s)" if images else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
