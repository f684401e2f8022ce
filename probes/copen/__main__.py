"""``python -m probes.copen``: load released COPEN files, probe zero-shot, construct instances.

Subcommands:

- ``load DIR``: read ``DIR/task{1,2,3}/data/{train,dev,test}.json`` into the results file;
- ``zero-shot --model M``: score the loaded instances with every text part the model's kind can
  score (or ``--part``), optionally CiC without its context (``--out-of-context``);
- ``construct --out DIR``: build CSJ instances from Wikidata (``--endpoint``, default the public
  service) with the taxonomy of the store, in the released format (then ``load DIR``);
  ``--chains QID ...`` prints the CiC concept chains of entities instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kg.errors import KgError
from kg.store import RemoteStore, open_store
from probes.copen import PROBES
from probes.errors import ProbeError
from probes.results import connect
from probes.run import RunOptions, format_reports


def _load(args: argparse.Namespace) -> int:
    from probes.copen.released import format_reports as fmt
    from probes.copen.released import load

    reports = load(args.dir, args.results, args.task)
    print(fmt(reports))
    return 0


def _zero_shot(args: argparse.Namespace) -> int:
    from probes.backends.registry import load_scorer
    from probes.copen.zeroshot import run_zero_shot, settings

    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype,
                         batch_size=args.batch_size, threads=args.threads)
    todo = settings(args.task or list(PROBES), args.part, scorer.kind, args.out_of_context)
    opts = RunOptions(splits=args.split, limit=args.limit, use_cache=not args.no_cache,
                      progress=not args.quiet,
                      runtime={"threads": args.threads, "batch_size": args.batch_size,
                               "device": args.device, "dtype": args.dtype})
    con = connect(args.results)
    try:
        t0 = time.perf_counter()
        reports = [run_zero_shot(con, scorer, task, part, context, opts)
                   for task, part, context in todo]
    finally:
        con.close()
    print(format_reports(reports))
    print(f"\n{len(reports)} setting(s) in {time.perf_counter() - t0:.2f} s: "
          + ", ".join(f"{t}/{p}{'' if c else ' (no context)'}" for t, p, c in todo))
    return 0


def _construct(args: argparse.Namespace) -> int:
    from probes.copen.construct import build_csj, cic_chains, taxonomy, working_store

    taxonomy_store = open_store(args.taxonomy_endpoint, args.store)
    remote = RemoteStore(args.endpoint, timeout=args.timeout)
    if args.chains:
        concepts = taxonomy(taxonomy_store)
        chains = cic_chains(working_store(concepts), remote, concepts, args.chains)
        print(json.dumps(chains, indent=1, ensure_ascii=False))
        return 0
    _, report, _ = build_csj(taxonomy_store, remote, args.out, per_concept=args.per_concept,
                             batch=args.batch)
    print("\n".join(report.lines()))
    if args.out:
        print(f"wrote {args.out / 'task1' / 'data'}; load it with "
              f"`python -m probes.copen load {args.out}`")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m probes.copen", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    results = {"type": Path, "default": None,
               "help": "results DuckDB file (default: $KGPROBE_RESULTS or .kgprobe/results.duckdb)"}

    load = sub.add_parser("load", help="load the released COPEN files into the results file")
    load.add_argument("dir", type=Path, help="folder holding task1/, task2/, task3/")
    load.add_argument("--task", action="append", choices=list(PROBES),
                      help="only this task; repeatable (default: all found)")
    load.add_argument("--results", **results)
    load.set_defaults(func=_load)

    zs = sub.add_parser("zero-shot", help="zero-shot probing of the loaded instances")
    zs.add_argument("--model", "-m", required=True, help="model name (as for probes.run)")
    zs.add_argument("--task", action="append", choices=list(PROBES),
                    help="only this task; repeatable (default: all three)")
    zs.add_argument("--part", action="append", metavar="PART",
                    help="text part to score: csj query|candidate|whole, cpj "
                    "concept|answer|whole, cic concept|whole; repeatable (default: every part "
                    "the model kind can score)")
    zs.add_argument("--out-of-context", action="store_true",
                    help="also score CiC without its sentence (the out-of-context analysis)")
    zs.add_argument("--split", action="append", help="only this split; repeatable")
    zs.add_argument("--limit", type=int, help="first N instances per split (smoke runs)")
    zs.add_argument("--device"), zs.add_argument("--dtype")
    zs.add_argument("--batch-size", type=int), zs.add_argument("--threads", type=int)
    zs.add_argument("--no-cache", action="store_true", help="score again, ignoring the cache")
    zs.add_argument("--quiet", action="store_true", help="no progress bar")
    zs.add_argument("--results", **results)
    zs.set_defaults(func=_zero_shot)

    co = sub.add_parser("construct", help="build CSJ instances (or CiC chains) from Wikidata")
    co.add_argument("--endpoint", default="https://query.wikidata.org/sparql",
                    help="Wikidata SPARQL endpoint (default: the public service)")
    co.add_argument("--store", type=Path, default=None,
                    help="store holding the copen taxonomy (default: $KGPROBE_STORE)")
    co.add_argument("--taxonomy-endpoint", default=None,
                    help="read the taxonomy from this endpoint instead of the store")
    co.add_argument("--out", type=Path, default=None, help="write task1/data/<split>.json here")
    co.add_argument("--per-concept", type=int, default=2,
                    help="query entities per concept (default 2)")
    co.add_argument("--batch", type=int, default=20,
                    help="concepts per members query (default 20)")
    co.add_argument("--timeout", type=float, default=120.0, help="seconds per remote query")
    co.add_argument("--chains", nargs="+", metavar="QID",
                    help="print the CiC concept chains of these entities and stop")
    co.set_defaults(func=_construct)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: what was committed is kept; run the same command again to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
