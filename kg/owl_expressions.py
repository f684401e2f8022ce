"""OWL class expressions: the tree, reading it from the store, writing it as RDF or in
functional syntax, and reading names and hierarchies of one ontology.

A class expression is a small immutable tree of :class:`Named`, :class:`Not`, :class:`Some`
(∃r.C), :class:`Only` (∀r.C), :class:`And` (⊓) and :class:`Or` (⊔). It is a tree of blank nodes
in RDF, which SPARQL cannot walk recursively: the blank node triples are read in one query
(:func:`read_blank_triples`) and parsed here (:func:`parse_expression`);
:func:`expression_ntriples` writes one back as N-Triples (for a reasoner), :func:`functional`
in OWL 2 functional-style syntax. ``probes.benchmarks.ontolama.verbalise`` turns a tree into
English.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from kg import reason
from kg.errors import KgError
from kg.owl import concept_name, split_camel
from kg.store import KnowledgeStore
from kg.vocab import KGP, OWL, RDF, RDFS, graph, inferred_graph

_OWL, _RDF = str(OWL), str(RDF)
_NIL = _RDF + "nil"


# --- the tree ---------------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """A named class (its IRI)."""

    iri: str


@dataclass(frozen=True)
class Not:
    """¬C, ``owl:complementOf``."""

    operand: Expr


@dataclass(frozen=True)
class Some:
    """∃r.C, ``owl:someValuesFrom``."""

    prop: str
    filler: Expr


@dataclass(frozen=True)
class Only:
    """∀r.C, ``owl:allValuesFrom``."""

    prop: str
    filler: Expr


@dataclass(frozen=True)
class And:
    """C1 ⊓ ... ⊓ Cn, ``owl:intersectionOf``."""

    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Or:
    """C1 ⊔ ... ⊔ Cn, ``owl:unionOf``."""

    operands: tuple[Expr, ...]


Expr = Named | Not | Some | Only | And | Or
Restriction = Some | Only


def functional(e: Expr) -> str:
    """The expression in OWL 2 functional-style syntax.

    >>> functional(And((Named("http://x/A"), Some("http://x/r", Not(Named("http://x/B"))))))
    'ObjectIntersectionOf(<http://x/A> ObjectSomeValuesFrom(<http://x/r> \
ObjectComplementOf(<http://x/B>)))'
    """
    if isinstance(e, Named):
        return f"<{e.iri}>"
    if isinstance(e, Not):
        return f"ObjectComplementOf({functional(e.operand)})"
    if isinstance(e, Some | Only):
        kind = "ObjectSomeValuesFrom" if isinstance(e, Some) else "ObjectAllValuesFrom"
        return f"{kind}(<{e.prop}> {functional(e.filler)})"
    kind = "ObjectIntersectionOf" if isinstance(e, And) else "ObjectUnionOf"
    return f"{kind}({' '.join(functional(x) for x in e.operands)})"


def entities(e: Expr) -> Iterator[tuple[str, str]]:
    """``("class", iri)`` and ``("property", iri)`` for every entity occurrence, in order.

    >>> list(entities(Some("r", And((Named("A"), Named("B"))))))
    [('property', 'r'), ('class', 'A'), ('class', 'B')]
    """
    if isinstance(e, Named):
        yield "class", e.iri
    elif isinstance(e, Not):
        yield from entities(e.operand)
    elif isinstance(e, Some | Only):
        yield "property", e.prop
        yield from entities(e.filler)
    else:
        for x in e.operands:
            yield from entities(x)


def replace(e: Expr, old: str, new: str) -> Expr:
    """``e`` with every occurrence of the entity ``old`` (class or property) replaced by ``new``.

    >>> replace(Some("r", Named("A")), "A", "B")
    Some(prop='r', filler=Named(iri='B'))
    """
    if isinstance(e, Named):
        return Named(new) if e.iri == old else e
    if isinstance(e, Not):
        return Not(replace(e.operand, old, new))
    if isinstance(e, Some | Only):
        return type(e)(new if e.prop == old else e.prop, replace(e.filler, old, new))
    return type(e)(tuple(replace(x, old, new) for x in e.operands))


# --- reading from the store ------------------------------------------------------------------


class Unsupported(KgError):
    """A class expression uses a construct the verbaliser does not cover."""


def _local_name(iri: str) -> str:
    return re.split(r"[#/]", iri.rstrip("/#"))[-1]


def property_name(labels: Iterable[tuple[str, str]], iri: str) -> str | None:
    """A property's name: its English (else untagged) label, else its local name; underscores
    become spaces, CamelCase is split, lower case. ``None`` for an id-like local name.

    >>> property_name([("located_in", ""), ("located in", "en")], "http://x/RO_1")
    'located in'
    >>> property_name([], "http://x/pizza.owl#hasTopping"), property_name([], "http://x/RO_2")
    ('has topping', None)
    """
    english = sorted(v for v, lang in labels if lang.lower().startswith("en"))
    plain = sorted(v for v, lang in labels if not lang)
    text = (english or plain or [""])[0]
    if not text:
        text = _local_name(iri)
        if re.fullmatch(r"[A-Za-z]+_\d+", text):
            return None
    if " " not in text.strip():
        text = split_camel(text)
    return concept_name(text) or None


def read_property_names(store: KnowledgeStore, source: str) -> dict[str, str]:
    """Names of the source's object properties (IRIs without a usable name are left out)."""
    rows = store.query(f"""
        SELECT ?p ?label ?lang WHERE {{ GRAPH <{graph(source).value}> {{
          ?p a <{OWL.ObjectProperty.value}> FILTER(isIRI(?p))
          OPTIONAL {{ ?p <{RDFS.label.value}> ?label BIND(LANG(?label) AS ?lang) }} }} }}""")
    labels: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in rows:
        labels.setdefault(r["p"], [])
        if r["label"] is not None:
            labels[r["p"]].append((str(r["label"]), r["lang"] or ""))
    out = {}
    for p, ls in labels.items():
        name = property_name(ls, p)
        if name:
            out[p] = name
    return out


def read_class_names(store: KnowledgeStore, source: str) -> dict[str, str]:
    """``kgp:name`` of the source's probe classes (``kgp:NamedClass``)."""
    rows = store.query(f"""SELECT ?c ?name WHERE {{ GRAPH <{graph(source).value}> {{
        ?c a <{KGP.NamedClass.value}> ; <{KGP['name'].value}> ?name }} }}""")
    return {r["c"]: str(r["name"]) for r in rows}


def read_hierarchy(store: KnowledgeStore, source: str) -> tuple[dict[str, set[str]],
                                                                  dict[str, set[str]]]:
    """(superclasses, subclasses) of every class from the inferred graph (strict, closed)."""
    rows = store.query(f"""SELECT ?c ?d WHERE {{ GRAPH <{inferred_graph(source).value}> {{
        ?c <{RDFS.subClassOf.value}> ?d }} }}""")
    supers: dict[str, set[str]] = defaultdict(set)
    subs: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        supers[r["c"]].add(r["d"])
        subs[r["d"]].add(r["c"])
    return supers, subs


def read_blank_triples(store: KnowledgeStore, source: str) -> dict[str, dict[str, list[Any]]]:
    """subject -> predicate -> objects for every triple whose subject is a blank node, plus
    ``owl:equivalentClass`` triples from an IRI to a blank node (one query, so blank node
    labels agree between them)."""
    rows = store.query(f"""SELECT ?s ?p ?o WHERE {{ GRAPH <{graph(source).value}> {{
        {{ ?s ?p ?o FILTER(isBlank(?s)) }} UNION
        {{ ?s <{OWL.equivalentClass.value}> ?o FILTER(isIRI(?s) && isBlank(?o))
           BIND(<{OWL.equivalentClass.value}> AS ?p) }} }} }}""")
    out: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        out[r["s"]][r["p"]].append(r["o"])
    return out


def _is_blank(v: Any) -> bool:
    return isinstance(v, str) and v.startswith("_:")


def _rdf_list(node: Any, triples: Mapping[str, Mapping[str, list[Any]]]) -> list[Any]:
    items, seen = [], set()
    while node != _NIL:
        if not _is_blank(node) or node in seen:
            raise Unsupported(f"a malformed RDF list at {node}")
        seen.add(node)
        t = triples.get(node, {})
        first, rest = t.get(_RDF + "first", []), t.get(_RDF + "rest", [])
        if len(first) != 1 or len(rest) != 1:
            raise Unsupported(f"a malformed RDF list at {node}")
        items.append(first[0])
        node = rest[0]
    return items


def parse_expression(node: Any, triples: Mapping[str, Mapping[str, list[Any]]],
                     object_properties: set[str] | None = None) -> Expr:
    """The class expression rooted at ``node`` (an IRI or a ``_:`` blank node label).

    Supported: named classes, ``owl:complementOf``, ``owl:intersectionOf``, ``owl:unionOf``,
    ``owl:someValuesFrom`` and ``owl:allValuesFrom`` on a named object property. Anything
    else (``owl:hasValue``, cardinalities, ``owl:oneOf``, inverse or data properties) raises
    :class:`Unsupported` naming the construct.

    >>> O, R = "http://www.w3.org/2002/07/owl#", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    >>> t = {"_:a": {O + "intersectionOf": ["_:l1"]}, "_:l1": {R + "first": ["A"],
    ...      R + "rest": ["_:l2"]}, "_:l2": {R + "first": ["_:r"], R + "rest": [R + "nil"]},
    ...      "_:r": {O + "onProperty": ["p"], O + "someValuesFrom": ["B"]}}
    >>> parse_expression("_:a", t)
    And(operands=(Named(iri='A'), Some(prop='p', filler=Named(iri='B'))))
    """
    if not _is_blank(node):
        if not isinstance(node, str):
            raise Unsupported(f"a literal {node!r} where a class was expected")
        return Named(node)
    t = triples.get(node, {})
    for key, kind in (("intersectionOf", And), ("unionOf", Or)):
        if _OWL + key in t:
            items = _rdf_list(t[_OWL + key][0], triples)
            return kind(tuple(parse_expression(x, triples, object_properties) for x in items))
    if _OWL + "complementOf" in t:
        return Not(parse_expression(t[_OWL + "complementOf"][0], triples, object_properties))
    restrictions: tuple[tuple[str, type[Some] | type[Only]], ...] = (
        ("someValuesFrom", Some), ("allValuesFrom", Only))
    for key, restriction in restrictions:
        if _OWL + key in t:
            prop = (t.get(_OWL + "onProperty") or [None])[0]
            if _is_blank(prop) or prop is None:
                raise Unsupported(f"owl:{key} on an inverse or unnamed property")
            if object_properties is not None and prop not in object_properties:
                raise Unsupported(f"owl:{key} on {prop}, which is not a named object property")
            return restriction(prop, parse_expression(t[_OWL + key][0], triples,
                                                      object_properties))
    known = [k.removeprefix(_OWL) for k in t if k.startswith(_OWL) and k != _OWL + "onProperty"]
    raise Unsupported(f"owl:{known[0]}" if known else "an empty or unknown class expression")


def read_individual_types(store: KnowledgeStore, source: str) -> dict[str, set[str]]:
    """Asserted named types of the source's named individuals."""
    rows = store.query(f"""SELECT ?i ?t WHERE {{ GRAPH <{graph(source).value}> {{
        ?i a <{OWL.NamedIndividual.value}> , ?t FILTER(isIRI(?i) && isIRI(?t)) }} }}""")
    out: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        out[r["i"]].add(r["t"])
    return dict(out)


# --- writing as RDF ---------------------------------------------------------------------------


def expression_ntriples(e: Expr, counter: list[int], lines: list[str]) -> str:
    """Write ``e`` as RDF (N-Triples lines appended to ``lines``); return its node.

    Blank nodes are ``_:kgpx<n>``, numbered on from ``counter[0]`` (which is advanced).

    >>> lines: list[str] = []
    >>> expression_ntriples(Not(Named("http://x/A")), [0], lines)
    '_:kgpx1'
    >>> lines[1]
    '_:kgpx1 <http://www.w3.org/2002/07/owl#complementOf> <http://x/A> .'
    """
    if isinstance(e, Named):
        return f"<{e.iri}>"
    counter[0] += 1
    node = f"_:kgpx{counter[0]}"
    owl = f"<{_OWL}"
    if isinstance(e, Not):
        lines.append(f"{node} <{_RDF}type> {owl}Class> .")
        operand = expression_ntriples(e.operand, counter, lines)
        lines.append(f"{node} {owl}complementOf> {operand} .")
    elif isinstance(e, Some | Only):
        key = "someValuesFrom" if isinstance(e, Some) else "allValuesFrom"
        lines.append(f"{node} <{_RDF}type> {owl}Restriction> .")
        lines.append(f"{node} {owl}onProperty> <{e.prop}> .")
        lines.append(f"{node} {owl}{key}> {expression_ntriples(e.filler, counter, lines)} .")
    else:
        key = "intersectionOf" if isinstance(e, And) else "unionOf"
        items = [expression_ntriples(x, counter, lines) for x in e.operands]
        lines.append(f"{node} <{_RDF}type> {owl}Class> .")
        head = f"<{_NIL}>"
        for item in reversed(items):
            counter[0] += 1
            cell = f"_:kgpx{counter[0]}"
            lines.append(f"{cell} <{_RDF}first> {item} .")
            lines.append(f"{cell} <{_RDF}rest> {head} .")
            head = cell
        lines.append(f"{node} {owl}{key}> {head} .")
    return node


def classify_with_fresh(store: ox.Store, graph_iri: ox.NamedNode, expressions: list[Expr],
                        fresh: str, timeout: float, name: str = "ontology") -> reason.Hierarchy:
    """HermiT's hierarchy of the ontology in ``graph_iri`` plus fresh classes
    ``<fresh><i> ≡ expressions[i]`` (one run for all of them); raises
    :class:`kg.reason.ReasonerFailed` when HermiT fails or times out. The Java heap is
    :func:`kg.reason.java_memory_mb`."""
    lines: list[str] = []
    counter = [0]
    for i, e in enumerate(expressions):
        node = expression_ntriples(e, counter, lines)
        lines.append(f"<{fresh}{i}> <{_RDF}type> <{_OWL}Class> .")
        lines.append(f"<{fresh}{i}> <{_OWL}equivalentClass> {node} .")
    return reason.classify_with_extra_triples(store, graph_iri, lines, timeout, name)
