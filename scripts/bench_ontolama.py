"""Benchmark OntoLAMA's datasets and scoring (not a test): ``python scripts/bench_ontolama.py``.

Per ontology it prints:

- reasoning time: HermiT's classification as ``kg.build`` runs it (the ontology is rebuilt
  into a temporary store; ``--store PATH`` reuses a built store and skips this column);
- the atomic probe's query time (positives plus soft and hard negative candidates with their
  assumed-disjointness checks: the negative-sampling rules) and the balancing step;
- the complex probe's time and, inside it, the HermiT run that checks the negatives;
- peak memory of this process and of its children (the JVM);
- zero-shot scoring throughput (``--model``, default SmolLM2-135M): the first ``--scoring-n``
  (50) pizza-atomic test instances by instance id, scored through ``probes.engine.run`` (cache off,
  an in-memory results file) with one template x label-word set (T1, L1) and with all six
  (T1, T2 x L1, L2, L3): requests/s (distinct model calls, as ``runs.requests`` counts them)
  and instances/s, after a two-instance warm-up. ``--threads`` sets torch's CPU threads.

``--scoring-only`` measures only the throughput (building just Pizza unless ``--store`` is
given); ``--no-scoring`` skips it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from kg.build import build, peak_memory_mb
from kg.errors import KgError
from kg.store import LocalStore
from probes.benchmarks import ontolama
from probes.engine.errors import ProbeError
from probes.engine.export import instances_for, write_instances
from probes.engine.runner.plan import RunOptions
from probes.engine.runner.probe import run_probe
from probes.engine.spec import Probe
from probes.results import connect

SOURCES = ["pizza", "schemaorg", "go", "foodon", "doid"]
SCORING_PROBE = "ontolama/pizza-atomic"


def one_prompt(probe: Probe, template: int = 0, label_set: str = "L1") -> Probe:
    """The probe with one template and one label-word set."""
    spec = probe.spec
    params = {**spec.params, "label_words": {label_set: spec.params["label_words"][label_set]}}
    return dataclasses.replace(probe, spec=spec.model_copy(update={
        "prompts": [spec.prompts[template]], "params": params}))


def scoring_throughput(store: LocalStore, probe: Probe, model: str, n: int,
                       threads: int | None) -> list[str]:
    """Markdown lines: zero-shot scoring speed on the first ``n`` test instances by id."""
    from probes.backends.registry import load_scorer

    df = ontolama.instances(probe, store)
    sample = df.filter(pl.col("split") == "test").sort("instance_id").head(n)
    positives = sum(1 for g in sample["gold"].to_list() if g and g[0] == "1")
    con = connect(":memory:")
    write_instances(con, probe.spec.name, sample)
    t0 = time.perf_counter()
    scorer = load_scorer(model, threads=threads)
    load_s = time.perf_counter() - t0
    single = one_prompt(probe)
    run_probe(con, scorer, single, RunOptions(limit=2, use_cache=False, progress=False))
    lines = [f"model {model} ({scorer.kind}, {scorer.device}, {scorer.dtype}), loaded in "
             f"{load_s:.1f} s; torch threads {threads or 'default'}; {sample.height} "
             f"{probe.spec.name} test instances ({positives} positive)", "",
             "| prompts | templates x label sets | items | requests | seconds | requests/s | "
             "instances/s |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, p in (("T1 L1", single), ("all six", probe)):
        r = run_probe(con, scorer, p, RunOptions(splits=["test"], use_cache=False,
                                                 progress=False))
        combos = len(p.spec.prompts) * len(p.spec.params["label_words"])
        lines.append(f"| {name} | {combos} | {r.items:,} | {r.requests:,} | {r.wall_s:.1f} | "
                     f"{r.requests / r.wall_s:.2f} | {r.instances / r.wall_s:.2f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    con.close()
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", "-s", action="append", choices=SOURCES,
                        help="ontology to measure (repeatable; default: all five)")
    parser.add_argument("--store", type=Path, default=None,
                        help="use this built store instead of rebuilding (no reasoning times)")
    parser.add_argument("--model", "-m", default="smollm2-135m",
                        help="model for the scoring throughput (default smollm2-135m)")
    parser.add_argument("--scoring-n", type=int, default=50, metavar="N",
                        help="pizza-atomic test instances to score (default 50)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads for scoring (default: torch's)")
    parser.add_argument("--no-scoring", action="store_true", help="skip the scoring throughput")
    parser.add_argument("--scoring-only", action="store_true",
                        help="measure only the scoring throughput")
    args = parser.parse_args(argv)
    if args.no_scoring and args.scoring_only:
        parser.error("--no-scoring and --scoring-only exclude each other")
    sources = args.source or (["pizza"] if args.scoring_only else SOURCES)
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
        lines = [] if args.scoring_only else [
            "| ontology | reasoning s | atomic query s | rows | balance s | atomic samples | "
            "complex s | of it HermiT s | complex samples |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in [] if args.scoring_only else sources:
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
        me, kids = peak_memory_mb()
        scoring: list[str] = []
        if not args.no_scoring:
            try:
                scoring = scoring_throughput(store, probes[SCORING_PROBE], args.model,
                                             args.scoring_n, args.threads)
            except (ProbeError, KgError) as e:
                scoring = [f"skipped: {e}"]
        del store
    if lines:
        print("\n".join(lines))
        print(f"\npeak memory {me:.0f} MB (python), {kids:.0f} MB (reasoner JVM), before "
              "scoring")
    if scoring:
        print("\nzero-shot scoring throughput: " + "\n".join(scoring))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
