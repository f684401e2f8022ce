"""The reliability diagram of the choice and binary runs (docs/report.md): its points from
``eval/calibration/reliability_bins.sql`` (run in the metric sandbox, outside the metric tables:
its grain has the confidence bin), drawn by :func:`eval.plots.reliability_diagram`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import reliability_diagram
from eval.sqlfile import load_metric, run_metric

RELIABILITY = Path(__file__).with_name("calibration") / "reliability_bins.sql"


def reliability_rows(con: duckdb.DuckDBPyConnection,
                     keep: Callable[[dict[str, Any]], bool] | None = None
                     ) -> list[dict[str, Any]]:
    """The diagram's points, one per run, probe, split and non-empty bin (``keep``: a filter
    on each row)."""
    cols, rows = run_metric(con, load_metric(RELIABILITY))
    out = [dict(zip(cols, r, strict=True)) for r in rows]
    return [r for r in out if keep is None or keep(r)]


def reliability_plot(rows: list[dict[str, Any]], path: Path,
                     series: Callable[[dict[str, Any]], str]) -> Path:
    """One panel per probe and split, one line per ``series(row)`` (model, and run where a
    model has several)."""
    panels: dict[str, dict[str, list[tuple[float, float, int]]]] = {}
    for row in rows:
        panels.setdefault(f"{row['probe']}/{row['split']}", {}).setdefault(
            series(row), []).append((float(row["confidence"]), float(row["value"]),
                                     int(row["n"])))
    return reliability_diagram(dict(sorted(panels.items())), "Reliability (10 equal-width "
                               "confidence bins)", path)
