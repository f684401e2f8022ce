"""Load ParaRel (Elazar et al. 2021) and its LAMA T-REx facts into a graph.

The files (``kg/sources.toml``, source ``pararel``; the folder's README says where they come
from): ``graphs/P<n>.json`` (each relation's pattern graph: ``patterns`` in the graph's node
order and ``edges`` with their edge type), ``patterns/P<n>.jsonl`` (the paraphrased patterns with
their ``lemma``, ``extended_lemma`` and ``tense``; P31 and P527 have none) and
``trex_lms_vocab/P<n>.jsonl`` (the facts: ``sub_label``, ``obj_label``, ``uuid``).

What the authors' code does (``pararel/consistency/encode_consistency_probe.py``), done the
same way here:

- A relation's patterns are its graph's nodes, in node order (``prompts = [x.lm_pattern for x
  in patterns_graph.nodes]``); pattern 0 is the LAMA pattern, the one ``lama_acc`` scores. Where
  a ``patterns/`` file exists it must hold the same patterns in the same order (it gives each
  its lemma and tense); a relation without one (P31, P527) is loaded with
  ``kgp:inParaRel false``: the 38 + 1 others are ParaRel's.
- The candidates (``--use_targets``): the relation's distinct ``obj_label`` values, here in
  the order of their first fact.
- An edge's type, as ``analyze_results`` counts it: ``syntactic`` (a syntactic change only),
  ``lexical`` (lexical only), ``both`` (syntactic and lexical), ``none`` (no change); an edge
  with a determiner change is ``determiner`` and counts in no split (only in the overall
  consistency).

Triples (``NS`` = ``https://w3id.org/kgprobe/data/pararel/``), all in the source's graph:

- ``NS:P19 a kgp:ParaRelRelation``: ``kgp:code``, ``kgp:inParaRel``, ``kgp:factCount``,
  ``kgp:pattern NS:P19/pattern-0`` (``kgp:templateIndex 0``, ``kgp:text "[X] was born in
  [Y]."``, ``kgp:lemma``, ``kgp:extendedLemma``, ``kgp:tense`` where the patterns file has
  them), ``kgp:answer NS:P19/object-3`` (``kgp:answerIndex 3``, ``rdfs:label "Paris"``),
  ``kgp:majorityAnswer`` (the object of most facts, a tie to the one met first: the authors'
  ``create_majority_baseline``, ``Counter(objs).most_common()[0][0]``).
- ``NS:P19/edge-0-1 a kgp:ParaRelEdge``: ``kgp:relation``, ``kgp:from`` / ``kgp:to`` (pattern
  nodes), ``kgp:syntacticChange``, ``kgp:lexicalChange``, ``kgp:determinerChange`` (booleans),
  ``kgp:edgeType``.
- ``NS:P19/fact-0 a kgp:ParaRelFact``: ``kgp:relation``, ``kgp:instanceIndex`` (its line in the
  file), ``kgp:uuid``, ``kgp:subjectLabel``, ``kgp:gold`` (the object node).

>>> edge_type({"syntactic_change": True, "lexical_change": True, "determiner_change": False})
'both'
>>> edge_type({"syntactic_change": True, "lexical_change": False, "determiner_change": True})
'determiner'
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kg.build import LoadContext, Triple
from kg.errors import SourceError
from kg.vocab import KGP, RDF, RDFS, XSD, data_ns

_CODE = re.compile(r"^P\d+$")
_FLAGS = ("syntactic_change", "lexical_change", "determiner_change")


@dataclass
class ParaRelRelation:
    """One relation as the authors' code reads it."""

    code: str
    patterns: list[str]                       # graph node order
    meta: list[dict[str, Any]]                # per pattern: lemma, extended_lemma, tense
    edges: list[dict[str, Any]]               # from, to, the three change flags
    facts: list[dict[str, Any]]               # file order
    objects: list[str]                        # distinct obj_label, first-fact order
    in_pararel: bool


def edge_type(edge: dict[str, Any]) -> str:
    """The split an edge counts in (the authors' ``analyze_results``)."""
    syn, lex, det = (bool(edge[f]) for f in _FLAGS)
    if det:
        return "determiner"
    return {(True, False): "syntactic", (False, True): "lexical", (True, True): "both",
            (False, False): "none"}[(syn, lex)]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise SourceError(f"{path}:{n}: not a JSON object ({e.msg}); the file is corrupt: "
                              "copy it again from the ParaRel repository.") from e
    return out


def read_relation(code: str, graph: Path, facts: Path, patterns: Path | None
                  ) -> ParaRelRelation:
    """One relation from its graph, facts and (optional) patterns file; a :class:`SourceError`
    naming the file when they disagree."""
    try:
        g = json.loads(graph.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SourceError(f"{graph}: not JSON ({e.msg}); copy it again.") from e
    nodes = [str(p) for p in g.get("patterns", [])]
    if not nodes:
        raise SourceError(f"{graph}: the graph has no patterns.")
    for p in nodes:
        if p.count("[X]") != 1 or p.count("[Y]") != 1:
            raise SourceError(f"{graph}: pattern {p!r} needs one [X] and one [Y].")
    known = set(nodes)
    edges = []
    for edge in g.get("edges", []):
        if edge.get("from") not in known or edge.get("to") not in known:
            raise SourceError(f"{graph}: edge {edge.get('from')!r} -> {edge.get('to')!r} names "
                              "a pattern that is not a node of the graph.")
        edges.append(edge)
    meta: list[dict[str, Any]] = [{} for _ in nodes]
    if patterns is not None:
        rows = _jsonl(patterns)
        listed = [str(r.get("pattern")) for r in rows]
        if listed != nodes:
            raise SourceError(f"{patterns}: its patterns are not those of {graph} in the same "
                              "order; the two files come from different ParaRel versions.")
        meta = rows
    rows = _jsonl(facts)
    for n, r in enumerate(rows):
        if not r.get("sub_label") or not r.get("obj_label"):
            raise SourceError(f"{facts}: fact {n} has no sub_label or obj_label.")
    objects = list(dict.fromkeys(str(r["obj_label"]) for r in rows))
    return ParaRelRelation(code, nodes, meta, edges, rows, objects, patterns is not None)


def read_dataset(files: list[Path]) -> list[ParaRelRelation]:
    """Every relation with a graph and facts, in the order of their codes' numbers."""
    by_folder: dict[str, dict[str, Path]] = {}
    for p in files:
        code = p.name.split(".")[0]
        if not _CODE.match(code):
            raise SourceError(f"{p}: a ParaRel file is named P<number>.json(l).")
        by_folder.setdefault(p.parent.name, {})[code] = p
    graphs, facts = by_folder.get("graphs", {}), by_folder.get("trex_lms_vocab", {})
    patterns = by_folder.get("patterns", {})
    for code in sorted(set(graphs) ^ set(facts)):
        raise SourceError(f"ParaRel relation {code} has a graph or facts but not both; list "
                          "graphs/ and trex_lms_vocab/ files together in kg/sources.toml.")
    return [read_relation(c, graphs[c], facts[c], patterns.get(c))
            for c in sorted(graphs, key=lambda c: int(c[1:]))]


def _int(n: int) -> ox.Literal:
    return ox.Literal(str(n), datatype=XSD.integer)


def _bool(b: bool) -> ox.Literal:
    return ox.Literal("true" if b else "false", datatype=XSD.boolean)


def relation_triples(rel: ParaRelRelation, ns: Any) -> Iterator[Triple]:
    """The triples of one relation (see the module docstring)."""
    r = ns[rel.code]
    yield r, RDF.type, KGP.ParaRelRelation
    yield r, KGP.code, ox.Literal(rel.code)
    yield r, KGP.inParaRel, _bool(rel.in_pararel)
    yield r, KGP.factCount, _int(len(rel.facts))
    node = {}
    for i, (text, meta) in enumerate(zip(rel.patterns, rel.meta, strict=True)):
        t = node[text] = ns[f"{rel.code}/pattern-{i}"]
        yield r, KGP.pattern, t
        yield t, KGP.templateIndex, _int(i)
        yield t, KGP.text, ox.Literal(text)
        for key, prop in (("lemma", KGP.lemma), ("extended_lemma", KGP.extendedLemma),
                          ("tense", KGP.tense)):
            if meta.get(key):
                yield t, prop, ox.Literal(str(meta[key]))
    obj = {}
    counts = Counter(str(f["obj_label"]) for f in rel.facts)
    majority = counts.most_common()[0][0] if counts else None
    for i, label in enumerate(rel.objects):
        a = obj[label] = ns[f"{rel.code}/object-{i}"]
        yield r, KGP.answer, a
        yield a, KGP.answerIndex, _int(i)
        yield a, RDFS.label, ox.Literal(label)
        if label == majority:
            yield r, KGP.majorityAnswer, a
    index = {text: i for i, text in enumerate(rel.patterns)}
    for e in rel.edges:
        node_e = ns[f"{rel.code}/edge-{index[e['from']]}-{index[e['to']]}"]
        yield node_e, RDF.type, KGP.ParaRelEdge
        yield node_e, KGP.relation, r
        yield node_e, KGP["from"], node[e["from"]]
        yield node_e, KGP.to, node[e["to"]]
        yield node_e, KGP.syntacticChange, _bool(bool(e["syntactic_change"]))
        yield node_e, KGP.lexicalChange, _bool(bool(e["lexical_change"]))
        yield node_e, KGP.determinerChange, _bool(bool(e["determiner_change"]))
        yield node_e, KGP.edgeType, ox.Literal(edge_type(e))
    for i, f in enumerate(rel.facts):
        s = ns[f"{rel.code}/fact-{i}"]
        yield s, RDF.type, KGP.ParaRelFact
        yield s, KGP.relation, r
        yield s, KGP.instanceIndex, _int(i)
        if f.get("uuid"):
            yield s, KGP.uuid, ox.Literal(str(f["uuid"]))
        yield s, KGP.subjectLabel, ox.Literal(str(f["sub_label"]))
        yield s, KGP.gold, obj[str(f["obj_label"])]


def load(ctx: LoadContext) -> None:
    """Write ParaRel into ``ctx.graph``."""
    relations = read_dataset(ctx.files)
    ns = data_ns(ctx.source.name)

    def all_triples() -> Iterator[Triple]:
        for rel in relations:
            yield from relation_triples(rel, ns)

    ctx.add(all_triples())
    ctx.stats.update(relations=len(relations),
                     pararel_relations=sum(r.in_pararel for r in relations),
                     facts=sum(len(r.facts) for r in relations),
                     patterns=sum(len(r.patterns) for r in relations if r.in_pararel))
