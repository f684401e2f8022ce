"""Benchmark the foundation: store build and probe export (not a test; prints numbers).

    python scripts/bench_build.py [--store DIR] [--results FILE]

Builds every source of the manifest into a fresh temporary store (or --store), then exports every
probe under queries/. Prints build seconds and triples/s per source, reasoning seconds per
ontology, export seconds per probe, and peak memory (this process and the reasoner's JVM).
Targets on the 2-core reference machine: build under 180 s and 4 GB; export under 10 s.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from kg.build import build, format_reports, peak_memory_mb
from kg.store import LocalStore
from probes.export import export
from probes.export import format_reports as format_exports
from probes.spec import discover


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="store folder (default: a temporary one)")
    parser.add_argument("--results", type=Path, help="results file (default: a temporary one)")
    parser.add_argument("--probe", action="append", help="probe pattern(s) to export")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kgprobe-bench-"))
    store_path = args.store or tmp / "store"
    results = args.results or tmp / "results.duckdb"
    try:
        t0 = time.perf_counter()
        reports = build(None, store_path, progress=False)
        build_s = time.perf_counter() - t0
        print("## Build\n")
        print(format_reports(reports))
        total = sum(r.triples + r.inferred for r in reports)
        rate = total / build_s
        print(f"\nwhole build: {build_s:.1f} s, {total:,} triples, {rate:,.0f} triples/s")
        store = LocalStore.open(store_path)
        probes = discover(patterns=args.probe)
        t0 = time.perf_counter()
        exports = export(probes, store, results, tmp / "exports", progress=False)
        export_s = time.perf_counter() - t0
        print("\n## Export\n")
        print(format_exports(exports))
        print(f"\nall {len(probes)} probes exported in {export_s:.2f} s")
        me, kids = peak_memory_mb()
        print(f"\npeak memory: {me:.0f} MB (python), {kids:.0f} MB (largest child: reasoner JVM)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
