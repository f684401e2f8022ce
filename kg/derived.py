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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict, Field, field_validator
from tqdm import tqdm

from kg import options
from kg.errors import KgError
from kg.header import HeaderError, read_header, validate_header
from kg.sparql import QueryShapeError, analyse, check_syntax, keyword_line
from kg.store import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, LocalStore, QueryLimitError
from kg.textfile import TextFileError, read_text
from kg.vocab import graph

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""A derived file's name (its stem): it becomes part of the graph's IRI."""

DERIVED_DIR = Path(__file__).resolve().parent.parent / "queries" / "derived"


class DerivedHeader(BaseModel):
    """The header of a derived file; both fields optional (a file may have no header)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str | None = None
    requires: list[str] = Field(default=[], examples=["[semrel-tuples]"])

    @field_validator("requires", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else [] if v is None else v


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
    """Read one derived file (header + CONSTRUCT query); errors name the file and line.

    The header is read like a probe file's (kg.header: no anchors, aliases or repeated keys);
    the query must parse (Oxigraph, without running it) and its algebra (kg.sparql) must be a
    CONSTRUCT without SERVICE: a derived file is data and never calls another server."""
    path = Path(path)
    try:
        fields = validate_header(read_header(text, "#", required=False), DerivedHeader, "#")
    except HeaderError as e:
        raise DerivedError(f"{path}:{e.line}: {e.message}") from None
    if not _NAME.fullmatch(path.stem):
        raise DerivedError(f"{path}: the file name {path.stem!r} cannot name a graph (it becomes "
                           "the IRI .../graph/derived/<name>); rename the file with letters, "
                           "digits, '-', '_' and '.' only")
    try:
        check_syntax(text)
    except QueryShapeError as e:  # nested too deeply or too long for any parser
        raise DerivedError(f"{path}:{e.line or 1}: {e.message}") from None
    except SyntaxError as e:
        detail = re.sub(r"\s+", " ", str(e))[:200]
        m = re.match(r"error at (\d+):\d+: ", detail)
        where, detail = (f":{m.group(1)}", detail[m.end():]) if m else ("", detail)
        raise DerivedError(f"{path}{where}: SPARQL syntax error: {detail}; fix the query (it "
                           "must parse as a SPARQL 1.1 CONSTRUCT)") from None
    try:
        shape = analyse(text)
    except QueryShapeError as e:
        raise DerivedError(f"{path}:{e.line or 1}: {e.message}") from None
    if shape.form != "CONSTRUCT":
        raise DerivedError(f"{path}: a derived-graph file must be a SPARQL CONSTRUCT query "
                           f"(this one is {shape.form or 'not a query'})")
    if shape.services:
        raise DerivedError(f"{path}:{keyword_line(text, 'SERVICE') or 1}: SERVICE "
                           f"({', '.join(shape.services)}) is not allowed in a derived file: it "
                           "is data and never calls another server; load that data as a source")
    return Derived(name=path.stem, path=path, query=text, description=fields.description or "",
                   requires=tuple(fields.requires))


def discover(folder: Path | None = None) -> list[Derived]:
    """Every ``*.rq`` file of ``folder`` (default ``queries/derived``), in dependency order."""
    folder = folder or DERIVED_DIR
    files = []
    for p in sorted(folder.glob("*.rq")):
        try:
            text = read_text(p)
        except TextFileError as e:
            raise DerivedError(f"{p}{f':{e.line}' if e.line else ''}: {e.message}") from None
        files.append(parse_derived(text, p))
    return order(files)


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


STAGING = "derived-staging/"
"""Graphs ``derived-staging/<name>`` hold a new derived graph until it replaces the old one."""


def materialise(store: ox.Store, files: list[Derived] | None = None,
                timeout: float | None = DEFAULT_TIMEOUT_S,
                max_triples: int | None = DEFAULT_MAX_ROWS,
                swap: bool = True, progress: bool = False) -> list[DerivedReport]:
    """Replace each derived graph of ``store`` with its CONSTRUCT query's triples.

    The query runs first, bounded by ``timeout`` seconds and ``max_triples`` triples. With
    ``swap`` (a live store: ``python -m kg.derived``) its triples go to a staging graph, which
    replaces the derived graph in one SPARQL update (one transaction), so a query that fails,
    runs too long or yields too much leaves the old graph as it was. Without it (``kg.build``,
    whose whole staging store is swapped in only at the end) the graph is cleared and written
    directly: the same result without the update's copy of every triple. ``progress``: a bar
    on stderr, one step per derived graph, naming the graph it is making."""
    reports = []
    local = LocalStore(store)
    bar = tqdm(files if files is not None else discover(), desc="deriving", unit="graph",
               disable=not progress)
    for d in bar:
        bar.set_postfix_str(f"derived/{d.name}")
        t0 = time.perf_counter()
        try:
            triples = local.construct(d.query, timeout=timeout, max_rows=max_triples)
        except QueryLimitError as e:
            option = "--max-rows" if "triples" in str(e) else "--query-timeout"
            raise DerivedError(f"{d.path}: the CONSTRUCT query stopped: {e}; narrow its pattern "
                               f"or raise {option}. The graph derived/{d.name} is unchanged.") \
                from None
        except (SyntaxError, OSError, ValueError, KgError) as e:
            raise DerivedError(f"{d.path}: the CONSTRUCT query failed: {e}. The graph "
                               f"derived/{d.name} is unchanged.") from None
        if swap:
            staging = graph(STAGING + d.name)
            store.remove_graph(staging)
            store.bulk_extend(ox.Quad(t.subject, t.predicate, t.object, staging)
                              for t in triples)
            store.update(f"DROP SILENT GRAPH <{d.graph.value}> ; "
                         f"ADD SILENT GRAPH <{staging.value}> TO GRAPH <{d.graph.value}> ; "
                         f"DROP SILENT GRAPH <{staging.value}>")
        else:
            store.remove_graph(d.graph)
            store.bulk_extend(ox.Quad(t.subject, t.predicate, t.object, d.graph)
                              for t in triples)
        reports.append(DerivedReport(d.name, len(triples), time.perf_counter() - t0))
    return reports


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe derived`` / ``python -m kg.derived``."""
    parser.description = ("Materialise the derived graphs (queries/derived/*.rq, SPARQL "
                          "CONSTRUCT) into an existing store, replacing each derived graph "
                          "whole.")
    parser.set_defaults(handler=run)
    options.add_store(parser)
    parser.add_argument("--folder", type=Path, default=None, help="folder of derived files")
    parser.add_argument("--query-timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds one CONSTRUCT may run (default {DEFAULT_TIMEOUT_S:g}; "
                        "0: no limit)")
    parser.add_argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS,
                        help=f"triples one CONSTRUCT may yield (default {DEFAULT_MAX_ROWS:,}; "
                        "0: no limit)")


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m kg.derived", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Materialise every derived graph of the folder."""
    try:
        # an existing store only: a mistyped --store is an error, not a new empty store
        store = LocalStore.open(args.store, read_only=False).oxigraph
        files = discover(args.folder)
        reports = materialise(store, files, timeout=args.query_timeout or None,
                              max_triples=args.max_rows or None)
        store.flush()
    except OSError as e:  # a KgError is one error line too (options.call_handler)
        return options.error_line(e)
    for r in reports:
        print(f"derived/{r.name}: {r.triples:,} triples in {r.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
