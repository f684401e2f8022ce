"""eval.report's run labels: two different runs of one model and probe never share a label in a
table (a plain run and an ``--apply-chat-template`` run; a full, a ``--limit`` and a
``--sample`` run)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from eval.report import build_report
from tests.test_chat import RecordingScorer
from tests.test_run import choice_probe, run, setup


def labels(results: Path) -> list[tuple[str, str]]:
    """(model, run label) of every row of choice_accuracy, sorted."""
    with duckdb.connect(str(results), read_only=True) as con:
        report = build_report(con)
    (acc,) = [r for r in report.results if r.metric.name == "choice_accuracy"]
    return sorted((row["model"], row["run"]) for row in acc.rows)


def test_chat_template_run_is_labelled_apart_from_the_plain_run(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, RecordingScorer(), "-p", "t/choice") == 0
    assert run(qdir, results, RecordingScorer(), "-p", "t/choice", "--apply-chat-template") == 0
    got = labels(results)
    assert len(got) == 2 and got[0][0] == got[1][0] == "fake/model"
    texts = [label.split(" ", 1)[1] for _, label in got]  # without the run id
    assert sorted(t.rsplit(", ", 1)[0] for t in texts) == [
        "(all instances", "(all instances, chat template"]


def test_limit_and_sample_runs_say_so(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, RecordingScorer(), "-p", "t/choice") == 0
    assert run(qdir, results, RecordingScorer(), "-p", "t/choice", "--limit", "2") == 0
    assert run(qdir, results, RecordingScorer(), "-p", "t/choice", "--sample", "2") == 0
    kinds = sorted(label.split("(")[1].split(",")[0] for _, label in labels(results))
    assert kinds == ["all instances", "limit 2", "sample 2"]
