"""``kgprobe ontolama build|stats|inheritance|export`` and ``python -m probes.benchmarks.ontolama``
(see docs/ontolama.md). In the application layer because ``stats`` adds the shortcut ceiling,
a metric of ``eval``."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval.ontolama_report import ceiling_lines
from kg import config, options
from kg.store import KnowledgeStore, open_store
from probes.benchmarks.ontolama.common import ontolama_probes, with_controlled
from probes.benchmarks.ontolama.dataset import build, export_files, format_build, stats
from probes.benchmarks.ontolama.inheritance import inheritance_report
from probes.results import connect


def stats_with_ceiling(store: KnowledgeStore, results: Path | None) -> str:
    """The dataset statistics (:func:`probes.benchmarks.ontolama.dataset.stats`) and the shortcut
    ceiling of every split (:func:`eval.ontolama_report.ceiling_lines`)."""
    text = stats(store, results)
    con = connect(results, read_only=True)
    try:
        return "\n".join([text, "", *ceiling_lines(con)])
    finally:
        con.close()


def add_arguments(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The sub-commands of ``kgprobe ontolama`` / ``python -m probes.benchmarks.ontolama``; returns
    them, so that ``report`` (:mod:`eval.ontolama_report`) is added beside them."""
    parser.description = (
        "OntoLAMA datasets (atomic and complex subsumption inference) from the "
        "probe files in queries/ontolama: build them into the results file, print their "
        "statistics beside the paper's Table 2, or export them in OntoLAMA's own format.")
    parser.set_defaults(handler=run)
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    options.add_store(common)
    options.add_results(common)
    b = sub.add_parser("build", parents=[common], help="make the datasets (instances table)")
    b.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="probe name or glob, e.g. 'ontolama/pizza-*' (default: ontolama/*)")
    options.add_queries(b, help="extra folder of probe files besides queries/")
    b.add_argument("--out", type=Path, default=None,
                   help="Parquet folder (default: $KGPROBE_EXPORTS or .kgprobe/exports)")
    b.add_argument("--no-parquet", action="store_true", help="write DuckDB only")
    b.add_argument("--control", action="store_true",
                   help="also build each dataset's shortcut-controlled split as "
                   "<probe>-controlled: super-classes (Complex SI: complex concepts) disjoint "
                   "between train, dev and test (docs/shortcuts.md)")
    sub.add_parser("stats", parents=[common],
                   help="dataset sizes per ontology beside the paper's Table 2")
    i = sub.add_parser("inheritance", parents=[common],
                       help="how many positives come from multiple inheritance (e.g. DOID)")
    i.add_argument("--source", "-s", default="doid", help="source name (default doid)")
    e = sub.add_parser("export", parents=[common],
                       help="write <out>/<ontology>-<kind>-SI/{train,validation,test}.jsonl")
    e.add_argument("--out", type=Path, default=None,
                   help="folder (default: <exports>/ontolama)")
    e.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="only these probes (glob), e.g. 'ontolama/go-*'")
    return sub


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m probes.benchmarks.ontolama", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the chosen sub-command (an error: one line, status 2, from options.call_handler)."""
    if args.command == "build":
        probes = ontolama_probes(args.probe, args.queries)
        if args.control:
            probes = with_controlled(probes)
        store = open_store(None, args.store)
        out = None if args.no_parquet else (args.out or config.exports_dir())
        print(format_build(build(probes, store, args.results, out)))
    elif args.command == "inheritance":
        print(inheritance_report(open_store(None, args.store), args.source))
    elif args.command == "stats":
        print(stats_with_ceiling(open_store(None, args.store), args.results))
    else:
        out = args.out or config.exports_dir() / "ontolama"
        paths = export_files(args.results, out, args.probe)
        print(f"wrote {len(paths)} file(s) under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
