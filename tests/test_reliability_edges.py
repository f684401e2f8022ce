"""Issue 30 (points 1, 2, 4, 6): the edges left after issues 13 and 21. A query that would
overflow a parser's stack, a matched probe file that cannot be read, a full disk under a build,
crafted safetensors headers and misleading advice each give one line, never a crash, a
traceback or a silent skip. Inputs that crashed the process (SIGSEGV) run in a subprocess, so a
crash fails the test, not the suite."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

import kg.build
import kg.derived
import kg.sparql
from kg.manifest import Source
from probes.engine.errors import ProbeFileError
from probes.engine.spec import discover, parse_probe

ROOT = Path(__file__).resolve().parents[1]
HEAD = "# name: {}\n# task: records\n# split: test\n"
GOOD = 'SELECT ?x WHERE { VALUES ?x { "a" } }\n'
CRASHERS = {  # issue 30 point 1: each killed the process with SIGSEGV
    "braces": "SELECT ?x WHERE " + "{ " * 3000 + "?x ?p ?o " + "} " * 3000 + "\n",
    "parens": "SELECT ?x WHERE { ?x ?p ?o FILTER(" + "(" * 10_000 + "?x" + ")" * 10_000
              + ") }\n",
    "terms": "SELECT ?x WHERE { VALUES ?x { 1 2 } FILTER(?x != " + "+".join(["1"] * 50_000)
             + ") }\n",
}


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A kgprobe command in a process of its own (a crash is a negative return code)."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


def crash_folder(tmp_path: Path) -> Path:
    q = tmp_path / "q"
    q.mkdir()
    (q / "good.rq").write_text(HEAD.format("t/good") + GOOD)
    for name, body in CRASHERS.items():
        (q / f"{name}.rq").write_text(HEAD.format(f"t/{name}") + body)
    return q


# --- point 1: nesting and expression size are bounded before any parser ---------------------

@pytest.mark.parametrize("command", [["-m", "probes.engine.export"], ["-m", "probes.engine.run"],
                                     ["-m", "probes.app.cli", "list"]])
def test_stack_crashers_are_one_line_each_in_every_list(tmp_path: Path, command: list[str]
                                                        ) -> None:
    q = crash_folder(tmp_path)
    got = cli(*command, "--queries", str(q), "--only-extra", *(
        ["--list"] if command[-1] != "list" else []))
    assert got.returncode == 2, (got.returncode, got.stderr[-500:])  # -11 was SIGSEGV
    assert "t/good" in got.stdout
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert all(len(line) < 400 for line in lines)
    for name in CRASHERS:
        line = next(x for x in lines if f"{name}.rq:4:" in x)
        assert ("operators" in line) if name == "terms" else ("deep" in line)


def test_a_stack_crasher_asked_for_by_name_is_its_own_error(tmp_path: Path) -> None:
    q = crash_folder(tmp_path)
    got = cli("-m", "probes.engine.export", "--queries", str(q), "--only-extra", "-p", "t/terms",
              "--preview", "1", "--store", str(tmp_path / "nostore"))
    assert got.returncode == 2, got.stderr[-500:]
    assert "terms.rq:4: the query holds more than 1,000 operators" in got.stderr
    assert "Traceback" not in got.stderr


def test_a_stack_crasher_in_a_derived_folder_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    s = ox.Store(str(store))
    s.add(ox.Quad(ox.NamedNode("http://e.org/s"), ox.NamedNode("http://e.org/p"),
                  ox.Literal("o"), ox.NamedNode("https://w3id.org/kgprobe/graph/src")))
    s.flush()
    del s
    derived = tmp_path / "derived"
    derived.mkdir()
    (derived / "copy.rq").write_text("CONSTRUCT { ?s ?p ?o } WHERE " + "{ " * 3000 + "?s ?p ?o "
                                     + "} " * 3000 + "\n")
    got = cli("-m", "kg.derived", "--store", str(store), "--folder", str(derived))
    assert got.returncode == 2, (got.returncode, got.stderr[-500:])
    assert got.stderr.startswith(f"error: {derived / 'copy.rq'}:1: the query nests brackets")
    assert len(ox.Store.read_only(str(store))) == 1


def test_bounds_count_no_strings_iris_comments_or_prefixed_names() -> None:
    """Hyphens in IRIs, prefixed names, literals, language tags and comments are no operators;
    the repository's own queries stay far inside both bounds."""
    body = " ".join(f'(ex:a-b-c-{i} "x-y-z"@en-GB <http://e.org/a-b-{i}>) # a-b-c\n'
                     for i in range(600))
    kg.sparql.check_bounds("PREFIX ex: <http://e.org/>\nSELECT * WHERE { VALUES (?a ?b ?c) { "
                           + body + "} }")
    for path in (ROOT / "queries").rglob("*.rq"):
        kg.sparql.check_bounds(path.read_text(encoding="utf-8"))
    with pytest.raises(kg.sparql.QueryShapeError) as info:
        kg.sparql.check_bounds("SELECT ?x {\n FILTER(" + "1+" * 1001 + "1)\n}")
    assert info.value.line == 2


def test_checking_a_query_stops_at_its_cpu_budget(monkeypatch: Any) -> None:
    monkeypatch.setattr(kg.sparql, "CHECK_CPU_SECONDS", 0.3)
    kg.sparql.analyse.cache_clear()
    # ~0.2 MB of an IN list: seconds of CPU (a long VALUES block no longer is: rdflib
    # reads its first row only, kg.sparql.elide_values)
    rows = ", ".join(f'"w{i}", "x{i}"' for i in range(8_000))
    text = HEAD.format("t/x") + f"SELECT ?a ?b WHERE {{ ?a ?p ?b FILTER(?b IN ({rows})) }}\n"
    with pytest.raises(ProbeFileError, match=r"checking the query took more than 0\.3 s of CPU"):
        parse_probe(text, "big.rq")
    kg.sparql.analyse.cache_clear()


# --- point 2: a matched file that cannot be read is named; the command fails ----------------

def nu_folder(tmp_path: Path) -> Path:
    """Three files matching nu/*; two have a comment line between header and query that reads
    as a header field."""
    q = tmp_path / "nu"
    q.mkdir()
    for name in "abc":
        note = "# a note: the query follows\n" if name != "c" else ""
        (q / f"{name}.rq").write_text(HEAD.format(f"nu/{name}") + note + GOOD)
    return q


@pytest.mark.parametrize("extra", [[], ["--preview", "1"]])
def test_export_names_every_unreadable_matched_file_and_fails(tmp_path: Path, extra: list[str]
                                                              ) -> None:
    q = nu_folder(tmp_path)
    got = cli("-m", "probes.engine.export", "--queries", str(q), "--only-extra", "-p", "nu/*",
              "--results", str(tmp_path / "r.duckdb"), "--no-parquet", "--quiet", *extra)
    assert got.returncode == 2, got.stderr
    assert "a.rq:4: unknown header field 'a note'" in got.stderr
    assert "b.rq:4: unknown header field 'a note'" in got.stderr
    assert "--skip-bad-files" in got.stderr and "Traceback" not in got.stderr
    assert not (tmp_path / "r.duckdb").exists()


def test_skip_bad_files_exports_the_others_and_names_each(tmp_path: Path) -> None:
    q = nu_folder(tmp_path)
    store = tmp_path / "store"
    ox.Store(str(store)).flush()
    got = cli("-m", "probes.engine.export", "--queries", str(q), "--only-extra", "-p", "nu/*",
              "--results", str(tmp_path / "r.duckdb"), "--no-parquet", "--quiet",
              "--skip-bad-files", "--store", str(store))
    assert got.returncode == 0, got.stderr
    notes = [x for x in got.stderr.splitlines() if x.startswith("note: skipped")]
    assert len(notes) == 2 and "a.rq:4" in notes[0] and "b.rq:4" in notes[1]
    assert "nu/c" in got.stdout


def test_a_probe_asked_for_by_name_gives_its_query_error_first(tmp_path: Path) -> None:
    (tmp_path / "x.rq").write_text(HEAD.format("t/x") + "SELECT ?x WHERE { ?x\n")
    with pytest.raises(ProbeFileError) as info:
        discover([tmp_path], ["t/x"], include_default=False)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'x.rq'}:4: SPARQL syntax error")
    assert "no probe matches" not in message and "--queries" not in message


# --- point 4: a full disk under kg.build is one line; the store is intact -------------------

@contextlib.contextmanager
def tiny_disk(where: Path, size: str = "512k") -> Iterator[Path]:
    """A tmpfs of ``size`` at ``where`` (a real full disk: ENOSPC from the kernel); skips the
    test where this process may not mount one."""
    where.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({got.stderr.strip()[:80]})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def filler_source(monkeypatch: Any, tmp_path: Path) -> types.ModuleType:
    loader = types.ModuleType("kgprobe_test_filler")

    def load(ctx: Any) -> None:
        ctx.add((ox.NamedNode(f"http://e.org/{i}"), ox.NamedNode("http://e.org/p"),
                 ox.Literal("x" * 200 + str(i))) for i in range(loader.n))  # type: ignore
    loader.load = load  # type: ignore[attr-defined]
    loader.n = 10  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, loader.__name__, loader)
    src = Source("filler", "stand-in", loader.__name__, "data", "test", "CC0-1.0",
                 "https://example.org/filler", ())
    monkeypatch.setattr(kg.build, "pick", lambda names: [src])
    monkeypatch.setattr(kg.derived, "DERIVED_DIR", tmp_path / "no-derived-files")
    return loader


@pytest.mark.parametrize("existing", [False, True])
def test_full_disk_during_build_is_one_line_and_the_store_is_intact(
        tmp_path: Path, filler_source: Any, capsys: Any, existing: bool) -> None:
    with tiny_disk(tmp_path / "disk") as disk:
        store = disk / "store"
        if existing:
            assert kg.build.main(["--store", str(store), "--quiet", "--data-dir", str(tmp_path)]
                                 ) == 0
            capsys.readouterr()
            before = len(ox.Store.read_only(str(store)))
        filler_source.n = 20_000  # ~4 MB of literals on a 512 kB disk
        assert kg.build.main(["--store", str(store), "--quiet", "--data-dir", str(tmp_path)]
                             ) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: the disk is full where the store "
                                                   "is built")
        if existing:
            assert f"the store at {store} is intact" in err[0]
            assert len(ox.Store.read_only(str(store))) == before
        else:
            assert f"no store was created at {store}" in err[0] and not store.exists()
        assert not list(disk.glob("*staging*"))


def fill(disk: Path) -> None:
    """Write one file until the disk has no block left."""
    with (disk / "filler").open("wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"x" * 4096)



def test_full_disk_under_out_during_export_is_one_line_and_leaves_no_tmp(
        tmp_path: Path, capsys: Any) -> None:
    from probes.engine.export import main as export_main

    q = tmp_path / "q"
    q.mkdir()
    rows = " ".join(f'"value number {i}"' for i in range(2000))
    (q / "p.rq").write_text(HEAD.format("t/x") + f"SELECT ?x WHERE {{ VALUES ?x {{ {rows} }} }}\n")
    store = tmp_path / "store"
    ox.Store(str(store)).flush()
    with tiny_disk(tmp_path / "disk", "256k") as disk:
        (disk / "exports" / "t" / "x").mkdir(parents=True)
        fill(disk)
        code = export_main(["--queries", str(q), "--only-extra", "--results",
                            str(tmp_path / "r.duckdb"), "--out", str(disk / "exports"),
                            "--quiet", "--store", str(store)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2
        assert len(err) == 1 and err[0].startswith(
            f"error: cannot write the Parquet files of probe 't/x' under {disk / 'exports'}: "
            "the disk is full; free space"), err
        assert "Nothing was written for it" in err[0]
        left = [p.name for p in disk.rglob("*") if p.is_file() and p.name != "filler"]
        assert left == []
    import duckdb
    con = duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM instances").fetchone() == (0,)
    con.close()


# --- point 4: crafted safetensors headers, a 5,000-digit number, a derived name with a space --

def crafted(folder: Path, how: str) -> Path:
    """A tiny model folder whose model.safetensors is crafted: a header length of 2**63 - 1, a
    90 MB header length in a small file, or a tensor of shape [2**40, 16] over 64 bytes."""
    import json
    import shutil
    import struct

    from tests.test_cli import tiny_llama

    base = folder.parent / "tiny-base"
    if not base.exists():
        tiny_llama(base)
    shutil.copytree(base, folder)
    weights = folder / "model.safetensors"
    if how == "length":
        weights.write_bytes(struct.pack("<Q", 2**63 - 1) + b"{}")
    elif how == "90mb":
        weights.write_bytes(struct.pack("<Q", 90_000_000) + b'{"a": 1}' + bytes(100))
    else:
        head = json.dumps({"w": {"dtype": "F32", "shape": [2**40, 16], "data_offsets": [0, 64]}})
        weights.write_bytes(struct.pack("<Q", len(head)) + head.encode() + bytes(64))
    return folder


@pytest.mark.slow  # builds a tiny model / waits for its deadline
@pytest.mark.parametrize("how, why", [
    ("length", "its header claims 9,223,372,036,854,775,807 bytes"),
    ("90mb", "its header claims 90,000,000 bytes, the file has 116"),  # 8 + 8 + 100
    ("shape", "tensor 'w' of shape [1099511627776, 16] (F32) needs 70,368,744,177,664 bytes"),
])
def test_crafted_safetensors_headers_are_one_line(tmp_path: Path, how: str, why: str) -> None:
    from probes.app import api
    from probes.engine.errors import ModelError

    folder = crafted(tmp_path / how, how)
    with pytest.raises(ModelError) as info:
        api.load_scorer(folder, device="cpu")
    message = str(info.value)
    assert message.startswith(f"safetensors file {folder / 'model.safetensors'} is damaged or "
                              f"crafted ({why}")
    assert "\n" not in message and "download the model again" in message


def test_a_5000_digit_number_in_a_header_is_one_line_and_the_list_goes_on(
        tmp_path: Path, capsys: Any) -> None:
    from probes.engine.export import main as export_main

    (tmp_path / "good.rq").write_text(HEAD.format("t/good") + GOOD)
    (tmp_path / "big.rq").write_text(HEAD.format("t/big") + "# seed: " + "7" * 5000 + "\n"
                                     + GOOD)
    assert export_main(["--queries", str(tmp_path), "--only-extra", "--list"]) == 2
    out, err = capsys.readouterr()
    assert "t/good" in out
    assert err.strip() == (f"error: {tmp_path / 'big.rq'}:4: a number in the header is too "
                           "long to read (Exceeds the limit (4300 digits) for integer string "
                           "conversion: value has 5000 digits); write a shorter number, or "
                           "quote it as a string")


def test_a_derived_file_name_with_a_space_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    ox.Store(str(store)).flush()
    derived = tmp_path / "derived"
    derived.mkdir()
    (derived / "my copy.rq").write_text("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }\n")
    got = cli("-m", "kg.derived", "--store", str(store), "--folder", str(derived))
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr[-300:]
    assert got.stderr.strip() == (f"error: {derived / 'my copy.rq'}: the file name 'my copy' "
                                  "cannot name a graph (it becomes the IRI .../graph/derived/"
                                  "<name>); rename the file with letters, digits, '-', '_' and "
                                  "'.' only")


# --- point 6: the right advice --------------------------------------------------------------

def test_an_iri_with_a_hash_before_a_service_on_one_line_is_read(tmp_path: Path) -> None:
    """A legal query: its SERVICE is found (and refused at export), not a parse error with
    advice about prefixed names it does not use."""
    text = (HEAD.format("t/x") + 'SELECT ?x FROM <http://e.org/g#1> WHERE { ?x <http://e.org/a#b>'
            ' "v#w" . SERVICE <http://127.0.0.1:9/q#f> { ?x ?p ?o } }\n')
    probe = parse_probe(text, "p.rq")
    assert probe.services == ("http://127.0.0.1:9/q#f",)
    shape = kg.sparql.analyse(text)
    assert shape.dataset == ("http://e.org/g#1",) and "v#w" in shape.literals


def test_the_remote_code_refusal_names_kgprobes_opt_in_and_its_risk(tmp_path: Path) -> None:
    from probes.app import api
    from probes.engine.errors import ModelError

    folder = tmp_path / "custom"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "custom_x", "auto_map": {"AutoConfig": '
                                        '"configuration_x.XConfig"}}')
    marker = tmp_path / "ran"
    (folder / "configuration_x.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (folder / "model.safetensors").write_bytes(b"\0" * 8)
    with pytest.raises(ModelError) as info:
        api.load_scorer(folder, device="cpu")
    message = str(info.value)
    assert message.startswith(f"model {str(folder)!r} needs Python code from its own folder")
    assert "--model-args trust_remote_code=true" in message and "your files" in message
    assert "hf.co" not in message and "\n" not in message
    assert not marker.exists()
