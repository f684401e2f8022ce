"""Benchmark OntoLAMA's dataset construction (not a test): ``python scripts/bench_ontolama.py``.

Per ontology it prints:

- reasoning time: HermiT's classification as ``kg.build`` runs it (the ontology is rebuilt
  into a temporary store; ``--store PATH`` reuses a built store and skips this column);
- the atomic probe's query time (positives plus soft and hard negative candidates with their
  assumed-disjointness checks: the negative-sampling rules) and the balancing step;
- the complex probe's time and, inside it, the HermiT run that checks the negatives;
- peak memory of this process and of its children (the JVM).

Scoring throughput (prompts per second per model) belongs to the scoring engine; it is not
measured here yet.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from kg.build import build, peak_memory_mb
from kg.store import LocalStore
from probes import ontolama
from probes.export import instances_for

SOURCES = ["pizza", "schemaorg", "go", "foodon", "doid"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", "-s", action="append", choices=SOURCES,
                        help="ontology to measure (repeatable; default: all five)")
    parser.add_argument("--store", type=Path, default=None,
                        help="use this built store instead of rebuilding (no reasoning times)")
    args = parser.parse_args(argv)
    sources = args.source or SOURCES
    reasoning: dict[str, float | None] = dict.fromkeys(sources)
    with tempfile.TemporaryDirectory(prefix="kgprobe-bench-ontolama-") as tmp:
        path = args.store
        if path is None:
            path = Path(tmp) / "store"
            t0 = time.perf_counter()
            for report in build(sources, store_path=path, progress=False):
                reasoning[report.name] = report.reasoning_s
            print(f"built {len(sources)} ontologies in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
        store = LocalStore.open(path)
        probes = {p.spec.name: p for p in ontolama.ontolama_probes()}
        lines = ["| ontology | reasoning s | atomic query s | rows | balance s | atomic samples | "
                 "complex s | of it HermiT s | complex samples |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in sources:
            cells = [s, f"{reasoning[s]:.1f}" if reasoning[s] is not None else "-"]
            atomic = probes.get(f"ontolama/{s}-atomic")
            if atomic:
                t0 = time.perf_counter()
                raw = instances_for(atomic, store)
                t1 = time.perf_counter()
                df, _ = ontolama.balance(raw, atomic)
                t2 = time.perf_counter()
                cells += [f"{t1 - t0:.2f}", f"{raw.height:,}", f"{t2 - t1:.2f}", f"{df.height:,}"]
            else:
                cells += ["-"] * 4
            complex_ = probes.get(f"ontolama/{s}-complex")
            if complex_:
                t0 = time.perf_counter()
                cdf, rep = ontolama.complex_instances(complex_, store)
                cells += [f"{time.perf_counter() - t0:.1f}", f"{rep.reasoning_s:.1f}",
                          f"{cdf.height:,}"]
            else:
                cells += ["-"] * 3
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], file=sys.stderr, flush=True)
        del store
    print("\n".join(lines))
    me, kids = peak_memory_mb()
    print(f"\npeak memory {me:.0f} MB (python), {kids:.0f} MB (reasoner JVM)")
    print("scoring throughput: not measured yet (needs the subsumption task of probes.run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
