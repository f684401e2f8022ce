"""Derived graphs: SPARQL CONSTRUCT files materialised into named graphs of the store.

A file ``queries/derived/<name>.rq`` is a SPARQL CONSTRUCT query whose leading ``#`` comment
block may hold two header lines::

    # description: one line for the build summary
    # requires: [semrel-source-tuples]

Its triples go to the named graph ``<https://w3id.org/kgprobe/graph/derived/<name>>``, which
is replaced whole each time. ``requires`` names other derived graphs the query reads; they are
materialised first (a cycle or an unknown name is an error that names the file). Logic that
several probe files share (Cao et al.'s tuples and relatum sets) is written once here, and each
probe file is a short SELECT over the derived graph (``graphs: [derived/<name>]``).

``python -m kg.build`` materialises every derived file after loading the sources;
``python -m kg.derived`` does it alone on an existing store (after editing a derived file).

>>> d = parse_derived("# requires: [a]\\nCONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "b.rq")
>>> d.name, d.requires
('b', ('a',))
>>> [x.name for x in order([d, parse_derived("CONSTRUCT {} WHERE {}", "a.rq")])]
['a', 'b']
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import yaml

from kg import config
from kg.errors import KgError
from kg.vocab import graph

DERIVED_DIR = Path(__file__).resolve().parent.parent / "queries" / "derived"
HEADER_FIELDS = ("description", "requires")


class DerivedError(KgError):
    """A derived-graph file is malformed or its query fails."""


@dataclass(frozen=True)
class Derived:
    name: str
    path: Path
    query: str
    description: str = ""
    requires: tuple[str, ...] = ()

    @property
    def graph(self) -> ox.NamedNode:
        return derived_graph(self.name)


@dataclass(frozen=True)
class DerivedReport:
    name: str
    triples: int
    seconds: float


def derived_graph(name: str) -> ox.NamedNode:
    """The named graph of derived file ``name``.

    >>> derived_graph("semrel-tuples").value
    'https://w3id.org/kgprobe/graph/derived/semrel-tuples'
    """
    return graph(f"derived/{name}")


def parse_derived(text: str, path: str | Path) -> Derived:
    """Read one derived file (header + CONSTRUCT query); errors name the file."""
    path = Path(path)
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line[1:])
    fields: dict[str, Any] = {}
    for body in header:
        m = re.match(r"\s*([a-z_]+)\s*:", body)
        if m and m.group(1) in HEADER_FIELDS:
            fields.update(yaml.safe_load(body) or {})
    if not re.search(r"\bCONSTRUCT\b", text, re.IGNORECASE):
        raise DerivedError(f"{path}: a derived-graph file must be a SPARQL CONSTRUCT query")
    requires = fields.get("requires") or []
    if isinstance(requires, str):
        requires = [requires]
    return Derived(name=path.stem, path=path, query=text,
                   description=str(fields.get("description") or ""),
                   requires=tuple(str(r) for r in requires))


def discover(folder: Path | None = None) -> list[Derived]:
    """Every ``*.rq`` file of ``folder`` (default ``queries/derived``), in dependency order."""
    folder = folder or DERIVED_DIR
    return order([parse_derived(p.read_text(encoding="utf-8"), p)
                  for p in sorted(folder.glob("*.rq"))])


def order(files: list[Derived]) -> list[Derived]:
    """Topological order by ``requires`` (ties by name)."""
    by_name = {d.name: d for d in files}
    done: list[Derived] = []
    state: dict[str, int] = {}

    def visit(d: Derived, chain: tuple[str, ...]) -> None:
        if state.get(d.name) == 2:
            return
        if state.get(d.name) == 1:
            raise DerivedError(f"{d.path}: requires form a cycle: {' -> '.join(chain)}")
        state[d.name] = 1
        for r in d.requires:
            if r not in by_name:
                raise DerivedError(f"{d.path}: requires {r!r}, but there is no derived file "
                                   f"{r}.rq (known: {', '.join(sorted(by_name))})")
            visit(by_name[r], (*chain, r))
        state[d.name] = 2
        done.append(d)

    for d in sorted(files, key=lambda x: x.name):
        visit(d, (d.name,))
    return done


def materialise(store: ox.Store, files: list[Derived] | None = None) -> list[DerivedReport]:
    """Replace each derived graph of ``store`` with its CONSTRUCT query's triples."""
    reports = []
    for d in files if files is not None else discover():
        t0 = time.perf_counter()
        store.remove_graph(d.graph)
        try:
            result = store.query(d.query, use_default_graph_as_union=True)
            triples = list(result) if isinstance(result, ox.QueryTriples) else None
        except (SyntaxError, OSError, ValueError) as e:
            raise DerivedError(f"{d.path}: the CONSTRUCT query failed: {e}") from e
        if triples is None:
            raise DerivedError(f"{d.path}: the query is not a CONSTRUCT query")
        store.bulk_extend(ox.Quad(t.subject, t.predicate, t.object, d.graph) for t in triples)
        reports.append(DerivedReport(d.name, len(triples), time.perf_counter() - t0))
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kg.derived",
        description="Materialise the derived graphs (queries/derived/*.rq, SPARQL CONSTRUCT) "
                    "into an existing store, replacing each derived graph whole.")
    parser.add_argument("--store", type=Path, default=None,
                        help="store folder (default: $KGPROBE_STORE or .kgprobe/store)")
    parser.add_argument("--folder", type=Path, default=None, help="folder of derived files")
    args = parser.parse_args(argv)
    try:
        files = discover(args.folder)
        store = ox.Store(str(args.store or config.store_path()))
        reports = materialise(store, files)
        store.flush()
    except (KgError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in reports:
        print(f"derived/{r.name}: {r.triples:,} triples in {r.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
