"""Issue 13, points 7 and 9: plots show the table's rows, and metric values are deterministic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import eval.plots as plots_mod
import eval.report as report_mod
from eval.report import build_report, plots, tables
from eval.sqlfile import parse_metric, run_metric
from probes.results import connect
from tests.test_report import choice_db  # noqa: F401 (fixture)


def test_plots_keep_every_run_that_the_table_shows(choice_db: duckdb.DuckDBPyConnection,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    # r1 and r2 become two runs of one model and probe: a full run and a --limit 20 run
    choice_db.execute("UPDATE runs SET model = 'm1' WHERE run_id = 'r2'")
    choice_db.execute("UPDATE runs SET config = ?::JSON WHERE run_id = 'r2'",
                      [json.dumps({"limit": 20})])
    drawn: dict[str, list[tuple[str, str, float | None]]] = {}

    def fake_bar_chart(points: Any, title: str, path: Path, ylabel: str = "",
                       **_: Any) -> Path:  # intervals and baselines: not what is tested here
        drawn[title] = list(points)
        return path

    monkeypatch.setattr(report_mod, "bar_chart", fake_bar_chart)
    report = build_report(choice_db)
    plots(report, tmp_path)
    (_, text), = tables(report)
    table_rows = [line for line in text.splitlines()[2:]]
    assert len(table_rows) == 3  # dev: r1 only; test: r1 and r2
    series = sorted({s for s, _, _ in drawn["choice_accuracy"]})
    assert series == ["m1 [r1 (all instances)]", "m1 [r2 (limit 20)]"]
    assert len(drawn["choice_accuracy"]) == len(table_rows)  # the same rows, none dropped
    assert "r2 (limit 20)" in text and "r1 (all instances)" in text


def test_a_chart_of_one_model_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    legends: list[list[str]] = []
    real_close = plots_mod.plt.close

    def close(fig: Any) -> None:
        legend = fig.axes[0].get_legend()
        legends.append([t.get_text() for t in legend.get_texts()] if legend else [])
        real_close(fig)

    monkeypatch.setattr(plots_mod.plt, "close", close)
    plots_mod.bar_chart([("smollm2-135m", "t/c", 0.5)], "acc", tmp_path / "a.png")
    assert legends == [["smollm2-135m"]]


def test_metric_values_are_the_same_to_the_last_digit(tmp_path: Path) -> None:
    con = connect(tmp_path / "r.duckdb")
    rng = np.random.default_rng(13)
    n = 1_500_000  # many row groups: DuckDB aggregates them in parallel
    con.register("big", pa.table({
        "run_id": ["r"] * n, "probe": rng.choice(["a/x", "a/y"], n), "split": ["test"] * n,
        "instance_id": np.arange(n).astype(str), "prompt_id": np.zeros(n, dtype=np.int32),
        "candidate": ["c"] * n,
        "score": rng.standard_normal(n) * 1e6 + rng.standard_normal(n) * 1e-6}))
    con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, candidate, "
                "score) SELECT * FROM big")
    con.execute("SET threads = 4")
    metric = parse_metric("-- name: mean_score\n-- description: Mean.\n-- tasks: [choice]\n"
                          "-- grain: [probe]\nSELECT probe, avg(score) AS value FROM scores "
                          "GROUP BY probe ORDER BY probe\n", "mean_score.sql")
    values = {tuple(run_metric(con, metric)[1]) for _ in range(6)}
    assert len(values) == 1
    # the connection is now a metric sandbox: one thread for good, its configuration locked
    assert con.execute("SELECT current_setting('threads')").fetchone() == (1,)
    assert con.execute("SELECT current_setting('lock_configuration')").fetchone() == (True,)
    con.close()
