"""Metrics over the results file: ``python -m eval.report``.

Runs every metric file (eval/metrics/*.sql, see eval.sqlfile) over the results DuckDB file,
prints markdown tables (one per grain: model x probe x split for the first metrics, one column
per metric), and writes ``report.md`` and one PNG bar chart per metric into ``--out``.

>>> from probes.results import connect
>>> con = connect(":memory:")
>>> report = build_report(con)
>>> [r.metric.name for r in report.results], report.skipped[:1]
([], ['binary_accuracy (no binary runs)'])
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import bar_chart
from eval.sqlfile import MetricError, MetricFile, discover_metrics, run_metric
from kg import config
from probes.results import ProbeError, connect


@dataclass
class MetricResult:
    """One metric's rows, as dicts, with ``model`` added when the grain has ``run_id``
    (grains such as ``[model, probe]`` carry it themselves)."""

    metric: MetricFile
    rows: list[dict[str, Any]]


@dataclass
class Report:
    results: list[MetricResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _matches(value: Any, patterns: Sequence[str] | None) -> bool:
    return not patterns or any(fnmatch.fnmatch(str(value), p) for p in patterns)


def build_report(con: duckdb.DuckDBPyConnection, metrics: list[MetricFile] | None = None,
                 probes: Sequence[str] | None = None, models: Sequence[str] | None = None
                 ) -> Report:
    """Run the metrics, keep the rows of the chosen probes and models (glob patterns). A row's
    model is its run's (grain with ``run_id``) or its own ``model`` column; rows with neither
    are dropped when models are chosen."""
    metrics = discover_metrics() if metrics is None else metrics
    try:
        runs = {r[0]: r[1:] for r in con.execute(
            "SELECT run_id, model, task FROM runs").fetchall()}
        labels = {r[0]: run_label(r[0], r[1], r[2]) for r in con.execute(
            "SELECT run_id, config::VARCHAR, finished_at FROM runs").fetchall()}
    except duckdb.Error as e:
        raise MetricError(f"the results file has no usable runs table ({e}); it may predate "
                          "this kgprobe version: run `python -m probes.run` once (it upgrades "
                          "the file) or export again into a new file") from e
    tasks_run = {t for _, t in runs.values()}
    report = Report()
    for metric in metrics:
        if not tasks_run & set(metric.tasks):
            report.skipped.append(f"{metric.name} (no {'/'.join(metric.tasks)} runs)")
            continue
        cols, rows = run_metric(con, metric)
        out = []
        for row in rows:
            d = dict(zip(cols, row, strict=True))
            if "run_id" in d:
                d["model"] = runs.get(d["run_id"], (None,))[0]
                d["run"] = labels.get(d["run_id"], str(d["run_id"])[:8])
            if "model" in d:
                if not _matches(d["model"], models):
                    continue
            elif models:
                continue
            if "probe" in d and not _matches(d["probe"], probes):
                continue
            out.append(d)
        report.results.append(MetricResult(metric, out))
    return report


def run_label(run_id: str, config: str | None, finished_at: Any) -> str:
    """How a run is told apart from other runs of the same model and probe: its id's first
    8 digits, its ``--limit`` and ``--split`` choices, and the day it finished.

    >>> run_label("0123456789abcdef", '{"limit": 20, "splits": ["test"]}', None)
    '01234567 (limit 20, split test)'
    >>> run_label("0123456789abcdef", '{"limit": null}', datetime(2026, 1, 2, 3, 4))
    '01234567 (all instances, 2026-01-02 03:04)'
    """
    try:
        cfg = json.loads(config) if config else {}
    except ValueError:
        cfg = {}
    cfg = cfg if isinstance(cfg, dict) else {}
    parts = [f"limit {cfg['limit']}" if cfg.get("limit") else "all instances"]
    if cfg.get("splits"):
        parts.append("split " + "+".join(map(str, cfg["splits"])))
    if isinstance(finished_at, datetime):
        parts.append(finished_at.strftime("%Y-%m-%d %H:%M"))
    return f"{run_id[:8]} ({', '.join(parts)})"


def _key_columns(grain: list[str]) -> list[str]:
    cols = ["model"] if "run_id" in grain else []
    return cols + [g for g in grain if g != "run_id"]


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v).replace("|", "\\|")


def tables(report: Report) -> list[tuple[list[str], str]]:
    """One markdown table per grain: (metric names, table text)."""
    groups: dict[tuple[str, ...], list[MetricResult]] = {}
    for r in report.results:
        groups.setdefault(tuple(r.metric.grain), []).append(r)
    out = []
    for grain, results in groups.items():
        keys = _key_columns(list(grain))
        ambiguous = _ambiguous(results, keys)
        if ambiguous:
            keys = [*keys, "run"]
        cells: dict[tuple, dict[str, Any]] = {}
        for r in results:
            for row in r.rows:
                row = {**row, "run": row.get("run", str(row.get("run_id", ""))[:8])}
                k = tuple(row.get(c) for c in keys)
                cell = cells.setdefault(k, {})
                cell[r.metric.name] = row["value"]
                if row.get("n") is not None:
                    cell["n"] = max(cell.get("n", 0), row["n"])
        names = [r.metric.name for r in results]
        head = [*keys, "n", *names]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join("---" if c in keys else "---:" for c in head) + "|"]
        for k in sorted(cells, key=lambda k: tuple("" if v is None else str(v) for v in k)):
            cell = cells[k]
            lines.append("| " + " | ".join([*(_fmt(v) for v in k), _fmt(cell.get("n")),
                                            *(_fmt(cell.get(n)) for n in names)]) + " |")
        out.append((names, "\n".join(lines)))
    return out


def _ambiguous(results: list[MetricResult], keys: list[str]) -> bool:
    for r in results:
        seen: dict[tuple, Any] = {}
        for row in r.rows:
            k = tuple(row.get(c) for c in keys)
            if seen.setdefault(k, row.get("run_id")) != row.get("run_id"):
                return True
    return False


def plots(report: Report, out: Path) -> list[Path]:
    """One bar chart per metric (x: probe and the other grain columns, bars: models). The
    charts show the same rows as the tables: when a model has several runs of one probe (a
    full and a ``--limit`` run), each is a bar of its own, labelled by run."""
    paths = []
    for r in report.results:
        if not r.metric.plot or not r.rows:
            continue
        keys = [c for c in _key_columns(r.metric.grain) if c != "model"]
        by_run = _ambiguous([r], _key_columns(r.metric.grain))
        points = [(str(row.get("model", r.metric.name))
                   + (f" [{row.get('run')}]" if by_run and row.get("run") else ""),
                   "/".join(str(row.get(c)) for c in keys), row["value"]) for row in r.rows]
        points = [(s, x, None if v is None else float(v)) for s, x, v in points]
        paths.append(bar_chart(points, r.metric.name, out / f"{r.metric.name}.png",
                               ylabel=r.metric.name))
    return paths


def render_markdown(report: Report, images: list[Path], results_path: str) -> str:
    """The report.md text: tables, metric definitions, plots."""
    parts = ["# kgprobe report", "",
             f"Results file: `{results_path}`; generated "
             f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    if not report.results:
        parts += ["No metric has results yet: score probes with `python -m probes.run` first.",
                  ""]
    for _, text in tables(report):
        parts += [text, ""]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.report",
        description="Run the SQL metric files over the results DuckDB file, print markdown "
        "tables and write report.md and PNG plots.")
    parser.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file (default: $KGPROBE_RESULTS or "
                        ".kgprobe/results.duckdb)")
    parser.add_argument("--metrics", type=Path, action="append", metavar="DIR",
                        help="folder of metric files (*.sql); repeatable (default: "
                        "eval/metrics of kgprobe)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for report.md and the plots (default: "
                        "$KGPROBE_HOME/reports, i.e. .kgprobe/reports)")
    parser.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                        help="only these probes (name or glob pattern); repeatable")
    parser.add_argument("--model", "-m", action="append", metavar="NAME",
                        help="only these models (name or glob pattern); repeatable")
    parser.add_argument("--no-plots", action="store_true", help="write no PNG files")
    args = parser.parse_args(argv)
    results_path = str(args.results or config.results_path())
    out = args.out or config.home() / "reports"
    try:
        metrics = discover_metrics(args.metrics)
        con = connect(results_path, read_only=True)
        try:
            report = build_report(con, metrics, args.probe, args.model)
        finally:
            con.close()
    except (MetricError, ProbeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    images = [] if args.no_plots else plots(report, out)
    text = render_markdown(report, images, results_path)
    (out / "report.md").write_text(text, encoding="utf-8")
    for _, table in tables(report):
        print(table + "\n")
    if not report.results:
        print("no metric has results yet: score probes with `python -m probes.run` first")
    if report.skipped:
        print(f"skipped: {', '.join(report.skipped)}")
    print(f"wrote {out / 'report.md'}" + (f" and {len(images)} plot(s)" if images else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
