"""``python -m probes.benchmarks.pararel`` / ``kgprobe pararel``: ParaRel's own sub-commands.

- ``stats``: per relation of the ParaRel graph in the store, its facts, patterns, edges and
  candidates, and the statements a run of ``pararel/pararel`` scores (facts x patterns x
  candidates);
- ``subset --relation P19 --facts 20 --out DIR``: a probe file like ``queries/pararel/
  pararel.rq`` (or ``--probe``'s) restricted to those relations and to the first N facts of
  each (by line in its file), to export and run with ``--queries DIR``;
- ``report``: the ParaRel report (:mod:`eval.pararel_report`, added to the tree by the
  application layer, :mod:`probes.app.cli`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kg import options
from kg.store import open_store
from probes.benchmarks.pararel import PROBES
from probes.engine import subset
from probes.engine.errors import ProbeError

QUERIES = Path(__file__).resolve().parents[3] / "queries" / "pararel"
_ANCHOR = "    ?g rdfs:label ?answer .\n"
STATS = """PREFIX kgp: <https://w3id.org/kgprobe/vocab#>
SELECT ?code ?facts (COUNT(DISTINCT ?t) AS ?patterns) (COUNT(DISTINCT ?a) AS ?objects)
       (COUNT(DISTINCT ?e) AS ?edges) WHERE {
  GRAPH <https://w3id.org/kgprobe/graph/pararel> {
    ?r a kgp:ParaRelRelation ; kgp:code ?code ; kgp:inParaRel true ; kgp:factCount ?facts ;
       kgp:pattern ?t ; kgp:answer ?a .
    OPTIONAL { ?e kgp:relation ?r ; a kgp:ParaRelEdge . }
  }
} GROUP BY ?code ?facts"""


def _stats(args: argparse.Namespace) -> int:
    rows = open_store(args.endpoint, args.store).query(STATS)
    if not rows:
        print("ParaRel is not in the store: `kgprobe build --benchmark pararel`")
        return 0
    print("| relation | facts | patterns | edges | candidates | statements |")
    print("|---|---:|---:|---:|---:|---:|")
    total = [0, 0, 0, 0]
    for r in sorted(rows, key=lambda r: int(str(r["code"])[1:])):
        f, p, e, o = (int(r[k]) for k in ("facts", "patterns", "edges", "objects"))
        print(f"| {r['code']} | {f:,} | {p} | {e:,} | {o} | {f * p * o:,} |")
        total = [total[0] + f, total[1] + p, total[2] + e, total[3] + f * p * o]
    print(f"| all {len(rows)} | {total[0]:,} | {total[1]} | {total[2]:,} | | {total[3]:,} |")
    return 0


def subset_text(base: str, name: str, relations: list[str], facts: int | None) -> str:
    """``base`` (a queries/pararel probe file) renamed and restricted (:func:`probes.engine.
    subset.subset_text`; the FILTER on ``?index`` of pararel-sample replaced by ``facts``).

    >>> text = subset_text((QUERIES / "pararel.rq").read_text(), "pararel/mine", ["P19"], 20)
    >>> [line for line in text.splitlines() if "FILTER" in line or "name:" in line]
    ['# name: pararel/mine', '    FILTER(?relation IN ("P19"))', '    FILTER(?index < 20)']
    """
    return subset.subset_text(base, name, _ANCHOR, relations, facts, ", ".join(PROBES))


def _subset(args: argparse.Namespace) -> int:
    base = QUERIES / f"{args.probe.removeprefix('pararel/')}.rq"
    if args.probe not in PROBES or not base.is_file():
        raise ProbeError(f"--probe {args.probe!r} is not one of {', '.join(PROBES)}")
    subset.check_count(args.facts, "--facts")
    text = subset_text(base.read_text(encoding="utf-8"), args.name, args.relation or [],
                       args.facts)
    subset.write_subset(text, args.name, args.out)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The sub-commands of ``kgprobe pararel``; returns them, so that the application layer
    adds ``report`` (:mod:`eval.pararel_report`)."""
    p.description = __doc__.split("\n")[0]
    p.set_defaults(handler=run)
    sub = p.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stats", help="relations, facts, patterns, edges and statements")
    options.add_store(st)
    options.add_endpoint(st)
    st.set_defaults(func=_stats)
    su = sub.add_parser("subset", help="write a probe file for chosen relations and facts")
    su.add_argument("--probe", default="pararel/pararel",
                    help=f"the probe file to restrict (default pararel/pararel; one of "
                    f"{', '.join(PROBES)})")
    su.add_argument("--relation", action="append", metavar="PID",
                    help="keep this relation (P19); repeatable; default: all")
    su.add_argument("--facts", type=int, default=None, metavar="N",
                    help="keep the first N facts of each relation (by line in its file)")
    su.add_argument("--name", default="pararel/subset",
                    help="the new probe's name (default pararel/subset)")
    su.add_argument("--out", type=Path, required=True, help="folder to write the probe file to")
    su.set_defaults(func=_subset)
    return sub


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the chosen sub-command (an error: one line, status 2, from the command's runner)."""
    return int(args.func(args))


if __name__ == "__main__":  # the tree with report: the application layer's
    from probes.app.cli import main

    raise SystemExit(main(["pararel", *sys.argv[1:]], prog="python -m probes.benchmarks.pararel"))
