"""``probes.engine.run`` when things go wrong: failed and interrupted runs, re-exports, a locked
file, a SIGKILL half way and the resume.

The model is the FakeScorer of test_run, whose scores are computed from the request strings, so
a resumed run can be compared row by row with an uninterrupted one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.test_run import (
    ROOT,
    FakeScore,
    FakeScorer,
    big_probe,
    choice_probe,
    fake_value,
    query,
    run,
    setup,
    table,
)


def test_failed_run_is_marked_failed_and_keeps_committed_chunks(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())

    class Broken(FakeScorer):
        def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
            if len(self.calls) == 2:
                raise RuntimeError("device lost")
            return super().loglik(requests)

    # an instance has 2 prompts x 3 candidates = 6 requests; chunks end between instances once
    # they hold >= 5 requests, so the two calls before the failure committed 2 x 6 requests
    with pytest.raises(RuntimeError):
        run(qdir, results, Broken(), "-p", "t/choice", "--chunk-size", "5")
    assert query(results, "SELECT status FROM runs") == [("failed",)]
    assert query(results, "SELECT count(*) FROM score_cache") == [(12,)]
    assert query(results, "SELECT count(*) FROM scores") == [(12,)]
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/choice") == 0
    assert sum(n for _, n in again.calls) == 6


def test_model_error_mid_run_is_a_clear_error_and_marks_the_run_failed(
        tmp_path: Path, capsys: Any) -> None:
    from probes.engine.models import PromptTooLongError

    qdir, results = setup(tmp_path, choice_probe())

    class TooLong(FakeScorer):
        def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
            raise PromptTooLongError("prompt #0 has 900 tokens but the model accepts 512")

    assert run(qdir, results, TooLong(), "-p", "t/choice") == 2
    assert "900 tokens" in capsys.readouterr().err
    assert query(results, "SELECT status FROM runs") == [("failed",)]


def test_missing_operation_fails_before_any_work(tmp_path: Path, capsys: Any) -> None:
    from probes.engine.errors import ModelError

    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n"
             '# prompts: ["[W] is [V]."]\nSELECT ?w WHERE { VALUES ?w { "owl" } }\n')
    qdir, results = setup(tmp_path, probe)

    class Headless(FakeScorer):
        def require(self, *ops: str) -> None:
            if "topk" in ops:
                raise ModelError("model 'x' has no masked-LM head; it supports: features")

    scorer = Headless(kind="masked")
    assert run(qdir, results, scorer, "-p", "t/rel") == 2
    assert "no masked-LM head" in capsys.readouterr().err
    assert scorer.calls == [] and query(results, "SELECT count(*) FROM runs") == [(0,)]


def test_reexport_with_fewer_instances_drops_their_rows(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    fewer = choice_probe(rows='("owl" "bird" "tree")')
    setup(tmp_path, fewer)
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    assert query(results, "SELECT count(*) FROM scores") == [(4,)]


def test_reexport_with_changed_fields_replaces_the_rows(tmp_path: Path) -> None:
    def probe(where: str) -> str:
        return ("# name: t/f\n# task: choice\n# split: test\n# target: ?w\n# gold: ?g\n"
                '# candidates: ?g\n# id: ?w\n'
                '# prompts: ["[W] lives in [PLACE], it is [DET] [V]."]\n'
                "SELECT ?w ?g ?place WHERE { VALUES (?w ?g ?place) { "
                f'("owl" "bird" "{where}") }} }}\n')

    qdir, results = setup(tmp_path, probe("woods"))
    assert run(qdir, results, FakeScorer(), "-p", "t/f") == 0
    setup(tmp_path, probe("barns"))
    assert run(qdir, results, FakeScorer(), "-p", "t/f") == 0
    ctx = "owl lives in barns, it is a"
    assert query(results, "SELECT prompt, score FROM scores") == [
        (ctx + " bird.", -fake_value(ctx + "| bird."))]


# --- the results file locked, a run killed ----------------------------------------------------

def test_locked_results_file_is_a_clear_error_and_nothing_is_lost(tmp_path: Path,
                                                                  capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('ready', flush=True); time.sleep(60)", str(results)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        scorer = FakeScorer()
        assert run(qdir, results, scorer, "-p", "t/choice") == 2
        err = capsys.readouterr().err
        assert "locked" in err and str(holder.pid) in err
        assert scorer.calls == []
    finally:
        holder.kill()
        holder.wait()
    assert query(results, "SELECT count(*) FROM instances") == [(3,)]
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0


def test_sigkill_half_way_then_resume_gives_the_same_rows(tmp_path: Path) -> None:
    # the uninterrupted reference run, in its own results file
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    qdir_ref, results_ref = setup(ref_dir, big_probe())
    assert run(qdir_ref, results_ref, FakeScorer(), "-p", "t/big") == 0
    total = query(results_ref, "SELECT count(*) FROM scores")[0][0]
    assert total == 30 * 5

    qdir, results = setup(tmp_path, big_probe())
    log = tmp_path / "calls.log"
    child = subprocess.Popen(
        [sys.executable, "-c", "import importlib.util, sys; "
         "s = importlib.util.spec_from_file_location('kgp_test_run', sys.argv[1]); "
         "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
         "sys.exit(m.subprocess_main())", str(ROOT / "tests" / "test_run.py"), "--",
         "--model", "fake/model",
         "--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
         "-p", "t/big", "--chunk-size", "10"],
        env={**os.environ, "FAKE_DELAY": "0.2", "FAKE_LOG": str(log)}, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # the 4th call has started, so chunks 1-3 are committed
        if log.exists() and len(log.read_text().splitlines()) >= 4:
            break
        assert child.poll() is None, "the child run ended before it could be killed"
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL

    cached = query(results, "SELECT count(*) FROM score_cache")[0][0]
    partial = query(results, "SELECT count(*) FROM scores")[0][0]
    assert 30 <= cached < total and partial == cached
    assert query(results, "SELECT status FROM runs") == [("running",)]

    resumed = FakeScorer()
    assert run(qdir, results, resumed, "-p", "t/big", "--chunk-size", "10") == 0
    assert sum(n for _, n in resumed.calls) == total - cached
    assert table(results, "scores") == table(results_ref, "scores")
    assert table(results, "score_cache") == table(results_ref, "score_cache")
    dupes = query(results, "SELECT count(*) - count(DISTINCT (run_id, split, instance_id, "
                  "prompt_id, candidate)) FROM scores")
    assert dupes == [(0,)]
    assert query(results, "SELECT status FROM runs") == [("done",)]
