"""Data-parallel runs (probes.engine.shard): sharded results equal unsharded results.

The reference is always an unsharded run of the same probes in its own results file. A sharded
run (``--shard i/n`` + ``merge``, or ``torchrun`` with 2 CPU processes on gloo) must leave the
same ``scores`` and ``responses`` rows and the same metric rows (eval.report); a shard killed
with SIGKILL must resume like a single process. The torchrun test is marked slow.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.report import build_report
from kg.store import LocalStore
from probes.app.run import main
from probes.engine.errors import ProbeError
from probes.engine.export import export
from probes.engine.shard import Shard, merge, shard_path
from probes.engine.spec import discover
from tests.test_run import (
    FakeScorer,
    big_probe,
    choice_probe,
    query,
    run,
    setup,
    table,
    tiny_causal_model,
)
from tests.tolerance import approx_logprob

ROOT = Path(__file__).parents[1]
TEST_RUN = ROOT / "tests" / "test_run.py"
RELATUM = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
           '# prompts: ["[DET] [W] is a kind of [V]."]\n'
           'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") ("cat" "animal") '
           '("emu" "bird") ("oak" "tree") ("ant" "insect") } }\n')


def metric_rows(results: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every metric row of a results file, comparable across files: the display label ``run``
    (it carries the run's finish time) is left out, and floats are rounded to 12 significant
    digits. The scores are identical; a mean over them may differ in the last binary digit,
    because merged rows sit in another physical order than an unsharded run's (DuckDB adds them
    in table order)."""
    con = duckdb.connect(str(results), read_only=True)
    try:
        report = build_report(con)
    finally:
        con.close()

    def comparable(row: dict[str, Any], digits: int) -> dict[str, Any]:
        return {k: float(f"{v:.{digits}g}") if isinstance(v, float) else v
                for k, v in row.items() if k != "run"}

    # The calibration metrics are continuous in the scores (softmax probabilities), which a
    # sharded run reproduces to approx_logprob (tests/tolerance.py: 5 significant digits),
    # not bit for bit: they are compared to 4 digits; the others to 12.
    return sorted((r.metric.name, sorted((comparable(x, 4 if r.metric.name in CALIBRATION
                                                     else 12) for x in r.rows), key=repr))
                  for r in report.results)


CALIBRATION = ("brier_score", "expected_calibration_error", "reliability_bins")


def reference(tmp_path: Path, *probes: str, scorer: FakeScorer | None = None) -> Path:
    ref = tmp_path / "ref"
    ref.mkdir()
    qdir, results = setup(ref, *probes)
    assert run(qdir, results, scorer or FakeScorer(), "-p", "t/*") == 0
    return results


def test_shards_then_merge_equal_the_unsharded_run(tmp_path: Path) -> None:
    probes = (choice_probe(), RELATUM, big_probe())
    ref = reference(tmp_path, *probes)
    qdir, results = setup(tmp_path, *probes)
    calls = []
    for i in range(3):
        scorer = FakeScorer(kind="causal")
        assert run(qdir, results, scorer, "-p", "t/*", "--shard", f"{i}/3") == 0
        calls.append(sum(n for _, n in scorer.calls))
        assert shard_path(results, Shard(i, 3)).exists()
    assert query(results, "SELECT count(*) FROM scores") == [(0,)]  # nothing merged yet
    assert sum(calls) == query(ref, "SELECT sum(requests) FROM runs")[0][0]  # no overlap here
    assert main(["merge", "--shards", "3", "--results", str(results)]) == 0
    for name in ("scores", "responses"):
        assert table(results, name) == table(ref, name), name
    assert table(results, "score_cache") == table(ref, "score_cache")
    assert metric_rows(results) == metric_rows(ref)
    # no probe here sets pmi_context, has a generate run or format, two prompts, or train and
    # dev splits: the metrics that need those have no rows; every other one has
    needs = ("generate_", "format_", "prompt_consistency", "shortcut_shift")
    empty = [name for name, rows in metric_rows(ref) if not rows]
    assert len(metric_rows(ref)) >= 2 and [
        n for n in empty if not n.endswith("_pmi") and not n.startswith(needs)] == []
    assert query(results, "SELECT run_id, status FROM runs ORDER BY 1") == query(
        ref, "SELECT run_id, status FROM runs ORDER BY 1")
    assert not any(shard_path(results, Shard(i, 3)).exists() for i in range(3))
    # the merged cache makes an unsharded re-run free
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/*") == 0
    assert again.calls == []


def test_merge_refuses_missing_or_unfinished_shards(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, big_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "0/2") == 0
    assert main(["merge", "--shards", "2", "--results", str(results)]) == 2
    assert "missing shard file" in capsys.readouterr().err
    con = duckdb.connect(str(shard_path(results, Shard(0, 2))))
    con.execute("UPDATE runs SET status = 'running'")
    con.close()
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "1/2") == 0
    with pytest.raises(Exception, match="not every shard has finished"):
        merge(results, 2)
    assert query(results, "SELECT count(*) FROM scores") == [(0,)]  # nothing half-merged


def test_bad_shard_spec_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--shard", "2/2") == 2
    assert "0..N-1" in capsys.readouterr().err
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--shard", "4/5") == 2
    assert "fewer instances than the 5 shards" in capsys.readouterr().err


def test_killed_shard_resumes_like_a_single_process(tmp_path: Path) -> None:
    ref = reference(tmp_path, big_probe())
    qdir, results = setup(tmp_path, big_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "1/2") == 0
    log = tmp_path / "calls.log"
    child = subprocess.Popen(
        [sys.executable, "-c", "import importlib.util, sys; "
         "s = importlib.util.spec_from_file_location('kgp_test_run', sys.argv[1]); "
         "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
         "sys.exit(m.subprocess_main())", str(TEST_RUN), "--", "--model", "fake/model",
         "--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
         "-p", "t/big", "--chunk-size", "10", "--shard", "0/2"],
        env={**os.environ, "FAKE_DELAY": "0.2", "FAKE_LOG": str(log),
             "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 3:
            break
        assert child.poll() is None, "the shard ended before it could be killed"
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    part = shard_path(results, Shard(0, 2))
    done = query(part, "SELECT count(*) FROM score_cache")[0][0]
    assert 0 < done < 75 and query(part, "SELECT status FROM runs") == [("running",)]
    resumed = FakeScorer()
    assert run(qdir, results, resumed, "-p", "t/big", "--chunk-size", "10",
               "--shard", "0/2") == 0
    assert sum(n for _, n in resumed.calls) == 75 - done  # only what the kill lost
    assert main(["merge", "--shards", "2", "--results", str(results)]) == 0
    assert table(results, "scores") == table(ref, "scores")
    assert metric_rows(results) == metric_rows(ref)


@pytest.mark.slow  # two torchrun processes (~12 s); sharding itself: the fast tests above
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_torchrun_two_cpu_processes_equal_one(tmp_path: Path) -> None:
    """torchrun --nproc-per-node 2 (gloo) with a real tiny model: rank 0 merges; the scores
    and metric rows equal a single process's."""
    folder = tiny_causal_model(tmp_path / "tiny-gpt2")
    probes = (choice_probe(), RELATUM)
    common = ["--model", str(folder), "--device", "cpu", "--dtype", "float32", "--threads",
              "1", "--quiet", "--only-extra", "-p", "t/*", "--top-k", "4"]
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    qdir_ref, ref = setup(ref_dir, *probes)
    assert main([*common, "--results", str(ref), "--queries", str(qdir_ref)]) == 0
    qdir, results = setup(tmp_path, *probes)
    with socket_port() as port:
        proc = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
             "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port",
             str(port), "-m", "probes.engine.run", *common, "--results", str(results),
             "--queries", str(qdir)],
            env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                 "HF_HUB_OFFLINE": "1"}, cwd=ROOT, capture_output=True, text=True,
            timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "merged 2 shards" in proc.stdout
    got = dict(((r[:5]), r[5]) for r in query(
        results, "SELECT run_id, split, instance_id, prompt_id, candidate, score FROM scores"))
    want = dict(((r[:5]), r[5]) for r in query(
        ref, "SELECT run_id, split, instance_id, prompt_id, candidate, score FROM scores"))
    assert got.keys() == want.keys() and len(want) == 18
    assert all(got[k] == approx_logprob(want[k]) for k in want)
    resp = "SELECT run_id, instance_id, rank, token FROM responses ORDER BY ALL"
    assert query(results, resp) == query(ref, resp) and len(query(ref, resp)) == 5 * 4
    assert metric_rows(results) == metric_rows(ref)


class socket_port:
    """A free TCP port on 127.0.0.1 (released before the child binds it)."""

    def __enter__(self) -> int:
        from tests.local_server import free_port

        return free_port()

    def __exit__(self, *exc: object) -> None:
        return None


# --- issue 21: a shard never scores or merges a stale export ------------------------------------


def _reexport(qdir: Path, results: Path, text: str) -> None:
    """Rewrite the first probe file and export it again into ``results``."""
    (qdir / "p0.rq").write_text(text)
    export(discover([qdir], include_default=False), LocalStore.in_memory(), results, None,
           progress=False)


def test_shard_refuses_a_probe_edited_since_its_export(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, big_probe())
    before = table(results, "instances")
    (qdir / "p0.rq").write_text(big_probe().replace("WHERE {", "WHERE { # edited\n"))
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "0/2") == 2
    err = capsys.readouterr().err
    assert "changed since its instances were exported" in err and "-p t/big" in err
    assert not shard_path(results, Shard(0, 2)).exists()  # refused before a shard is cut
    assert table(results, "instances") == before  # nothing lost


def test_merge_refuses_shards_cut_from_two_exports(tmp_path: Path, capsys: Any) -> None:
    old = big_probe()
    new_rows = " ".join(f'("v{i}" "g{i}" "c{i}_{j}")' for i in range(30) for j in range(4))
    new = choice_probe(name="t/big", prompts='["[W] is [V]."]', rows=new_rows)
    qdir, results = setup(tmp_path, old)
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "0/2") == 0
    _reexport(qdir, results, new)  # the probe changes between cutting the two shards
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "1/2") == 0
    instances = table(results, "instances")
    capsys.readouterr()
    assert main(["merge", "--shards", "2", "--keep", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    # shard 0 holds 15 instances (w0, w2, ...) of the old export, none of which is left
    assert "shard 0/2 scored 15 instance(s) of t/big that the results file no longer" in err
    assert "Nothing was merged" in err and "shard 1/2" not in err
    assert query(results, "SELECT count(*) FROM scores") == [(0,)]
    assert query(results, "SELECT count(*) FROM runs") == [(0,)]
    assert table(results, "instances") == instances
    # re-cutting shard 0 from the current export gives the unsharded run's numbers
    assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", "0/2") == 0
    assert main(["merge", "--shards", "2", "--results", str(results)]) == 0
    ref = tmp_path / "ref"
    ref.mkdir()
    ref_q, ref_results = setup(ref, new)
    assert run(ref_q, ref_results, FakeScorer(), "-p", "t/big") == 0
    assert table(results, "scores") == table(ref_results, "scores")
    # 30 words x (the gold + 4 distractors) x 1 prompt
    assert query(results, "SELECT count(*) FROM scores")[0][0] == 30 * 5


def test_merge_refuses_when_the_export_grew_after_both_shards(tmp_path: Path) -> None:
    rows = " ".join(f'("w{i}" "g{i}" "c{i}_{j}")' for i in range(31) for j in range(4))
    qdir, results = setup(tmp_path, big_probe())
    for i in range(2):
        assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", f"{i}/2") == 0
    _reexport(qdir, results, choice_probe(name="t/big", prompts='["[W] is [V]."]', rows=rows))
    with pytest.raises(ProbeError, match=r"the shards hold 30 instance\(s\) of t/big, the "
                       r"results file 31"):
        merge(results, 2)
    assert query(results, "SELECT count(*) FROM scores") == [(0,)]


def test_the_run_record_names_the_export_it_scored(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, big_probe())
    for i in range(2):
        assert run(qdir, results, FakeScorer(), "-p", "t/big", "--shard", f"{i}/2") == 0
    assert main(["merge", "--shards", "2", "--results", str(results)]) == 0
    (qhash, exported), = query(results, "SELECT query_hash, exported_at FROM probe_exports")
    (config,), = query(results, "SELECT config FROM runs")
    assert json.loads(config)["export"] == {"query_hash": qhash, "exported_at": str(exported)}
    assert qhash == discover([qdir], include_default=False)[0].instances_hash
