"""Benchmark the foundation: store build, rebuild and probe export (not a test; prints numbers).

    python scripts/bench_build.py [--store DIR] [--results FILE] [--no-rebuild]

Builds every source of the manifest into a fresh temporary store (or --store), then builds them
all again over that store (a rebuild), each in a process of its own so that each peak memory is
its own; then exports every probe under queries/. Prints, for the fresh build and the rebuild:
seconds and triples/s per source, reasoning seconds per ontology, seconds and triples per
derived graph, the whole build's seconds and the peak memory (the build process and its largest
child, the reasoner's JVM); then export seconds per probe. Targets on the 2-core reference
machine: a fresh build under 180 s and 4 GB; a rebuild never slower than the fresh build and
its peak near the fresh build's; export under 10 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from kg.build import SourceReport, build, format_reports, peak_memory_mb
from kg.derived import DerivedReport
from kg.store import LocalStore
from probes.engine.export import export
from probes.engine.export import format_reports as format_exports
from probes.engine.spec import discover


def one_build(store_path: Path) -> dict:
    """Build every source into ``store_path`` (fresh or over the store there), in this process."""
    derived: list[DerivedReport] = []
    t0 = time.perf_counter()
    reports = build(None, store_path, progress=False, derived_reports=derived)
    seconds = time.perf_counter() - t0
    me, kids = peak_memory_mb()
    return {"seconds": seconds, "sources": [asdict(r) for r in reports],
            "derived": [asdict(d) for d in derived], "peak_mb": me, "child_peak_mb": kids}


def build_in_child(store_path: Path) -> dict:
    """:func:`one_build` in a process of its own (its own peak memory)."""
    proc = subprocess.run([sys.executable, __file__, "--phase-build", str(store_path)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the build failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def show(label: str, got: dict) -> None:
    reports = [SourceReport(**r) for r in got["sources"]]
    print(f"## {label}\n")
    print(format_reports(reports))
    print("\n| derived graph | triples | seconds |\n|---|---:|---:|")
    for d in got["derived"]:
        print(f"| {d['name']} | {d['triples']:,} | {d['seconds']:.1f} |")
    total = sum(r.triples + r.inferred for r in reports)
    print(f"\n{label.lower()}: {got['seconds']:.1f} s, {total:,} triples, "
          f"{total / got['seconds']:,.0f} triples/s; peak memory {got['peak_mb']:.0f} MB "
          f"(python), {got['child_peak_mb']:.0f} MB (largest child: reasoner JVM)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="store folder (default: a temporary one)")
    parser.add_argument("--results", type=Path, help="results file (default: a temporary one)")
    parser.add_argument("--probe", action="append", help="probe pattern(s) to export")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the rebuild")
    parser.add_argument("--phase-build", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase_build:
        print(json.dumps(one_build(args.phase_build)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="kgprobe-bench-"))
    store_path = args.store or tmp / "store"
    results = args.results or tmp / "results.duckdb"
    try:
        fresh = build_in_child(store_path)
        show("Fresh build" if not args.store else "Build", fresh)
        if not args.no_rebuild:
            again = build_in_child(store_path)
            show("Rebuild", again)
            print(f"rebuild / fresh build: {again['seconds'] / fresh['seconds']:.2f} x time, "
                  f"{again['peak_mb'] / fresh['peak_mb']:.2f} x peak memory\n")
        store = LocalStore.open(store_path)
        probes = discover(patterns=args.probe)
        t0 = time.perf_counter()
        exports = export(probes, store, results, tmp / "exports", progress=False)
        export_s = time.perf_counter() - t0
        print("## Export\n")
        print(format_exports(exports))
        print(f"\nall {len(probes)} probes exported in {export_s:.2f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
