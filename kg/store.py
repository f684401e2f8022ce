"""Open the knowledge store: an embedded Oxigraph store on disk, or any SPARQL 1.1 endpoint.

Queries see the union of all named graphs as their default graph, so a probe need not name
graphs (``GRAPH <...>`` still works to read one source). A remote endpoint must be configured the
same way (``oxigraph serve --union-default-graph``; Fuseki ``tdb:unionDefaultGraph true``).

Both kinds answer the same small API: ``query(sparql)`` returns rows as dicts of plain Python
values (IRIs and strings as ``str``, numeric and boolean literals as numbers and bools, unbound
as ``None``) and ``graphs()`` lists the named graphs.

>>> from pyoxigraph import Quad, Literal
>>> from kg.vocab import graph, KGP
>>> store = LocalStore.in_memory()
>>> store.oxigraph.add(Quad(KGP.a, KGP.p, Literal(3), graph("demo")))
>>> store.query("SELECT ?o WHERE { ?s ?p ?o }")
[{'o': 3}]
>>> store.graphs()
['https://w3id.org/kgprobe/graph/demo']
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import orjson
import pyoxigraph as ox

from kg import config
from kg.errors import StoreError
from kg.vocab import XSD

_INT = {str(XSD[t].value) for t in ("integer", "int", "long", "short", "nonNegativeInteger",
                                       "positiveInteger", "negativeInteger", "nonPositiveInteger")}
_FLOAT = {XSD.decimal.value, XSD.double.value, XSD.float.value}
_BOOL = XSD.boolean.value


class KnowledgeStore(Protocol):
    """What probes need from a store."""

    def query(self, sparql: str) -> list[dict[str, Any]]: ...

    def graphs(self) -> list[str]: ...


def term_value(term: Any) -> Any:
    """A plain Python value for an RDF term from pyoxigraph."""
    if term is None:
        return None
    if isinstance(term, ox.Literal):
        dt = term.datatype.value
        try:
            if dt in _INT:
                return int(term.value)
            if dt in _FLOAT:
                return float(term.value)
            if dt == XSD.boolean.value:
                return term.value in ("true", "1")
        except ValueError:
            return term.value
        return term.value
    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    return term.value


class LocalStore:
    """An embedded Oxigraph store (on disk, or in memory for tests)."""

    def __init__(self, store: ox.Store, path: Path | None = None) -> None:
        self.oxigraph = store
        self.path = path

    @classmethod
    def open(cls, path: Path | None = None, read_only: bool = True) -> LocalStore:
        path = Path(path or config.store_path())
        if not path.exists():
            raise StoreError(
                f"no store at {path}: build it first with `python -m kg.build` "
                "(or set KGPROBE_STORE / --store to the folder that holds it)."
            )
        try:
            store = ox.Store.read_only(str(path)) if read_only else ox.Store(str(path))
        except OSError as e:
            raise StoreError(
                f"cannot open the store at {path}: {e}. If another process is building it, wait "
                "for it to finish; if the folder is damaged, rebuild with `python -m kg.build`."
            ) from e
        return cls(store, path)

    @classmethod
    def in_memory(cls) -> LocalStore:
        return cls(ox.Store())

    def query(self, sparql: str) -> list[dict[str, Any]]:
        # Probes read the union of all named graphs as their default graph (documented above).
        result = self.oxigraph.query(sparql, use_default_graph_as_union=True)
        if isinstance(result, bool | ox.QueryBoolean):
            return [{"ask": bool(result)}]
        if not isinstance(result, ox.QuerySolutions):
            raise StoreError("probe queries must be SELECT or ASK, not CONSTRUCT/DESCRIBE")
        # Serialising to SPARQL JSON and parsing it with orjson is ~3x faster than reading
        # every term object through the Python bindings.
        data = orjson.loads(result.serialize(format=ox.QueryResultsFormat.JSON))
        return json_rows(data)

    def graphs(self) -> list[str]:
        return sorted(g.value for g in self.oxigraph.named_graphs() if isinstance(g, ox.NamedNode))

    def count(self, graph_iri: str | None = None) -> int:
        g = f"GRAPH <{graph_iri}>" if graph_iri else "GRAPH ?g"
        return self.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ {g} {{ ?s ?p ?o }} }}")[0]["n"]


class RemoteStore:
    """A SPARQL 1.1 endpoint queried through SPARQLWrapper (read-only)."""

    def __init__(self, endpoint: str, timeout: float = 120.0) -> None:
        from SPARQLWrapper import JSON, POST, SPARQLWrapper

        self.endpoint = endpoint
        self._client = SPARQLWrapper(endpoint)
        self._client.setReturnFormat(JSON)
        self._client.setMethod(POST)
        self._client.setTimeout(int(timeout))

    def query(self, sparql: str) -> list[dict[str, Any]]:
        self._client.setQuery(sparql)
        try:
            data = self._client.queryAndConvert()
        except Exception as e:  # SPARQLWrapper raises many kinds (URLError, EndPointNotFound...)
            raise StoreError(
                f"SPARQL endpoint {self.endpoint} failed: {e}. Check that it is running and "
                "reachable, or drop --endpoint to use the embedded store."
            ) from e
        return json_rows(data)

    def graphs(self) -> list[str]:
        rows = self.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        return sorted(r["g"] for r in rows)


def json_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of plain values from a parsed SPARQL 1.1 JSON result."""
    if "boolean" in data:
        return [{"ask": data["boolean"]}]
    names = data["head"].get("vars", [])
    return [{n: _json_value(b.get(n)) for n in names} for b in data["results"]["bindings"]]


def _json_value(b: dict[str, str] | None) -> Any:
    if b is None:
        return None
    kind, value = b["type"], b["value"]
    if kind == "bnode":
        return "_:" + value
    dt = b.get("datatype")
    if dt is None or kind == "uri":
        return value
    try:
        if dt in _INT:
            return int(value)
        if dt in _FLOAT:
            return float(value)
        if dt == _BOOL:
            return value in ("true", "1")
    except ValueError:
        return value
    return value


def open_store(endpoint: str | None = None, path: Path | None = None) -> KnowledgeStore:
    """The store probes query: the endpoint when one is given, else the embedded store."""
    if endpoint:
        return RemoteStore(endpoint)
    return LocalStore.open(path, read_only=True)


def missing_graphs(store: KnowledgeStore, needed: Iterable[str]) -> list[str]:
    have = set(store.graphs())
    return [g for g in needed if g not in have]
