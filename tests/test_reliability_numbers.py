"""Issue 21, point 3: no silent wrong number at the edges.

Endpoints that redirect or answer malformed or huge JSON; the Parquet files and the DuckDB rows
of an export kept in step across a kill; temporary folders of dead reasoner runs; and the
guards of the score cache (request options, a new instance, OntoLAMA's negatives running out).
Every server is on 127.0.0.1 (tests/hostile_http.py). Shards: tests/test_shard.py; the revision
of a local model folder: tests/test_models.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from kg.errors import StoreError
from kg.reason import clean_dead_reason_dirs
from kg.store import LocalStore, QueryLimitError, RemoteStore
from probes.app.run import main
from probes.backends.protocol import CAUSAL_LM
from probes.benchmarks.ontolama.splits import balance
from probes.engine import cache
from probes.engine.export import export, instances_for
from probes.engine.export import main as export_main
from probes.engine.spec import discover, parse_probe
from probes.engine.tasks import Instance, TaskContext, get_task
from tests.hostile_http import serving
from tests.test_run import (
    FakeScorer,
    choice_probe,
    query,
    run,
    setup,
    table,
    tiny_causal_model,
)
from tests.tolerance import approx_logprob

ROOT = Path(__file__).parents[1]
SELECT = "SELECT ?x WHERE { ?x ?p ?o }"
PROBE = ('# name: t/x\n# task: records\n# split: test\n'
         'SELECT ?x WHERE { VALUES ?x { "a" "b" "c" } }\n')


# --- endpoints ----------------------------------------------------------------------------------

def test_redirect_of_a_query_is_refused_not_followed_as_a_get() -> None:
    with serving("redirect") as served, pytest.raises(StoreError) as err:
        RemoteStore(served.url, timeout=5).query(SELECT)
    message = str(err.value)
    assert "answered with a redirect (HTTP 302 Found) to /elsewhere" in message
    assert "\n" not in message
    assert served.paths == ["/query"]  # the other address was never asked


@pytest.mark.parametrize(("kind", "message"), [
    ("no-head", "answered JSON that is not SPARQL 1.1 results: no 'head' object with a 'vars' "
                "list"),
    ("no-type", "answered JSON that is not SPARQL 1.1 results: binding 1 of ?x has no 'type'"),
    ("bindings-dict", "answered JSON that is not SPARQL 1.1 results: 'bindings' is a dict, not "
                      "a list"),
])
def test_malformed_sparql_json_is_one_clear_line(kind: str, message: str) -> None:
    with serving(kind) as served, pytest.raises(StoreError) as err:
        RemoteStore(served.url, timeout=5).query(SELECT)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_response_size_is_bounded() -> None:
    with serving("huge") as served:
        with pytest.raises(QueryLimitError, match="answered more than 1,000,000 bytes; add a "
                           "LIMIT"):
            RemoteStore(served.url, timeout=5, max_bytes=1_000_000).query(SELECT)
        rows = RemoteStore(served.url, timeout=5).query(SELECT)  # under the default bound
    assert len(rows) == 3000 and rows[0]["x"] == "a" * 1000


@pytest.mark.parametrize("kind", ["redirect", "no-type"])
def test_export_from_a_bad_endpoint_keeps_the_stored_rows(kind: str, tmp_path: Path,
                                                           capsys: Any) -> None:
    (tmp_path / "p.rq").write_text(PROBE)
    results = tmp_path / "r.duckdb"
    export(discover([tmp_path], include_default=False), LocalStore.in_memory(), results, None,
           progress=False)
    before = query(results, "SELECT * FROM instances ORDER BY instance_id")
    assert len(before) == 3
    with serving(kind) as served:
        code = export_main(["--queries", str(tmp_path), "--only-extra", "--endpoint",
                            served.url, "--timeout", "5", "--results", str(results),
                            "--no-parquet", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert query(results, "SELECT * FROM instances ORDER BY instance_id") == before


# --- temporary folders of dead reasoner runs ----------------------------------------------------

def test_reason_folders_of_killed_builds_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    # a process that dies by SIGKILL inside reason_dir, as a build killed while HermiT runs
    code = ("import os, signal\nfrom kg.reason import reason_dir\n"
            "with reason_dir() as d:\n"
            "    open(os.path.join(d, 'pizza.nt'), 'w').write('x')\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    child = subprocess.Popen([sys.executable, "-c", code], env={
        **os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert child.wait() == -signal.SIGKILL
    dead = list(tmp_path.glob("kgprobe-reason-*"))
    assert len(dead) == 1 and (dead[0] / "pizza.nt").exists()
    assert dead[0].name.startswith(f"kgprobe-reason-{child.pid}-")
    alive = tmp_path / f"kgprobe-reason-{os.getpid()}-live"
    legacy = tmp_path / "kgprobe-reason-ab12_x"  # an older kgprobe's name: no process id
    for folder in (alive, legacy):
        folder.mkdir()
    assert clean_dead_reason_dirs(tmp_path) == dead
    assert not dead[0].exists() and alive.is_dir() and legacy.is_dir()


# --- Parquet and DuckDB in step -----------------------------------------------------------------

KILLED_EXPORT = """
import os, signal, sys
from pathlib import Path
import probes.engine.export as ex
from kg.store import LocalStore
from probes.engine.spec import discover

def killed(*args, **kwargs):  # after the DuckDB commit, before the first Parquet rename
    os.kill(os.getpid(), signal.SIGKILL)

ex.publish_parquet = killed
queries, results, out = map(Path, sys.argv[1:4])
ex.export(discover([queries], include_default=False), LocalStore.in_memory(), results, out,
          progress=False)
"""


def _values(n: int, name: str = "t/x") -> str:
    values = " ".join(f'"v{i}"' for i in range(n))
    return (f"# name: {name}\n# task: records\n# split: test\n"
            f"SELECT ?x WHERE {{ VALUES ?x {{ {values} }} }}\n")


def _killed_export(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Export t/x with 3 rows, then again with 5 rows in a process killed between the DuckDB
    commit and the Parquet rename: 5 rows in DuckDB, 3 in Parquet, a staged file left."""
    queries, out, results = tmp_path / "q", tmp_path / "exports", tmp_path / "r.duckdb"
    queries.mkdir()
    (queries / "x.rq").write_text(_values(3))
    export(discover([queries], include_default=False), LocalStore.in_memory(), results, out,
           progress=False)
    (queries / "x.rq").write_text(_values(5))
    child = subprocess.Popen([sys.executable, "-c", KILLED_EXPORT, str(queries), str(results),
                              str(out)], env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.wait() == -signal.SIGKILL
    assert query(results, "SELECT count(*) FROM instances") == [(5,)]
    assert pl.read_parquet(out / "t/x/test.parquet").height == 3
    assert [p.name for p in (out / "t/x").glob("*.tmp")] == [f"test.parquet.{child.pid}.tmp"]
    return queries, out, results


def _in_step(out: Path, results: Path) -> None:
    """The Parquet file holds exactly the instances DuckDB holds, and nothing staged is left."""
    parquet = pl.read_parquet(out / "t/x/test.parquet")
    assert sorted(parquet["instance_id"]) == [r[0] for r in query(
        results, "SELECT instance_id FROM instances WHERE probe = 't/x' ORDER BY 1")]
    assert sorted(parquet["target"].to_list(), key=str) == [None] * 5
    assert sorted(json.loads(f)["x"] for f in parquet["fields"]) == [f"v{i}" for i in range(5)]
    assert list(out.rglob("*.tmp")) == []


def test_next_export_sets_parquet_right_after_a_kill(tmp_path: Path, capsys: Any,
                                                     tiny_store_path: Path) -> None:
    queries, out, results = _killed_export(tmp_path)
    (queries / "y.rq").write_text(_values(2, "t/y"))
    again = ["--queries", str(queries), "--only-extra", "-p", "t/y", "--results", str(results),
             "--out", str(out), "--store", str(tiny_store_path), "--quiet"]
    assert export_main(again) == 0
    err = capsys.readouterr().err
    assert "removed 1 staged file(s)" in err
    assert "the Parquet files of probe 't/x'" in err and "rewrote them" in err and "(5 rows)" in err
    _in_step(out, results)
    assert query(results, "SELECT count(*) FROM instances WHERE probe = 't/x'") == [(5,)]
    # in step now: the command after says nothing
    assert export_main(again) == 0
    assert "note:" not in capsys.readouterr().err


def test_next_run_sets_parquet_right_and_leaves_other_files_alone(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    queries, out, results = _killed_export(tmp_path)
    other = tmp_path / "other.duckdb"  # another results file's export into the same folder
    (queries / "z.rq").write_text(choice_probe(name="t/z"))
    export(discover([queries], ["t/z"], include_default=False), LocalStore.in_memory(), other,
           out, progress=False)
    (queries / "c.rq").write_text(choice_probe(name="t/c"))
    export(discover([queries], ["t/c"], include_default=False), LocalStore.in_memory(), results,
           None, progress=False)
    z_before = (out / "t/z/test.parquet").read_bytes()
    monkeypatch.setenv("KGPROBE_EXPORTS", str(out))
    assert run(queries, results, FakeScorer(), "-p", "t/c") == 0
    assert "rewrote them from the results file (5 rows)" in capsys.readouterr().err
    _in_step(out, results)
    assert (out / "t/z/test.parquet").read_bytes() == z_before


# --- guards of the score cache and of the builders (found missing by mutation testing) ----------

RELATUM = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
           '# prompts: ["[DET] [W] is a kind of [DET] [V]."]\n{params}'
           'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") } }\n')


def test_one_prompt_under_other_request_options_never_shares_a_cache_entry() -> None:
    """k, the vocabulary and the a/an mixing weights each change the answer, so each makes its
    own cache key for the very same prompt text."""
    variants = {"base": "", "k": "# params: {top_k: 3}\n",
                "vocab": "# params: {vocab: words}\n",
                "mix": '# params: {det_weights: {"a": 1, "an": 1}}\n'}
    inst = Instance("t/rel", "test", "i1", "owl", ["bird"], [], {})
    requests = {}
    for name, params in variants.items():
        spec = parse_probe(RELATUM.replace("{params}", params), "rel.rq").spec
        (item,) = get_task("relatum").items(inst, spec, TaskContext(CAUSAL_LM, 10))
        (requests[name],) = item.requests
    assert {r.args for r in requests.values()} == {("An owl is a kind of a",
                                                    "An owl is a kind of an")}
    assert dict(requests["k"].options)["k"] == 3 and dict(requests["base"].options)["k"] == 10
    assert dict(requests["mix"].options)["mix"] == (0.5, 0.5)
    keys = {name: cache.request_key("m", "r", {"dtype": "float32"}, r)
            for name, r in requests.items()}
    assert len(set(keys.values())) == len(variants), keys


def test_a_smaller_top_k_is_scored_not_cut_from_the_cache(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, RELATUM.replace("{params}", ""))
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/rel", "--top-k", "3") == 0
    again = FakeScorer(kind="masked")
    assert run(qdir, results, again, "-p", "t/rel", "--top-k", "2") == 0
    assert again.calls == [("topk", 2)]  # scored again: the prompt's a and an renderings
    # two runs, each with its own answers: 3 ranks and 2 ranks
    assert query(results, "SELECT count(*), max(rank) FROM responses GROUP BY run_id "
                 "ORDER BY 1") == [(2, 2), (3, 3)]


def test_a_finished_run_plus_one_new_instance_loads_the_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import probes.engine.models

    monkeypatch.setattr(probes.engine.models, "resolve", lambda name, **kw: SimpleNamespace(
        revision=FakeScorer.revision))
    qdir, results = setup(tmp_path, choice_probe())
    argv = ["--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
            "--model", "fake/model", "-p", "t/choice"]
    loads: list[FakeScorer] = []

    def loading(*args: Any, **kwargs: Any) -> FakeScorer:
        loads.append(FakeScorer())
        return loads[-1]

    assert main(argv, scorer_factory=loading) == 0
    assert main(argv, scorer_factory=loading) == 0
    assert len(loads) == 1  # all cached: the recorded stand-in, no model
    rows = ('("owl" "bird" "tree") ("owl" "bird" "apple") ("cat" "animal" "tree") '
            '("cat" "animal" "object") ("emu" "bird" "apple") ("emu" "bird" "thing") '
            '("ant" "insect" "tree") ("ant" "insect" "apple")')
    (qdir / "p0.rq").write_text(choice_probe(rows=rows))
    export(discover([qdir], include_default=False), LocalStore.in_memory(), results, None,
           progress=False)
    assert main(argv, scorer_factory=loading) == 0
    assert len(loads) == 2  # one new instance: the model is loaded ...
    # ... and scores only it: (gold + 2 distractors) x 2 prompts
    assert sum(n for _, n in loads[1].calls) == 3 * 2
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    fresh_q, fresh_results = setup(fresh, choice_probe(rows=rows))
    assert run(fresh_q, fresh_results, FakeScorer(), "-p", "t/choice") == 0
    assert table(results, "scores") == table(fresh_results, "scores")


def test_ontolama_balance_when_a_kind_of_negative_runs_out() -> None:
    """4 positives, negatives [soft, hard]: each kind's quota is 4 // 2 = 2, but only 1 hard
    negative exists, so soft makes up the difference with its next one by ?o: soft 3 (orders
    1, 2, 3 of 5 candidates), hard 1, and negatives = positives."""
    values = " ".join([*(f'({i} "pos" 0)' for i in range(1, 5)),
                       '(11 "soft" 5) (12 "soft" 1) (13 "soft" 3) (14 "soft" 2) (15 "soft" 4)',
                       '(21 "hard" 0)'])
    header = ("# name: d/b\n# task: records\n# split: test\n# id: ?x\n"
              '# builder_params: {balance: {kind: "?k", order: "?o", positive: pos, '
              "negatives: [soft, hard]}}\n")
    probe = parse_probe(header + f"SELECT ?x ?k ?o WHERE {{ VALUES (?x ?k ?o) {{ {values} }} }}\n")
    out, counts = balance(instances_for(probe, LocalStore.in_memory()), probe)
    assert counts == {"pos": 4, "soft": 3, "hard": 1}
    assert sorted(json.loads(f)["x"] for f in out["fields"]) == [1, 2, 3, 4, 12, 13, 14, 21]
    # both kinds short: all there is, no row twice, and no more than there is
    values = " ".join([*(f'({i} "pos" 0)' for i in range(1, 5)), '(11 "soft" 1) (21 "hard" 0)'])
    probe = parse_probe(header + f"SELECT ?x ?k ?o WHERE {{ VALUES (?x ?k ?o) {{ {values} }} }}\n")
    out, counts = balance(instances_for(probe, LocalStore.in_memory()), probe)
    assert counts == {"pos": 4, "soft": 1, "hard": 1}
    assert sorted(json.loads(f)["x"] for f in out["fields"]) == [1, 2, 3, 4, 11, 21]


@pytest.mark.slow  # a real tiny GPT-2, loaded three times (~5-15 s)
def test_an_edited_tokenizer_is_scored_anew_not_answered_from_the_cache(tmp_path: Path) -> None:
    """A local model folder whose tokenizer.json changed (its merges removed: every word is
    split into bytes) gets the scores a fresh results file gets with the edited folder, not the
    cached scores of the old tokenizer."""
    folder = tiny_causal_model(tmp_path / "model")
    qdir, results = setup(tmp_path, choice_probe())
    argv = ["--model", str(folder), "--results", str(results), "--queries", str(qdir),
            "--only-extra", "--quiet", "--device", "cpu", "-p", "t/choice"]
    assert main(argv) == 0
    old = table(results, "scores")
    tok = json.loads((folder / "tokenizer.json").read_text())
    assert tok["model"]["merges"]
    tok["model"]["merges"] = []
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    assert main(argv) == 0
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    fresh_q, fresh_results = setup(fresh, choice_probe())
    assert main([*argv[:2], "--results", str(fresh_results), "--queries", str(fresh_q),
                 *argv[6:]]) == 0
    cols = "s.instance_id, s.prompt_id, s.candidate, s.n_tokens, s.score"
    new_rows = query(results, f"SELECT {cols} FROM scores s JOIN runs r USING (run_id) "
                     "WHERE r.revision = ? ORDER BY ALL", [_revision(folder)])
    want = query(fresh_results, f"SELECT {cols} FROM scores s ORDER BY ALL")
    assert [r[:4] for r in new_rows] == [r[:4] for r in want] and len(want) == len(old) == 18
    assert [r[4] for r in new_rows] == [approx_logprob(r[4]) for r in want]
    # the byte-split prompts have more tokens: the old cached numbers would have been wrong
    assert sum(r[3] for r in new_rows) > sum(r[8] for r in old)


def _revision(folder: Path) -> str:
    from probes.engine.models import resolve as resolve_model

    rev = resolve_model(str(folder)).revision
    assert rev is not None
    return rev
