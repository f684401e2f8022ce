"""``python -m probes.benchmarks.semrel humans|vocab`` (see docs/semrel.md)."""

from __future__ import annotations

import argparse
import sys
import time

from kg import config, options
from kg.store import open_store
from probes.benchmarks.semrel.humans import load_humans, relation_probes
from probes.benchmarks.semrel.vocab import shared_vocab_models, write_vocab
from probes.results import connect


def add_arguments(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The sub-commands of ``kgprobe semrel`` / ``python -m probes.benchmarks.semrel``; returns
    them, so that the application layer adds ``report`` (:mod:`eval.semrel_report`)."""
    parser.description = ("Semantic-relation benchmark (Cao et al.): load the human agent "
                          "(the cao-probe-responses answers) into the results file as runs of "
                          "model 'human', ranked by pooled normalised frequency.")
    parser.set_defaults(handler=run)
    sub = parser.add_subparsers(dest="command", required=True)
    h = sub.add_parser("humans", help="write the human runs, responses and raw answers")
    options.add_results(h)
    options.add_store(h)
    options.add_endpoint(h, help="SPARQL endpoint instead of the store")
    options.add_queries(h, help="extra folder of probe files besides queries/")
    v = sub.add_parser("vocab", help="write model_vocab for the models of "
                       "queries/semrel/shared_vocab.yaml (tokenizers only)")
    options.add_results(v, help="results DuckDB file")
    return sub


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m probes.benchmarks.semrel", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Write the human runs or the shared vocabulary (an error: one line, status 2, from the
    command's runner)."""
    t0 = time.perf_counter()
    if args.command == "vocab":
        label, models = shared_vocab_models()
        con = connect(args.results or config.results_path())
        try:
            sizes = write_vocab(con, models)
        finally:
            con.close()
        for m, n in sizes.items():
            print(f"{label}: {m}: {n:,} lower-case whole words")
        return 0
    probes = relation_probes(args.queries)
    store = open_store(args.endpoint, args.store)
    con = connect(args.results or config.results_path())
    try:
        report = load_humans(con, store, probes)
    finally:
        con.close()
    print(report.summary())
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":  # the tree with report (eval): the application layer's
    from probes.app.cli import main as kgprobe

    sys.exit(kgprobe(["semrel", *sys.argv[1:]], prog="python -m probes.benchmarks.semrel"))
