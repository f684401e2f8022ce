"""Issue 13, faults (points 13-16): limits, kg.build, the results file, one-line errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pyoxigraph as ox
import pytest

import kg.build
from kg.build import build
from kg.errors import StoreError
from kg.store import LocalStore, QueryLimitError
from probes.engine.errors import ProbeError, ProbeFileError, ResultsError
from probes.engine.export import QueryLimits, export, instances_for
from probes.engine.export import main as export_main
from probes.engine.spec import parse_probe
from probes.results import connect, diagnose
from tests.test_run import FakeScorer, choice_probe, query, run, setup
from tests.test_store import fake_sources, source  # noqa: F401 (fixture)

ROOT = Path(__file__).parents[1]
HEAD = "# name: t/big\n# task: records\n# split: test\n"


def wide_store(n: int = 300) -> LocalStore:
    store = LocalStore.in_memory()
    g = ox.NamedNode("https://w3id.org/kgprobe/graph/t")
    p = ox.NamedNode("http://e.org/p")
    store.oxigraph.extend(ox.Quad(ox.NamedNode(f"http://e.org/{i}"), p, ox.Literal(str(i)), g)
                          for i in range(n))
    return store


# --- 13. query time and rows --------------------------------------------------------------------

def test_cartesian_product_stops_at_the_query_timeout() -> None:
    # 200^3 = 8 M combinations counted: seconds of work, one row, little memory
    probe = parse_probe(HEAD + "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?x . ?b ?q ?y . "
                        "?c ?r ?z }\n", "big.rq")
    t0 = time.monotonic()
    with pytest.raises(ProbeError) as info:
        instances_for(probe, wide_store(200), QueryLimits(timeout_s=0.5))
    assert time.monotonic() - t0 < 3
    assert "probe 't/big' (big.rq): the query ran longer than 0.5 s" in str(info.value)
    assert "--query-timeout" in str(info.value)


def test_row_limit_names_the_probe_and_the_option(tmp_path: Path) -> None:
    probe = parse_probe(HEAD + "SELECT ?a ?b WHERE { ?a ?p ?x . ?b ?q ?y }\n", "big.rq")
    results = tmp_path / "r.duckdb"
    with pytest.raises(ProbeError, match=r"t/big.*more than 1,000 rows.*--max-rows"):
        export([probe], wide_store(100), results, None, progress=False,
               limits=QueryLimits(max_rows=1000))
    assert query(results, "SELECT count(*) FROM instances") == [(0,)]
    assert wide_store(10).query("SELECT ?a WHERE { ?a ?p ?x }", max_rows=10)  # at the limit


def test_store_query_limits_directly() -> None:
    with pytest.raises(QueryLimitError, match="more than 5 rows"):
        wide_store(10).query("SELECT ?a WHERE { ?a ?p ?x }", max_rows=5)


# --- 14. kg.build -------------------------------------------------------------------------------

def test_lock_and_swap_use_the_resolved_store_path(fake_sources: dict,  # noqa: F811
                                                   tmp_path: Path) -> None:
    fake_sources["alpha"] = source("alpha", items=["a1"])
    real = tmp_path / "disk" / "store"
    build(["alpha"], real, tmp_path, progress=False)
    link = tmp_path / "link"
    link.symlink_to(real)
    import fcntl

    with (real.parent / "store.lock").open("w") as held:  # a build running on the real path
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreError, match=r"another `python -m kg\.build`"):
            build(["alpha"], link, tmp_path, progress=False)
    build(["alpha"], link, tmp_path, progress=False)
    assert link.is_symlink() and link.resolve() == real.resolve()


def test_stale_staging_folder_of_a_dead_build_is_removed(fake_sources: dict,  # noqa: F811
                                                         tmp_path: Path) -> None:
    fake_sources["alpha"] = source("alpha", items=["a1"])
    path = tmp_path / "store"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f"store.staging-{dead}"
    stale.mkdir()
    (stale / "000001.sst").write_bytes(b"x" * 1000)
    build(["alpha"], path, tmp_path, progress=False)
    assert not stale.exists()


def truncate_largest_sst(store: Path) -> None:
    sst = max(store.glob("*.sst"), key=lambda f: f.stat().st_size)
    data = sst.read_bytes()
    sst.write_bytes(data[: len(data) // 2])


def test_damaged_store_is_a_clear_error_and_force_new_rebuilds(fake_sources: dict,  # noqa: F811
                                                                tmp_path: Path) -> None:
    fake_sources["alpha"] = source("alpha", items=[f"a{i}" for i in range(3000)])
    path = tmp_path / "store"
    build(["alpha"], path, tmp_path, progress=False)
    truncate_largest_sst(path)
    with pytest.raises(StoreError, match=r"is damaged.*--force-new"):
        build(["alpha"], path, tmp_path, progress=False)
    with pytest.raises(StoreError, match=r"damaged.*--force-new"):
        LocalStore.open(path)
    build(["alpha"], path, tmp_path, progress=False, force_new=True)
    assert len(LocalStore.open(path).query("SELECT ?s WHERE { ?s ?p ?o }")) == 3000 + 4


def test_ctrl_c_during_a_build_prints_one_line(monkeypatch: pytest.MonkeyPatch,
                                               capsys: Any) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(kg.build, "build", interrupted)
    assert kg.build.main(["--quiet"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("interrupted: the store was not changed")


def children_of(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_reasoner_process_dies_with_its_parent_even_by_kill_9() -> None:
    parent = subprocess.Popen([sys.executable, "-c", "from kg.reason import run_java; "
                               "run_java(['sleep', '60'], 120)"], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 20
    while not (kids := children_of(parent.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kids, "the stand-in reasoner (sleep) did not start"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{kids[0]}").exists() and time.monotonic() < deadline:
        state = (Path(f"/proc/{kids[0]}/stat").read_text().rsplit(")", 1)[1].split()[0]
                 if Path(f"/proc/{kids[0]}/stat").exists() else "X")
        if state == "Z":  # dead, waiting for init to reap it
            break
        time.sleep(0.05)
    alive = Path(f"/proc/{kids[0]}/stat").exists() and Path(
        f"/proc/{kids[0]}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    if alive:
        os.kill(kids[0], signal.SIGKILL)
    assert not alive, "the reasoner outlived its parent"


# --- 15. the results file -----------------------------------------------------------------------

def test_results_file_problems_are_named(tmp_path: Path) -> None:
    (tmp_path / "folder.duckdb").mkdir()
    (tmp_path / "afile").write_text("x")
    (tmp_path / "text.duckdb").write_text("not a database at all")
    cases = {
        tmp_path / "folder.duckdb": "is a folder, not a file",
        tmp_path / "afile" / "r.duckdb": "is a file, so it cannot hold",
        tmp_path / "text.duckdb": "is not a DuckDB file",
    }
    for path, needle in cases.items():
        with pytest.raises(ResultsError, match=needle):
            connect(path)
    good = tmp_path / "good.duckdb"
    connect(good).close()
    data = good.read_bytes()
    good.write_bytes(data[: len(data) // 3])
    with pytest.raises(ResultsError, match=r"is damaged .*move it away"):
        connect(good)


def test_read_only_results_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "good.duckdb"
    connect(good).close()
    monkeypatch.setattr(os, "access", lambda p, mode: False)  # as for a user without write
    assert "is read-only" in diagnose(good)


def test_corrupt_results_file_never_reports_a_cached_run_as_done(tmp_path: Path,
                                                                 capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    data = bytearray(results.read_bytes())
    data[12288:] = b"\x5a" * (len(data) - 12288)  # every block after the headers
    results.write_bytes(bytes(data))
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/choice") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the results file") and "damaged" in err


# --- 16. one clear line instead of a traceback --------------------------------------------------

def test_bogus_device_is_one_line(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--device", "bogus") == 2
    assert "--device bogus is not a torch device" in capsys.readouterr().err


def test_cuda_device_without_cuda_is_one_line(tmp_path: Path, capsys: Any) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--device", "cuda") == 2
    assert "this machine has no CUDA GPU" in capsys.readouterr().err


def test_allow_pickle_flag_reaches_the_model_loader(tmp_path: Path) -> None:
    from probes.app.run import main

    qdir, results = setup(tmp_path, choice_probe())
    seen: dict[str, Any] = {}
    scorer = FakeScorer()

    def factory(name: str, **kw: Any) -> FakeScorer:
        seen.update(kw)
        return scorer

    assert main(["--model", scorer.name, "--results", str(results), "--queries", str(qdir),
                 "--only-extra", "--quiet", "-p", "t/choice", "--allow-pickle"], factory) == 0
    assert seen.get("allow_pickle") is True


def test_too_long_probe_name_is_a_header_error() -> None:
    with pytest.raises(ProbeFileError, match=r"x\.rq:1: name: String should have at most 120"):
        parse_probe(f"# name: t/{'a' * 300}\n# task: records\n# split: test\n"
                    "SELECT ?a WHERE { }\n", "x.rq")


def test_out_pointing_at_a_file_writes_neither(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    before = query(results, "SELECT count(*), max(exported_at) FROM instances")
    out = tmp_path / "out.txt"
    out.write_text("not a folder")
    code = export_main(["--queries", str(qdir), "--only-extra", "--results", str(results),
                        "--out", str(out), "--quiet", "--store", str(tmp_path)])
    assert code == 2  # --store first: tmp_path is not a store
    assert "is not a kgprobe store" in capsys.readouterr().err
    store_dir = tmp_path / "store"
    s = ox.Store(str(store_dir))
    s.flush()
    del s
    code = export_main(["--queries", str(qdir), "--only-extra", "--results", str(results),
                        "--out", str(out), "--quiet", "--store", str(store_dir)])
    assert code == 2 and "is a file, not a folder" in capsys.readouterr().err
    assert query(results, "SELECT count(*), max(exported_at) FROM instances") == before


def test_parquet_failure_rolls_back_the_duckdb_rows(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    before = query(results, "SELECT count(*), max(exported_at) FROM instances")
    out = tmp_path / "exports"
    (out / "t").mkdir(parents=True)
    (out / "t" / "choice").write_text("a file where the probe's folder goes")
    from probes.engine.spec import discover

    with pytest.raises(ProbeError, match="cannot write the Parquet files of probe 't/choice'"):
        export(discover([qdir], include_default=False), LocalStore.in_memory(), results, out,
               progress=False)
    assert query(results, "SELECT count(*), max(exported_at) FROM instances") == before


def test_template_naming_a_missing_variable_fails_at_export(tmp_path: Path) -> None:
    (tmp_path / "p.rq").write_text(choice_probe(prompts='["[W] lives in [PLACE]: [V]"]'))
    from probes.engine.spec import discover

    results = tmp_path / "r.duckdb"
    with pytest.raises(ProbeFileError, match=r"p\.rq:8: template .* uses \[PLACE\] but the "
                                             r"query selects no \?place"):
        export(discover([tmp_path], include_default=False), LocalStore.in_memory(), results,
               None, progress=False)
    assert duckdb.connect(str(results)).execute("SELECT count(*) FROM instances"
                                                 ).fetchall() == [(0,)]


class LimitedScorer(FakeScorer):
    """Refuses prompts about the emu as a real backend refuses a too-long prompt."""

    def loglik(self, requests: Any) -> list[Any]:
        from probes.engine.models import PromptTooLongError

        for i, (c, x) in enumerate(requests):
            if "emu" in c:
                raise PromptTooLongError(f"prompt #{i} ({c + x!r}) has 900 tokens but model "
                                         f"'{self.name}' accepts at most 512; shorten the "
                                         "template or the inserted text")
        return super().loglik(requests)


def test_too_long_prompt_names_the_probe_and_the_instance(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, LimitedScorer(), "-p", "t/choice") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "probe 't/choice'" in err and "target 'emu', split test" in err
    assert "has 900 tokens" in err


def test_export_into_a_truncated_results_file_is_one_line(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    data = results.read_bytes()
    results.write_bytes(data[: len(data) // 3])
    store = tmp_path / "store"
    s = ox.Store(str(store))
    s.flush()
    del s
    code = export_main(["--queries", str(qdir), "--only-extra", "--results", str(results),
                        "--no-parquet", "--quiet", "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: the results file {results} is damaged")
