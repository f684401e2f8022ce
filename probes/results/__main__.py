"""``python -m probes.results upgrade [PATH]``: bring an older results file to the current
schema (what every writable connection does too), and say what was added.

``python -m probes.results combine OUT IN [IN ...]``: copy the finished runs of several results
files (runs done in parallel processes, one file each) into one (see
:mod:`probes.results.combine`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kg import config, options
from probes.results import connect
from probes.results.combine import combine
from probes.results.upgrade import ADDED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sub-commands of ``kgprobe results`` / ``python -m probes.results``."""
    parser.description = (
        "Results files: upgrade an older one in place, or combine the finished runs of several "
        "(one per parallel process) into one.")
    parser.set_defaults(handler=run)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upgrade", help="upgrade a results file in place")
    up.add_argument("path", nargs="?", help="the results file (default: --results, else "
                    "KGPROBE_RESULTS)")
    options.add_results(up, help=argparse.SUPPRESS)
    both = sub.add_parser("combine", help="copy the finished runs of several results files "
                          "into one (OUT created when missing; the inputs are only read)")
    both.add_argument("out", type=Path, help="the combined results file")
    both.add_argument("inputs", type=Path, nargs="+", metavar="IN", help="results files")


def main(argv: Sequence[str] | None = None) -> int:
    return options.run_command("python -m probes.results", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Upgrade or combine (a ResultsError: one error line, status 2, from the command's
    runner)."""
    if args.command == "combine":
        print(combine(args.out, args.inputs))
        return 0
    path = str(args.path or args.results or config.results_path())
    con = connect(path)
    con.close()  # connect upgraded the file; the columns it added are now declared
    added = ", ".join(ADDED.get(path, []))
    print(f"upgraded: added {added}" if added else "the results file is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
