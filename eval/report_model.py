"""The report model: what a report of the results file holds, built once from a results
connection (:func:`build_report`) and laid out by both renderers, :mod:`eval.report`
(Markdown, the tables printed and the PNG charts) and :mod:`eval.html_report` (the offline HTML
page); neither renderer imports the other.

A :class:`Report` holds each metric's rows (:class:`MetricResult`: the rows as dicts with their
n, the items summarised per row for the intervals and the per-prompt values), the prompt
templates of each run, the reliability diagram's points, the warnings about stored numbers and
the metrics skipped. Beside it the model says which baseline and ceiling belong to a metric
(:data:`BASELINE_OF`, :data:`CEILING_OF`), a row's 95 % interval (:func:`interval`), the
calibration rows (:func:`calibration_rows`), the paired comparisons of runs
(:func:`comparisons`) and the finished runs a page's browser shows (:func:`report_runs`).

>>> from probes.results import connect
>>> report = build_report(connect(":memory:"))
>>> report.results, report.skipped[:1]
([], ['binary_accuracy (no binary runs)'])
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from eval.calibration_plot import reliability_rows
from eval.headlines import HEADLINE_OF
from eval.items import Summary, paired, with_items
from eval.report_format import _fmt_ci, run_label, templates
from eval.score_checks import nonfinite_warnings
from eval.sqlfile import MetricError, MetricFile, discover_metrics, run_metric
from eval.stats import proportion_ci


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
    #: the reliability diagram's points of the chosen choice and binary runs (with model, run)
    reliability: list[dict[str, Any]] = field(default_factory=list)
    #: lines about stored numbers the metrics cannot stand on (eval.score_checks)
    warnings: list[str] = field(default_factory=list)
    #: the headline metrics' chance and ceiling run beside them, not tables of their own
    #: (eval.headlines.BESIDE)
    beside: list[MetricResult] = field(default_factory=list)
    #: each benchmark's headline rows, with n, interval, chance and ceiling
    headlines: list[Headline] = field(default_factory=list)


@dataclass(frozen=True)
class Headline:
    """One run's headline row of a benchmark (eval.headlines.HEADLINE_OF): its accuracy with
    n and the 95 % interval over instances, and beside it the benchmark's chance and shortcut
    ceiling on the same probe and split (None where the file has none)."""

    metric: str
    #: the benchmark and what the row measures (with the metric's grain columns beyond run,
    #: probe and split: OntoLAMA's scoring)
    benchmark: str
    measure: str
    model: str | None
    run: str | None
    probe: str | None
    split: str | None
    value: float | None
    n: int | None
    ci: tuple[float, float] | None
    chance: float | None
    chance_metric: str
    ceiling: float | None
    ceiling_metric: str


def matches(value: Any, patterns: Sequence[str] | None) -> bool:
    """Whether ``value`` matches one of the glob ``patterns`` (every value when there are none).

    >>> matches("bear/P19", ["bear/*"]), matches("x", ["bear/*"]), matches("x", None)
    (True, False, True)
    """
    return not patterns or any(fnmatch.fnmatch(str(value), p) for p in patterns)


#: The shortcut metrics (docs/shortcuts.md): they need a train split, and are left out of the
#: tables (named under "Skipped") where no probe has one.
SHORTCUT_METRICS = frozenset({"shortcut_panel", "shortcut_ceiling", "shortcut_shift"})


def build_report(con: duckdb.DuckDBPyConnection, metrics: list[MetricFile] | None = None,
                 probes: Sequence[str] | None = None, models: Sequence[str] | None = None,
                 beside: Sequence[MetricFile] = ()) -> Report:
    """Run the metrics, keep the rows of the chosen probes and models (glob patterns). A row's
    model is its run's (grain with ``run_id``) or its own ``model`` column; rows with neither
    are dropped when models are chosen. ``beside``: model-free metrics run only for the
    headline rows (:func:`headline_rows`; kept whatever the models chosen)."""
    metrics = discover_metrics() if metrics is None else metrics
    try:
        runs = {r[0]: r[1:] for r in con.execute(
            "SELECT run_id, model, task FROM runs").fetchall()}
        configs = con.execute("SELECT run_id, config::VARCHAR, finished_at FROM runs").fetchall()
        labels = {r[0]: run_label(r[0], r[1], r[2]) for r in configs}
    except duckdb.Error as e:
        raise MetricError(f"the results file has no usable runs table ({e}); it may predate "
                          "this kgprobe version: run `python -m probes.engine.run` once (it "
                          "upgrades "
                          "the file) or export again into a new file") from e
    tasks_run = {t for _, t in runs.values()}
    # The model-free panel of a probe no run scored (a records probe, say) is left out once
    # some model has run; a file without runs shows every probe's (a designer's first look).
    scored = {r[0] for r in con.execute("SELECT DISTINCT probe FROM runs").fetchall()}
    report = Report(prompts={r[0]: templates(r[1]) for r in configs}, warnings=(
        nonfinite_warnings(con, lambda m, p: matches(m, models) and matches(p, probes))))

    def result(metric: MetricFile, cols: list[str], rows: list[tuple[Any, ...]],
               models: Sequence[str] | None) -> MetricResult:
        out = []
        for row in rows:
            d = dict(zip(cols, row, strict=True))
            if "run_id" in d:
                d["model"], d["task"] = runs.get(d["run_id"], (None, None))
                d["run"] = labels.get(d["run_id"], str(d["run_id"])[:8])
            if "model" in d:
                if not matches(d["model"], models):
                    continue
            elif models:
                continue
            if "probe" in d and not matches(d["probe"], probes):
                continue
            if metric.name == "shortcut_panel" and scored and d.get("probe") not in scored:
                continue
            out.append(d)
        summaries = with_items(con, metric, out) if out else {}
        kept = {tuple(d.get(g) for g in metric.grain) for d in out}
        return MetricResult(metric, out, {k: v for k, v in summaries.items() if k in kept})

    for metric in metrics:
        if metric.needs_run and not tasks_run & set(metric.tasks):
            report.skipped.append(f"{metric.name} (no {'/'.join(metric.tasks)} runs)")
            continue
        cols, rows = run_metric(con, metric)
        if not rows and metric.name in SHORTCUT_METRICS:
            report.skipped.append(f"{metric.name} (no probe with a train split)")
            continue
        report.results.append(result(metric, cols, rows, models))
    for metric in beside:
        report.beside.append(result(metric, *run_metric(con, metric), None))
    report.headlines = headline_rows(report)
    if tasks_run & {"choice", "binary"}:
        report.reliability = [
            {**r, "model": runs[r["run_id"]][0], "run": labels.get(r["run_id"], "")}
            for r in reliability_rows(con, lambda r: r["run_id"] in runs
                                      and matches(runs[r["run_id"]][0], models)
                                      and matches(r["probe"], probes))]
    return report


def key_columns(grain: list[str]) -> list[str]:
    """A table's key columns for a metric's grain: ``model`` in place of ``run_id``."""
    cols = ["model"] if "run_id" in grain else []
    return cols + [g for g in grain if g != "run_id"]


#: Built-in metrics whose value is a share of their ``n`` instances (1 right, 0 wrong each): a
#: row without items (eval.items) or its own ``ci_low`` / ``ci_high`` gets the 95 % Wilson
#: interval of ``value * n`` out of ``n`` (eval.stats.proportion_ci).
SHARE_METRICS = frozenset({"binary_accuracy", "choice_accuracy"})
#: The baseline metric of a metric, drawn beside it (same grain, same rows).
#: The accuracies of choice and binary probes: the plain one and its length-normalised and
#: PMI variants (eval/metrics/*_norm, *_per_token, *_pmi), each drawn with chance and the
#: shortcut ceiling.
ACCURACIES = tuple(f"{task}_accuracy{variant}" for task in ("choice", "binary")
                   for variant in ("", "_norm", "_per_token", "_pmi"))
BASELINE_OF = {**dict.fromkeys(ACCURACIES, "chance_accuracy"),
               **{m: b.chance for m, b in HEADLINE_OF.items()}}
#: The shortcut ceiling of a metric (eval/metrics/shortcut_ceiling.sql), a second tick.
CEILING_OF = {**dict.fromkeys(ACCURACIES, "shortcut_ceiling"),
              "relatum_precision_at_1": "shortcut_ceiling",
              **{m: b.ceiling for m, b in HEADLINE_OF.items()}}


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


#: The calibration metrics: a table of their own (:func:`calibration_rows`), not columns
#: beside the accuracies, and the reliability diagram.
CALIBRATION_METRICS = frozenset({"brier_score", "expected_calibration_error"})


#: Metrics whose n and interval are a table of their own (:func:`consistency_rows`), their
#: value a column of the run table: prompt_consistency's n counts only the instances with two
#: or more prompts (and its pairs), not the instances scored that the run table's n shows.
CI_IN_OWN_TABLE = frozenset({"prompt_consistency"})
CONSISTENCY_HEAD = ["model", "probe", "split", "n", "pairs", "prompt_consistency", "95% CI",
                    "interval"]


def consistency_rows(report: Report) -> list[list[Any]]:
    """Per run, probe and split: prompt_consistency's n (instances with two or more prompts),
    its prompt pairs, the value, its 95 % interval over instances and the interval's method
    (:data:`CONSISTENCY_HEAD`; the run's label after the model where a model has several
    runs of a probe)."""
    result = find(report, "prompt_consistency")
    if result is None:
        return []
    several = ambiguous([result], key_columns(result.metric.grain))
    return [[str(row.get("model")) + (f" [{row.get('run')}]" if several else ""),
             row.get("probe"), row.get("split"), row.get("n"), row.get("pairs"),
             row.get("value"), _fmt_ci(interval(result.metric.name, row)),
             row.get("ci_method") or "–"]
            for row in sorted(result.rows, key=lambda r: tuple(
                str(r.get(c)) for c in ("model", "probe", "split", "run")))]


def calibration_rows(report: Report) -> list[list[Any]]:
    """Per run, probe and split: n, the Brier score and ECE with their 95 % intervals
    (eval.report_format.CALIBRATION_HEAD)."""
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in report.results:
        if r.metric.name not in ("brier_score", "expected_calibration_error"):
            continue
        for row in r.rows:
            cell = cells.setdefault((row.get("model"), row.get("probe"), row.get("split")),
                                    {"n": row.get("n")})
            cell[r.metric.name] = (row.get("value"), _fmt_ci(interval(r.metric.name, row)))
    return [[*k, c["n"], *c.get("brier_score", (None, "–")),
             *c.get("expected_calibration_error", (None, "–"))]
            for k, c in sorted(cells.items(), key=lambda kv: tuple(map(str, kv[0])))]


def comparisons(report: Report) -> list[dict[str, Any]]:
    """Paired comparisons (eval.items.paired) of every two runs of a probe and split, per
    metric with items: the runs are labelled by model (and run, where a model has several)."""
    out = []
    for r in report.results:
        keys = key_columns(r.metric.grain)
        by_run = ambiguous([r], keys)
        label = {tuple(row.get(g) for g in r.metric.grain):
                 str(row.get("model")) + (f" [{row.get('run')}]" if by_run else "")
                 for row in r.rows}
        out += paired(r.metric, r.items, label)
    return out


def ambiguous(results: list[MetricResult], keys: list[str]) -> bool:
    """Whether two runs share a key (a model with a full and a ``--limit`` run of one probe):
    then the tables and charts name the run too."""
    for r in results:
        seen: dict[tuple, Any] = {}
        for row in r.rows:
            k = tuple(row.get(c) for c in keys)
            if seen.setdefault(k, row.get("run_id")) != row.get("run_id"):
                return True
    return False


def report_runs(con: duckdb.DuckDBPyConnection, probes: Sequence[str] | None = None,
                models: Sequence[str] | None = None,
                keep: Callable[[str, str], bool] | None = None) -> dict[str, dict[str, Any]]:
    """The finished runs the browser shows (probe and model glob patterns, or ``keep(model,
    probe)``), by run id: model, probe, label, templates, and whether the model has several
    runs of the probe (then the browser names the run)."""
    out: dict[str, dict[str, Any]] = {}
    for run_id, model, probe, config, finished in con.execute(
            "SELECT run_id, model, probe, config::VARCHAR, finished_at FROM runs "
            "WHERE status = 'done' AND model <> 'human' ORDER BY model, probe, run_id"
            ).fetchall():
        if not (matches(model, models) and matches(probe, probes)):
            continue
        if keep is not None and not keep(model, probe):
            continue
        out[run_id] = {"model": model, "probe": probe,
                       "label": run_label(run_id, config, finished),
                       "templates": templates(config)}
    seen: dict[tuple[str, str], int] = {}
    for r in out.values():
        seen[(r["model"], r["probe"])] = seen.get((r["model"], r["probe"]), 0) + 1
    for r in out.values():
        r["several"] = seen[(r["model"], r["probe"])] > 1
    return out


#: The grain columns a baseline is matched on; a baseline's other grain columns (BEAR's
#: relation) must read ``all`` (the row of the whole probe and split).
MATCHED_ON = ("run_id", "probe", "split")


def find(report: Report, name: str) -> MetricResult | None:
    """The named metric's result, among the report's metrics or those run beside them."""
    return next((r for r in [*report.results, *report.beside] if r.metric.name == name), None)


def overall_rows(result: MetricResult | None) -> list[dict[str, Any]]:
    """A metric's rows of a whole probe and split: those whose grain columns beyond run, probe
    and split read ``all`` (every row where there are none).

    >>> from pathlib import Path
    >>> m = MetricFile(Path("c.sql"), "c", "", ["choice"], ["probe", "split", "relation"],
    ...                False, "", {})
    >>> overall_rows(MetricResult(m, [{"relation": "P19", "value": 0.1},
    ...                               {"relation": "all", "value": 0.2}]))
    [{'relation': 'all', 'value': 0.2}]
    """
    if result is None:
        return []
    extra = [g for g in result.metric.grain if g not in MATCHED_ON]
    return [row for row in result.rows if all(row.get(g) == "all" for g in extra)]


def values_of(report: Report, name: str) -> Callable[[dict[str, Any]], float | None]:
    """The value of metric ``name`` beside a row of another metric: its overall row of the same
    run, probe and split (of the same probe and split where ``name`` has no run: a model-free
    figure of the probe's instances); None where there is none."""
    result = find(report, name)
    by_run = result is not None and "run_id" in result.metric.grain

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return (row.get("run_id") if by_run else None, row.get("probe"), row.get("split"))

    index = {key(row): float(row["value"]) for row in overall_rows(result)
             if row.get("value") is not None}
    return lambda row: index.get(key(row))


def headline_rows(report: Report) -> list[Headline]:
    """Each benchmark's headline rows (eval.headlines.HEADLINE_OF): per run of its headline
    metric, the value with n and interval, its chance and its shortcut ceiling; the metric's
    grain columns beyond run, probe and split are named after it (OntoLAMA's scoring)."""
    out = []
    for name, spec in HEADLINE_OF.items():
        result = find(report, name)
        if result is None:
            continue
        chance, ceiling = values_of(report, spec.chance), values_of(report, spec.ceiling)
        extra = [g for g in result.metric.grain if g not in MATCHED_ON]
        for row in result.rows:
            measure = spec.measure + "".join(f" ({g} {row.get(g)})" for g in extra)
            out.append(Headline(name, spec.benchmark, measure, row.get("model"), row.get("run"),
                                row.get("probe"), row.get("split"), row.get("value"),
                                row.get("n"), interval(name, row), chance(row), spec.chance,
                                ceiling(row), spec.ceiling))
    return sorted(out, key=lambda h: tuple("" if v is None else str(v) for v in
                                           (h.benchmark, h.probe, h.split, h.model, h.run,
                                            h.measure)))
