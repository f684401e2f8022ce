"""Metrics over the results file: ``python -m eval.report``, and the report runner that the
benchmark reports share.

The runner (:func:`metric_rows`, :func:`report_folder`, :func:`write_report`,
:func:`run_report`): run every metric SQL file of a folder against the results file, hand the
rows to a render function that returns markdown and figures, and write them into a folder of
their own per call (``<reports>/<name>-<time>-<arguments hash>/``; a folder given with
``--out`` is used as is, and PNGs an earlier call of the same report wrote there and this
call did not are removed).

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
import fnmatch
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from eval import sqlfile
from eval.items import Summary, paired, with_items
from eval.plots import bar_chart
from eval.sqlfile import (
    MetricError,
    MetricFile,
    default_metric_dir,
    discover_metrics,
    run_metric,
)
from eval.stats import Paired, proportion_ci
from kg import config, options
from probes.results import ProbeError, connect


@dataclass
class MetricResult:
    """One metric's rows, as dicts, with ``model`` added when the grain has ``run_id``
    (grains such as ``[model, probe]`` carry it themselves)."""

    metric: MetricFile
    rows: list[dict[str, Any]]
    #: the metric's items summarised per row (eval.items; empty without an items file)
    items: dict[tuple[Any, ...], Summary] = field(default_factory=dict)


@dataclass
class Report:
    results: list[MetricResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: the prompt templates of each run (runs.config), by run id
    prompts: dict[str, list[str]] = field(default_factory=dict)


def _matches(value: Any, patterns: Sequence[str] | None) -> bool:
    return not patterns or any(fnmatch.fnmatch(str(value), p) for p in patterns)


Rows = dict[str, list[dict[str, Any]]]
#: What a report command reports as ``error: ...`` (exit status 2) instead of a traceback.
REPORT_ERRORS = (MetricError, ProbeError)


@dataclass
class Rendered:
    """What a render function returns: the report's markdown and the figures it wrote."""

    markdown: str
    figures: list[Path] = field(default_factory=list)


#: A render function: the open (read-only) results file, for what no metric covers (the runs
#: table), the metric rows by metric name, and the folder for its figures.
Render = Callable[[duckdb.DuckDBPyConnection, Rows, Path], Rendered]


def metric_rows(con: duckdb.DuckDBPyConnection, folders: Sequence[Path]) -> Rows:
    """Every metric SQL file of ``folders`` run against the results file: its rows as dicts,
    by metric name."""
    out: Rows = {}
    for metric in discover_metrics(list(folders)):
        cols, rows = run_metric(con, metric)
        out[metric.name] = [dict(zip(cols, r, strict=True)) for r in rows]
    return out


def report_folder(out: Path | None, name: str, argv: Sequence[str]) -> Path:
    """Where one call's report goes: ``out`` when given, else a new folder
    ``$KGPROBE_HOME/reports/<name>-<UTC time>-<hash of the arguments>`` (so no call overwrites
    an earlier report).

    >>> report_folder(Path("mine"), "report", [])
    PosixPath('mine')
    >>> report_folder(None, "report", ["-p", "x"]).name.startswith("report-")
    True
    """
    if out is not None:
        return out
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    digest = hashlib.sha1("\0".join(argv).encode()).hexdigest()[:6]
    return config.home() / "reports" / f"{name}-{stamp}-{digest}"


def write_report(out: Path, filename: str, rendered: Rendered) -> Path:
    """Write the markdown as ``out/filename`` and remove the PNGs that an earlier call of the
    same report wrote into ``out`` and this one did not (stale charts; listed in the hidden
    ``.<filename>.figures``, so other reports' PNGs in the folder stay); returns the path."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / f".{filename}.figures"
    keep = {f.name for f in rendered.figures}
    if manifest.is_file():
        for name in manifest.read_text(encoding="utf-8").split("\n"):
            stale = out / name
            if name.endswith(".png") and name not in keep and stale.parent == out:
                stale.unlink(missing_ok=True)
    manifest.write_text("\n".join(sorted(keep)), encoding="utf-8")
    path = out / filename
    path.write_text(rendered.markdown.rstrip("\n") + "\n", encoding="utf-8")
    return path


def run_report(results: str | Path, folders: Sequence[Path], render: Render, out: Path,
               filename: str = "report.md",
               prepare: Callable[[duckdb.DuckDBPyConnection], None] | None = None
               ) -> tuple[Path, Rendered]:
    """The report runner: open the results file read-only, call ``prepare`` (settings the
    metrics read, such as DuckDB variables), run every metric of ``folders``, hand the rows to
    ``render`` (figures go into ``out``) and write its markdown (see :func:`write_report`).
    Returns the markdown file's path and what was rendered. A render function raises
    :class:`MetricError` to report that there is nothing to show (nothing is written)."""
    con = connect(str(results), read_only=True)
    try:
        if prepare is not None:
            prepare(con)
        rows = metric_rows(con, folders)
        rendered = render(con, rows, out)  # figures make their folder (eval.plots)
    finally:
        con.close()
    return write_report(out, filename, rendered), rendered


def report_command(results: Path | None, name: str, argv: Sequence[str] | None,
                   out: Path | None, folders: Sequence[Path], render: Render,
                   filename: str) -> int:
    """The body of a benchmark report's command line: a folder per call (or ``out``),
    :func:`run_report`, the markdown and the written paths printed; 2 with a one-line error."""
    where = report_folder(out, name, sys.argv[1:] if argv is None else argv)
    try:
        path, rendered = run_report(str(results or config.results_path()), folders, render,
                                    where, filename)
    except REPORT_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(rendered.markdown)
    print(f"\nwrote {path}" + "".join(f" and {f}" for f in rendered.figures))
    return 0


#: The shortcut metrics (docs/shortcuts.md): they need a train split, and are left out of the
#: tables (named under "Skipped") where no probe has one.
SHORTCUT_METRICS = frozenset({"shortcut_panel", "shortcut_ceiling"})


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
        configs = con.execute("SELECT run_id, config::VARCHAR, finished_at FROM runs").fetchall()
        labels = {r[0]: run_label(r[0], r[1], r[2]) for r in configs}
    except duckdb.Error as e:
        raise MetricError(f"the results file has no usable runs table ({e}); it may predate "
                          "this kgprobe version: run `python -m probes.run` once (it upgrades "
                          "the file) or export again into a new file") from e
    tasks_run = {t for _, t in runs.values()}
    report = Report(prompts={r[0]: _templates(r[1]) for r in configs})
    for metric in metrics:
        if not tasks_run & set(metric.tasks):
            report.skipped.append(f"{metric.name} (no {'/'.join(metric.tasks)} runs)")
            continue
        cols, rows = run_metric(con, metric)
        if not rows and metric.name in SHORTCUT_METRICS:
            report.skipped.append(f"{metric.name} (no probe with a train split)")
            continue
        out = []
        for row in rows:
            d = dict(zip(cols, row, strict=True))
            if "run_id" in d:
                d["model"], d["task"] = runs.get(d["run_id"], (None, None))
                d["run"] = labels.get(d["run_id"], str(d["run_id"])[:8])
            if "model" in d:
                if not _matches(d["model"], models):
                    continue
            elif models:
                continue
            if "probe" in d and not _matches(d["probe"], probes):
                continue
            out.append(d)
        summaries = with_items(con, metric, out) if out else {}
        kept = {tuple(d.get(g) for g in metric.grain) for d in out}
        report.results.append(MetricResult(metric, out, {k: v for k, v in summaries.items()
                                                         if k in kept}))
    return report


def _templates(config: str | None) -> list[str]:
    """The prompt templates a run's config names (``prompts``), else none.

    >>> _templates('{"prompts": ["A [W] is a [V]."]}'), _templates(None)
    (['A [W] is a [V].'], [])
    """
    try:
        cfg = json.loads(config) if config else {}
    except ValueError:
        return []
    prompts = cfg.get("prompts") if isinstance(cfg, dict) else None
    return [str(p) for p in prompts] if isinstance(prompts, list) else []


def run_label(run_id: str, config: str | None, finished_at: Any) -> str:
    """How a run is told apart from other runs of the same model and probe: its id's first
    8 digits, its ``--limit``, ``--sample`` and ``--split`` choices, whether its prompts were
    wrapped in the model's chat template (``--apply-chat-template``: the scorer options in
    ``runs.config`` name a ``chat_template``), and the day it finished.

    >>> run_label("0123456789abcdef", '{"limit": 20, "splits": ["test"]}', None)
    '01234567 (limit 20, split test)'
    >>> run_label("0123456789abcdef", '{"limit": null}', datetime(2026, 1, 2, 3, 4))
    '01234567 (all instances, 2026-01-02 03:04)'
    >>> run_label("0123456789abcdef", '{"sample": 50, "scorer": {"chat_template": "9f"}}', None)
    '01234567 (sample 50, chat template)'
    """
    try:
        cfg = json.loads(config) if config else {}
    except ValueError:
        cfg = {}
    cfg = cfg if isinstance(cfg, dict) else {}
    parts = [f"limit {cfg['limit']}" if cfg.get("limit")
             else f"sample {cfg['sample']}" if cfg.get("sample") else "all instances"]
    if cfg.get("splits"):
        parts.append("split " + "+".join(map(str, cfg["splits"])))
    scorer, runtime = cfg.get("scorer"), cfg.get("runtime")
    if ((isinstance(scorer, dict) and scorer.get("chat_template"))
            or (isinstance(runtime, dict) and runtime.get("apply_chat_template"))):
        parts.append("chat template")
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


#: Built-in metrics whose value is a share of their ``n`` instances (1 right, 0 wrong each): a
#: row without items (eval.items) or its own ``ci_low`` / ``ci_high`` gets the 95 % Wilson
#: interval of ``value * n`` out of ``n`` (eval.stats.proportion_ci).
SHARE_METRICS = frozenset({"binary_accuracy", "choice_accuracy"})
#: The baseline metric of a metric, drawn beside it (same grain, same rows).
BASELINE_OF = {"choice_accuracy": "chance_accuracy", "binary_accuracy": "chance_accuracy"}
#: The shortcut ceiling of a metric (eval/metrics/shortcut_ceiling.sql), a second tick.
CEILING_OF = {"choice_accuracy": "shortcut_ceiling", "binary_accuracy": "shortcut_ceiling",
              "relatum_precision_at_1": "shortcut_ceiling"}


def interval(metric: str, row: dict[str, Any]) -> tuple[float, float] | None:
    """A row's 95 % interval: its ``ci_low`` / ``ci_high`` columns (its own, or from its items:
    the Wilson interval or the cluster bootstrap over instances, see eval.items), or for a
    share metric the Wilson interval of its ``n`` instances; None when neither applies.

    >>> tuple(round(v, 3) for v in interval("choice_accuracy", {"value": 1.0, "n": 4}))
    (0.51, 1.0)
    >>> interval("choice_mrr", {"value": 0.5, "n": 4}) is None
    True
    """
    if row.get("ci_low") is not None and row.get("ci_high") is not None:
        return float(row["ci_low"]), float(row["ci_high"])
    value, n = row.get("value"), row.get("n")
    if metric not in SHARE_METRICS or value is None or not n:
        return None
    return proportion_ci(round(float(value) * int(n)), int(n))


def _fmt_ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _fmt_spread(row: dict[str, Any]) -> str:
    """A row's spread across prompts: ``min–max (sd)``; – with fewer than two prompts.

    >>> _fmt_spread({"n_prompts": 2, "prompt_min": 0.0, "prompt_max": 0.2, "prompt_sd": 0.1})
    '0.000–0.200 (sd 0.100)'
    """
    if (row.get("n_prompts") or 0) < 2:
        return "–"
    return f"{row['prompt_min']:.3f}–{row['prompt_max']:.3f} (sd {row['prompt_sd']:.3f})"


def _groups(report: Report) -> dict[tuple[tuple[str, ...], str | None],
                                    list[tuple[MetricResult, list[dict[str, Any]]]]]:
    """The report's rows by (grain, task of the row's run): one table each, so a table shows
    only the metrics that apply to its probes (relatum, choice and binary probes apart)."""
    groups: dict[tuple[tuple[str, ...], str | None],
                 list[tuple[MetricResult, list[dict[str, Any]]]]] = {}
    for r in report.results:
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
        keys = _key_columns(list(grain))
        if _ambiguous([r for r, _ in results], keys):
            keys = [*keys, "run"]
        cells: dict[tuple, dict[str, Any]] = {}
        columns: list[str] = []
        for r, rows in results:
            name = r.metric.name
            with_ci = any(interval(name, row) is not None for row in rows)
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
        keys = _key_columns(list(grain))
        if _ambiguous([r for r, _ in results], keys):
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


def comparisons(report: Report) -> list[dict[str, Any]]:
    """Paired comparisons (eval.items.paired) of every two runs of a probe and split, per
    metric with items: the runs are labelled by model (and run, where a model has several)."""
    out = []
    for r in report.results:
        keys = _key_columns(r.metric.grain)
        by_run = _ambiguous([r], keys)
        label = {tuple(row.get(g) for g in r.metric.grain):
                 str(row.get("model")) + (f" [{row.get('run')}]" if by_run else "")
                 for row in r.rows}
        out += paired(r.metric, r.items, label)
    return out


PAIRED_POINTS_HEAD = ("| n | a | b | a − b | 95% CI of a − b | test | p |",
                      "|---:|---:|---:|---:|---:|---|---:|")
"""The columns :func:`paired_points` fills, after a table's own key columns."""


def paired_points(c: Paired) -> str:
    """A paired comparison of two shares as the cells of :data:`PAIRED_POINTS_HEAD`, in
    percentage points (the benchmark reports' unit; p below 0.05 starred).

    >>> paired_points(Paired(3, 0.5, 0.75, -0.25, (-0.5, 0.0), "McNemar", 0.5))
    '3 | 50.0 | 75.0 | -25.0 | -50.0 to 0.0 | McNemar | 0.5 |'
    """
    def pct(v: float) -> str:
        return f"{100 * v:.1f}"

    ci = "–" if c.ci is None else f"{pct(c.ci[0])} to {pct(c.ci[1])}"
    diff = round(100 * c.diff, 9) + 0.0  # no "-0.0"
    return (f"{c.n:,} | {pct(c.mean_a)} | {pct(c.mean_b)} | {diff:+.1f} | {ci} | {c.test} | "
            f"{c.pvalue:.3g}{'*' if c.pvalue < 0.05 else ''} |")


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """:func:`comparisons` as a markdown table (a - b, its paired-bootstrap 95 % interval,
    the paired test; p below 0.05 starred)."""
    head = ["metric", "probe", "split", "a", "b", "n", "mean a", "mean b", "a − b",
            "95% CI of a − b", "test", "p"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i < 5 or i == 10 else "---:"
                            for i in range(len(head))) + "|"]
    for c in rows:
        p = c["pvalue"]
        lines.append("| " + " | ".join([
            c["metric"], _fmt(c.get("probe")), _fmt(c.get("split")), _fmt(c["a"]),
            _fmt(c["b"]), _fmt(c["n"]), _fmt(c["mean_a"]), _fmt(c["mean_b"]),
            f"{round(c['diff'], 12) + 0.0:+.3f}", _fmt_ci(c["ci"]), c["test"],
            f"{p:.3g}" + ("*" if p < 0.05 else "")]) + " |")
    return "\n".join(lines)


def _ambiguous(results: list[MetricResult], keys: list[str]) -> bool:
    for r in results:
        seen: dict[tuple, Any] = {}
        for row in r.rows:
            k = tuple(row.get(c) for c in keys)
            if seen.setdefault(k, row.get("run_id")) != row.get("run_id"):
                return True
    return False


def plots(report: Report, out: Path) -> list[Path]:
    """One bar chart per metric (x: probe and the other grain columns, bars: models, named in
    the legend). The charts show the same rows as the tables: when a model has several runs of
    one probe (a full and a ``--limit`` run), each is a bar of its own, labelled by run; the
    95 % interval is an error bar and the chance baseline a black tick over each group whose
    runs share one (runs over different instances can differ: then only the table shows it)."""
    paths = []
    by_name = {r.metric.name: r for r in report.results}
    for r in report.results:
        if not r.metric.plot or not r.rows:
            continue
        keys = [c for c in _key_columns(r.metric.grain) if c != "model"]
        by_run = _ambiguous([r], _key_columns(r.metric.grain))

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
        base = by_name.get(BASELINE_OF.get(r.metric.name, ""))
        ceiling = by_name.get(CEILING_OF.get(r.metric.name, ""))
        paths.append(bar_chart(points, r.metric.name, out / f"{r.metric.name}.png",
                               ylabel=r.metric.name, errors=errors,
                               baselines=_ticks(base, group),
                               baseline_label=base.metric.name if base else "baseline",
                               ceilings=_ticks(ceiling, group)))
    return paths


NOTES = ("n: instances (the units every interval resamples; relatum metrics average "
         "(instance, prompt) pairs, but the pairs of one instance are not independent). 95% CI: "
         "for a share with one right/wrong outcome per instance the Wilson score interval "
         "(never zero-width: 10/10 gives 0.722–1.000); otherwise the percentile cluster "
         "bootstrap over instances, each resampled with all its prompts (1,000 seeded "
         "resamples). prompts: the spread of the metric across the probe's prompts, each "
         "scored alone: min–max (population sd); the values are under Per prompt. "
         "chance_accuracy: the chance baseline over the same instances (multiple choice: a "
         "uniformly random pick; binary: the majority class); for the relatum metrics chance is "
         "about 0 (a word drawn from the vocabulary). shortcut_ceiling: on the same instances, the "
         "accuracy of the model-free rule of the shortcut panel (shortcut_panel; fitted on train "
         "only, docs/shortcuts.md) chosen on the probe's dev split, or on train where there is no "
         "dev (the metric's rule and chosen_on columns), never on the labels it is scored on; "
         "the metric also gives the best rule on these instances (best_value, chosen on their "
         "labels: biased up) and that best's permutation null (null_median, null_p95); the "
         "charts draw the ceiling as an orange dashed tick beside chance's black one.")
PAIRED_NOTE = ("Every two runs of one probe and split on the instances both scored: a − b is "
               "the mean difference of their per-instance values, its 95% CI the paired "
               "bootstrap over those instances (1,000 seeded resamples); test: McNemar's exact "
               "test for right/wrong outcomes, else Wilcoxon's signed-rank test; * p < 0.05.")


def _ticks(base: MetricResult | None, group: Callable[[dict[str, Any]], str]
           ) -> dict[str, float]:
    """One tick per group, where its runs share one value of ``base`` (else the table tells
    them apart)."""
    per_group: dict[str, set[float]] = {}
    for row in base.rows if base else []:
        if row["value"] is not None:
            per_group.setdefault(group(row), set()).add(round(float(row["value"]), 9))
    return {g: next(iter(v)) for g, v in per_group.items() if len(v) == 1}


def render_markdown(report: Report, images: list[Path], results_path: str) -> str:
    """The report.md text: tables, metric definitions, plots."""
    parts = ["# kgprobe report", "",
             f"Results file: `{results_path}`; generated "
             f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    if not report.results:
        parts += ["No metric has results yet: score probes with `python -m probes.run` first.",
                  ""]
    if report.results:
        parts += [NOTES, ""]
    for _, text in tables(report):
        parts += [text, ""]
    prompts = prompt_tables(report)
    if prompts:
        parts += ["## Per prompt", "", "Each metric under each prompt alone (n: instances); "
                  "the tables above give their mean and spread.", ""]
        for text in prompts:
            parts += [text, ""]
    pairs = comparisons(report)
    if pairs:
        parts += ["## Paired comparisons", "", PAIRED_NOTE, "", comparison_table(pairs), ""]
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
                "`python -m probes.run --list probes` and `SELECT DISTINCT model, probe, "
                "status FROM runs`, or score them with `python -m probes.run`")
    return (f"no metric rows in {results_path}: no finished run of a task the metrics apply "
            "to (" + (", ".join(report.skipped) or "no metrics") + "); score probes with "
            "`python -m probes.run -m MODEL -p PROBE` first")


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
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.report", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``kgprobe report``: the tables printed, report.md and the plots written."""
    results_path = str(args.results or config.results_path())
    out = report_folder(args.out, "report", argv)
    if args.metric_timeout < 0:
        print(f"error: --metric-timeout must be a positive number (got {args.metric_timeout:g})",
              file=sys.stderr)
        return 2
    sqlfile.METRIC_TIMEOUT_S = args.metric_timeout or None
    try:
        folders = dict.fromkeys(d.resolve() for d in [default_metric_dir(), *(args.metrics or [])])
        metrics = discover_metrics(list(folders))  # the built-in folder given again: once
        con = connect(results_path, read_only=True)
        try:
            report = build_report(con, metrics, args.probe, args.model)
        finally:
            con.close()
    except (MetricError, ProbeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not any(r.rows for r in report.results):
        print(f"error: {empty_reason(report, args.probe, args.model, results_path)}",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    images = [] if args.no_plots else plots(report, out)
    path = write_report(out, "report.md", Rendered(
        render_markdown(report, images, results_path), images))
    for _, table in tables(report):
        print(table + "\n")
    for table in prompt_tables(report):
        print(table + "\n")
    pairs = comparisons(report)
    if pairs:
        print(comparison_table(pairs) + "\n")
    if report.skipped:
        print(f"skipped: {', '.join(report.skipped)}")
    print(f"wrote {path}" + (f" and {len(images)} plot(s)" if images else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
