"""Issue 21, point 4: errors that tell the truth.

A full disk (ENOSPC, also EDQUOT and EIO) is named as such, never as a damaged results file,
and no stored row is lost; ``combine`` on a full disk prints one line and leaves no half-written
OUT. The notebook API gives the same one-line errors as the command line: a probe built from
text reads no other probe file, ``device='cuda'`` without CUDA, a refused pickle, a cut-off
GGUF. A full disk is simulated by making the write raise what DuckDB (or the system) raises
then: the message DuckDB quotes from ``strerror`` (``IO Error: Could not write file "...":
No space left on device``) or an ``OSError`` with that errno.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyoxigraph as ox
import pytest
import torch

import probes.engine.cache
import probes.engine.export
import probes.results.combine as combine_mod
from kg.store import LocalStore
from probes.app import api
from probes.app.run import main as run_main
from probes.engine.errors import ModelError, ProbeError, ResultsError
from probes.engine.export import main as export_main
from probes.engine.models import resolve
from probes.engine.spec import parse_probe
from probes.results import connect, diagnose, disk_error
from probes.results.__main__ import main as results_main
from tests.test_models import _tiny_llama_folder, cache, tiny_gguf  # noqa: F401 (fixtures)
from tests.test_results_combine import _file, _rows
from tests.test_run import FakeScorer, choice_probe, query, run, setup

FULL = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
        errno.EIO: "the disk failed to write"}


def io_error(code: int, path: Path) -> duckdb.IOException:
    """What DuckDB raises when a write fails with ``code``."""
    return duckdb.IOException(f'IO Error: Could not write file "{path}": {os.strerror(code)}')


def counts(results: Path) -> tuple[int, int, int]:
    (row,) = query(results, "SELECT (SELECT count(*) FROM instances), "
                   "(SELECT count(*) FROM scores), (SELECT count(*) FROM runs)")
    return row


@pytest.fixture
def empty_store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    store = ox.Store(str(path))
    store.flush()
    del store
    return path


@pytest.mark.parametrize("code", sorted(FULL))
def test_full_disk_during_export_is_named_and_loses_no_row(
        code: int, tmp_path: Path, empty_store: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    before = counts(results)  # 3 targets x 3 candidates = 9 instances... as exported
    assert before[0] > 0 and before[1] > 0 and before[2] == 1

    def full(*args: Any, **kwargs: Any) -> None:
        raise io_error(code, results.with_suffix(".duckdb.wal"))
    monkeypatch.setattr(probes.engine.export, "write_instances", full)
    capsys.readouterr()
    assert export_main(["--queries", str(qdir), "--only-extra", "--results", str(results),
                        "--no-parquet", "--quiet", "--store", str(empty_store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and FULL[code] in err
    assert "is damaged" not in err and "re-export" not in err and "move it away" not in err
    assert "Nothing of the probe being exported was written" in err
    assert counts(results) == before


def test_full_disk_during_a_run_is_named_and_keeps_every_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    before = counts(results)

    def full(*args: Any, **kwargs: Any) -> None:
        raise io_error(errno.ENOSPC, results)
    monkeypatch.setattr(probes.engine.cache, "write_scores", full)
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the disk is full" in err and "is damaged" not in err
    assert "the same command resumes" in err
    assert counts(results)[:2] == before[:2]  # the instances, and no half-written scores
    monkeypatch.undo()
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0  # space freed: it resumes


def test_full_disk_when_the_results_folder_is_made(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: Path, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), str(self))
    monkeypatch.setattr(Path, "mkdir", full)
    with pytest.raises(ResultsError) as e:
        connect(tmp_path / "new" / "r.duckdb")
    assert "the disk quota is used up" in str(e.value) and "Nothing was written" in str(e.value)
    assert "does not exist and cannot be created" not in str(e.value)


def test_diagnose_names_the_disk_and_other_damage_still_as_damage(tmp_path: Path) -> None:
    res = tmp_path / "r.duckdb"
    connect(res).close()
    text = diagnose(res, io_error(errno.ENOSPC, res))
    assert text.startswith(f"the disk is full where the results file {res} lives")
    assert "not damaged" in text and "free space" in text
    assert "damaged (" in diagnose(res, duckdb.IOException("IO Error: Corrupt database file"))
    chained = RuntimeError("wrapped")
    chained.__cause__ = OSError(errno.EIO, "Input/output error")
    assert disk_error(chained) == FULL[errno.EIO] + " (input/output error: a full or failing disk)"


@contextlib.contextmanager
def commit_fails(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """``probes.results.transaction`` whose COMMIT hits a full disk (rolled back, as DuckDB
    does when the WAL cannot be written)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    finally:
        con.execute("ROLLBACK")
    raise io_error(errno.ENOSPC, Path("all.duckdb.wal"))


def test_combine_on_a_full_disk_is_one_line_and_leaves_no_new_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    a = _file(tmp_path / "a.duckdb", {"a1": ("done", 3)})
    b = _file(tmp_path / "b.duckdb", {"b1": ("done", 2)})
    monkeypatch.setattr(combine_mod, "transaction", commit_fails)
    out = tmp_path / "all.duckdb"
    assert results_main(["combine", str(out), str(a), str(b)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "the disk is full" in captured.err and "is damaged" not in captured.err
    assert f"Nothing was written: {out} was not created" in captured.err
    assert not out.exists() and not Path(str(out) + ".wal").exists()
    assert _rows(a, "SELECT count(*) FROM scores") == [(3,)]  # inputs only read


def test_combine_on_a_full_disk_keeps_an_existing_out_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    a = _file(tmp_path / "a.duckdb", {"a1": ("done", 3)})
    b = _file(tmp_path / "b.duckdb", {"b1": ("done", 2)})
    out = tmp_path / "all.duckdb"
    assert results_main(["combine", str(out), str(a)]) == 0
    monkeypatch.setattr(combine_mod, "transaction", commit_fails)
    assert results_main(["combine", str(out), str(b)]) == 2
    assert f"Nothing was written: {out} is as it was" in capsys.readouterr().err
    assert _rows(out, "SELECT run_id, count(*) FROM scores GROUP BY 1") == [("a1", 3)]


def test_api_score_of_a_probe_from_text_reads_no_other_probe_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook started in a folder full of unrelated (here: broken) .rq files."""
    work = tmp_path / "home"
    (work / "deep" / "er").mkdir(parents=True)
    for where in (work, work / "deep" / "er"):
        (where / "broken.rq").write_text("# name: x\n# task: nonsense\nSELECT WHERE {\n")
    monkeypatch.chdir(work)
    probe = parse_probe(choice_probe(name="t/text"))
    results = tmp_path / "r.duckdb"
    api.export(probe, LocalStore.in_memory(), results)
    rows = api.score(probe, FakeScorer(), results)
    # 3 targets x 3 candidates x 2 prompts
    assert rows.height == 18 and set(rows["probe"]) == {"t/text"}


def test_api_load_scorer_on_cuda_without_cuda_is_the_cli_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ProbeError) as e:  # checked before the model is looked for
        api.load_scorer("no-such-model-anywhere", device="cuda")
    assert str(e.value) == ("device='cuda': this machine has no CUDA GPU that torch can use; "
                            "run with device='cpu' (or leave the device out)")
    with pytest.raises(ProbeError, match=r"device='cuda:0'"):
        api.load_scorer("no-such-model-anywhere", device="cuda:0")


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_refused_pickle_is_a_kgprobe_line_without_torch_advice(
        cache: Path, tiny_gguf: tuple[Path, np.ndarray], tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "pickled"
    _tiny_llama_folder(folder, Path(resolve(str(tiny_gguf[0])).location))
    marker = tmp_path / "ran"
    torch.save({"model.embed_tokens.weight": Payload(marker)}, folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelError) as e:
        api.load_scorer(str(folder), device="cpu", allow_pickle=True)
    text = str(e.value)
    assert "weights_only" not in text and "\n" not in text
    assert "pytorch_model.bin" in text and "posix.system" in text and "safetensors" in text
    assert not marker.exists()


@pytest.mark.parametrize("size", [0, 3, 64, 20_000])
def test_a_cut_off_gguf_is_one_clear_line(size: int, cache: Path,  # noqa: F811
                                          tiny_gguf: tuple[Path, np.ndarray],  # noqa: F811
                                          tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(tiny_gguf[0].read_bytes()[:size])
    with pytest.raises(ModelError) as e:
        api.load_scorer(str(bad), device="cpu")
    want = "is not a GGUF file" if size < 4 else f"is truncated or damaged ({size:,} bytes"
    assert want in str(e.value) and str(bad) in str(e.value)
    qdir, results = setup(tmp_path, choice_probe())
    assert run_main(["--model", str(bad), "--results", str(results), "--queries", str(qdir),
                     "--only-extra", "--quiet", "-p", "t/choice", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and want in err
    assert not list(cache.glob("bad-*")) if cache.exists() else True  # nothing converted


def test_full_disk_writing_output_path_files_is_one_line_and_keeps_the_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    import probes.app.outputs

    qdir, results = setup(tmp_path, choice_probe())

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "out"))
    monkeypatch.setattr(probes.app.outputs, "write_outputs", full)
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--output-path",
               str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the disk is full" in err
    assert "the runs are stored in the results file" in err
    assert counts(results)[2] == 1 and counts(results)[1] > 0
