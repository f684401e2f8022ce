"""scripts/compare_results.py: two results files that differ only in run ids and timestamps
compare equal; a changed score is reported with its size."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import pytest

from probes.results import connect, transaction
from probes.results.writers import (
    ResponseRow,
    Run,
    ScoreRow,
    insert_run,
    write_responses,
    write_scores,
)

ROOT = Path(__file__).resolve().parent.parent


def results_file(path: Path, run_id: str, when: datetime, score: float,
                 config: dict[str, Any] | None = None) -> None:
    con = connect(path)
    con.execute("INSERT INTO instances VALUES ('p', 'test', 'i1', 'x', ['a'], ['a', 'b'], "
                "'{}', ?)", [when])
    with transaction(con):
        insert_run(con, Run(run_id=run_id, model="m", probe="p", task="choice", status="done",
                            started_at=when, finished_at=when, wall_s=when.second,
                            config=config))
        write_scores(con, [ScoreRow(run_id, "p", "test", "i1", 0, "a", "a", "x a", score, 1),
                           ScoreRow(run_id, "p", "test", "i1", 0, "b", "b", "x b", -2.0, 1)])
    con.close()


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_results",
                                                  ROOT / "scripts" / "compare_results.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def main(*argv: str) -> Done:
    """The script's main in this process (a fresh interpreter per call cost more than the
    comparison), with its exit status and output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = SCRIPT.main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    return Done(code, out.getvalue(), err.getvalue())


def compare(a: Path, b: Path, *options: str) -> Done:
    """Compare the tables and eval/metrics' files only, unless ``options`` name the metrics
    (the other folders' metrics read the same rows: they would only cost time here)."""
    metrics = () if "--metrics" in options else ("--metrics", "metrics")
    return main(str(a), str(b), *metrics, *options)


def test_same_rows_under_other_run_ids_and_times_compare_equal(tmp_path: Path) -> None:
    results_file(tmp_path / "a.duckdb", "r1", datetime(2025, 1, 1, 0, 0, 1), -1.0)
    results_file(tmp_path / "b.duckdb", "r2", datetime(2026, 2, 2, 0, 0, 9), -1.0)
    got = compare(tmp_path / "a.duckdb", tmp_path / "b.duckdb")
    assert got.returncode == 0, got.stdout + got.stderr
    assert "largest difference: 0 " in got.stdout


def test_the_export_record_is_not_what_a_run_ran(tmp_path: Path) -> None:
    # runs.config.export records when the instances were exported and the query's hash (a
    # reworded query that returns the same instances); the instances are compared row by row
    when = datetime(2025, 1, 1)
    for name, query_hash, k in (("a", "q1", 1), ("b", "q2", 1), ("c", "q1", 2)):
        results_file(tmp_path / f"{name}.duckdb", "r1", when, -1.0,
                     {"k": k, "export": {"query_hash": query_hash,
                                         "exported_at": f"2026-01-0{k} 00:00:00"}})
    a, b, c = (tmp_path / f"{n}.duckdb" for n in "abc")
    assert compare(a, b, "--metrics", "none").returncode == 0
    got = compare(a, c, "--metrics", "none")  # another setting is another run: no row matches
    assert got.returncode == 1 and "scores: inf" in got.stdout


def test_a_changed_score_is_the_largest_difference(tmp_path: Path) -> None:
    results_file(tmp_path / "a.duckdb", "r1", datetime(2025, 1, 1), -1.0)
    results_file(tmp_path / "b.duckdb", "r1", datetime(2025, 1, 1), -1.25)
    got = compare(tmp_path / "a.duckdb", tmp_path / "b.duckdb")
    assert got.returncode == 1
    # scores differ by 0.25; choice_mrr / accuracy agree (a still beats b at -2)
    assert "scores: 0.25" in got.stdout and "largest difference: 0.25 " in got.stdout


def test_an_ignored_column_is_left_out_and_only_that_one(tmp_path: Path) -> None:
    # the same ranked answer, once without the prompt column's value (a file from before
    # responses.prompt existed) and once with it
    for name, prompt, prob in (("a", None, 0.5), ("b", "A dog is a kind of", 0.5),
                               ("c", "A dog is a kind of", 0.25)):
        results_file(tmp_path / f"{name}.duckdb", "r1", datetime(2025, 1, 1), -1.0)
        con = connect(tmp_path / f"{name}.duckdb")
        write_responses(con, [ResponseRow("r1", "p", "test", "i1", 0, 1, "animal", prob,
                                          prompt)])
        con.close()
    a, b, c = (tmp_path / f"{n}.duckdb" for n in "abc")
    assert compare(a, b).returncode == 1  # the prompt differs: the rows do not match
    same = compare(a, b, "--ignore", "responses.prompt")
    assert same.returncode == 0 and "largest difference: 0 " in same.stdout
    other = compare(a, c, "--ignore", "responses.prompt")  # 0.5 against 0.25 still counts
    assert other.returncode == 1 and "responses: 0.25" in other.stdout
    bad = compare(a, b, "--ignore", "prompt")
    assert bad.returncode == 2 and "TABLE.COLUMN" in bad.stderr


def test_materialize_stores_metric_rows_and_leaves_the_tables_as_they_were(
        tmp_path: Path) -> None:
    a = tmp_path / "a.duckdb"
    results_file(a, "r1", datetime(2025, 1, 1), -1.0)
    got = main("--materialize", "--metrics", "metrics", str(a))
    assert got.returncode == 0, got.stderr
    con = connect(a)
    # one instance, gold "a" scored -1.0 against "b" at -2.0: right, accuracy 1
    assert con.execute('SELECT value FROM "metric__choice_accuracy"').fetchall() == [(1.0,)]
    # the metrics ran on a sorted copy: the file's own tables keep their primary keys
    with pytest.raises(duckdb.ConstraintException):
        write_scores(con, [ScoreRow("r1", "p", "test", "i1", 0, "a", "a", "x a", -1.0, 1)])
    con.close()
