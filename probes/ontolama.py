"""OntoLAMA datasets: build, statistics and export (``python -m probes.ontolama``).

The probe files are ``queries/ontolama/<ontology>-atomic.rq`` and ``<ontology>-complex.rq``
(header ``params.ontolama``). This module does what their SPARQL cannot:

- **Atomic SI** (:func:`balance`): each atomic query returns every positive (an entailed
  subsumption) and a few more soft and hard negative candidates than needed, ordered by a
  seeded hash. SPARQL's ``LIMIT`` must be a constant, so the cut to the paper's class balance
  is made here: half the number of positives from each negative kind (the other kind makes
  up for one with too few candidates), the first ones by the query's ``?order``.
- **Complex SI** (:func:`complex_instances`): the query returns the anchors (probe classes
  ``A`` with ``A ≡ C``, ``C`` complex) and their splits. The class expression is a tree of
  blank nodes, which SPARQL cannot walk recursively; it is read from the store's triples and
  verbalised by :mod:`probes.verbalise`. Positives are ``A' ⊑ C`` (``A'`` = ``A`` or an
  entailed subclass) and ``C ⊑ A'`` (``A`` or an entailed superclass), taken from the
  inferred graph. Negatives replace one named class or property of the anchor axiom by
  another (seeded hash) and keep a pair only if it passes *assumed disjointness* (no
  subsumption either way, no common named descendant, no common named instance, satisfiable):
  deciding that for a new class expression needs a reasoner, so all candidates of an ontology
  become fresh classes ``X ≡ C'`` in one HermiT run (:mod:`kg.reason`). At most
  ``max_positives`` and ``max_negatives`` samples per anchor.

``python -m probes.ontolama build`` writes both kinds to the ``instances`` table (and Parquet),
like ``python -m probes.export``; ``stats`` prints the dataset sizes beside the paper's Table 2;
``export`` writes OntoLAMA's own files (``v_sub_concept``, ``v_super_concept``, ``label``,
``axiom``, and ``anchor_axiom`` for Complex SI).

>>> sorted(PAPER)
['doid', 'foodon', 'go', 'schemaorg']
>>> PAPER["schemaorg"].atomic
(808, 404, 2830)
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from kg import config, reason
from kg.errors import KgError
from kg.owl import concept_name, split_camel
from kg.store import KnowledgeStore, LocalStore, open_store
from kg.vocab import KGP, OWL, RDF, RDFS, graph, inferred_graph
from probes.errors import ProbeError, ProbeFileError
from probes.export import check_graphs, instance_id, instances_for, write_instances, write_parquet
from probes.results import connect
from probes.spec import Probe, discover
from probes.verbalise import (
    And,
    Expr,
    MissingName,
    Named,
    Not,
    Only,
    Or,
    Some,
    Verbaliser,
    article,
    entities,
    functional,
    replace,
)


class PaperRow(NamedTuple):
    """One row of OntoLAMA's Table 2 (full ontologies, 2022 releases)."""

    title: str
    concepts: int
    equivalences: int | None
    atomic: tuple[int, int, int] | None
    complex: tuple[int, int, int] | None


#: OntoLAMA's Table 2 (He et al. 2023; also the dataset card of krr-oxford/OntoLAMA):
#: named concepts, equivalence axioms, train/dev/test sizes. FoodOn and GO are the full
#: ontologies there; the staged FoodOn and GO files here are subsets.
PAPER: dict[str, PaperRow] = {
    "schemaorg": PaperRow("Schema.org", 894, None, (808, 404, 2830), None),
    "doid": PaperRow("DOID", 11157, None, (90500, 11312, 11314), None),
    "foodon": PaperRow("FoodOn", 30995, 2383, (768486, 96060, 96062), (3754, 1850, 13080)),
    "go": PaperRow("GO", 43303, 11456, (772870, 96608, 96610), (72318, 9040, 9040)),
}
SPLITS = ("train", "dev", "test")
DEFAULT_SEED = 42


def _h(*parts: object) -> int:
    """A seeded, platform-independent hash of ``parts`` (md5, 64 bits)."""
    raw = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int(hashlib.md5(raw).hexdigest()[:16], 16)


def ontolama_probes(patterns: list[str] | None = None,
                    extra_dirs: list[Path] | None = None) -> list[Probe]:
    """The probe files with ``params.ontolama`` (default: every one under ``queries/``)."""
    probes = discover(extra_dirs, patterns or ["ontolama/*"])
    return [p for p in probes if "ontolama" in p.spec.params]


def _settings(probe: Probe) -> dict[str, Any]:
    cfg = probe.spec.params.get("ontolama")
    if not isinstance(cfg, dict) or cfg.get("kind") not in ("atomic", "complex") \
            or not cfg.get("ontology"):
        raise ProbeFileError(probe.path, probe.header_lines.get("params"),
                             "params.ontolama must be a mapping with ontology: <source> and "
                             "kind: atomic or complex")
    return cfg


def instances(probe: Probe, store: KnowledgeStore) -> pl.DataFrame:
    """The probe's instances, as :func:`probes.export.instances_for` shapes them, with
    OntoLAMA's extra steps (balance for atomic SI, the Python builder for complex SI)."""
    cfg = _settings(probe)
    if cfg["kind"] == "atomic":
        return balance(instances_for(probe, store), probe)[0]
    return complex_instances(probe, store)[0]


# --- Atomic SI: the class balance -----------------------------------------------------------


def balance(df: pl.DataFrame, probe: Probe) -> tuple[pl.DataFrame, dict[str, int]]:
    """Cut the negatives to the number of positives, equally from each negative kind.

    ``params.balance`` names the kind and order variables, the positive kind and the negative
    kinds. Each of the ``k`` negative kinds gets ``P // k`` rows (the first ``P % k`` kinds
    one more), the first by ``?order`` then instance id; a kind with too few candidates gives
    what it has and the other kinds make up the difference.

    >>> from probes.spec import parse_probe
    >>> p = parse_probe('''# name: d/b
    ... # task: records
    ... # split: test
    ... # id: ?x
    ... # params: {balance: {kind: "?k", order: "?o", positive: pos, negatives: [a, b]}}
    ... SELECT ?x ?k ?o WHERE { VALUES (?x ?k ?o) { (1 "pos" 0) (2 "pos" 0) (3 "pos" 0)
    ...   (4 "a" 5) (5 "a" 1) (6 "a" 3) (7 "b" 2) } }''')
    >>> from kg.store import LocalStore
    >>> out, counts = balance(instances_for(p, LocalStore.in_memory()), p)
    >>> counts
    {'pos': 3, 'a': 2, 'b': 1}
    >>> sorted(json.loads(f)["x"] for f in out["fields"])
    [1, 2, 3, 5, 6, 7]
    """
    cfg = probe.spec.params.get("balance")
    if not isinstance(cfg, dict) or not {"kind", "order", "positive", "negatives"} <= set(cfg):
        raise ProbeFileError(probe.path, probe.header_lines.get("params"),
                             "params.balance needs kind, order, positive and negatives, e.g. "
                             '{kind: "?kind", order: "?order", positive: positive, '
                             "negatives: [soft, hard]}")
    kind_var, order_var = str(cfg["kind"]).lstrip("?"), str(cfg["order"]).lstrip("?")
    fields = [json.loads(f) for f in df["fields"]]
    kinds = [str(f.get(kind_var)) for f in fields]
    orders = [float(f.get(order_var) or 0) for f in fields]
    frame = df.with_columns(pl.Series("_kind", kinds), pl.Series("_order", orders))
    n_pos = kinds.count(str(cfg["positive"]))
    negatives = [str(k) for k in cfg["negatives"]]
    available = {k: kinds.count(k) for k in negatives}
    quota = {k: min(n_pos // len(negatives) + (i < n_pos % len(negatives)), available[k])
             for i, k in enumerate(negatives)}
    short = n_pos - sum(quota.values())
    for k in negatives:  # a kind with too few candidates: the others make up the difference
        extra = min(short, available[k] - quota[k])
        quota[k] += extra
        short -= extra
    parts = [frame.filter(pl.col("_kind") == str(cfg["positive"]))]
    for k in negatives:
        parts.append(frame.filter(pl.col("_kind") == k)
                     .sort(["_order", "instance_id"]).head(quota[k]))
    out = pl.concat(parts).drop("_kind", "_order")
    return out, {str(cfg["positive"]): n_pos, **quota}


# --- Complex SI: reading class expressions from the store -----------------------------------

_OWL, _RDF = str(OWL), str(RDF)
_NIL = _RDF + "nil"


class Unsupported(ProbeError):
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
    for key, kind in (("someValuesFrom", Some), ("allValuesFrom", Only)):
        if _OWL + key in t:
            prop = (t.get(_OWL + "onProperty") or [None])[0]
            if _is_blank(prop) or prop is None:
                raise Unsupported(f"owl:{key} on an inverse or unnamed property")
            if object_properties is not None and prop not in object_properties:
                raise Unsupported(f"owl:{key} on {prop}, which is not a named object property")
            return kind(prop, parse_expression(t[_OWL + key][0], triples, object_properties))
    known = [k.removeprefix(_OWL) for k in t if k.startswith(_OWL) and k != _OWL + "onProperty"]
    raise Unsupported(f"owl:{known[0]}" if known else "an empty or unknown class expression")


# --- Complex SI: samples --------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One Complex SI sample: ``sub ⊑ sup`` with its anchor axiom ``anchor ≡ definition``."""

    anchor: str
    definition: Expr
    sub: Expr
    sup: Expr
    label: int
    split: str

    @property
    def axiom(self) -> str:
        return f"SubClassOf({functional(self.sub)} {functional(self.sup)})"

    @property
    def anchor_axiom(self) -> str:
        return f"EquivalentClasses(<{self.anchor}> {functional(self.definition)})"


@dataclass
class ComplexReport:
    """What the complex builder did with one ontology's anchors."""

    anchors: int = 0
    axioms: int = 0
    used: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    positives: int = 0
    negatives: int = 0
    candidates: int = 0
    reasoning_s: float = 0.0

    def notes(self) -> list[str]:
        out = [f"{self.used} of {self.axioms} anchor axioms ({self.anchors} anchors) used; "
               f"{self.candidates} negative candidates checked by HermiT in "
               f"{self.reasoning_s:.1f} s"]
        for why, n in self.skipped.most_common():
            example = f" (e.g. {self.examples[why]})" if why in self.examples else ""
            out.append(f"skipped {n} anchor axiom(s): {why}{example}")
        return out

    def skip(self, why: str, example: str | None = None) -> None:
        self.skipped[why] += 1
        if example:
            self.examples.setdefault(why, example)


@dataclass
class _Ontology:
    """What the complex builder reads once per ontology."""

    source: str
    names: dict[str, str]
    properties: dict[str, str]
    supers: dict[str, set[str]]
    subs: dict[str, set[str]]
    verbaliser: Verbaliser

    @classmethod
    def read(cls, store: KnowledgeStore, source: str) -> _Ontology:
        names = read_class_names(store, source)
        props = read_property_names(store, source)
        supers, subs = read_hierarchy(store, source)
        return cls(source, names, props, supers, subs, Verbaliser(names, props))


def anchor_definitions(store: KnowledgeStore, source: str, anchors: Iterable[str],
                       object_properties: set[str], report: ComplexReport
                       ) -> list[tuple[str, Expr]]:
    """(anchor, definition) for every usable equivalence axiom of the given anchors."""
    triples = read_blank_triples(store, source)
    wanted = set(anchors)
    out = []
    for a in sorted(wanted):
        for node in sorted(triples.get(a, {}).get(_OWL + "equivalentClass", [])):
            report.axioms += 1
            try:
                out.append((a, parse_expression(node, triples, object_properties)))
            except Unsupported as e:
                report.skip(f"uses {e}", f"<{a}>")
    return out


def positive_samples(anchor: str, definition: Expr, onto: _Ontology, split: str, k: int,
                     seed: int = DEFAULT_SEED) -> list[Sample]:
    """Up to ``k`` of ``A' ⊑ C`` (A' = A or a subclass) and ``C ⊑ A'`` (A or a superclass)."""
    cands = [(anchor, "sub")] + [(c, "sub") for c in onto.subs.get(anchor, ())]
    cands += [(anchor, "super")] + [(c, "super") for c in onto.supers.get(anchor, ())]
    cands = [(c, d) for c, d in cands if c in onto.names]
    cands.sort(key=lambda cd: (_h(anchor, cd[1], cd[0], seed), cd))
    out = []
    for c, direction in cands[:k]:
        sub, sup = (Named(c), definition) if direction == "sub" else (definition, Named(c))
        out.append(Sample(anchor, definition, sub, sup, 1, split))
    return out


def negative_candidates(anchor: str, definition: Expr, tries: int,
                        classes: list[str], properties: list[str],
                        seed: int = DEFAULT_SEED) -> list[tuple[str, Expr, str]]:
    """Corrupted versions of ``A ≡ C``: (named class, class expression, direction), where
    direction ``sub`` means ``named ⊑ expression``. Each try replaces one entity of the axiom
    (A, a class or a property of C) by another probe class or named property, by hash."""
    ents = list(dict.fromkeys([("class", anchor), *entities(definition)]))
    out: list[tuple[str, Expr, str]] = []
    seen = set()
    for t in range(tries):
        kind, old = ents[_h(anchor, "entity", t, seed) % len(ents)]
        pool = classes if kind == "class" else properties
        if not pool:
            continue
        new = pool[_h(anchor, "replacement", t, seed) % len(pool)]
        if new == old:
            continue
        if kind == "class" and old == anchor:
            named, expr = new, definition
        else:
            named, expr = anchor, replace(definition, old, new)
        direction = "sub" if _h(anchor, "direction", t, seed) % 2 == 0 else "super"
        key = (named, functional(expr), direction)
        if key not in seen:
            seen.add(key)
            out.append((named, expr, direction))
    return out


def _expr_ntriples(e: Expr, counter: list[int], lines: list[str]) -> str:
    """Write ``e`` as RDF (N-Triples lines appended to ``lines``); return its node."""
    if isinstance(e, Named):
        return f"<{e.iri}>"
    counter[0] += 1
    node = f"_:kgpx{counter[0]}"
    owl = f"<{_OWL}"
    if isinstance(e, Not):
        lines.append(f"{node} <{_RDF}type> {owl}Class> .")
        lines.append(f"{node} {owl}complementOf> {_expr_ntriples(e.operand, counter, lines)} .")
    elif isinstance(e, Some | Only):
        key = "someValuesFrom" if isinstance(e, Some) else "allValuesFrom"
        lines.append(f"{node} <{_RDF}type> {owl}Restriction> .")
        lines.append(f"{node} {owl}onProperty> <{e.prop}> .")
        lines.append(f"{node} {owl}{key}> {_expr_ntriples(e.filler, counter, lines)} .")
    else:
        key = "intersectionOf" if isinstance(e, And) else "unionOf"
        items = [_expr_ntriples(x, counter, lines) for x in e.operands]
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


FRESH = "urn:kgprobe:ontolama:fresh:"


def classify_with_fresh(store: LocalStore, source: str, expressions: list[Expr],
                        timeout: float) -> reason.Hierarchy:
    """HermiT's hierarchy of the source graph plus fresh classes ``FRESH<i> ≡ expressions[i]``.

    Raises ProbeError when HermiT fails or times out."""
    lines: list[str] = []
    counter = [0]
    for i, e in enumerate(expressions):
        node = _expr_ntriples(e, counter, lines)
        lines.append(f"<{FRESH}{i}> <{_RDF}type> <{_OWL}Class> .")
        lines.append(f"<{FRESH}{i}> <{_OWL}equivalentClass> {node} .")
    memory = int(os.environ.get("KGPROBE_JAVA_MEMORY_MB") or _owlready_memory())
    with tempfile.TemporaryDirectory(prefix="kgprobe-ontolama-") as tmp:
        path = Path(tmp) / f"{source}.nt"
        reason.write_logical_triples(store.oxigraph, graph(source), path)
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        try:
            output = reason.run_java(reason.hermit_command(path, memory), timeout)
        except reason.ReasonerFailed as e:
            raise ProbeError(f"{source}: checking Complex SI negatives with HermiT failed: {e}. "
                             "Raise params.ontolama.reasoner_timeout_s (or "
                             "KGPROBE_JAVA_MEMORY_MB), or lower negative_tries.") from e
    return reason.parse_hermit(output)


def _owlready_memory() -> int:
    import owlready2.reasoning

    return int(owlready2.reasoning.JAVA_MEMORY)


class _Relations:
    """Subsumption, equivalence and descendants from a classified hierarchy."""

    def __init__(self, h: reason.Hierarchy, named: set[str],
                 types: Mapping[str, set[str]]) -> None:
        self.pairs = h.subsumptions
        self.unsat = h.unsatisfiable
        self.group: dict[str, set[str]] = {}
        for g in h.equivalents:
            for x in g:
                self.group[x] = g
        self.desc: dict[str, set[str]] = defaultdict(set)
        for c, d in h.subsumptions:
            self.desc[d].add(c)
        self.named = named
        self.types = types  # individual -> asserted named types

    def below(self, x: str) -> set[str]:
        """Named probe classes equal to or under ``x``."""
        return ({x} | self.desc.get(x, set()) | self.group.get(x, set())) & self.named

    def below_all(self, x: str) -> set[str]:
        return {x} | self.desc.get(x, set()) | self.group.get(x, set())

    def disjoint(self, a: str, b: str) -> bool:
        """Assumed disjointness of ``a`` and ``b`` (named or fresh classes)."""
        if a in self.unsat or b in self.unsat:
            return False
        if (a, b) in self.pairs or (b, a) in self.pairs or b in self.group.get(a, ()):
            return False
        if (self.below(a) - {a}) & (self.below(b) - {b}):
            return False
        under_a, under_b = self.below_all(a), self.below_all(b)
        return not any(ts & under_a and ts & under_b for ts in self.types.values())


def read_individual_types(store: KnowledgeStore, source: str) -> dict[str, set[str]]:
    """Asserted named types of the source's named individuals."""
    rows = store.query(f"""SELECT ?i ?t WHERE {{ GRAPH <{graph(source).value}> {{
        ?i a <{OWL.NamedIndividual.value}> , ?t FILTER(isIRI(?i) && isIRI(?t)) }} }}""")
    out: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        out[r["i"]].add(r["t"])
    return dict(out)


def complex_samples(probe: Probe, store: KnowledgeStore
                    ) -> tuple[list[Sample], ComplexReport, Verbaliser]:
    """Every Complex SI sample of a complex probe, a report (see the module docstring), and
    the verbaliser with the ontology's names."""
    cfg = _settings(probe)
    source = str(cfg["ontology"])
    seed = int(probe.spec.seed if probe.spec.seed is not None else DEFAULT_SEED)
    k_pos, k_neg = int(cfg.get("max_positives", 4)), int(cfg.get("max_negatives", 4))
    tries = int(cfg.get("negative_tries", 6))
    if not isinstance(store, LocalStore):
        raise ProbeError(f"{probe.path}: Complex SI negatives are checked with HermiT over the "
                         "embedded store's triples; run it on the embedded store, not "
                         "--endpoint.")
    check_graphs([probe], store)
    report = ComplexReport()
    anchor_rows = store.query(probe.query)
    splits = {r["anchor"]: str(r["split"]) for r in anchor_rows}
    report.anchors = len(splits)
    onto = _Ontology.read(store, source)
    axioms = anchor_definitions(store, source, splits, set(onto.properties), report)
    classes, props = sorted(onto.names), sorted(onto.properties)
    samples: list[Sample] = []
    pending: list[tuple[str, Expr, list[tuple[str, Expr, str]]]] = []
    for a, definition in axioms:
        try:
            onto.verbaliser(definition)
        except MissingName as e:
            report.skip(f"a {e.kind} in it has no name (no label)", f"<{e.iri}>")
            continue
        report.used += 1
        samples += positive_samples(a, definition, onto, splits[a], k_pos, seed)
        pending.append((a, definition,
                        negative_candidates(a, definition, tries, classes, props, seed)))
    exprs: dict[str, int] = {}
    for _, _, cands in pending:
        for _, e, _ in cands:
            exprs.setdefault(functional(e), len(exprs))
    report.candidates = sum(len(c) for _, _, c in pending)
    if pending:
        t0 = time.perf_counter()
        order = sorted(exprs, key=exprs.__getitem__)
        by_text = {functional(e): e for _, _, cands in pending for _, e, _ in cands}
        timeout = float(cfg.get("reasoner_timeout_s", 600))
        hierarchy = classify_with_fresh(store, source, [by_text[t] for t in order], timeout)
        report.reasoning_s = time.perf_counter() - t0
        rel = _Relations(hierarchy, set(onto.names), read_individual_types(store, source))
        for a, definition, cands in pending:
            kept = 0
            for named, e, direction in cands:
                if kept == k_neg:
                    break
                if not rel.disjoint(named, f"{FRESH}{exprs[functional(e)]}"):
                    continue
                sub, sup = (Named(named), e) if direction == "sub" else (e, Named(named))
                samples.append(Sample(a, definition, sub, sup, 0, splits[a]))
                kept += 1
    report.positives = sum(s.label for s in samples)
    report.negatives = len(samples) - report.positives
    return samples, report, onto.verbaliser


def complex_instances(probe: Probe, store: KnowledgeStore) -> tuple[pl.DataFrame, ComplexReport]:
    """A complex probe's samples as instances (the shape of probes.export.instances_for)."""
    samples, report, verbaliser = complex_samples(probe, store)
    return sample_instances(probe.spec.name, samples, verbaliser), report


def sample_instances(name: str, samples: list[Sample], verbalise: Verbaliser) -> pl.DataFrame:
    """Complex SI samples as rows of the ``instances`` table of probe ``name``."""
    records = []
    for s in samples:
        sub, sup = verbalise(s.sub), verbalise(s.sup)
        records.append({"sub": sub, "super": sup, "a_sub": _article_field(sub),
                        "a_super": _article_field(sup), "label": s.label,
                        "kind": "positive" if s.label else "negative", "split": s.split,
                        "anchor": s.anchor, "axiom": s.axiom, "anchor_axiom": s.anchor_axiom})
    df = pl.DataFrame({
        "split": [r["split"] for r in records],
        "instance_id": [instance_id([r["anchor"], r["axiom"]]) for r in records],
        "target": [r["sub"] for r in records],
        "gold": [[str(r["label"])] for r in records],
        "candidates": [[] for _ in records],
        "fields": [json.dumps(r, ensure_ascii=False) for r in records],
    }, schema={"split": pl.String, "instance_id": pl.String, "target": pl.String,
               "gold": pl.List(pl.String), "candidates": pl.List(pl.String),
               "fields": pl.String})
    df = df.unique(subset=["split", "instance_id"], keep="first", maintain_order=True)
    return df.with_columns(pl.lit(name).alias("probe"))


def _article_field(text: str) -> str:
    a = article(text)
    return f"{a} " if a else ""


# --- build, statistics, export ------------------------------------------------------------


@dataclass
class BuildReport:
    probe: str
    counts: dict[str, int]
    splits: dict[str, int]
    seconds: float
    notes: list[str] = field(default_factory=list)


def build(probes: list[Probe], store: KnowledgeStore, results: str | Path | None = None,
          out_dir: Path | None = None) -> list[BuildReport]:
    """Make every probe's dataset and write it to the results file (and Parquet).

    A probe whose source is not in the store, or whose Complex SI reasoning fails, gets a
    report with the reason and no rows written; the other probes are still built."""
    have = set(store.graphs())
    con = connect(results)
    reports = []
    try:
        for probe in probes:
            t0 = time.perf_counter()
            cfg = _settings(probe)
            missing = [g for g in probe.spec.graphs if graph(g).value not in have]
            if missing:
                reports.append(BuildReport(probe.spec.name, {}, {}, 0.0, [
                    f"not built: source {', '.join(missing)} is not in the store "
                    f"(python -m kg.build {' '.join('-s ' + m for m in missing)})"]))
                continue
            try:
                if cfg["kind"] == "atomic":
                    df, counts = balance(instances_for(probe, store), probe)
                    notes = []
                    if sum(v for k, v in counts.items() if k != "positive") < counts.get(
                            "positive", 0):
                        notes.append("too few negative candidates for a 1:1 balance")
                else:
                    df, rep = complex_instances(probe, store)
                    counts = {"positive": rep.positives, "negative": rep.negatives}
                    notes = rep.notes()
            except ProbeError as e:
                reports.append(BuildReport(probe.spec.name, {}, {}, time.perf_counter() - t0,
                                           [f"not built: {e}"]))
                continue
            write_instances(con, probe.spec.name, df)
            if out_dir is not None:
                write_parquet(out_dir, probe.spec.name, df)
            splits = dict(Counter(df["split"].to_list()))
            reports.append(BuildReport(probe.spec.name, counts, splits,
                                       time.perf_counter() - t0, notes))
    finally:
        con.close()
    return reports


def format_build(reports: list[BuildReport]) -> str:
    lines = ["| probe | counts | train / dev / test | seconds |", "|---|---|---:|---:|"]
    for r in reports:
        counts = ", ".join(f"{k} {v:,}" for k, v in r.counts.items()) or "-"
        sp = " / ".join(f"{r.splits.get(s, 0):,}" for s in SPLITS)
        lines.append(f"| {r.probe} | {counts} | {sp} | {r.seconds:.1f} |")
    notes = [f"- {r.probe}: {n}" for r in reports for n in r.notes]
    return "\n".join(lines + (["", *notes] if notes else []))


def _split_counts(con: Any, probe: str) -> tuple[int, int, int] | None:
    rows = dict(con.execute("SELECT split, COUNT(*) FROM instances WHERE probe = ? "
                            "GROUP BY split", [probe]).fetchall())
    if not rows:
        return None
    return tuple(int(rows.get(s, 0)) for s in SPLITS)  # type: ignore[return-value]


def _fmt(t: tuple[int, int, int] | None) -> str:
    return "/".join(f"{x:,}" for x in t) if t else "-"


def stats(store: KnowledgeStore, results: str | Path | None = None) -> str:
    """A Markdown table: our dataset sizes beside the paper's Table 2, per ontology."""
    con = connect(results, read_only=True)
    have = set(store.graphs())
    sources = ["schemaorg", "doid", "foodon", "go", "pizza"]
    lines = ["| ontology | named concepts | anchors (equiv. axioms) | Atomic SI train/dev/test | "
             "Complex SI train/dev/test | paper: concepts | paper: equiv. | "
             "paper: Atomic SI | paper: Complex SI |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    try:
        for s in sources:
            if graph(s).value not in have:
                continue
            n = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph(s).value}> {{ "
                            f"?c a <{KGP.NamedClass.value}> }} }}")[0]["n"]
            eq = store.query(f"""SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph(s).value}> {{
                ?c a <{KGP.NamedClass.value}> ; <{OWL.equivalentClass.value}> ?e
                FILTER(isBlank(?e)) }} }}""")[0]["n"]
            atomic = _split_counts(con, f"ontolama/{s}-atomic")
            complex_ = _split_counts(con, f"ontolama/{s}-complex")
            p = PAPER.get(s)
            paper = ([f"{p.concepts:,}", f"{p.equivalences:,}" if p.equivalences else "-",
                      _fmt(p.atomic), _fmt(p.complex)] if p else ["-", "-", "-", "-"])
            lines.append(f"| {s} | {n:,} | {eq:,} | {_fmt(atomic)} | {_fmt(complex_)} | "
                         + " | ".join(paper) + " |")
    finally:
        con.close()
    return "\n".join(lines)


def export_files(results: str | Path | None, out_dir: Path,
                 patterns: list[str] | None = None) -> list[Path]:
    """OntoLAMA's own JSON-lines files, ``<out>/<ontology>-<kind>-SI/<split>.jsonl``
    (splits train, validation, test as on the Hugging Face hub)."""
    con = connect(results, read_only=True)
    paths = []
    try:
        names = [r[0] for r in con.execute("SELECT DISTINCT probe FROM instances WHERE probe "
                                           "LIKE 'ontolama/%' ORDER BY probe").fetchall()]
        for name in names:
            if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
                continue
            short = name.split("/", 1)[1]
            onto, _, kind = short.rpartition("-")
            folder = out_dir / f"{onto}-{kind}-SI"
            folder.mkdir(parents=True, exist_ok=True)
            rows = con.execute("SELECT split, fields FROM instances WHERE probe = ? "
                               "ORDER BY split, instance_id", [name]).fetchall()
            by_split: dict[str, list[str]] = defaultdict(list)
            for split, fields in rows:
                f = json.loads(fields)
                rec = {"v_sub_concept": f["sub"], "v_super_concept": f["super"],
                       "label": int(f["label"]),
                       "axiom": f.get("axiom") or
                       f"SubClassOf(<{f['sub_class']}> <{f['super_class']}>)"}
                if "anchor_axiom" in f:
                    rec["anchor_axiom"] = f["anchor_axiom"]
                by_split[split].append(json.dumps(rec, ensure_ascii=False))
            for split, recs in by_split.items():
                path = folder / f"{'validation' if split == 'dev' else split}.jsonl"
                tmp = path.with_suffix(".jsonl.tmp")
                tmp.write_text("\n".join(recs) + "\n", encoding="utf-8")
                tmp.replace(path)
                paths.append(path)
    finally:
        con.close()
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m probes.ontolama",
        description="OntoLAMA datasets (atomic and complex subsumption inference) from the "
        "probe files in queries/ontolama: build them into the results file, print their "
        "statistics beside the paper's Table 2, or export them in OntoLAMA's own format.")
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", type=Path, default=None,
                        help="store folder (default: $KGPROBE_STORE or .kgprobe/store)")
    common.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file (default: $KGPROBE_RESULTS or "
                        ".kgprobe/results.duckdb)")
    b = sub.add_parser("build", parents=[common], help="make the datasets (instances table)")
    b.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="probe name or glob, e.g. 'ontolama/pizza-*' (default: ontolama/*)")
    b.add_argument("--queries", "-q", action="append", type=Path, metavar="DIR",
                   help="extra folder of probe files besides queries/")
    b.add_argument("--out", type=Path, default=None,
                   help="Parquet folder (default: $KGPROBE_EXPORTS or .kgprobe/exports)")
    b.add_argument("--no-parquet", action="store_true", help="write DuckDB only")
    sub.add_parser("stats", parents=[common],
                   help="dataset sizes per ontology beside the paper's Table 2")
    e = sub.add_parser("export", parents=[common],
                       help="write <out>/<ontology>-<kind>-SI/{train,validation,test}.jsonl")
    e.add_argument("--out", type=Path, default=None,
                   help="folder (default: <exports>/ontolama)")
    e.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="only these probes (glob), e.g. 'ontolama/go-*'")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            probes = ontolama_probes(args.probe, args.queries)
            store = open_store(None, args.store)
            out = None if args.no_parquet else (args.out or config.exports_dir())
            print(format_build(build(probes, store, args.results, out)))
        elif args.command == "stats":
            print(stats(open_store(None, args.store), args.results))
        else:
            out = args.out or config.exports_dir() / "ontolama"
            paths = export_files(args.results, out, args.probe)
            print(f"wrote {len(paths)} file(s) under {out}")
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
