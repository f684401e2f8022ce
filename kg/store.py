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

import copy
import http
import http.client
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
import warnings
from pathlib import Path
from typing import Any, Protocol

import pyoxigraph as ox
from SPARQLWrapper import ASK, JSON, POST, SELECT, URLENCODED, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import (
    EndPointInternalError,
    EndPointNotFound,
    QueryBadFormed,
    SPARQLWrapperException,
    Unauthorized,
    URITooLong,
)

from kg import config
from kg.errors import StoreError
from kg.vocab import XSD

_INT = {str(XSD[t].value) for t in ("integer", "int", "long", "short", "nonNegativeInteger",
                                       "positiveInteger", "negativeInteger", "nonPositiveInteger")}
_FLOAT = {XSD.decimal.value, XSD.double.value, XSD.float.value}
_BOOL = XSD.boolean.value
_STRING = XSD.string.value
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

DEFAULT_TIMEOUT_S = 600.0
"""Default limit on one query's total time (``--query-timeout``)."""
DEFAULT_MAX_ROWS = 5_000_000
"""Default limit on the rows one query may return (``--max-rows``)."""


class QueryLimitError(StoreError):
    """A query ran past its time limit or returned more rows than allowed."""


class TaggedStr(str):
    """A literal's text that keeps its language tag or datatype.

    It prints, renders and serialises as the plain text, but two literals with the same text and
    different tags are different values (``"bank"@en`` is not ``"bank"@de``), so rows that differ
    only in a tag keep distinct instance ids. Compared with a plain ``str`` only the text counts.

    >>> en, de = TaggedStr("bank", language="en"), TaggedStr("bank", language="de")
    >>> en == de, en == "bank", str(en), len({en, de}), en
    (False, True, 'bank', 2, 'bank'@en)
    """

    language: str | None
    datatype: str | None

    def __new__(cls, value: str, language: str | None = None,
                datatype: str | None = None) -> TaggedStr:
        obj = super().__new__(cls, value)
        obj.language, obj.datatype = language, datatype
        return obj

    def tag(self) -> str:
        return f"@{self.language}" if self.language else f"^^<{self.datatype}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TaggedStr):
            return (str(self), self.language, self.datatype) == (
                str(other), other.language, other.datatype)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"{str.__repr__(self)}{self.tag()}"


def _literal(value: str, language: str | None, datatype: str | None) -> Any:
    """A plain value for a literal: numbers and booleans as such, plain strings as ``str``, and
    language-tagged or other typed literals as :class:`TaggedStr`."""
    if language:
        return TaggedStr(value, language=language)
    try:
        if datatype in _INT:
            return int(value)
        if datatype in _FLOAT:
            return float(value)
        if datatype == _BOOL:
            return value in ("true", "1")
    except ValueError:
        return TaggedStr(value, datatype=datatype)
    if datatype is None or datatype in (_STRING, _LANG_STRING):
        return value
    return TaggedStr(value, datatype=datatype)


class KnowledgeStore(Protocol):
    """What probes need from a store."""

    def query(self, sparql: str, timeout: float | None = ...,
              max_rows: int | None = ...) -> list[dict[str, Any]]: ...

    def graphs(self) -> list[str]: ...

    def __hash__(self) -> int: ...  # stores are cache keys (kg.lexicon.read_lexicon)


def term_value(term: Any) -> Any:
    """A plain Python value for an RDF term from pyoxigraph."""
    if term is None:
        return None
    if isinstance(term, ox.Literal):
        return _literal(term.value, term.language, term.datatype.value)
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
        if path.is_dir() and not (path / "CURRENT").is_file():
            raise StoreError(
                f"{path} is not a kgprobe store (it has no CURRENT file); point --store (or "
                "KGPROBE_STORE) at the folder `python -m kg.build` made, or build one there.")
        try:
            store = ox.Store.read_only(str(path)) if read_only else ox.Store(str(path))
        except OSError as e:
            raise StoreError(
                f"cannot open the store at {path}: {e}. If another process is building it, wait "
                "for it to finish; if the folder is damaged, rebuild it with "
                "`python -m kg.build --force-new`."
            ) from e
        except RuntimeError as e:  # RocksDB: "Corruption: ..."
            raise StoreError(f"the store at {path} is damaged ({e}); rebuild it with "
                             "`python -m kg.build --force-new`.") from e
        return cls(store, path)

    @classmethod
    def in_memory(cls) -> LocalStore:
        return cls(ox.Store())

    def query(self, sparql: str, timeout: float | None = DEFAULT_TIMEOUT_S,
              max_rows: int | None = DEFAULT_MAX_ROWS) -> list[dict[str, Any]]:
        """Run a SELECT (or ASK); rows as dicts of plain values. Raises QueryLimitError when
        the query runs longer than ``timeout`` seconds or returns more than ``max_rows`` rows
        (None: no limit)."""
        return self._bounded(lambda stop: self._rows(sparql, max_rows, stop), timeout)

    def construct(self, sparql: str, timeout: float | None = DEFAULT_TIMEOUT_S,
                  max_rows: int | None = DEFAULT_MAX_ROWS) -> list[ox.Triple]:
        """Run a CONSTRUCT; its triples, within the same limits as :meth:`query` (``max_rows``
        bounds the triples)."""
        return self._bounded(lambda stop: self._triples(sparql, max_rows, stop), timeout)

    def _bounded(self, call: Any, timeout: float | None) -> Any:
        box: dict[str, Any] = {}
        stop = threading.Event()

        def work() -> None:
            try:
                box["rows"] = call(stop)
            except BaseException as e:  # handed to the caller's thread, without the frames
                box["error"] = e.with_traceback(None)  # (they hold Oxigraph objects that
                # must be dropped on this thread)

        if timeout is None:
            work()
        else:
            # Oxigraph releases the GIL while it evaluates, so the caller can give up on time;
            # the daemon thread stops at its next row (or when the process ends).
            worker = threading.Thread(target=work, daemon=True, name="kgprobe-query")
            worker.start()
            worker.join(timeout)
            if worker.is_alive():
                stop.set()
                raise QueryLimitError(f"the query ran longer than {timeout:g} s")
        if "error" in box:
            error = box.pop("error")
            try:  # no cycle error -> traceback -> this frame -> error: it would keep the store
                raise error  # open until the next garbage collection
            finally:
                del error
        return box["rows"]

    def _evaluate(self, sparql: str) -> Any:
        # Probes read the union of all named graphs as their default graph (documented above),
        # unless the query names its own dataset with FROM / FROM NAMED: then that is honoured.
        try:
            return self.oxigraph.query(sparql, use_default_graph_as_union=not names_dataset(sparql))
        except (OSError, RuntimeError) as e:  # SyntaxError is for the caller
            raise StoreError(f"the store{f' at {self.path}' if self.path else ''} could not be "
                             f"read ({e}); if it is damaged, rebuild it with "
                             "`python -m kg.build --force-new`") from None

    def _rows(self, sparql: str, max_rows: int | None,
              stop: threading.Event) -> list[dict[str, Any]]:
        result = self._evaluate(sparql)
        if isinstance(result, bool | ox.QueryBoolean):
            return [{"ask": bool(result)}]
        if not isinstance(result, ox.QuerySolutions):
            del result  # Oxigraph's result objects must be dropped on the thread that made them
            raise StoreError("probe queries must be SELECT or ASK, not CONSTRUCT/DESCRIBE")
        rows = _solution_rows(result, max_rows, stop)
        del result
        if max_rows is not None and len(rows) > max_rows:
            raise QueryLimitError(f"the query returned more than {max_rows:,} rows")
        return rows

    def _triples(self, sparql: str, max_rows: int | None,
                 stop: threading.Event) -> list[ox.Triple]:
        result = self._evaluate(sparql)
        if not isinstance(result, ox.QueryTriples):
            del result
            raise StoreError("the query is not a CONSTRUCT query")
        triples: list[ox.Triple] = []
        for triple in result:
            if stop.is_set():
                break
            triples.append(triple)
            if max_rows is not None and len(triples) > max_rows:
                del result
                raise QueryLimitError(f"the query returned more than {max_rows:,} triples")
        del result
        return triples

    def graphs(self) -> list[str]:
        return sorted(g.value for g in self.oxigraph.named_graphs() if isinstance(g, ox.NamedNode))

    def count(self, graph_iri: str | None = None) -> int:
        g = f"GRAPH <{graph_iri}>" if graph_iri else "GRAPH ?g"
        return self.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ {g} {{ ?s ?p ?o }} }}")[0]["n"]


def names_dataset(sparql: str) -> bool:
    """Whether ``sparql`` has a ``FROM`` or ``FROM NAMED`` clause (read from its algebra; a text
    without the letters "from" has none). A query kg.sparql cannot read counts as having none.

    >>> names_dataset("SELECT ?s FROM <http://e.org/g> WHERE { ?s ?p ?o }")
    True
    >>> names_dataset("# taken from the sources\\nSELECT ?s WHERE { ?s ?p ?o }")
    False
    """
    if "from" not in sparql.lower():
        return False
    from kg.sparql import QueryShapeError, analyse

    try:
        return bool(analyse(sparql).dataset)
    except QueryShapeError:
        return False


class RowTally:
    """How many rows the store's query now running has produced so far (updated every 256
    rows and at its end), for progress lines of a long export (probes.engine.progress). One query
    runs at a time in a kgprobe process."""

    rows: int = 0


QUERY_ROWS = RowTally()


def _solution_rows(result: Any, max_rows: int | None,
                   stop: threading.Event) -> list[dict[str, Any]]:
    names = [v.value for v in result.variables]
    rows: list[dict[str, Any]] = []
    QUERY_ROWS.rows = 0
    for solution in result:  # as fast as serialising to JSON, and stoppable per row
        if stop.is_set():
            break
        rows.append({n: term_value(solution[n]) for n in names})
        if not len(rows) & 255:
            QUERY_ROWS.rows = len(rows)
        if max_rows is not None and len(rows) > max_rows:
            break  # the caller reports the limit
    QUERY_ROWS.rows = len(rows)
    return rows


DEFAULT_MAX_BYTES = 1 << 30  # the most bytes one endpoint answer may have (1 GiB)

_STATUS_ERRORS: dict[int, type[SPARQLWrapperException]] = {
    400: QueryBadFormed, 401: Unauthorized, 404: EndPointNotFound, 414: URITooLong,
    500: EndPointInternalError}
"""SPARQLWrapper's exception for each HTTP status it names (``SPARQLWrapper.query`` raises them
for these statuses): its ``msg`` is the hint after the endpoint's own error text."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: urllib would send a redirected POST again as a GET without its
    body, so another address's answer would be read as this query's. The 3xx status reaches
    the caller as an HTTPError and is refused with its Location."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class RemoteStore:
    """A SPARQL 1.1 endpoint (http or https), read-only, reached with SPARQLWrapper.

    SPARQLWrapper builds each request: method POST (``setMethod``), the query as the ``query=``
    form field (``setRequestMethod(URLENCODED)``), JSON results (``setReturnFormat``, the
    Accept header only). The query form is read by kgprobe's SPARQL parser
    (:func:`kg.sparql.analyse`), not guessed from words: SPARQLWrapper's own guess
    (``setQuery``) drops only every other line of a run of ``#`` comments and matches
    ``ADD``/``LOAD``/``DROP``/... inside any word, so it misreads 12 of the 45 files in
    ``queries/``, whose headers are comments (SELECTs as ASK or CONSTRUCT). Only SELECT and
    ASK are sent; the parsed form is set as the client's ``queryType``, so SPARQLWrapper
    sends a query, never an update.

    urllib sends the request without following redirects (``SPARQLWrapper.query`` opens it
    with urllib's global opener, which sends a redirected POST again as a GET without its
    body, so another address's answer would be read as this query's). ``timeout`` bounds the
    whole request, reading included, so a server that trickles its answer cannot hold a run for
    longer; an answer is read up to ``max_bytes`` (default 1 GiB). An error status is one line
    with the endpoint's own error text and, for the statuses SPARQLWrapper names
    (:data:`_STATUS_ERRORS`), its hint, with its exception (``QueryBadFormed``, ...) as the
    cause; JSON that is not SPARQL results (no ``head``, ``bindings`` not a list, a binding
    without ``type``) is one clear error. ``_client`` is the configured SPARQLWrapper (its
    ``agent`` is the User-Agent header), each query builds its request from a copy of it.
    """

    def __init__(self, endpoint: str, timeout: float = 120.0,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        url = urllib.parse.urlsplit(endpoint)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise StoreError(f"--endpoint {endpoint!r} is not an http(s) URL; give the SPARQL "
                             "endpoint's address, e.g. http://127.0.0.1:7878/query")
        if timeout is None or timeout <= 0:
            raise StoreError(f"the endpoint timeout must be a positive number of seconds "
                             f"(got {timeout})")
        self.endpoint = endpoint
        self.timeout = float(timeout)
        self.max_bytes = max_bytes
        self._client = SPARQLWrapper(endpoint, agent="kgprobe")
        self._client.setReturnFormat(JSON)
        self._client.setMethod(POST)
        self._client.setRequestMethod(URLENCODED)
        self._client.setOnlyConneg(True)  # no format=/output=/results= fields beside query=

    def query(self, sparql: str, timeout: float | None = None,
              max_rows: int | None = DEFAULT_MAX_ROWS) -> list[dict[str, Any]]:
        limit = min(self.timeout, timeout) if timeout else self.timeout
        body = self._post(sparql, limit)
        try:
            data = json.loads(body)
        except ValueError as e:
            start = body[:60].decode("utf-8", "replace").strip()
            raise StoreError(f"SPARQL endpoint {self.endpoint} did not answer with SPARQL JSON "
                             f"results (it sent {start!r}...); check that the URL is the "
                             "endpoint's query address, not a web page") from e
        if not isinstance(data, dict) or not ("boolean" in data or (
                isinstance(data.get("results"), dict) and "bindings" in data["results"])):
            raise StoreError(f"SPARQL endpoint {self.endpoint} answered JSON without "
                             "'results' bindings; check that the URL is a SPARQL 1.1 endpoint")
        try:
            rows = json_rows(data)
        except ValueError as e:
            raise StoreError(f"SPARQL endpoint {self.endpoint} answered JSON that is not SPARQL "
                             f"1.1 results: {e}; check that the URL is a SPARQL 1.1 endpoint"
                             ) from e
        if max_rows is not None and len(rows) > max_rows:
            raise QueryLimitError(f"the query returned more than {max_rows:,} rows")
        return rows

    def _client_for(self, sparql: str) -> SPARQLWrapper:
        """A copy of the configured client holding ``sparql`` as a SELECT or ASK query."""
        from kg.sparql import QueryShapeError, analyse

        try:
            form = analyse(sparql).form
        except QueryShapeError as e:
            raise StoreError(f"the query was not sent to {self.endpoint}: {e}") from None
        if form not in (SELECT, ASK):
            raise StoreError("probe queries must be SELECT or ASK, not CONSTRUCT/DESCRIBE")
        client = copy.copy(self._client)  # a timed-out request may still hold the last copy
        with warnings.catch_warnings():  # its own guess warns on texts it cannot read; unused
            warnings.simplefilter("ignore", RuntimeWarning)
            client.setQuery(sparql)
        client.queryType = form  # the parsed form, never INSERT/DROP/... read in a comment
        return client

    def _post(self, sparql: str, limit: float) -> bytes:
        """POST the query; the response body. One deadline covers connecting and reading: the
        request runs on a daemon thread that the caller stops waiting for after ``limit`` s."""
        client = self._client_for(sparql)
        # per socket operation (setTimeout would round it to whole s); SPARQLWrapper annotates
        # timeout as int, but hands it to urllib's urlopen, which takes a float
        client.timeout = limit  # type: ignore[assignment]
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                with _OPENER.open(client._createRequest(), timeout=limit) as response:
                    box["status"] = response.status
                    box["body"] = self._read(response)
            except urllib.error.HTTPError as e:  # an error status, or a redirect not followed
                box["status"], box["reason"] = e.code, e.reason
                box["location"] = e.headers.get("Location") if e.headers else None
                box["body"] = e.read(4096)  # here, so the deadline covers reading it too
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e

        worker = threading.Thread(target=work, daemon=True, name="kgprobe-endpoint")
        worker.start()
        worker.join(limit)
        late = QueryLimitError(f"SPARQL endpoint {self.endpoint} did not answer within "
                               f"{limit:g} s; raise --timeout or check the server")
        error = box.get("error")
        if worker.is_alive() or isinstance(error, TimeoutError):
            raise late from error
        if isinstance(error, OSError | http.client.HTTPException):
            reason = getattr(error, "reason", error)  # URLError wraps the socket's error
            if isinstance(reason, TimeoutError):
                raise late from error
            raise StoreError(f"SPARQL endpoint {self.endpoint} failed: {reason}. Check that it "
                             "is running and reachable, or drop --endpoint to use the embedded "
                             "store.") from error
        if error is not None:
            raise error
        if 300 <= box["status"] < 400:
            raise StoreError(f"SPARQL endpoint {self.endpoint} answered with a redirect (HTTP "
                             f"{box['status']} {_phrase(box['status'])}) to "
                             f"{box.get('location') or 'no address'}; a query is not sent on "
                             "to another address (it would arrive without its text): give "
                             "the address it names with --endpoint if you trust it")
        if box["status"] != 200:
            raise self._status_error(box["status"], box.get("reason"), box["body"])
        return box["body"]

    def _status_error(self, status: int, reason: str | None, body: bytes) -> StoreError:
        """The error for an answer with an error ``status``: one line with the endpoint's own
        error text (``body``) and SPARQLWrapper's hint for the status, whose exception (with
        the body) is the cause."""
        message = (f"SPARQL endpoint {self.endpoint} failed: HTTP {status} "
                   f"{reason or _phrase(status)}: {_detail(body) or '(no error text)'}")
        named = _STATUS_ERRORS.get(status)
        if named is None:
            return StoreError(message)
        error = StoreError(f"{message} ({named.msg})")
        error.__cause__ = named(body)
        return error

    def _read(self, response: Any) -> bytes:
        """The response body, at most ``max_bytes`` (QueryLimitError past that)."""
        parts, size = [], 0
        while block := response.read(1 << 20):
            size += len(block)
            if size > self.max_bytes:
                raise QueryLimitError(
                    f"SPARQL endpoint {self.endpoint} answered more than "
                    f"{self.max_bytes:,} bytes; add a LIMIT or a narrower pattern to the query")
            parts.append(block)
        return b"".join(parts)

    def graphs(self) -> list[str]:
        rows = self.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        return sorted(r["g"] for r in rows)


def _phrase(code: int) -> str:
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return ""


def _detail(body: bytes) -> str:
    return re.sub(r"\s+", " ", body[:200].decode("utf-8", "replace")).strip()


def json_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of plain values from a parsed SPARQL 1.1 JSON result; ValueError names what is
    missing or of the wrong kind.

    >>> json_rows({"results": {"bindings": []}})
    Traceback (most recent call last):
    ValueError: no 'head' object with a 'vars' list
    >>> json_rows({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"value": "1"}}]}})
    Traceback (most recent call last):
    ValueError: binding 1 of ?x has no 'type'
    """
    if "boolean" in data:
        return [{"ask": data["boolean"]}]
    head = data.get("head")
    names = head.get("vars") if isinstance(head, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("no 'head' object with a 'vars' list")
    bindings = data["results"]["bindings"]
    if not isinstance(bindings, list):
        raise ValueError(f"'bindings' is a {type(bindings).__name__}, not a list")
    rows = []
    for i, b in enumerate(bindings, 1):
        if not isinstance(b, dict):
            raise ValueError(f"binding {i} is a {type(b).__name__}, not an object")
        rows.append({n: _json_value(b.get(n), i, n) for n in names})
    return rows


def _json_value(b: Any, row: int = 0, name: str = "") -> Any:
    if b is None:
        return None
    if not isinstance(b, dict):
        raise ValueError(f"binding {row} of ?{name} is not an object")
    kind, value = b.get("type"), b.get("value")
    if kind not in ("uri", "literal", "bnode", "typed-literal"):
        raise ValueError(f"binding {row} of ?{name} has no 'type'" if kind is None else
                         f"binding {row} of ?{name} has type {kind!r}, not uri, literal or "
                         "bnode")
    if not isinstance(value, str):
        raise ValueError(f"binding {row} of ?{name} has no string 'value'")
    if kind == "bnode":
        return "_:" + value
    if kind == "uri":
        return value
    return _literal(value, b.get("xml:lang"), b.get("datatype"))


def open_store(endpoint: str | None = None, path: Path | None = None,
               timeout: float = 120.0) -> KnowledgeStore:
    """The store probes query: the endpoint when one is given (``timeout``: the total seconds
    one request may take), else the embedded store."""
    if endpoint:
        return RemoteStore(endpoint, timeout=timeout)
    return LocalStore.open(path, read_only=True)
