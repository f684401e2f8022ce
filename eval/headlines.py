"""The benchmarks' headline metrics that ``kgprobe report`` runs besides ``eval/metrics``."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from eval.sqlfile import MetricFile, default_metric_dir, load_metric

HEADLINES = ("ontolama/ontolama_zero_shot.sql", "ontolama/ontolama_majority_baseline.sql",
             "ontolama/ontolama_shortcut_ceiling.sql", "bear/bear_accuracy.sql")
"""The benchmarks' headline metrics (under ``eval/``) that ``kgprobe report`` runs besides
``eval/metrics``, so that one report of a study shows each benchmark's accuracy with its n
(issue 46: OntoLAMA's shortcut ceiling appeared, its accuracy only in ``kgprobe ontolama
report``). A file without the benchmark's runs gets no rows from them (skipped). Each is shown
in the report's headline rows with the chance and ceiling of :data:`HEADLINE_OF`."""


@dataclass(frozen=True)
class Beside:
    """A headline metric's benchmark, what it measures, and its chance and ceiling metrics."""

    benchmark: str
    measure: str
    chance: str
    ceiling: str


HEADLINE_OF: dict[str, Beside] = {
    "bear_accuracy": Beside("BEAR", "accuracy", "bear_chance", "bear_shortcut_ceiling"),
    "ontolama_zero_shot": Beside("OntoLAMA", "zero-shot accuracy", "ontolama_majority_baseline",
                                 "ontolama_shortcut_ceiling"),
}
"""Each benchmark's headline metric and the two model-free numbers shown beside it in the
report's headline rows and the HTML leaderboard: its chance (BEAR: the mean of 1 / answer-space
size over the probe's instances, lm-pub-quiz's random baseline; OntoLAMA: the majority class)
and its shortcut ceiling (BEAR: the rule chosen by 2-fold cross-fitting over relations;
OntoLAMA: the rule fitted on train and chosen on dev). Where their grain has more columns than
run, probe and split (BEAR's relation), the row of the whole probe (``all``) is the one beside."""

BESIDE = ("bear/bear_chance.sql", "bear/bear_shortcut_ceiling.sql")
"""The headline metrics' chance and ceiling files that are not tables of the generic report
(their rows are per relation: ``kgprobe bear report`` shows them); run beside the headlines,
their ``all`` rows are shown only in the headline rows and the leaderboard."""


def _scored(con: duckdb.DuckDBPyConnection, files: tuple[str, ...]) -> list[MetricFile]:
    try:
        probes = [str(p) for (p,) in con.execute("SELECT DISTINCT probe FROM runs").fetchall()]
    except duckdb.Error:  # no runs table: build_report says so
        return []
    root = default_metric_dir().parent
    return [load_metric(root / name) for name in files
            if any(p.startswith(name.split("/")[0] + "/") for p in probes)]


def beside_metrics(con: duckdb.DuckDBPyConnection) -> list[MetricFile]:
    """The metric files of :data:`BESIDE` of the benchmarks that some run scored."""
    return _scored(con, BESIDE)


def headline_metrics(con: duckdb.DuckDBPyConnection) -> list[MetricFile]:
    """The metric files of :data:`HEADLINES` of the benchmarks (the folder a file is in, the
    prefix of its probes' names) that some run of the results file scored."""
    return _scored(con, HEADLINES)
