"""Where an instance came from: the SPARQL bindings behind it and the named graph of each.

An instance's ``fields`` keep every value the probe query selected, but not whether a value was
an IRI or a literal, what an IRI is called, or which named graph (which source, or which graph
of materialised inferences) holds it. :func:`provenance` looks that up in the store at export
time, for every instance of a probe, with a few batched queries (no per-instance round trip):

- **bindings**: per selected variable and value (a grouped variable's first
  :data:`MAX_VALUES`), whether the value is an IRI (it looks like an absolute IRI and the store
  has a triple with it, as subject or else as object), its label (``rdfs:label``,
  ``skos:prefLabel`` or ``kgp:name``; an English or untagged one first, then the first in
  order) and the named graphs holding triples about it (a
  literal: the graphs holding it as an object), at most :data:`MAX_GRAPHS`;
- **triples**: the triples, with their named graph, that link two of the instance's values
  (IRI to IRI, or IRI to literal, e.g. ``<synset> rdfs:label "dog"``), at most
  :data:`MAX_TRIPLES` per instance.

The rows go to the ``instance_provenance`` table (one per instance, see docs/results.md) and
the HTML report shows them beside each prediction.

>>> from kg.store import LocalStore
>>> store = LocalStore.in_memory()
>>> store.oxigraph.update('''INSERT DATA { GRAPH <urn:g:wn> {
...     <urn:x:dog> <http://www.w3.org/2000/01/rdf-schema#label> "dog" .
...     <urn:x:dog> <urn:p:hypernym> <urn:x:animal> } }''')
>>> rows = provenance([{"w": "urn:x:dog", "v": ["urn:x:animal"], "n": 3}], store)
>>> [(b["var"], b["iri"], b["label"], b["graphs"]) for b in rows[0]["bindings"]]
... # doctest: +NORMALIZE_WHITESPACE
[('w', True, 'dog', ['urn:g:wn']), ('v', True, None, ['urn:g:wn']), ('n', False, None, [])]
>>> rows[0]["triples"]
[['urn:x:dog', 'urn:p:hypernym', 'urn:x:animal', 'urn:g:wn']]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kg.store import KnowledgeStore

#: Values listed per variable of one instance (a grouped variable can hold hundreds).
MAX_VALUES = 12
#: Named graphs listed per value.
MAX_GRAPHS = 5
#: Triples kept per instance.
MAX_TRIPLES = 40
#: Values (or value pairs) per batched query.
CHUNK = 400

_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`]+")
_LABELS = ("<http://www.w3.org/2000/01/rdf-schema#label> "
           "|<http://www.w3.org/2004/02/skos/core#prefLabel> "
           "|<https://w3id.org/kgprobe/vocab#name>")


def _looks_like_iri(value: Any) -> bool:
    """
    >>> [_looks_like_iri(v) for v in ("http://x.org/a", "dog", "12:30", "a b:c", 3)]
    [True, False, False, False, False]
    """
    return isinstance(value, str) and bool(_IRI.fullmatch(value)) and not value.startswith("_:")


def _literal(value: Any) -> str:
    """A SPARQL literal for a plain value (strings escaped; numbers as they are)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace(
        "\r", "\\r")
    return f'"{text}"'


def _literal_forms(value: Any) -> list[str]:
    """A plain literal and its ``@en`` form (exported fields lose the language tag)."""
    lit = _literal(value)
    return [lit, lit + "@en"] if lit.startswith('"') else [lit]


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), CHUNK):
        yield items[i:i + CHUNK]


def _values(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """(variable, value) of a record, a list variable's first :data:`MAX_VALUES` values."""
    out = []
    for var, value in record.items():
        for v in (value if isinstance(value, list) else [value])[:MAX_VALUES]:
            if v is not None:
                out.append((var, v))
    return out


class _Counted:
    """The store, counting its queries for ``tick(done, total)``; ``total`` is what is known
    so far (the link queries are added once the lookups say which values are IRIs)."""

    def __init__(self, store: KnowledgeStore, tick: Callable[[int, int], None] | None,
                 total: int) -> None:
        self.store, self.tick, self.total, self.done = store, tick, total, 0

    def query(self, sparql: str, max_rows: int | None = None) -> list[dict[str, Any]]:
        rows = self.store.query(sparql, max_rows=max_rows)
        self.done += 1
        if self.tick is not None:
            self.tick(self.done, max(self.total, self.done))
        return rows


def _batches(n: int) -> int:
    return -(-n // CHUNK)


def _lookup(store: _Counted, iris: list[str], literals: list[Any]
            ) -> tuple[dict[str, list[str]], dict[str, str], dict[str, list[str]]]:
    """Graphs and labels of IRIs (an IRI in no triple is no IRI here), graphs of literals."""
    graphs: dict[str, list[str]] = {}
    labels: dict[str, str] = {}
    for chunk in _chunks(iris):
        values = " ".join(f"<{i}>" for i in chunk)
        for r in store.query(f"SELECT DISTINCT ?x ?g WHERE {{ VALUES ?x {{ {values} }} "
                             "GRAPH ?g { ?x ?p ?o } }", max_rows=None):
            graphs.setdefault(str(r["x"]), []).append(str(r["g"]))
        objects = " ".join(f"<{i}>" for i in chunk if i not in graphs)
        for r in store.query(f"SELECT DISTINCT ?x ?g WHERE {{ VALUES ?x {{ {objects} }} "
                             "GRAPH ?g { ?s ?p ?x } }", max_rows=None) if objects else []:
            graphs.setdefault(str(r["x"]), []).append(str(r["g"]))
        found: dict[str, list[tuple[int, str]]] = {}
        for r in store.query(f"SELECT DISTINCT ?x (STR(?l) AS ?label) (LANG(?l) AS ?lang) "
                             f"WHERE {{ VALUES ?x {{ {values} }} ?x {_LABELS} ?l }}",
                             max_rows=None):
            rank = 0 if str(r["lang"] or "") in ("", "en") else 1
            found.setdefault(str(r["x"]), []).append((rank, str(r["label"])))
        labels.update({x: min(ls)[1] for x, ls in found.items()})
    of_literal: dict[str, list[str]] = {}
    for chunk in _chunks(literals):
        values = " ".join(f for v in chunk for f in _literal_forms(v))
        for r in store.query(f"SELECT DISTINCT (STR(?o) AS ?v) ?g WHERE {{ VALUES ?o "
                             f"{{ {values} }} GRAPH ?g {{ ?s ?p ?o }} }}", max_rows=None):
            of_literal.setdefault(str(r["v"]), []).append(str(r["g"]))
    return graphs, labels, of_literal


def _links(store: _Counted, pairs: list[tuple[str, str]]
           ) -> dict[tuple[str, str], list[list[str]]]:
    """The triples (s, p, o, graph) from each IRI ``s`` to ``o`` (an IRI or a literal, written
    as SPARQL terms)."""
    out: dict[tuple[str, str], list[list[str]]] = {}
    for chunk in _chunks(pairs):
        values = " ".join(f"({s} {o})" for s, o in chunk)
        for r in store.query(f"SELECT ?s ?p ?o ?g WHERE {{ VALUES (?s ?o) {{ {values} }} "
                             "GRAPH ?g { ?s ?p ?o } }", max_rows=None):
            s = str(r["s"])
            out.setdefault((s, str(r["o"])), []).append([s, str(r["p"]), str(r["o"]),
                                                          str(r["g"])])
    return out


def provenance(records: Sequence[dict[str, Any]], store: KnowledgeStore,
               tick: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """One ``{"bindings": [...], "triples": [...]}`` per record (an instance's fields), in
    order (see the module docstring). ``tick(done, total)`` hears of each batched store query
    (progress lines)."""
    values = [_values(r) for r in records]
    candidates = sorted({str(v) for vs in values for _, v in vs if _looks_like_iri(v)})
    literal_keys = {_literal(v): v for vs in values for _, v in vs if not _looks_like_iri(v)}
    counted = _Counted(store, tick, 3 * _batches(len(candidates)) + _batches(len(literal_keys)))
    graphs, labels, of_literal = _lookup(counted, candidates, list(literal_keys.values()))
    pairs: set[tuple[str, str]] = set()
    for vs in values:
        iris = [str(v) for _, v in vs if str(v) in graphs]
        others = [v for _, v in vs if not (isinstance(v, str) and v in graphs)]
        pairs.update((f"<{a}>", f"<{b}>") for a in iris for b in iris if a != b)
        pairs.update((f"<{a}>", form) for a in iris for v in others
                     for form in _literal_forms(v))
    by_subject: dict[str, list[tuple[str, list[list[str]]]]] = {}
    counted.total = counted.done + _batches(len(pairs))
    for (s, o), found in sorted(_links(counted, sorted(pairs)).items()):
        by_subject.setdefault(s, []).append((o, found))
    out = []
    for vs in values:
        bindings: list[dict[str, Any]] = []
        triples: list[list[str]] = []
        seen: set[tuple[str, ...]] = set()
        for var, v in vs:
            iri = isinstance(v, str) and v in graphs
            where = graphs.get(str(v), []) if iri else of_literal.get(str(v), [])
            bindings.append({"var": var, "value": v, "iri": iri,
                             "label": labels.get(str(v)) if iri else None,
                             "graphs": sorted(where)[:MAX_GRAPHS]})
        subjects = {str(v) for _, v in vs if isinstance(v, str) and v in graphs}
        objects = {str(v) for _, v in vs}
        for s in sorted(subjects & by_subject.keys()):  # (s, o) in order, as one sort
            for o, found in by_subject[s]:
                if o not in objects:
                    continue
                for t in found:
                    if tuple(t) not in seen and len(triples) < MAX_TRIPLES:
                        seen.add(tuple(t))
                        triples.append(t)
        out.append({"bindings": bindings, "triples": triples})
    return out
