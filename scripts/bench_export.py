"""Export speed at scale (issue 46): seconds and peak memory of exporting 1,000, 10,000 and
100,000 instances, and of a probe whose query is a 1,000-row ``VALUES``.

    PYTHONPATH=$PWD python scripts/bench_export.py --store S [--sizes 1000 10000 100000]
                                                    [--values 1000]

``S`` is a store with WordNet (``python -m kg.build -s wordnet``). Each case is one probe file
written to a temporary folder, with ``[DET]`` in its prompt (so the export reads WordNet's
morphology, as a researcher's probe does):

- ``store N``: N distinct (noun, direct hypernym) pairs of WordNet (the first the store
  yields: no ORDER BY, so the query's time grows with N), one instance each (task relatum,
  ``id: [?word, ?hypernym]``);
- ``values N``: the same pairs written into the probe as a ``VALUES`` block of N rows.

Each case runs in a fresh Python process (so no cache of an earlier case helps, and its peak
resident memory and CPU seconds are its own, read with ``os.wait4``; on a loaded machine the CPU
seconds are the better guide to a quiet machine's wall time), twice in a row unless ``--once``: the
first and the second try. A process times parsing the probe file (``load_probe``), the
probe's query alone (``run_query``) and the whole export (``export``: query, instances,
checks, provenance, DuckDB and Parquet), and prints one table row: ``beyond query`` is parse
plus export minus the query's own time, the figure the issue's targets (2 s, 10 s and 60 s
for 1,000, 10,000 and 100,000 instances on a quiet machine) bound.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAIRS = """PREFIX wn: <http://www.w3.org/2006/03/wn/wn20/schema/>
SELECT DISTINCT ?word ?hypernym WHERE { GRAPH <https://w3id.org/kgprobe/graph/wordnet> {
  ?s a wn:NounSynset ; wn:hyponymOf ?h ; wn:containsWordSense/wn:word/wn:lexicalForm ?word .
  ?h wn:containsWordSense/wn:word/wn:lexicalForm ?hypernym .
} }
LIMIT %d
"""

HEAD = """# name: bench/%s
# task: relatum
# split: test
# target: ?word
# gold: ?hypernym
# id: [?word, ?hypernym]
# prompts: ["[DET] [W] is a kind of [V]"]
# graphs: [wordnet]
"""


def probe_text(case: str, n: int, store_path: Path) -> str:
    """The probe file of one case (see the module docstring)."""
    if case == "store":
        return HEAD % f"store-{n}" + PAIRS % n
    from kg.store import LocalStore

    rows = LocalStore.open(store_path).query(PAIRS % n, timeout=None, max_rows=None)
    values = "\n".join(f"  ({json.dumps(str(r['word']))} {json.dumps(str(r['hypernym']))})"
                       for r in rows)
    return (HEAD % f"values-{n}"
            + f"SELECT ?word ?hypernym WHERE {{\n VALUES (?word ?hypernym) {{\n{values}\n }}\n}}\n")


def child(path: Path, store_path: Path, work: Path) -> None:
    """One export in this process; prints a JSON line of its timings."""
    t0 = time.perf_counter()
    from kg.store import LocalStore
    from probes.engine.export import QueryLimits, export, run_query
    from probes.engine.spec import load_probe

    t_import = time.perf_counter() - t0
    t = time.perf_counter()
    probe = load_probe(path)
    t_parse = time.perf_counter() - t
    store = LocalStore.open(store_path)
    limits = QueryLimits(timeout_s=None, max_rows=None)
    t = time.perf_counter()
    rows = len(run_query(probe, store, limits))
    t_query = time.perf_counter() - t
    t = time.perf_counter()
    reports = export([probe], store, work / "results.duckdb", work / "exports", progress=False,
                     limits=limits)
    t_export = time.perf_counter() - t
    print(json.dumps({"rows": rows, "instances": sum(r.rows for r in reports),
                      "import": t_import, "parse": t_parse, "query": t_query,
                      "export": t_export}))


def run_case(path: Path, store_path: Path, work: Path, code: Path | None = None
             ) -> dict[str, float]:
    """Run :func:`child` in a fresh process (importing kgprobe from ``code``, a checkout, when
    given); its timings and peak resident MB."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code.resolve())
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(path), "--store",
                             str(store_path), "--work", str(work)], stdout=subprocess.PIPE,
                            env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"the export of {path} failed (exit status {proc.returncode})")
    got: dict[str, float] = json.loads(out.decode().strip().splitlines()[-1])
    got["peak_mb"] = usage.ru_maxrss / 1024
    got["cpu"] = usage.ru_utime + usage.ru_stime
    return got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--values", type=int, nargs="*", default=[1000],
                        help="sizes of the VALUES case (none: skip it)")
    parser.add_argument("--once", action="store_true", help="one try per case, not two")
    parser.add_argument("--code", type=Path, action="append", metavar="CHECKOUT",
                        help="run each case with kgprobe imported from this checkout (a git "
                        "worktree of another commit, say); repeat to compare, case by case in "
                        "turn (default: the kgprobe on PYTHONPATH)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.store, args.work)
        return 0
    codes: list[Path | None] = list(args.code or [None])
    print("| case | code | try | query rows | instances | parse s | query s | export s | "
          "beyond query s | CPU s | peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cases = [("values", n) for n in args.values] + [("store", n) for n in args.sizes]
    with tempfile.TemporaryDirectory(prefix="kgprobe-bench-export-") as tmp:
        for case, n in cases:
            path = Path(tmp) / f"{case}-{n}.rq"
            path.write_text(probe_text(case, n, args.store))
            for k, code in enumerate(codes):
                work = Path(tmp) / f"{case}-{n}-{k}"
                work.mkdir()
                for attempt in (1,) if args.once else (1, 2):
                    row(case, n, code, attempt, run_case(path, args.store, work, code))
    return 0


def row(case: str, n: int, code: Path | None, attempt: int, r: dict[str, float]) -> None:
    """One table row of a case's timings."""
    beyond = r["parse"] + r["export"] - r["query"]
    print(f"| {case} {n:,} | {code or '-'} | {attempt} | {int(r['rows']):,} | "
          f"{int(r['instances']):,} | {r['parse']:.2f} | {r['query']:.2f} | "
          f"{r['export']:.2f} | {beyond:.2f} | {r['cpu']:.1f} | {r['peak_mb']:.0f} |",
          flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
