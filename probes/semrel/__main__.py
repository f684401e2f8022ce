"""``python -m probes.semrel humans|vocab`` (see docs/semrel.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kg import config
from kg.errors import KgError
from kg.store import open_store
from probes.errors import ProbeError
from probes.results import connect
from probes.semrel.humans import load_humans, relation_probes
from probes.semrel.vocab import shared_vocab_models, write_vocab


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m probes.semrel",
        description="Semantic-relation benchmark (Cao et al.): load the human agent (the "
                    "cao-probe-responses answers) into the results file as runs of model "
                    "'human', ranked by pooled normalised frequency.")
    sub = parser.add_subparsers(dest="command", required=True)
    h = sub.add_parser("humans", help="write the human runs, responses and raw answers")
    h.add_argument("--results", default=None, help="results DuckDB file (default: "
                   "$KGPROBE_RESULTS or .kgprobe/results.duckdb)")
    h.add_argument("--store", type=Path, default=None, help="store folder (default: "
                   "$KGPROBE_STORE or .kgprobe/store)")
    h.add_argument("--endpoint", default=None, help="SPARQL endpoint instead of the store")
    h.add_argument("--queries", "-q", type=Path, action="append", default=[],
                   help="extra folder of probe files besides queries/")
    v = sub.add_parser("vocab", help="write model_vocab for the models of "
                       "queries/semrel/shared_vocab.yaml (tokenizers only)")
    v.add_argument("--results", default=None, help="results DuckDB file")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.command == "vocab":
        try:
            label, models = shared_vocab_models()
            con = connect(args.results or config.results_path())
            try:
                sizes = write_vocab(con, models)
            finally:
                con.close()
        except (ProbeError, KgError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for m, n in sizes.items():
            print(f"{label}: {m}: {n:,} lower-case whole words")
        return 0
    try:
        probes = relation_probes(args.queries)
        store = open_store(args.endpoint, args.store)
        con = connect(args.results or config.results_path())
        try:
            report = load_humans(con, store, probes)
        finally:
            con.close()
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(report.summary())
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
