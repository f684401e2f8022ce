"""Calibration metrics (eval/metrics/brier_score.sql, expected_calibration_error.sql,
reliability_bins.sql; docs/report.md), worked out by hand on a small choice run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from eval.calibration_plot import RELIABILITY
from eval.sqlfile import default_metric_dir, load_metric, run_metric
from probes.results import connect
from probes.results.writers import Run, insert_run


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """5 choice instances, gold g vs o: g scores -1 against -2 on i1-i3 (right), -3 against
    -2 on i4, i5 (wrong); under two prompts, the second shifting both scores by the same
    amount (so the mean over prompts keeps the differences)."""
    path = tmp_path / "r.duckdb"
    con = connect(path)
    insert_run(con, Run(run_id="r1", model="m1", probe="t/c", task="choice", status="done"))
    for i, right in enumerate([True, True, True, False, False], start=1):
        con.execute("INSERT INTO instances VALUES ('t/c', 'test', ?, NULL, ['g'], ['g', 'o'], "
                    "'{}', now())", [f"i{i}"])
        for prompt, shift in ((0, 0.0), (1, -4.0)):
            for cand, score in (("g", -1.0 if right else -3.0), ("o", -2.0)):
                con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                            "candidate, label, score) VALUES ('r1', 't/c', 'test', ?, ?, ?, ?, "
                            "?)", [f"i{i}", prompt, cand, cand, score + shift])
    con.close()
    return path


def rows(path: Path, name: str) -> list[dict]:
    file = RELIABILITY if name == "reliability_bins" else default_metric_dir() / f"{name}.sql"
    con = connect(path, read_only=True)
    try:
        cols, found = run_metric(con, load_metric(file))
    finally:
        con.close()
    return [dict(zip(cols, r, strict=True)) for r in found]


# Two answers one log-unit apart: the better one's probability is 1 / (1 + e^-1).
P = 1 / (1 + math.exp(-1.0))


def test_brier_score(results: Path) -> None:
    # right instances: (P - 1)^2 + ((1 - P) - 0)^2; wrong ones: ((1 - P) - 1)^2 + (P - 0)^2
    right, wrong = 2 * (1 - P) ** 2, 2 * P ** 2
    (row,) = rows(results, "brier_score")
    assert row["value"] == pytest.approx((3 * right + 2 * wrong) / 5, rel=1e-9)
    assert row["n"] == 5
    # the bootstrap resamples 3 right and 2 wrong instances: within the extremes, not equal
    assert right <= row["ci_low"] < row["value"] < row["ci_high"] <= wrong


def test_expected_calibration_error_and_its_bins(results: Path) -> None:
    # every top answer has confidence P = 0.731: one bin, (0.7, 0.8], accuracy 3/5
    (row,) = rows(results, "expected_calibration_error")
    assert row["value"] == pytest.approx(abs(3 / 5 - P), rel=1e-9)
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    (b,) = rows(results, "reliability_bins")
    assert (b["bin"], b["n"]) == (8, 5)
    assert (b["value"], b["confidence"]) == (pytest.approx(0.6), pytest.approx(P, rel=1e-9))


def test_the_intervals_are_the_same_on_every_call(results: Path) -> None:
    assert rows(results, "brier_score") == rows(results, "brier_score")
