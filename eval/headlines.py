"""The benchmarks' headline metrics that ``kgprobe report`` runs besides ``eval/metrics``."""

from __future__ import annotations

import duckdb

from eval.sqlfile import MetricFile, default_metric_dir, load_metric

HEADLINES = ("ontolama/ontolama_zero_shot.sql", "ontolama/ontolama_majority_baseline.sql",
             "ontolama/ontolama_shortcut_ceiling.sql", "bear/bear_accuracy.sql")
"""The benchmarks' headline metrics (under ``eval/``) that ``kgprobe report`` runs besides
``eval/metrics``, so that one report of a study shows each benchmark's accuracy with its n
(issue 46: OntoLAMA's shortcut ceiling appeared, its accuracy only in ``kgprobe ontolama
report``). A file without the benchmark's runs gets no rows from them (skipped)."""


def headline_metrics(con: duckdb.DuckDBPyConnection) -> list[MetricFile]:
    """The metric files of :data:`HEADLINES` of the benchmarks (the folder a file is in, the
    prefix of its probes' names) that some run of the results file scored."""
    try:
        probes = [str(p) for (p,) in con.execute("SELECT DISTINCT probe FROM runs").fetchall()]
    except duckdb.Error:  # no runs table: build_report says so
        return []
    root = default_metric_dir().parent
    return [load_metric(root / name) for name in HEADLINES
            if any(p.startswith(name.split("/")[0] + "/") for p in probes)]
