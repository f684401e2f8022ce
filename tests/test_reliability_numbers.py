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
from typing import Any

import polars as pl
import pytest

from kg.errors import StoreError
from kg.reason import clean_dead_reason_dirs
from kg.store import LocalStore, QueryLimitError, RemoteStore
from probes.export import export
from probes.export import main as export_main
from probes.spec import discover
from tests.hostile_http import serving
from tests.test_run import FakeScorer, choice_probe, query, run

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
import probes.export as ex
from kg.store import LocalStore
from probes.spec import discover

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
