"""``python -m probes.benchmarks.bear`` / ``kgprobe bear``: BEAR's own sub-commands.

- ``stats``: per BEAR graph of the store (bear, bear-big) the relations, instances, answers and
  statements (instances x answers x templates: what a full run scores); the paper's BEAR has 60
  relations and 7,731 instances, lm-pub-quiz scores 628,497 statements for it;
- ``subset --relation P19 --relation P103 --instances 10 --out DIR``: a probe file like
  ``queries/bear/bear.rq`` (or ``--probe``'s) restricted to those relations and to the first N
  instances of each (by position in the relation's file), written under DIR, to export and run
  with ``--queries DIR`` (a subset is data: a probe file, not an option of the run);
- ``report``: the BEAR report (:mod:`eval.bear_report`, added to the tree by the application
  layer, :mod:`probes.app.cli`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from kg import options
from kg.store import open_store
from probes.benchmarks.bear import PROBES
from probes.engine import subset
from probes.engine.errors import ProbeError

QUERIES = Path(__file__).resolve().parents[3] / "queries" / "bear"
_ANCHOR = "    ?r kgp:code ?relation .\n"


def stats_query(source: str) -> str:
    """The SPARQL that counts one BEAR graph (one row per relation)."""
    return f"""PREFIX kgp: <https://w3id.org/kgprobe/vocab#>
SELECT ?code ?answers ?instances (COUNT(?t) AS ?templates) WHERE {{
  GRAPH <https://w3id.org/kgprobe/graph/{source}> {{
    ?r a kgp:BearRelation ; kgp:code ?code ; kgp:answerCount ?answers ;
       kgp:instanceCount ?instances ; kgp:template ?t .
  }}
}} GROUP BY ?code ?answers ?instances"""


def _stats(args: argparse.Namespace) -> int:
    store = open_store(args.endpoint, args.store)
    print("| source | relations | instances | answers (sum) | statements |")
    print("|---|---:|---:|---:|---:|")
    for source in ("bear", "bear-big"):
        rows = store.query(stats_query(source))
        if not rows:
            print(f"| {source} | not in the store (`kgprobe build -s {source}`) | | | |")
            continue
        inst = sum(int(r["instances"]) for r in rows)
        answers = sum(int(r["answers"]) for r in rows)
        statements = sum(int(r["instances"]) * int(r["answers"]) * int(r["templates"])
                         for r in rows)
        print(f"| {source} | {len(rows)} | {inst:,} | {answers:,} | {statements:,} |")
    return 0


def subset_text(base: str, name: str, relations: list[str], instances: int | None) -> str:
    """``base`` (a queries/bear probe file) renamed and restricted (:func:`probes.engine.subset.
    subset_text`); an error when it has not the shape of those files.

    >>> text = subset_text((QUERIES / "bear.rq").read_text(), "bear/mine", ["P19"], 10)
    >>> [line for line in text.splitlines() if "FILTER" in line or "name:" in line]
    ['# name: bear/mine', '    FILTER(?relation IN ("P19"))', '    FILTER(?index < 10)']
    """
    return subset.subset_text(base, name, _ANCHOR, relations, instances, ", ".join(PROBES))


def relation_codes(probe: str) -> list[str]:
    """The relations of the BEAR release a probe reads (bear or bear-big), as kg/sources.toml
    lists their files.

    >>> codes = relation_codes("bear/bear"); len(codes), "P19" in codes
    (60, True)
    >>> len(relation_codes("bear/bear-big"))
    78
    """
    from kg.manifest import load_manifest

    source = load_manifest()["bear-big" if "bear-big" in probe else "bear"]
    return [Path(f.path).stem for f in source.files
            if re.fullmatch(r"P\d+\.jsonl", Path(f.path).name)]


def _subset(args: argparse.Namespace) -> int:
    base = QUERIES / f"{args.probe.removeprefix('bear/')}.rq"
    if args.probe not in PROBES or not base.is_file():
        raise ProbeError(f"--probe {args.probe!r} is not one of {', '.join(PROBES)}")
    subset.check_count(args.instances, "--instances")
    text = subset_text(base.read_text(encoding="utf-8"), args.name, args.relation or [],
                       args.instances)
    known = relation_codes(args.probe)
    unknown = [c for c in args.relation or [] if c not in known]
    if unknown:
        listed = ", ".join(sorted(known, key=lambda c: int(c[1:])))
        raise ProbeError(f"--relation {', '.join(unknown)}: no such relation in {args.probe} "
                         f"(it has {len(known)}: {listed}); the probe would have no instance")
    subset.write_subset(text, args.name, args.out)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The sub-commands of ``kgprobe bear`` / ``python -m probes.benchmarks.bear``; returns them, so
    that the application layer adds ``report`` (:mod:`eval.bear_report`)."""
    p.description = __doc__.split("\n")[0]
    p.set_defaults(handler=run)
    sub = p.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stats", help="relations, instances and statements of the BEAR graphs")
    options.add_store(st)
    options.add_endpoint(st)
    st.set_defaults(func=_stats)
    su = sub.add_parser("subset", help="write a probe file for chosen relations and instances")
    su.add_argument("--probe", default="bear/bear",
                    help=f"the probe file to restrict (default bear/bear; one of "
                    f"{', '.join(PROBES)})")
    su.add_argument("--relation", action="append", metavar="PID",
                    help="keep this relation (P19); repeatable; default: all")
    su.add_argument("--instances", type=int, default=None, metavar="N",
                    help="keep the first N instances of each relation (by position in its "
                    "file; lm-pub-quiz's subsample draws at random instead)")
    su.add_argument("--name", default="bear/subset", help="the new probe's name "
                    "(default bear/subset)")
    su.add_argument("--out", type=Path, required=True, help="folder to write the probe file to")
    su.set_defaults(func=_subset)
    return sub


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the chosen sub-command (an error: one line, status 2, from the command's runner)."""
    return int(args.func(args))


if __name__ == "__main__":  # the tree with report: the application layer's
    from probes.app.cli import main

    raise SystemExit(main(["bear", *sys.argv[1:]], prog="python -m probes.benchmarks.bear"))
