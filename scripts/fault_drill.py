"""Run every hostile or careless input of issue 13 and write the table of docs/reliability.md.

    PYTHONPATH=$PWD python scripts/fault_drill.py [--out docs/reliability.md]

Each case builds what it needs in a temporary folder (a results file, probe files, a store, an
HTTP server on 127.0.0.1 that misbehaves), runs the kgprobe command or function a user would,
and records the outcome (exit status or exception), the first line of the message (temporary
paths shown as ``$TMP``) and the rows before and after (instances, scores, runs of the results
file, or quads of the store). Nothing leaves this machine: every server is on 127.0.0.1. The
scorer is a stand-in (scores from string lengths) because the cases are about what happens
around a model, not about a model's numbers. Store builds load a stand-in source (a few quads)
through kg.build's normal path. The stand-ins, the case record and the helpers are in
scripts/fault_drill_kit.py; this file holds the cases and the table.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyoxigraph as ox
from fault_drill_issue30 import edges as issue30_edges  # issue 30 points 1-4, 6 (h18)
from fault_drill_issue45 import edges as issue45_edges  # issue 45: servers, results files
from fault_drill_kit import (
    CHOICE,
    EMPTY_STORE,
    RECORDS,
    ROOT,
    Drill,
    Outcome,
    StandInScorer,
    export_cli,
    exported,
    probe_dir,
    quad_count,
    results_counts,
    run,
    server,
)

import kg.build
import kg.derived
from kg.manifest import Source
from kg.store import LocalStore, RemoteStore
from probes.engine.export import QueryLimits, export, instances_for
from probes.engine.export import main as export_main
from probes.engine.spec import discover, load_probe, parse_probe

# --- the cases ----------------------------------------------------------------------------------

def security(d: Drill) -> None:
    with server("silent") as srv:
        f = d.folder()
        q = probe_dir(f, RECORDS + f"SELECT ?x WHERE {{ SERVICE <{srv['url']}> {{ ?x ?p ?o }} }}\n")

        def listing() -> tuple[str, str]:
            code = export_main(["--queries", str(q), "--only-extra", "--list"])
            return f"exit {code}", f"requests the server received: {len(srv['bodies'])}"
        d.record("1", "`probes.engine.export --list` over a probe with SERVICE to a silent server",
                 listing)
        res = f / "r.duckdb"
        d.record("1", "export of that probe (no --allow-service)",
                 lambda: export_cli(q, res), results_counts(res))
        d.record("1", "export with --allow-service --query-timeout 2 (silent server)",
                 lambda: export_cli(q, res, "--allow-service", "--query-timeout", "2"),
                 results_counts(res))
    f = d.folder()
    d.record("1", "`SERVICE ?endpoint { ... }` in a probe file", lambda: load_probe(probe_dir(
        f, RECORDS + "SELECT ?x WHERE {\n SERVICE ?endpoint { ?x ?p ?o }\n}\n") / "p.rq"))

    f = d.folder()
    q, res = exported(f, CHOICE)
    (q / "s.rq").write_text("# name: d/s\n# task: records\n# split: ?split\nSELECT ?x ?split "
                            "WHERE { VALUES (?x ?split) { (\"a\" \"../../x\") } }\n")

    def traversal() -> int:
        code = export_main(["--queries", str(q), "--only-extra", "--results", str(res),
                            "--out", str(f / "a" / "b" / "exports"), "--quiet", "-p", "d/s",
                            "--store", str(EMPTY_STORE[0])])
        outside = [p for p in f.rglob("*.parquet*") if "exports" not in p.parts]
        print(f"parquet files outside: {len(outside)}", file=sys.stderr)
        return code
    d.record("2", "split value `../../x` (`split: ?split`)", traversal, results_counts(res))

    f = d.folder()
    q = probe_dir(f, RECORDS + "# builder: os:system\nSELECT ?x WHERE { }\n")
    d.record("3", "`builder: os:system`", lambda: export_cli(q, f / "r.duckdb"),
             results_counts(f / "r.duckdb"))

    f = d.folder()
    q = probe_dir(f, RECORDS + "SELECT ?x WHERE { ?x ?p ?o }\n")
    d.record("4", "`--endpoint file:///etc/passwd`",
             lambda: export_cli(q, f / "r.duckdb", "--endpoint", "file:///etc/passwd"))
    for kind, what in (("html", "an HTML page"), ("nojson", "JSON without `results`")):
        with server(kind) as srv:
            d.record("4", f"endpoint answering {what}",
                     lambda srv=srv: export_cli(q, f / "r.duckdb", "--endpoint", srv["url"]))
    with server("trickle") as srv:
        d.record("4", "endpoint trickling one byte per 0.5 s, `--timeout 2`",
                 lambda: export_cli(q, f / "r.duckdb", "--endpoint", srv["url"],
                                    "--timeout", "2"))
    with server("record") as srv:
        text = RECORDS + ("# description: drop graph, load <x>, insert data\n"
                          "SELECT ?x WHERE { ?x ?p ?o } # DROP ALL\n")

        def as_query() -> tuple[str, str]:
            RemoteStore(srv["url"]).query(parse_probe(text, "p.rq").query)
            fields = sorted(k.split("=")[0] for k in srv["bodies"][0].decode().split("&"))
            return "ok", f"sent as form field(s) {fields}"
        d.record("10", "`--endpoint` with DROP/LOAD/INSERT in comments", as_query)


def wrong_numbers(d: Drill) -> None:
    f = d.folder()
    d.record("5", "`task: choice` without `candidates:`", lambda: load_probe(probe_dir(
        f, CHOICE.replace("# candidates: ?c\n", "")) / "p.rq"))

    f = d.folder()
    q, res = exported(f, CHOICE, score=True)
    (q / "p0.rq").write_text(CHOICE.replace('("cat" "animal" "tree") ', ""))
    d.record("6", "probe query edited after export, then `probes.engine.run`", lambda: run(q, res),
             results_counts(res))

    f = d.folder()
    q, res = exported(f, CHOICE, score=True)
    run(q, res, "--limit", "2")

    def same_rows() -> tuple[str, str]:
        import eval.report as report

        drawn: list[Any] = []
        real = report.bar_chart
        report.bar_chart = lambda points, *a, **k: drawn.extend(  # type: ignore[assignment]
            p for p in points if k.get("ylabel") == "choice_accuracy") or a[1]
        try:
            con = duckdb.connect(str(res), read_only=True)
            rep = report.build_report(con, probes=["d/*"])
            table = next(t for names, t in report.tables(rep) if "choice_accuracy" in names)
            report.plots(rep, f / "plots")
            con.close()
        finally:
            report.bar_chart = real
        n_rows = len(table.splitlines()) - 2
        return "ok", f"table rows {n_rows}, bars {len(drawn)}: {sorted({s for s, _, _ in drawn})}"
    d.record("7", "report of a full run and a `--limit 2` run of one model", same_rows)

    f = d.folder()
    q, res = exported(f, CHOICE, score=True)
    con = duckdb.connect(str(res))
    con.execute("UPDATE runs SET wall_s = 36.6")
    con.close()

    def wall() -> str:
        con = duckdb.connect(str(res), read_only=True)
        got, span = con.execute("SELECT wall_s, epoch(finished_at - started_at) "
                                "FROM runs").fetchone()
        con.close()
        return f"wall_s {got:.2f} (finished - started {span:.2f})"
    d.record("8", "cached re-run after a scoring run of 36.6 s: the row takes its own times",
             lambda: run(q, res), wall)

    def deterministic() -> tuple[str, str]:
        import numpy as np
        import pyarrow as pa

        from eval.sqlfile import parse_metric, run_metric
        con = duckdb.connect()
        rng = np.random.default_rng(0)
        n = 1_500_000
        con.execute("SET threads = 4")
        con.register("x", pa.table({"g": rng.integers(0, 3, n), "v": rng.standard_normal(n)
                                    * 1e6 + rng.standard_normal(n) * 1e-6}))
        con.execute("CREATE TABLE scores AS SELECT * FROM x")
        sql = "SELECT g AS probe, avg(v) AS value FROM scores GROUP BY g ORDER BY g"
        metric = parse_metric("-- name: m\n-- description: d\n-- tasks: [choice]\n"
                              f"-- grain: [probe]\n{sql}\n", "m.sql")
        values = {tuple(run_metric(con, metric)[1]) for _ in range(6)}
        plain = {tuple(con.execute(sql).fetchall()) for _ in range(6)}
        return "ok", (f"distinct values over 6 runs: {len(values)} through run_metric, "
                      f"{len(plain)} as plain parallel SQL")
    d.record("9", "a metric over 1.5 M float scores, 6 report runs, 4 DuckDB threads",
             deterministic)

    f = d.folder()
    for seed_query, what in (("ORDER BY RAND() LIMIT 100", "`seed: 1` with `ORDER BY RAND()`"),
                             ("ORDER BY ?x LIMIT 100", "`seed: 1`, only `LIMIT 100` holds a 1")):
        d.record("11", what, lambda sq=seed_query: parse_probe(
            RECORDS + f"# seed: 1\nSELECT ?x WHERE {{ ?x ?p ?o }} {sq}\n", f / "p.rq"))

    def tags() -> tuple[str, str]:
        store = LocalStore.in_memory()
        s, p = ox.NamedNode("http://e.org/s"), ox.NamedNode("http://e.org/label")
        for lang in ("en", "de"):
            store.oxigraph.add(ox.Quad(s, p, ox.Literal("bank", language=lang),
                                       ox.NamedNode("https://w3id.org/kgprobe/graph/t")))
        df = instances_for(parse_probe(RECORDS + "# id: ?l\nSELECT ?l WHERE { ?s ?p ?l }\n"),
                           store)
        return "ok", f"{df.height} instances from \"bank\"@en and \"bank\"@de"
    d.record("12", "rows differing only in a language tag", tags)


def faults(d: Drill) -> None:
    store = LocalStore.in_memory()
    g = ox.NamedNode("https://w3id.org/kgprobe/graph/t")
    store.oxigraph.extend(ox.Quad(ox.NamedNode(f"http://e.org/{i}"), ox.NamedNode("http://e.org/p"),
                                  ox.Literal(str(i)), g) for i in range(300))
    count = parse_probe("# name: d/big\n# task: records\n# split: test\nSELECT (COUNT(*) AS ?n) "
                        "WHERE { ?a ?p ?x . ?b ?q ?y . ?c ?r ?z }\n", "big.rq")
    d.record("13", "cartesian product counted (300^3 = 27 M), `--query-timeout 1`",
             lambda: instances_for(count, store, QueryLimits(timeout_s=1)))
    rows = parse_probe("# name: d/big\n# task: records\n# split: test\nSELECT ?a ?b ?c WHERE { "
                       "?a ?p ?x . ?b ?q ?y . ?c ?r ?z }\n", "big.rq")
    d.record("13", "cartesian product listed (27 M rows), `--max-rows 100000`",
             lambda: instances_for(rows, store, QueryLimits(max_rows=100_000)))
    builds(d)
    results_file(d)
    one_line(d)


def builds(d: Drill) -> None:
    loader = types.ModuleType("kgprobe_drill_loader")

    def load(ctx: Any) -> None:
        ctx.add((ox.NamedNode(f"http://e.org/{i}"), ox.NamedNode("http://e.org/p"),
                 ox.Literal(str(i))) for i in range(ctx.options.get("n", 3000)))
    loader.load = load  # type: ignore[attr-defined]
    sys.modules[loader.__name__] = loader
    src = Source("drill", "stand-in source", loader.__name__, "data", "test", "CC0-1.0",
                 "https://example.org/drill", ())
    real_pick = kg.build.pick
    kg.build.pick = lambda names: [src]  # type: ignore[assignment]
    try:
        f = d.folder()
        real = f / "disk" / "store"
        kg.build.build(["drill"], real, f, progress=False)
        (f / "link").symlink_to(real)

        def locked() -> int:
            with (real.parent / "store.lock").open("w") as held:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return kg.build.main(["--store", str(f / "link"), "--quiet"])
        d.record("14", "`kg.build --store LINK` (a symlink) while a build holds the real path",
                 locked, quad_count(real))

        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout.strip()
        stale = real.with_name(f"store.staging-{dead}")
        stale.mkdir()
        (stale / "000001.sst").write_bytes(b"x" * 100_000)

        def cleaned() -> tuple[str, str]:
            code = kg.build.main(["--store", str(real), "--quiet"])
            return f"exit {code}", f"staging folder of dead pid left: {stale.exists()}"
        d.record("14", "staging folder of a build killed by `kill -9`", cleaned)

        sst = max(real.glob("*.sst"), key=lambda p: p.stat().st_size)
        sst.write_bytes(sst.read_bytes()[: sst.stat().st_size // 2])
        d.record("14", "store with a truncated file, `kg.build`",
                 lambda: kg.build.main(["--store", str(real), "--quiet"]), quad_count(real))
        d.record("14", "the same, `kg.build --force-new`",
                 lambda: kg.build.main(["--store", str(real), "--quiet", "--force-new"]),
                 quad_count(real))

        def ctrl_c() -> int:
            def interrupted(ctx: Any) -> None:
                raise KeyboardInterrupt
            loader.load = interrupted  # type: ignore[attr-defined]
            return kg.build.main(["--store", str(real), "--quiet"])
        d.record("14", "Ctrl-C during `kg.build`", ctrl_c, quad_count(real))
    finally:
        kg.build.pick = real_pick  # type: ignore[assignment]

    def jvm() -> tuple[str, str]:
        parent = subprocess.Popen([sys.executable, "-c", "from kg.reason import run_java; "
                                   "run_java(['sleep', '60'], 120)"], cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline, kids = time.monotonic() + 20, []
        while not kids and time.monotonic() < deadline:
            time.sleep(0.05)
            kids = [int(s.parent.name) for s in Path("/proc").glob("[0-9]*/stat")
                    if _ppid(s) == parent.pid]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        time.sleep(1)
        alive = [k for k in kids if _state(k) not in ("Z", None)]
        for k in alive:
            os.kill(k, signal.SIGKILL)
        return "ok", f"reasoner processes alive 1 s after `kill -9` of kg.build: {len(alive)}"
    d.record("14", "`kill -9` of the process running the reasoner (stand-in: sleep)", jvm)


def _ppid(stat: Path) -> int | None:
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def results_file(d: Drill) -> None:
    f = d.folder()
    q = probe_dir(f, CHOICE)
    (f / "folder.duckdb").mkdir()
    (f / "afile").write_text("x")
    (f / "text.duckdb").write_text("not a database")
    missing = f / "nope" / "deeper" / "r.duckdb"

    def created() -> tuple[str, str]:
        code = export_cli(q, missing)
        return f"exit {code}", f"folder created: {missing.parent.is_dir()}"
    d.record("15", "`--results` in a missing folder", created, results_counts(missing))

    def read_only() -> tuple[str, str]:
        from probes import results as results_mod
        real = results_mod.os.access
        results_mod.os.access = lambda path, mode: False  # type: ignore[assignment]
        try:
            return "diagnosis", results_mod.diagnose(missing)
        finally:
            results_mod.os.access = real  # type: ignore[assignment]
    d.record("15", "read-only results file (simulated: os.access says no; the drill may run "
             "as root)", read_only)
    for target, what in ((f / "folder.duckdb", "that is a folder"),
                         (f / "afile" / "r.duckdb", "under a file"),
                         (f / "text.duckdb", "that is a text file")):
        d.record("15", f"`--results` {what}", lambda t=target: export_cli(q, t),
                 results_counts(target))
    _, res = exported(d.folder(), CHOICE, score=True)
    data = res.read_bytes()
    res.write_bytes(data[: len(data) // 3])
    d.record("15", "`--results` truncated to a third", lambda: export_cli(q, res))
    f = d.folder()
    q2, res = exported(f, CHOICE, score=True)
    data = bytearray(res.read_bytes())
    data[12288:] = b"\x5a" * (len(data) - 12288)
    res.write_bytes(bytes(data))
    d.record("15", "fully cached `probes.engine.run` on a file damaged after its headers",
             lambda: run(q2, res))
    f = d.folder()
    q3, res = exported(f, CHOICE)
    con = duckdb.connect(str(res))  # another process would hold it: a second handle in a child
    con.close()
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; "
                               f"c = duckdb.connect({str(res)!r}); print('ok', flush=True); "
                               "time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    holder.stdout.readline() if holder.stdout else None
    try:
        d.record("15", "`--results` held by another process", lambda: run(q3, res))
    finally:
        holder.kill()
        holder.wait()


def one_line(d: Drill) -> None:
    f = d.folder()
    q, res = exported(f, CHOICE)
    import torch

    if not torch.cuda.is_available():
        d.record("16", "`--device cuda` on a machine without CUDA",
                 lambda: run(q, res, "--device", "cuda", "--no-cache"), results_counts(res))
    d.record("16", "`--device bogus`", lambda: run(q, res, "--device", "bogus", "--no-cache"),
             results_counts(res))
    d.record("16", "probe name of 300 characters", lambda: load_probe(probe_dir(
        d.folder(), f"# name: d/{'a' * 300}\n# task: records\n# split: test\n"
        "SELECT ?a WHERE { }\n") / "p.rq"))
    (f / "out.txt").write_text("a file")
    st = f / "store"
    s = ox.Store(str(st))
    s.flush()
    del s
    d.record("16", "`probes.engine.export --out FILE`", lambda: export_main(
        ["--queries", str(q), "--only-extra", "--results", str(res), "--out",
         str(f / "out.txt"), "--quiet", "--store", str(st)]), results_counts(res))
    (f / "exports" / "d").mkdir(parents=True)
    (f / "exports" / "d" / "choice").write_text("a file where the probe's folder goes")
    d.record("16", "Parquet write fails after the instances are ready", lambda: export_main(
        ["--queries", str(q), "--only-extra", "--results", str(res), "--out",
         str(f / "exports"), "--quiet", "--store", str(st)]), results_counts(res))
    (f / "notastore").mkdir()
    d.record("16", "`--store` on a folder that is not a store", lambda: export_main(
        ["--queries", str(q), "--only-extra", "--results", str(res), "--quiet", "--store",
         str(f / "notastore")]), results_counts(res))
    g = d.folder()
    (g / "latin1.rq").write_bytes(RECORDS.encode() + b"SELECT ?x WHERE { } # caf\xe9\n")
    d.record("16", "probe file in Latin-1", lambda: load_probe(g / "latin1.rq"))
    d.record("16", "YAML header with an unclosed `[` on line 4", lambda: parse_probe(
        RECORDS + "# prompts: [\"a\", \"b\"\n# seed: 1\nSELECT ?a WHERE { }\n", g / "y.rq"))
    h = d.folder()
    qh = probe_dir(h, CHOICE.replace("[W] is [DET] [V].", "[W] lives in [PLACE]: [V]"))
    d.record("16", "template naming `[PLACE]`, which the query does not select",
             lambda: export_cli(qh, h / "r.duckdb"), results_counts(h / "r.duckdb"))

    def pickle_flag() -> tuple[str, str]:
        from probes.engine.runner.command import build_parser
        helps = {a.option_strings[0]: a.help for a in build_parser()._actions
                 if a.option_strings}
        return "ok", f"--allow-pickle: {helps.get('--allow-pickle', 'MISSING')}"
    d.record("16", "pickle weights: the flag the error message names", pickle_flag)
    d.record("16", "prompt longer than the model accepts",
             lambda: run(q, res, "--no-cache", scorer=StandInScorer(refuse="emu")),
             results_counts(res))


# --- issue 21, points 1 and 4 (metric files are data; errors that tell the truth) ---------------

METRIC_HEAD = "-- name: {}\n-- description: d.\n-- tasks: [choice]\n-- grain: [probe]\n"


def _report(res: Path, mine: Path, out: Path) -> int:
    from eval.report import main as report_main
    return report_main(["--results", str(res), "--metrics", str(mine), "--out", str(out),
                        "--no-plots"])


def _accuracy(md: Path) -> str:
    lines = md.read_text(encoding="utf-8").splitlines()
    head = next(ln for ln in lines if ln.startswith("| model |") and "choice_accuracy" in ln)
    row = next(ln for ln in lines[lines.index(head):] if "| d/choice |" in ln)
    cols = [c.strip() for c in head.strip("|").split("|")]
    return [c.strip() for c in row.strip("|").split("|")][cols.index("choice_accuracy")]


def metric_files(d: Drill) -> None:
    """Issue 21, point 1: a metric file (``--metrics DIR``) reads the results and nothing else."""
    f = d.folder()
    _, res = exported(f, CHOICE, score=True)

    def one(name: str, body: str, extra: dict[str, str] | None = None) -> Path:
        mine = f / name
        mine.mkdir(parents=True)
        (mine / "m.sql").write_text(METRIC_HEAD.format("m") + body, encoding="utf-8")
        for file, text in (extra or {}).items():
            (f / file).write_text(text, encoding="utf-8")
        return mine

    evil = f / "evil.py"
    mine = one("copy", f"SELECT 'p' AS probe, 1 AS value;\nCOPY (SELECT 'import os') TO "
               f"'{evil}' (HEADER false);\n")

    def copy() -> tuple[str, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = _report(res, mine, f / "out1")
        return f"exit {code}", f"{d.clean(err.getvalue())} [evil.py written: {evil.exists()}]"
    d.record("21.1", "metric file with `COPY (...) TO '$TMP/evil.py'`", copy, results_counts(res))
    d.record("21.1", "metric reading `read_text('/etc/passwd')`", lambda: _report(
        res, one("passwd", "SELECT content AS probe, 1 AS value FROM read_text('/etc/passwd')\n"),
        f / "out2"), results_counts(res))
    with server("record") as srv:
        net = one("net", f"SELECT 't' AS probe, 1 AS value FROM read_csv('{srv['url']}')\n")

        def http() -> tuple[str, str]:
            code = _report(res, net, f / "out3")
            return f"exit {code}", f"requests the server received: {len(srv['bodies'])}"
        d.record("21.1", "metric reading `read_csv('http://127.0.0.1:PORT/...')`", http)
    d.record("21.1", "metric with `INSTALL httpfs`", lambda: _report(
        res, one("install", "INSTALL httpfs;\nSELECT 'p' AS probe, 1 AS value\n"), f / "out4"))
    d.record("21.1", "metric with `-- requires: [../../x.sql]`", lambda: _report(
        res, one("a/b/req", "-- requires: [../../x.sql]\nSELECT 'p' AS probe, 1 AS value\n",
                 {"a/x.sql": "CREATE TEMP VIEW evil AS SELECT 1;\n"}), f / "out5"))
    plain = one("none", "SELECT 'p' AS probe, 1 AS value\n")
    shadow = f / "shadow"
    shadow.mkdir()
    (shadow / "a_shadow.sql").write_text(
        METRIC_HEAD.format("a_shadow") + "CREATE OR REPLACE TEMP VIEW scores AS SELECT s.* "
        "REPLACE (CASE WHEN list_contains(i.gold, s.candidate) THEN 0.0 ELSE -99.0 END AS score)"
        " FROM r.main.scores s JOIN r.main.instances i USING (probe, split, instance_id);\n"
        "SELECT 'p' AS probe, 0 AS value\n", encoding="utf-8")

    def shadowed() -> tuple[str, str]:
        _report(res, plain, f / "out6")
        code = _report(res, shadow, f / "out7")
        return f"exit {code}", (f"choice_accuracy {_accuracy(f / 'out7' / 'report.md')} after "
                                f"the shadowing metric, {_accuracy(f / 'out6' / 'report.md')} "
                                "without it")
    d.record("21.1", "metric `a_shadow` (runs first) with a `TEMP VIEW scores` that makes every "
             "gold answer win (1.000 if it leaked)", shadowed, results_counts(res))


def truthful_errors(d: Drill) -> None:
    """Issue 21, point 4: a full disk, the notebook API, a cut-off GGUF."""
    import errno

    import probes.engine.export
    import probes.results.combine as combine_mod
    from probes.app import api
    from probes.results.__main__ import main as results_main

    def full(*args: Any, **kwargs: Any) -> None:
        raise duckdb.IOException('IO Error: Could not write file "r.duckdb.wal": '
                                 + os.strerror(errno.ENOSPC))
    f = d.folder()
    q, res = exported(f, CHOICE, score=True)

    def export_full() -> int:
        real = probes.engine.export.write_instances
        probes.engine.export.write_instances = full  # type: ignore[assignment]
        try:
            return export_cli(q, res)
        finally:
            probes.engine.export.write_instances = real  # type: ignore[assignment]
    d.record("21.4", "export onto a full disk (simulated: the write raises ENOSPC)",
             export_full, results_counts(res))

    g = d.folder()
    _, a = exported(g, CHOICE, score=True)
    out = g / "all.duckdb"

    def combine_full() -> tuple[str, str]:
        @contextlib.contextmanager
        def commit_fails(con: duckdb.DuckDBPyConnection) -> Any:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            finally:
                con.execute("ROLLBACK")
            full()
        real = combine_mod.transaction
        combine_mod.transaction = commit_fails  # type: ignore[assignment]
        try:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = results_main(["combine", str(out), str(a)])
            print(err.getvalue(), file=sys.stderr, end="")
            return f"exit {code}", (f"{err.getvalue().strip()} [stderr lines: "
                                    f"{err.getvalue().count(chr(10))}, OUT exists: "
                                    f"{out.exists()}]")
        finally:
            combine_mod.transaction = real  # type: ignore[assignment]
    d.record("21.4", "`combine OUT IN` onto a full disk (simulated: COMMIT raises ENOSPC)",
             combine_full, results_counts(a))

    h = d.folder()
    (h / "deep").mkdir()
    for where in (h, h / "deep"):
        (where / "broken.rq").write_text("# name: x\n# task: nonsense\nSELECT WHERE {\n")

    def from_text() -> tuple[str, str]:
        before = Path.cwd()
        os.chdir(h)
        try:
            probe = parse_probe(CHOICE.replace("d/choice", "d/text"))
            api.export(probe, LocalStore.in_memory(), h / "r.duckdb")
            rows = api.score(probe, StandInScorer(), h / "r.duckdb")
        finally:
            os.chdir(before)
        return "ok", f"{rows.height} score rows; the broken .rq files were not read"
    d.record("21.4", "`api.score` of a probe built from text, in a folder with broken .rq "
             "files", from_text)
    import torch

    if not torch.cuda.is_available():
        d.record("21.4", "`api.load_scorer(..., device='cuda')` without CUDA",
                 lambda: api.load_scorer("smollm2-135m", device="cuda"))
    stub = h / "stub.gguf"
    stub.write_bytes(b"GGUF" + b"\0" * 60)
    d.record("21.4", "`api.load_scorer` of a 64-byte GGUF", lambda: api.load_scorer(str(stub)))
    d.record("21.4", "`probes.engine.run --model` a 64-byte GGUF", lambda: _run_model(q, res, stub),
             results_counts(res))


def _run_model(q: Path, res: Path, model: Path) -> int:
    from probes.app.run import main as run_main
    return run_main(["--model", str(model), "--results", str(res), "--queries", str(q),
                     "--only-extra", "--quiet", "-p", "d/*", "--no-cache"])


# --- issue 21, point 3: no silent wrong number (shards, cache key, endpoints, Parquet) ----------

_KILLED_EXPORT = """
import os, signal, sys
from pathlib import Path
import probes.engine.export as ex
from kg.store import LocalStore
from probes.engine.spec import discover
ex.publish_parquet = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
q, r, o = map(Path, sys.argv[1:4])
ex.export(discover([q], include_default=False), LocalStore.in_memory(), r, o, progress=False)
"""


def no_silent_numbers(d: Drill) -> None:
    from kg.reason import clean_dead_reason_dirs, reason_dir
    from probes.engine.models import resolve
    from probes.engine.shard import merge
    from tests.hostile_http import serving

    big = CHOICE.replace("d/choice", "d/big").split("SELECT")[0] + (
        "SELECT ?w ?g ?c WHERE { VALUES (?w ?g ?c) { "
        + " ".join(f'("w{i}" "g{i}" "c{i}")' for i in range(6)) + " } }\n")
    f = d.folder()
    q, res = exported(f, big)
    (q / "p0.rq").write_text(big.replace("WHERE {", "WHERE { # edited\n", 1))
    d.record("21.3", "probe edited after export, then `probes.engine.run --shard 0/2`",
             lambda: run(q, res, "--shard", "0/2"), results_counts(res))

    f = d.folder()
    q, res = exported(f, big)
    run(q, res, "--shard", "0/2")
    (q / "p0.rq").write_text(big.replace('"w', '"v'))
    export(discover([q], include_default=False), LocalStore.in_memory(), res, None,
           progress=False)
    run(q, res, "--shard", "1/2")
    d.record("21.3", "`merge` of two shards cut from two exports of the probe",
             lambda: merge(res, 2, keep=True), results_counts(res))

    f = d.folder()
    model = f / "model"
    model.mkdir()
    for name, body in (("config.json", "{}"), ("model.safetensors", "w"),
                       ("tokenizer.json", '{"model": {"merges": ["a b"]}}')):
        (model / name).write_text(body)

    def tokenizer() -> tuple[str, str]:
        before = resolve(str(model)).revision or ""
        (model / "tokenizer.json").write_text('{"model": {"merges": []}}')
        after = resolve(str(model)).revision or ""
        return "ok", (f"revision {before[:12]} -> {after[:12]}: "
                      f"{'another cache key' if before != after else 'SAME cache key'}")
    d.record("21.3", "local model folder whose `tokenizer.json` changed", tokenizer)

    f = d.folder()
    q = probe_dir(f, RECORDS + "SELECT ?x WHERE { ?x ?p ?o }\n")
    with serving("redirect") as srv:
        d.record("21.3", "endpoint answering a query with a 302 redirect",
                 lambda: export_cli(q, f / "r.duckdb", "--endpoint", srv.url),
                 results_counts(f / "r.duckdb"))
        d.record("21.3", "(the same) requests the redirect's target received",
                 lambda: ("ok", f"{sum(p != '/query' for p in srv.paths)}"))
    for kind, what in (("no-head", "JSON without `head`"),
                       ("no-type", "a binding without `type`"),
                       ("bindings-dict", "`bindings` that is not a list")):
        with serving(kind) as srv:
            d.record("21.3", f"endpoint answering {what}",
                     lambda srv=srv: export_cli(q, f / "r.duckdb", "--endpoint", srv.url))
    with serving("huge") as srv:
        d.record("21.3", "endpoint answering 3 MB where the bound is 1 MB",
                 lambda: RemoteStore(srv.url, max_bytes=1_000_000).query(
                     "SELECT ?x WHERE { ?x ?p ?o }"))

    f = d.folder()
    q, res, out = f / "q", f / "r.duckdb", f / "exports"
    q.mkdir()
    values = RECORDS + 'SELECT ?x WHERE {{ VALUES ?x {{ {} }} }}\n'
    (q / "p.rq").write_text(values.format('"a" "b" "c"'))
    export(discover([q], include_default=False), LocalStore.in_memory(), res, out,
           progress=False)
    (q / "p.rq").write_text(values.format('"a" "b" "c" "d" "e"'))
    subprocess.run([sys.executable, "-c", _KILLED_EXPORT, str(q), str(res), str(out)],
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)

    def in_step() -> str:
        import polars as pl

        con = duckdb.connect(str(res), read_only=True)
        try:
            n = con.execute("SELECT count(*) FROM instances WHERE probe = 'd/x'"
                            ).fetchone()[0]  # type: ignore[index]
        finally:
            con.close()
        parquet = pl.read_parquet(out / "d/x/test.parquet").height
        return f"{n} in DuckDB / {parquet} in Parquet / {len(list(out.rglob('*.tmp')))} .tmp"
    (q / "y.rq").write_text(RECORDS.replace("d/x", "d/y") + "SELECT ?x WHERE { }\n")
    d.record("21.3", "`kill -9` between the DuckDB commit and the Parquet rename, then "
             "the next `probes.engine.export` (of another probe)",
             lambda: export_main(["--queries", str(q), "--only-extra", "--results", str(res),
                                  "--out", str(out), "--store", str(EMPTY_STORE[0]), "--quiet",
                                  "-p", "d/y"]), in_step)

    f = d.folder()

    def reason_dirs() -> tuple[str, str]:
        code = ("import os, signal\nfrom kg.reason import reason_dir\nwith reason_dir():\n"
                "    os.kill(os.getpid(), signal.SIGKILL)\n")
        subprocess.run([sys.executable, "-c", code], check=False,
                       env={**os.environ, "TMPDIR": str(f), "PYTHONPATH": str(ROOT)})
        left = list(f.glob("kgprobe-reason-*"))
        with reason_dir():  # what the next classification does first, on the system's tmp
            pass
        clean_dead_reason_dirs(f)
        return "ok", (f"folders of a `kill -9`-ed reasoner run: {len(left)} before, "
                      f"{len(list(f.glob('kgprobe-reason-*')))} after the next run")
    d.record("21.3", "`kgprobe-reason-*` folder of a build killed while HermiT ran",
             reason_dirs)


# --- issue 21, point 2: probe files and derived files never act --------------------------------

def probe_files_act(d: Drill) -> None:
    """Issue 21 point 2: SERVICE spellings, RAND after a CR, large syntax errors, files that are
    not regular, YAML headers, one bad file among others, derived graphs, FROM."""
    service_spellings(d)
    odd_files(d)
    yaml_headers(d)
    derived_graphs(d)
    from_clause(d)


def _listing(q: Path, srv: dict[str, Any]) -> Callable[[], tuple[str, str]]:
    def call() -> tuple[str, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = export_main(["--queries", str(q), "--only-extra", "--list"])
        time.sleep(0.2)
        first = (err.getvalue().strip().splitlines() or ["(no message)"])[0]
        return f"exit {code}", f"{first} — requests the server received: {len(srv['bodies'])}"
    return call


def service_spellings(d: Drill) -> None:
    with server("silent") as srv:
        service = f"SERVICE <{srv['url']}> {{ ?x ?p 'v' }}"
        prefix = "PREFIX ex: <http://e.org/>\n"
        base, last = srv["url"].rsplit("/", 1)
        for what, body in (
                ("`ex:a\\#` before it", f"{prefix}SELECT ?x WHERE {{ ?x ex:a\\# ?o . {service} }}"),
                ("`ex:it\\'s` before it", f"{prefix}SELECT ?x WHERE {{ ?x ex:it\\'s ?o . "
                 f"{service} }}"),
                ("its IRI a prefixed name `e·x:...`", f"PREFIX e\u00b7x: <{base}/>\nSELECT ?x "
                 f"WHERE {{ SERVICE e\u00b7x:{last} {{ ?x ?p ?o }} }}"),
                ("CR-only line ends", f"SELECT ?x WHERE {{ # comment\r {service}\r}}")):
            f = d.folder()
            q = probe_dir(f, RECORDS + body + "\n")
            d.record("21.2", f"`--list`, SERVICE to a silent server, {what}", _listing(q, srv))
            res = f / "r.duckdb"
            d.record("21.2", f"export of that probe ({what})", lambda q=q, res=res:
                     export_cli(q, res), results_counts(res))
    d.record("21.2", "`ORDER BY RAND()` after a comment ended by a CR", lambda: parse_probe(
        RECORDS + "SELECT ?x WHERE { ?x ?p ?o } # sample\rORDER BY RAND()\n", "p.rq"))
    rows = " ".join(f'("w{i}" "x{i}")' for i in range(13_000))
    big = RECORDS + f"SELECT ?a ?b WHERE {{\n VALUES (?a ?b) {{\n{rows}\n}}\n ?a ?p ?b\n"
    d.record("21.2", f"one syntax error (a missing `}}`) in a {len(big) / 1e6:.2f} MB query",
             lambda: parse_probe(big, "p.rq"))


def odd_files(d: Drill) -> None:
    f = d.folder()
    q = probe_dir(f, RECORDS + 'SELECT ?x WHERE { VALUES ?x { "a" } }\n')
    (q / "huge.rq").write_text(RECORDS.replace("d/x", "d/huge") + "SELECT ?x WHERE { }\n"
                               + "# padding\n" * 1_000_000)
    d.record("21.2", "10 MB probe file", lambda: load_probe(q / "huge.rq"))
    (q / "huge.rq").unlink()
    os.mkfifo(q / "fifo.rq")
    d.record("21.2", "a FIFO named `fifo.rq` in the probe folder, `--list`",
             lambda: export_main(["--queries", str(q), "--only-extra", "--list"]))
    (q / "fifo.rq").unlink()
    (q / "zero.rq").symlink_to("/dev/zero")
    d.record("21.2", "`zero.rq`, a link to /dev/zero, `--list`",
             lambda: export_main(["--queries", str(q), "--only-extra", "--list"]))
    (q / "zero.rq").unlink()
    (q / "bad.rq").write_text(RECORDS.replace("d/x", "d/bad") + "SELECT ?x WHERE { ?x\n")
    res = f / "r.duckdb"
    d.record("21.2", "export `-p d/x` beside a broken `bad.rq`",
             lambda: export_cli(q, res, "-p", "d/x"), results_counts(res))


def yaml_headers(d: Drill) -> None:
    lines = ['# builder_params: {a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"],']
    prev = ["a", *(f"l{i}" for i in range(9))]
    lines += [f"#   l{i}: &l{i} [{', '.join([f'*{prev[i]}'] * 9)}]" + ("," if i < 8 else "}")
              for i in range(9)]
    body = "SELECT ?x WHERE { }\n"
    for what, header in (("a 9-level alias bomb in `builder_params`", "\n".join(lines) + "\n"),
                         ("a recursive alias `&x [*x]`", "# builder_params: &x [*x]\n"),
                         ("50,000-deep nesting in `params`",
                          "# params: " + "[" * 50_000 + "]" * 50_000 + "\n"),
                         ("`name:` given twice", "# name: d/y\n")):
        d.record("21.2", f"YAML header with {what}",
                 lambda h=header: parse_probe(RECORDS + h + body, "p.rq"))
    f = d.folder()
    (f / "bom.rq").write_bytes(b"\xef\xbb\xbf" + (RECORDS + body).encode())
    d.record("21.2", "probe file starting with a byte-order mark",
             lambda: load_probe(f / "bom.rq"))


def derived_graphs(d: Drill) -> None:
    f = d.folder()
    path, folder = f / "store", f / "derived"
    folder.mkdir()
    store = ox.Store(str(path))
    store.extend(ox.Quad(ox.NamedNode(f"http://e.org/s{i}"), ox.NamedNode("http://e.org/p"),
                         ox.Literal(i), ox.NamedNode("https://w3id.org/kgprobe/graph/src"))
                 for i in range(1000))
    store.flush()
    del store
    copy = folder / "copy.rq"
    copy.write_text("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <https://w3id.org/kgprobe/graph/src> "
                    "{ ?s ?p ?o } }\n")
    derive = ["--store", str(path), "--folder", str(folder)]
    d.record("21.2", "`kg.derived` (1,000 source quads, derived graph `copy`)",
             lambda: kg.derived.main(derive), quad_count(path))
    copy.write_text("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p\n")
    d.record("21.2", "`kg.derived` with a syntax-broken CONSTRUCT",
             lambda: kg.derived.main(derive), quad_count(path))
    copy.write_text("CONSTRUCT { ?a ?p ?c } WHERE { ?a ?p ?b . ?c ?q ?d }\n")
    d.record("21.2", "`kg.derived` with an exploding CONSTRUCT (10^6 triples), `--max-rows "
             "100000`", lambda: kg.derived.main([*derive, "--max-rows", "100000"]),
             quad_count(path))
    copy.write_text("CONSTRUCT { ?a ?b ?c } WHERE { ?a ?p ?x . ?b ?q ?y . ?c ?r ?z }\n")
    d.record("21.2", "`kg.derived` with a CONSTRUCT of 10^9 solutions, `--query-timeout 2`",
             lambda: kg.derived.main([*derive, "--query-timeout", "2"]), quad_count(path))
    with server("record") as srv:
        copy.write_text(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{\n SERVICE <{srv['url']}> "
                        "{ ?s ?p ?o }\n}\n")

        def service() -> tuple[str, str]:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = kg.derived.main(derive)
            time.sleep(0.2)
            return f"exit {code}", (f"{err.getvalue().strip()} — requests the server "
                                    f"received: {len(srv['bodies'])}")
        d.record("21.2", "`kg.derived` with SERVICE in a derived file", service,
                 quad_count(path))
    typo = f / "stroe"

    def mistyped() -> tuple[str, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = kg.derived.main(["--store", str(typo), "--folder", str(folder)])
        return f"exit {code}", f"{err.getvalue().strip()} — folder created: {typo.exists()}"
    d.record("21.2", "`kg.derived --store` with a mistyped path", mistyped)


def from_clause(d: Drill) -> None:
    store = LocalStore.in_memory()
    for g, n in (("pizza", 2), ("wordnet", 5)):
        store.oxigraph.extend(ox.Quad(ox.NamedNode(f"http://e.org/{g}{i}"),
                                      ox.NamedNode("http://e.org/p"), ox.Literal(i),
                                      ox.NamedNode(f"https://w3id.org/kgprobe/graph/{g}"))
                              for i in range(n))
    for target in ("pizza", "nothing"):
        probe = parse_probe(RECORDS + "SELECT (COUNT(*) AS ?n) FROM <https://w3id.org/kgprobe/"
                            f"graph/{target}> WHERE {{ ?s ?p ?o }}\n", "p.rq")

        def count(probe: Any = probe) -> tuple[str, str]:
            n = instances_for(probe, store)["fields"][0]
            return "ok", f"counted {n} (the store holds 7 quads, graph pizza 2)"
        d.record("21.2", f"`FROM <.../graph/{target}>` against the embedded store", count)


# --- the table ----------------------------------------------------------------------------------

# --- issue 30, points 5, 7, 8, 9, 10, 11 (h19) ---------------------------------------------------

def issue30_h19(d: Drill) -> None:
    """Issue 30 point 5: a Parquet export cut to half on disk; point 7: distractors drawn by the
    header option with a pool too small for n."""
    f = d.folder()
    q = probe_dir(f, CHOICE)
    res, out = f / "r.duckdb", f / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        export_main(["--queries", str(q), "--only-extra", "--results", str(res), "--out",
                     str(out), "--quiet", "--store", str(EMPTY_STORE[0])])
    part = out / "d" / "choice" / "test.parquet"
    part.write_bytes(part.read_bytes()[:part.stat().st_size // 2])
    d.record("30.5", "a Parquet export cut to half on disk, then `export` again",
             lambda: export_main(["--queries", str(q), "--only-extra", "--results", str(res),
                                  "--out", str(out), "--quiet", "--store",
                                  str(EMPTY_STORE[0])]), results_counts(res))
    f = d.folder()
    sampled = ("# name: d/sampled\n# task: choice\n# split: test\n# target: ?w\n# gold: ?g\n"
               "# candidates: ?c\n# group_by: ?w\n# prompts: [\"[W] is [DET] [V].\"]\n"
               "# distractors: {pool: \"?p\", n: 5, seed: 42}\n"
               "SELECT ?w ?g ?p WHERE { { VALUES (?w ?g) { (\"owl\" \"bird\") } } UNION "
               "{ VALUES ?p { \"tree\" \"apple\" \"bird\" } } }\n")
    q = probe_dir(f, sampled)
    res = f / "r.duckdb"
    d.record("30.7", "`distractors: {n: 5}` from a pool of 3 words (one the gold)",
             lambda: export_cli(q, res, "-p", "d/sampled"), results_counts(res))


def markdown(rows: list[Outcome]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| # | input | outcome | message (first line) | rows before | rows after | "
             "files left | connections |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.point} | {cell(r.case)} | {cell(r.outcome)} | {cell(r.message)} | "
              f"{cell(r.before)} | {cell(r.after)} | {cell(r.files_left)} | "
              f"{cell(r.connections)} |" for r in rows]
    return "\n".join(lines)


BEGIN, END = "<!-- fault-drill:begin -->", "<!-- fault-drill:end -->"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md",
                        help="markdown file whose fault-drill table is replaced (default: "
                        "docs/reliability.md); '-' prints the table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kgprobe-drill-") as tmp:
        drill = Drill(Path(tmp))
        store = ox.Store(str(Path(tmp) / "empty-store"))
        store.flush()
        del store
        EMPTY_STORE[:] = [Path(tmp) / "empty-store"]
        security(drill)
        wrong_numbers(drill)
        faults(drill)
        metric_files(drill)
        truthful_errors(drill)
        no_silent_numbers(drill)
        probe_files_act(drill)
        # issue 30: points 5 and 7 here; points 1, 2, 3, 4 and 6 in scripts/fault_drill_issue30.py
        issue30_h19(drill)
        issue30_edges(drill)
        issue45_edges(drill)
    table = markdown(drill.rows)
    stamp = (f"Generated by `PYTHONPATH=$PWD python scripts/fault_drill.py` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({len(drill.rows)} cases).")
    block = f"{BEGIN}\n{stamp}\n\n{table}\n{END}"
    if str(args.out) == "-":
        print(block)
        return 0
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else f"{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    args.out.write_text(head + block + rest.split(END, 1)[1], encoding="utf-8")
    print(f"wrote {len(drill.rows)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
