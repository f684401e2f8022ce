"""Issue 21, point 3: no silent wrong number at the edges.

Endpoints that redirect or answer malformed or huge JSON; the Parquet files and the DuckDB rows
of an export kept in step across a kill; temporary folders of dead reasoner runs; and the
guards of the score cache (request options, a new instance, OntoLAMA's negatives running out).
Every server is on 127.0.0.1 (tests/hostile_http.py). Shards: tests/test_shard.py; the revision
of a local model folder: tests/test_models.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kg.errors import StoreError
from kg.reason import clean_dead_reason_dirs
from kg.store import LocalStore, QueryLimitError, RemoteStore
from probes.export import export
from probes.export import main as export_main
from probes.spec import discover
from tests.hostile_http import serving
from tests.test_run import query

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
