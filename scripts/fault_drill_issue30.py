"""The cases of issue 30 points 1, 2, 3, 4 and 6 for scripts/fault_drill.py (rows ``30.N``):
queries that overflowed a parser's stack, matched probe files that cannot be read, metric
folders, full disks, crafted model files and misleading advice. A case that crashed the process
(SIGSEGV) or hung runs in a process of its own (its exit status is the outcome: -11 is a
crash). The full-disk cases write to a small tmpfs, mounted when the drill may (root); where it
may not, the row says so.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from fault_drill_kit import CHOICE, EMPTY_STORE, ROOT, Drill, exported, quad_count, results_counts

HEAD = "# name: {}\n# task: records\n# split: test\n"
GOOD = 'SELECT ?x WHERE { VALUES ?x { "a" } }\n'
METRIC = "-- name: {}\n-- description: d.\n-- tasks: [choice]\n-- grain: [probe]\n"


def _sub(*args: str, timeout: float = 120) -> Callable[[], tuple[str, str]]:
    """A kgprobe command in a process of its own: (exit status, its stderr's first line)."""
    def call() -> tuple[str, str]:
        try:
            got = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True,
                                 text=True, timeout=timeout,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
        except subprocess.TimeoutExpired:
            return "hung", f"killed after {timeout:g} s"
        lines = got.stderr.strip().splitlines()
        first = next((x for x in lines if not x.startswith("note:")), lines[0] if lines else "")
        more = f" [+{len(lines) - 1} more line(s)]" if len(lines) > 1 else ""
        return f"exit {got.returncode}", (first or "(no message)") + more
    return call


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path | None]:
    where.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True)
    try:
        yield where if got.returncode == 0 else None
    finally:
        if got.returncode == 0:
            subprocess.run(["umount", "-l", str(where)], check=False)


def edges(d: Drill) -> None:
    """Issue 30, points 1, 2, 3, 4 and 6."""
    stack_crashers(d)
    unreadable_matches(d)
    metric_folders(d)
    full_disks(d)
    crafted_files(d)
    advice(d)


def stack_crashers(d: Drill) -> None:
    f = d.folder()
    q = f / "q"
    q.mkdir()
    (q / "good.rq").write_text(HEAD.format("t/good") + GOOD)
    bodies = {
        "braces": ("3,000 nested `{ }`", "SELECT ?x WHERE " + "{ " * 3000 + "?x ?p ?o "
                   + "} " * 3000),
        "parens": ("10,000 nested `( )` in a FILTER", "SELECT ?x WHERE { ?x ?p ?o FILTER("
                   + "(" * 10_000 + "?x" + ")" * 10_000 + ") }"),
        "terms": ("`FILTER(?x != 1+1+…+1)`, 50,000 terms", "SELECT ?x WHERE { VALUES ?x { 1 2 }"
                  " FILTER(?x != " + "+".join(["1"] * 50_000) + ") }")}
    for name, (what, body) in bodies.items():
        one = f / name
        one.mkdir()
        (one / "good.rq").write_text(HEAD.format("t/good") + GOOD)
        (one / f"{name}.rq").write_text(HEAD.format(f"t/{name}") + body + "\n")
        d.record("30.1", f"`kgprobe list` beside a probe file with {what}",
                 _sub("-m", "probes.app.cli", "list", "--queries", str(one), "--only-extra"))
        (q / f"{name}.rq").write_text(HEAD.format(f"t/{name}") + body + "\n")
    d.record("30.1", "`probes.engine.run --list` over the three files and a good one",
             _sub("-m", "probes.engine.run", "--list", "--queries", str(q), "--only-extra"))
    d.record("30.1", "`export --preview 1 -p t/terms` (the 50,000-term file)",
             _sub("-m", "probes.engine.export", "--queries", str(q), "--only-extra",
                  "-p", "t/terms", "--preview", "1", "--store", str(EMPTY_STORE[0])))
    store, derived = f / "store", f / "derived"
    s = ox.Store(str(store))
    s.add(ox.Quad(ox.NamedNode("http://e.org/s"), ox.NamedNode("http://e.org/p"),
                  ox.Literal("o"), ox.NamedNode("https://w3id.org/kgprobe/graph/src")))
    s.flush()
    del s
    derived.mkdir()
    (derived / "copy.rq").write_text("CONSTRUCT { ?s ?p ?o } WHERE " + "{ " * 3000 + "?s ?p ?o "
                                     + "} " * 3000 + "\n")
    d.record("30.1", "`kg.derived` with 3,000 nested `{ }` in a derived file",
             _sub("-m", "kg.derived", "--store", str(store), "--folder", str(derived)),
             quad_count(store))


def unreadable_matches(d: Drill) -> None:
    f = d.folder()
    q = f / "nu"
    q.mkdir()
    for name in "abc":
        note = "# a note: the query follows\n" if name != "c" else ""
        (q / f"{name}.rq").write_text(HEAD.format(f"nu/{name}") + note + GOOD)
    res = f / "r.duckdb"
    base = ["-m", "probes.engine.export", "--queries", str(q), "--only-extra",
            "--results", str(res), "--no-parquet", "--quiet", "--store", str(EMPTY_STORE[0])]
    d.record("30.2", "`export -p 'nu/*'`: 3 files match, 2 cannot be read",
             _sub(*base, "-p", "nu/*"), results_counts(res))
    d.record("30.2", "the same with `--preview 1`", _sub(*base, "-p", "nu/*", "--preview", "1"))
    d.record("30.2", "the same with `--skip-bad-files`",
             _sub(*base, "-p", "nu/*", "--skip-bad-files"), results_counts(res))
    (q / "x.rq").write_text(HEAD.format("t/x") + "SELECT ?x WHERE { ?x\n")
    d.record("30.2", "`export -p t/x`, whose query is broken", _sub(*base, "-p", "t/x"))


def metric_folders(d: Drill) -> None:
    f = d.folder()
    _, res = exported(f, CHOICE, score=True)

    def folder(name: str, files: dict[str, str]) -> Path:
        mine = f / name
        mine.mkdir()
        for file, text in files.items():
            (mine / file).write_text(text)
        return mine

    def report(mine: Path, *extra: str) -> Callable[[], tuple[str, str]]:
        return _sub("-m", "eval.report", "--results", str(res), "--metrics", str(mine),
                    "--out", str(mine / "out"), "--no-plots", *extra, timeout=300)
    good = {"fine.sql": METRIC.format("fine") + "SELECT 't' AS probe, 1 AS value\n"}
    fifo = folder("fifo", good)
    os.mkfifo(fifo / "a_fifo.sql")
    d.record("30.3", "a FIFO `a_fifo.sql` in a metrics folder, `report`", report(fifo),
             results_counts(res))
    zero = folder("zero", good)
    (zero / "a_zero.sql").symlink_to("/dev/zero")
    d.record("30.3", "`a_zero.sql -> /dev/zero` in a metrics folder, `report`", report(zero),
             results_counts(res))
    upd = folder("upd", {"u.sql": METRIC.format("u") + "UPDATE EXTENSIONS;\n"
                         "SELECT 't' AS probe, 1 AS value\n"})
    d.record("30.3", "metric file holding `UPDATE EXTENSIONS`", report(upd))
    slow = folder("slow", {"s.sql": METRIC.format("s") + "SELECT 't' AS probe, count(*) AS value"
                           " FROM range(10000000000000::BIGINT)\n"})
    d.record("30.3", "metric `SELECT count(*) FROM range(1e13)`, `--metric-timeout 2`",
             report(slow, "--metric-timeout", "2"), results_counts(res))


_BUILD = """
import sys, types
import pyoxigraph as ox
import kg.build, kg.derived
from kg.manifest import Source
from pathlib import Path
m = types.ModuleType("fill")
m.load = lambda ctx: ctx.add((ox.NamedNode(f"http://e.org/{i}"), ox.NamedNode("http://e.org/p"),
                              ox.Literal("x" * 200 + str(i))) for i in range(int(sys.argv[2])))
sys.modules["fill"] = m
src = Source("fill", "s", "fill", "d", "t", "CC0-1.0", "https://e.org", ())
kg.build.pick = lambda names: [src]
kg.derived.DERIVED_DIR = Path(sys.argv[1]).parent / "no-derived"
raise SystemExit(kg.build.main(["--store", sys.argv[1], "--quiet", "--data-dir", sys.argv[1]]))
"""


def full_disks(d: Drill) -> None:
    f = d.folder()
    with _tmpfs(f / "disk", "512k") as disk:
        if disk is None:
            d.record("30.4", "full disk cases", lambda: ("skipped", "cannot mount a tmpfs here"))
            return
        store = disk / "store"
        d.record("30.4", "`kg.build` onto a 512 kB tmpfs: fresh store, 4 MB of triples",
                 _sub("-c", _BUILD, str(store), "20000"), quad_count(store))
        subprocess.run([sys.executable, "-c", _BUILD, str(store), "10"], cwd=ROOT,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        d.record("30.4", "`kg.build` onto the same tmpfs: existing store, 4 MB of triples",
                 _sub("-c", _BUILD, str(store), "20000"), quad_count(store))
    with _tmpfs(f / "disk2", "256k") as disk:
        assert disk is not None
        q = f / "q"
        q.mkdir()
        rows = " ".join(f'"value number {i}"' for i in range(2000))
        (q / "p.rq").write_text(HEAD.format("d/x") + f"SELECT ?x WHERE {{ VALUES ?x {{ {rows} }}"
                                " }\n")
        with (disk / "filler").open("wb", buffering=0) as fill, contextlib.suppress(OSError):
            while True:
                fill.write(b"x" * 4096)
        res = f / "r.duckdb"

        def export_full() -> tuple[str, str]:
            code, message = _sub("-m", "probes.engine.export", "--queries", str(q), "--only-extra",
                                 "--results", str(res), "--out", str(disk / "exports"),
                                 "--quiet", "--store", str(EMPTY_STORE[0]))()
            left = [p.name for p in disk.rglob("*") if p.is_file() and p.name != "filler"]
            return code, f"{message} [files left under --out: {len(left)}]"
        d.record("30.4", "export with `--out` on a full tmpfs", export_full, results_counts(res))


def _tiny_model(folder: Path) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from probes.engine.models import load_tokenizer
    tok = load_tokenizer("smollm2-135m")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                                 num_hidden_layers=1, num_attention_heads=2,
                                 num_key_value_heads=1, max_position_embeddings=32)
                     ).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def crafted_files(d: Drill) -> None:
    import shutil

    from probes.app import api
    f = d.folder()
    with contextlib.redirect_stderr(io.StringIO()):
        base = _tiny_model(f / "base")
    head = json.dumps({"w": {"dtype": "F32", "shape": [2**40, 16], "data_offsets": [0, 64]}})
    for what, data in (
            ("header length 2^63-1", struct.pack("<Q", 2**63 - 1) + b"{}"),
            ("90 MB header length in a 116-byte file",
             struct.pack("<Q", 90_000_000) + b'{"a": 1}' + bytes(100)),
            ("tensor of [2^40, 16] over 64 bytes",
             struct.pack("<Q", len(head)) + head.encode() + bytes(64))):
        folder = f / what.split()[0]
        shutil.copytree(base, folder)
        (folder / "model.safetensors").write_bytes(data)
        d.record("30.4", f"`api.load_scorer` of a `model.safetensors` with a {what}",
                 lambda folder=folder: api.load_scorer(folder, device="cpu"))
    q = f / "q"
    q.mkdir()
    (q / "good.rq").write_text(HEAD.format("t/good") + GOOD)
    (q / "big.rq").write_text(HEAD.format("t/big") + "# seed: " + "7" * 5000 + "\n" + GOOD)
    d.record("30.4", "`--list` beside a header with a 5,000-digit `seed`",
             _sub("-m", "probes.engine.export", "--queries", str(q), "--only-extra", "--list"))
    derived = f / "derived"
    derived.mkdir()
    (derived / "my copy.rq").write_text("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }\n")
    d.record("30.4", "`kg.derived` with a file named `my copy.rq`",
             _sub("-m", "kg.derived", "--store", str(EMPTY_STORE[0]), "--folder", str(derived)))


def advice(d: Drill) -> None:
    from probes.app import api
    from probes.engine.spec import parse_probe
    text = (HEAD.format("t/x") + "SELECT ?x WHERE { ?x <http://e.org/a#b> ?o . SERVICE "
            "<http://127.0.0.1:9/q> { ?x ?p ?o } }\n")

    def hashed() -> tuple[str, str]:
        return "ok", f"SERVICE found: {parse_probe(text, 'p.rq').services}"
    d.record("30.6", "an IRI with `#`, then SERVICE on the same line", hashed)
    f = d.folder()
    (f / "config.json").write_text('{"model_type": "custom_x", "auto_map": {"AutoConfig": '
                                   '"configuration_x.XConfig"}}')
    (f / "configuration_x.py").write_text(f"open({str(f / 'ran')!r}, 'w').close()\n")
    (f / "model.safetensors").write_bytes(bytes(8))

    def remote() -> Any:
        from probes.engine.errors import ModelError
        try:
            api.load_scorer(f, device="cpu")
            return "loaded", ""
        except ModelError as e:
            return "ModelError", f"{e} [its code ran: {(f / 'ran').exists()}]"
    d.record("30.6", "a local folder whose config needs its own code (`auto_map`)", remote)
