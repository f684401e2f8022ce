"""``python -m probes.benchmarks.copen``: load released COPEN files, probe zero-shot, construct
instances.

Subcommands:

- ``load DIR``: read ``DIR/task{1,2,3}/data/{train,dev,test}.json`` into the results file;
- ``zero-shot --model M``: score the loaded instances with every text part (each stored as its
  own run), optionally CiC without its context (``--out-of-context``);
- ``submission --model M --out DIR``: the test predictions in the leaderboard's format (test
  labels are hidden in the released files): :mod:`eval.copen_submission`, added to the tree by
  the application layer (:mod:`probes.app.cli`), as ``report`` (:mod:`eval.copen_report`);
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

from kg import options
from kg.store import RemoteStore, open_store
from probes.benchmarks.copen import PROBES
from probes.engine import options as model_options
from probes.results import connect


def _load(args: argparse.Namespace) -> int:
    from probes.benchmarks.copen.released import format_reports as fmt
    from probes.benchmarks.copen.released import load

    reports = load(args.dir, args.results, args.task, args.taxonomy)
    print(fmt(reports))
    return 0


def _zero_shot(args: argparse.Namespace) -> int:
    from probes.backends.registry import load_scorer
    from probes.benchmarks.copen.zeroshot import format_reports, run_zero_shot, settings

    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype,
                         batch_size=args.batch_size, threads=args.threads)
    todo = settings(args.task or list(PROBES), args.out_of_context)
    con = connect(args.results)
    try:
        t0 = time.perf_counter()
        reports = [run_zero_shot(con, scorer, task, context, splits=args.split,
                                 limit=args.limit, tokenisation=args.tokenisation,
                                 span=args.span, batch_rows=args.batch_size or 32)
                   for task, context in todo]
    finally:
        con.close()
    print(format_reports(reports))
    print(f"\n{len(reports)} pass(es) in {time.perf_counter() - t0:.2f} s; every text part of "
          "each task is stored as its own run")
    return 0


def _construct(args: argparse.Namespace) -> int:
    from probes.benchmarks.copen.construct import build_csj, cic_chains, taxonomy, working_store

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
              f"`python -m probes.benchmarks.copen load {args.out}`")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The sub-commands of ``kgprobe copen`` / ``python -m probes.benchmarks.copen``; returns them,
    so that the application layer adds ``report`` and ``submission`` (:mod:`eval.copen_report`,
    :mod:`eval.copen_submission`)."""
    p.description = __doc__.split("\n")[0]
    p.set_defaults(handler=run)
    sub = p.add_subparsers(dest="command", required=True)

    load = sub.add_parser("load", help="load the released COPEN files into the results file")
    load.add_argument("dir", type=Path, help="folder holding task1/, task2/, task3/")
    load.add_argument("--task", action="append", choices=list(PROBES),
                      help="only this task; repeatable (default: all found)")
    load.add_argument("--taxonomy", type=Path, default=None,
                      help="COPEN father.txt: marks CSJ distractors hard/easy from the "
                      "entities' concepts (Table 3)")
    options.add_results(load)
    load.set_defaults(func=_load)

    zs = sub.add_parser("zero-shot", help="zero-shot probing of the loaded instances")
    model_options.add_model(zs, required=True, help="model name (as for probes.engine.run)")
    zs.add_argument("--task", action="append", choices=list(PROBES),
                    help="only this task; repeatable (default: all three)")
    zs.add_argument("--tokenisation", choices=["words", "text"], default="words",
                    help="words: tokenise piece by piece as the authors do (default); text: "
                    "tokenise the joined prompt once")
    zs.add_argument("--span", choices=["token", "progressive", "pll"], default="token",
                    help="masked and seq2seq LMs. token (default, what the authors' scripts "
                    "execute): every token scored alone in the whole sentence (masked alone; "
                    "T5/BART: infilled alone into <extra_id_0>/<mask>), a part = the mean over "
                    "its tokens. progressive: the span method their scripts never reach "
                    "(masked: tokens i..end of the part masked to predict token i; seq2seq: "
                    "the whole part infilled at once). pll: former name of token")
    zs.add_argument("--out-of-context", action="store_true",
                    help="also score CiC without its sentence (the out-of-context analysis)")
    zs.add_argument("--split", action="append", help="only this split; repeatable")
    zs.add_argument("--limit", type=int, help="first N instances per split by instance "
                    "id (smoke runs; ids are hashes, so a fixed pseudo-random sample)")
    model_options.add_device(zs)
    model_options.add_dtype(zs)
    zs.add_argument("--batch-size", type=int)
    model_options.add_threads(zs)
    zs.add_argument("--quiet", action="store_true", help="no progress bar")
    options.add_results(zs)
    zs.set_defaults(func=_zero_shot)

    co = sub.add_parser("construct", help="build CSJ instances (or CiC chains) from Wikidata")
    co.add_argument("--endpoint", default="https://query.wikidata.org/sparql",
                    help="Wikidata SPARQL endpoint (default: the public service)")
    options.add_store(co, help="store holding the copen taxonomy (default: $KGPROBE_STORE)")
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
    return sub


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the chosen sub-command (an error: one line, status 2, from the command's runner)."""
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted: what was committed is kept; run the same command again to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":  # the tree with report and submission: the application layer's
    from probes.app.cli import main

    raise SystemExit(main(["copen", *sys.argv[1:]], prog="python -m probes.benchmarks.copen"))
