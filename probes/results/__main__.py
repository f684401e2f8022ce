"""``python -m probes.results upgrade [PATH]``: bring an older results file to the current
schema (what every writable connection does too), and say what was added."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kg import config
from probes.results import ResultsError, connect
from probes.results.upgrade import ADDED


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m probes.results", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upgrade", help="upgrade a results file in place")
    up.add_argument("path", nargs="?", help="the results file (default: KGPROBE_RESULTS)")
    args = parser.parse_args(argv)
    path = str(args.path or config.results_path())
    try:
        con = connect(path)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    con.close()  # connect upgraded the file; the columns it added are now declared
    added = ", ".join(ADDED.get(path, []))
    print(f"upgraded: added {added}" if added else "the results file is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
