"""What the OntoLAMA report reads (He et al. 2023): its runs (:class:`RunInfo`), the metric
rows of ``eval/ontolama/`` (:func:`build` -> :class:`Results`), the dataset names, and the
cells both of its parts print (percentages, mean ± std, baselines, shortcut ceilings). The
tables: :mod:`eval.ontolama_report` and its K-shot part :mod:`eval.ontolama_kshot`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from eval.report import (
    Rows,
    metric_rows,
)

METRIC_DIR = Path(__file__).with_name("ontolama")
KIND_ORDER = {"atomic": 0, "complex": 1}
CONTROLLED = "-controlled"
"""The name suffix of a shortcut-controlled split (docs/shortcuts.md)."""
FULL_K = -1
"""``runs.k`` of the fully supervised setting (the results contract, docs/results.md)."""


@dataclass
class RunInfo:
    """One finished subsumption run."""

    run_id: str
    model: str
    probe: str
    kshot: dict[str, Any] | None
    limit: int | None
    wall_s: float | None
    requests: int | None
    cache_hits: int | None = None  # of the invocation that wall_s describes


@dataclass
class Results:
    """Metric rows by metric name and the runs they come from."""

    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    split: str = "test"
    sizes: dict[tuple[str, str], int] = field(default_factory=dict)  # (probe, split) -> n

    def rows(self, metric: str, scoring: str | None = "sum_prob") -> list[dict[str, Any]]:
        """The metric's rows of the report's split (of one class scoring, where the metric
        has several; ``None``: all)."""
        return [r for r in self.metrics.get(metric, []) if r["split"] == self.split
                and (scoring is None or r.get("scoring", scoring) == scoring)]


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` observed on ``n`` items (95 %).

    >>> [round(x, 3) for x in wilson(0.5, 100)]
    [0.404, 0.596]
    """
    if n <= 0:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def dataset(probe: str) -> str:
    """A probe's display name.

    >>> dataset("ontolama/go-complex"), dataset("other/x")
    ('go complex', 'other/x')
    >>> dataset("ontolama/schemaorg-atomic-controlled")
    'schemaorg atomic controlled'
    """
    name = probe.removeprefix("ontolama/")
    base = name.removesuffix(CONTROLLED)
    onto, _, kind = base.rpartition("-")
    if not (probe.startswith("ontolama/") and onto):
        return probe
    return f"{onto} {kind}" + (" controlled" if base != name else "")


def probe_order(probe: str) -> tuple[int, str]:
    kind = probe.removesuffix(CONTROLLED).rpartition("-")[2]
    return KIND_ORDER.get(kind, 2), probe


def runs_of(con: duckdb.DuckDBPyConnection) -> dict[str, RunInfo]:
    rows = con.execute("""SELECT run_id, model, probe, config::VARCHAR, wall_s, requests,
                                 cache_hits
                          FROM runs WHERE task = 'subsumption' AND status = 'done'""").fetchall()
    out = {}
    for rid, model, probe, cfg, wall, requests, hits in rows:
        c = json.loads(cfg or "{}")
        out[rid] = RunInfo(rid, model, probe, c.get("kshot"), c.get("limit"), wall, requests,
                           hits)
    return out


def build(con: duckdb.DuckDBPyConnection, split: str = "test",
          metric_dir: Path = METRIC_DIR, rows: Rows | None = None) -> Results:
    """Collect what the tables need: the metric rows (``rows``, as the report runner hands
    them; None: run the metrics of ``metric_dir`` here), the runs and the split sizes."""
    res = Results(runs=runs_of(con), split=split)
    res.sizes = {(p, s): n for p, s, n in con.execute(
        "SELECT probe, split, count(*) FROM instances GROUP BY ALL").fetchall()}
    res.metrics = metric_rows(con, [metric_dir]) if rows is None else rows
    return res


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def mean_std(mean: float | None, std: float | None, count: int) -> str:
    if mean is None:
        return "–"
    return pct(mean) if count < 2 or std is None else f"{pct(mean)} ± {pct(std)}"


def baselines(res: Results) -> dict[str, dict[str, Any]]:
    return {r["run_id"]: r for r in res.rows("ontolama_majority_baseline")}


def ceiling_rows(res: Results) -> dict[str, dict[str, Any]]:
    """run_id -> its shortcut ceiling row (on the instances it scored: the rule chosen on dev
    or train; the best rule on them and its permutation null)."""
    return {r["run_id"]: r for r in res.rows("ontolama_shortcut_ceiling")}


def ceiling_cell(row: dict[str, Any] | None) -> str:
    """The chosen rule's accuracy (its name, where it was chosen); then the best rule on the
    scored instances with its permutation null (median / 95th percentile).

    >>> ceiling_cell({"value": 0.5, "rule": "lookup_super", "chosen_on": "dev",
    ...               "best_value": 0.577, "null_median": 0.551, "null_p95": 0.615})
    '50.0 (lookup_super, on dev); best 57.7, null 55.1 / 61.5'
    """
    if not row:
        return "–"
    cell = f"{pct(row['value'])} ({row['rule']}, on {row.get('chosen_on') or '?'})"
    if row.get("best_value") is not None:
        cell += f"; best {pct(row['best_value'])}"
        if row.get("null_p95") is not None:
            cell += f", null {pct(row.get('null_median'))} / {pct(row['null_p95'])}"
    return cell


