"""Load an OBO flat file (DOID) as OWL triples, then reason and preprocess as ``kg.owl`` does.

The parser is small and strict: a line that is neither ``tag: value``, a ``[Stanza]`` header, a
``!`` comment nor blank, an unterminated quoted string, or a ``[Term]`` without ``id`` raises
``SourceError`` with the file and line. It follows the standard OBO -> OWL mapping (as in
``doid.owl`` and the OBO 1.4 spec) for the tags DOID uses and the common logical ones:

=====================  =========================================================================
OBO                    RDF
=====================  =========================================================================
``id: DOID:4``         subject ``obo:DOID_4`` (``P:n`` -> ``http://purl.obolibrary.org/obo/P_n``;
                       an id without prefix -> ``obo:<ontology>#id``), ``rdf:type owl:Class``
``name``               ``rdfs:label`` (plain literal)
``def: "..." [...]``   ``obo:IAO_0000115`` (definition text; the xref list is dropped)
``comment``            ``rdfs:comment``
``synonym: "s" EXACT`` ``oboInOwl:hasExactSynonym`` (RELATED/NARROW/BROAD: ``has...Synonym``)
``is_a``               ``rdfs:subClassOf``
``relationship: R X``  ``rdfs:subClassOf [owl:onProperty R; owl:someValuesFrom X]``
``intersection_of``    ``owl:equivalentClass [owl:intersectionOf (genus, R some X, ...)]``
``union_of``           ``owl:equivalentClass [owl:unionOf (...)]``
``equivalent_to``      ``owl:equivalentClass``; ``disjoint_from``: ``owl:disjointWith``
``is_obsolete: true``  ``owl:deprecated true``
``alt_id``, ``xref``   ``oboInOwl:hasAlternativeId``, ``oboInOwl:hasDbXref`` (literals)
``subset``             ``oboInOwl:inSubset obo:<ontology>#<subset>``
``replaced_by``        ``obo:IAO_0100001``; ``consider``: ``oboInOwl:consider``
``created_by`` etc.    ``oboInOwl:created_by``, ``oboInOwl:creation_date``,
                       ``oboInOwl:hasOBONamespace``
``property_value``     the property (``exactMatch`` etc. -> SKOS) with a literal or IRI value
``[Typedef]``          ``owl:ObjectProperty`` with label; relation ids without prefix map to
                       the Typedef's first xref (``part_of`` -> ``BFO_0000050``) when it has one
=====================  =========================================================================

Annotation properties used are declared ``owl:AnnotationProperty``. Other tags are skipped.

>>> header, stanzas = parse_obo(['ontology: demo', '', '[Term]', 'id: X:1', 'name: thing_one',
...                              '[Term]', 'id: X:2', 'is_a: X:1 ! thing one'])
>>> [(s.kind, s.value("id")) for s in stanzas]
[('Term', 'X:1'), ('Term', 'X:2')]
>>> sorted(t[2].value for t in to_triples(header, stanzas) if t[1] == RDFS.subClassOf)
['http://purl.obolibrary.org/obo/X_1']
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox

from kg import owl, reason
from kg.errors import SourceError
from kg.vocab import OBO, OBOINOWL, OWL, RDF, RDFS, SKOS, XSD

if TYPE_CHECKING:
    from kg.build import LoadContext

Term = ox.NamedNode | ox.BlankNode | ox.Literal
Triple = tuple[ox.NamedNode | ox.BlankNode, ox.NamedNode, Term]

TRUE = ox.Literal("true", datatype=XSD.boolean)
LABEL, SUBCLASS, TYPE, CLASS = RDFS.label, RDFS.subClassOf, RDF.type, OWL.Class
IN_SUBSET, RELATED = OBOINOWL.inSubset, OBOINOWL.hasRelatedSynonym
DEFINITION = OBO.IAO_0000115
REPLACED_BY = OBO.IAO_0100001
SYNONYM_SCOPES = {"EXACT": OBOINOWL.hasExactSynonym, "RELATED": OBOINOWL.hasRelatedSynonym,
                  "NARROW": OBOINOWL.hasNarrowSynonym, "BROAD": OBOINOWL.hasBroadSynonym}
LITERAL_TAGS = {"alt_id": OBOINOWL.hasAlternativeId, "xref": OBOINOWL.hasDbXref,
                "consider": OBOINOWL.consider, "created_by": OBOINOWL.created_by,
                "creation_date": OBOINOWL.creation_date,
                "namespace": OBOINOWL.hasOBONamespace, "comment": RDFS.comment}
SKOS_MATCHES = {"exactMatch", "closeMatch", "broadMatch", "narrowMatch", "relatedMatch"}
KNOWN_PREFIXES = {"rdfs": str(RDFS), "owl": str(OWL), "skos": str(SKOS), "xsd": str(XSD),
                  "oboInOwl": str(OBOINOWL), "dc": "http://purl.org/dc/elements/1.1/",
                  "dcterms": "http://purl.org/dc/terms/"}
_TAG = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"n": "\n", "t": "\t", "W": " "}
_ESCAPE = re.compile(r"\\(.)")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_UNQUOTED = re.compile(r"((?:[^!\\]|\\.)*)")


class OboSyntaxError(ValueError):
    """A line the parser cannot read; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Stanza:
    """One ``[Term]``/``[Typedef]``/``[Instance]`` frame (kind ``""``: the header)."""

    kind: str
    line: int
    tags: list[tuple[str, str, int]] = field(default_factory=list)

    def value(self, tag: str) -> str | None:
        """The first value of ``tag`` (comments and qualifiers stripped), or None."""
        for t, v, _ in self.tags:
            if t == tag:
                return clean(v)
        return None


# --- loading ----------------------------------------------------------------------------------


def load(ctx: LoadContext) -> None:
    """Parse the OBO file, write its OWL triples, reason, and add OntoLAMA's preprocessing."""
    t0 = time.perf_counter()
    for path in ctx.files:
        header, stanzas = read_obo(ctx, path)
        try:
            triples = list(to_triples(header, stanzas))
        except OboSyntaxError as e:
            raise _source_error(ctx, path, e) from e
        ctx.add(triples)
        _warn_dangling(ctx, stanzas)
    ctx.stats["parse_s"] = time.perf_counter() - t0
    hierarchy = reason.reason(ctx)
    owl.preprocess(ctx, unsatisfiable=hierarchy.unsatisfiable)


def read_obo(ctx: LoadContext, path: Path) -> tuple[Stanza, list[Stanza]]:
    """Parse one .obo or .obo.gz file; every problem is a SourceError naming file and line."""
    raw = owl.read_bytes(ctx, path)
    try:
        text = raw.decode("utf-8")
        header, stanzas = parse_obo(text.split("\n"))
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise _source_error(ctx, path, OboSyntaxError(line, "not UTF-8 text")) from e
    except OboSyntaxError as e:
        raise _source_error(ctx, path, e) from e
    if not any(s.kind == "Term" for s in stanzas):
        raise SourceError(f"source {ctx.source.name!r}: {path} has no [Term] stanza; it is not "
                          f"an OBO ontology or is empty: download it again from {ctx.source.url}.")
    return header, stanzas


def _source_error(ctx: LoadContext, path: Path, e: OboSyntaxError) -> SourceError:
    return SourceError(f"source {ctx.source.name!r}: {path}, line {e.line}: {e}. The file is "
                       f"corrupt or not OBO 1.2/1.4: download it again from {ctx.source.url}.")


def _warn_dangling(ctx: LoadContext, stanzas: list[Stanza]) -> None:
    ids = {s.value("id") for s in stanzas if s.kind == "Term"}
    dangling = {first_token(v) for s in stanzas if s.kind == "Term"
                for t, v, _ in s.tags if t == "is_a"} - ids
    if dangling:
        ctx.warn(f"{len(dangling)} is_a targets are not terms of the file (e.g. "
                 f"{', '.join(sorted(dangling)[:3])}); they become classes without a label.")


# --- parsing ----------------------------------------------------------------------------------


def parse_obo(lines: Iterable[str]) -> tuple[Stanza, list[Stanza]]:
    """Split OBO text into the header frame and the stanzas (raw tag values, line numbers)."""
    header = Stanza("", 1)
    stanzas: list[Stanza] = []
    current = header
    tags_seen: set[str] = set()
    for n, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("!"):
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise OboSyntaxError(n, f"malformed stanza header {line[:60]!r}")
            current = Stanza(line[1:-1].strip(), n)
            stanzas.append(current)
            continue
        tag, colon, value = line.partition(":")
        if not colon or (tag not in tags_seen and not _TAG.fullmatch(tag)):
            raise OboSyntaxError(n, f"expected 'tag: value', got {line[:60]!r}")
        tags_seen.add(tag)
        current.tags.append((tag, value.strip(), n))
    for s in stanzas:
        if s.kind in ("Term", "Typedef", "Instance") and s.value("id") is None:
            raise OboSyntaxError(s.line, f"[{s.kind}] stanza without an id")
    return header, stanzas


def quoted(value: str, line: int) -> tuple[str, str]:
    """Read a leading quoted string: (unescaped text, rest of the value).

    >>> quoted('"a \\\\"b\\\\"" EXACT []', 1)
    ('a "b"', 'EXACT []')
    """
    m = _QUOTED.match(value)
    if not m:
        raise OboSyntaxError(line, f"unterminated or missing quoted string {value[:60]!r}")
    text = m.group(1)
    return (_unescape(text) if "\\" in text else text), value[m.end():].strip()


def clean(value: str) -> str:
    """An unquoted value without its ``! comment`` and ``{qualifiers}``, escapes resolved.

    >>> clean('DOID:175 ! vascular cancer')
    'DOID:175'
    >>> clean('url:http\\\\://x.org {source="y"}')
    'url:http://x.org'
    """
    if "!" not in value and "\\" not in value and "{" not in value:
        return value.strip()
    m = _UNQUOTED.match(value)
    text = m.group(1) if m else value
    if "{" in text and value.rstrip().endswith("}"):
        text = text[:_unescaped_brace(text)]
    return _unescape(text).strip()


def _unescaped_brace(text: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == "{":
            return i
        else:
            i += 1
    return len(text)


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def first_token(value: str) -> str:
    """The first whitespace-separated token of a cleaned value."""
    parts = clean(value).split()
    return parts[0] if parts else ""


# --- OBO -> OWL ---------------------------------------------------------------------------


class _Ids:
    """Maps OBO ids to IRIs for one ontology."""

    def __init__(self, header: Stanza, stanzas: list[Stanza]) -> None:
        self.ontology = header.value("ontology") or "ontology"
        self.idspaces: dict[str, str] = {}
        for t, v, _ in header.tags:
            if t == "idspace" and len(v.split()) >= 2:
                prefix, base = v.split()[:2]
                self.idspaces[prefix] = base
        self.relations: dict[str, str] = {}
        for s in stanzas:
            rid = s.value("id")
            xref = s.value("xref")
            if s.kind == "Typedef" and rid and ":" not in rid and xref and ":" in first_token(
                    xref):
                self.relations[rid] = first_token(xref)

    def iri(self, oid: str, line: int) -> ox.NamedNode:
        if oid.startswith(("http://", "https://")):
            text = oid
        elif ":" in oid:
            prefix, local = oid.split(":", 1)
            text = (self.idspaces[prefix] + local if prefix in self.idspaces
                    else f"{OBO}{prefix}_{local}")
        else:
            text = f"{OBO}{self.ontology}#{oid}"
        try:
            return ox.NamedNode(text)
        except ValueError as e:
            raise OboSyntaxError(line, f"{oid!r} does not make a valid IRI") from e

    def relation(self, rid: str, line: int) -> ox.NamedNode:
        return self.iri(self.relations.get(rid, rid), line)

    def property(self, name: str, line: int) -> ox.NamedNode:
        if name in SKOS_MATCHES:
            return SKOS[name]
        prefix, _, local = name.partition(":")
        if local and prefix in KNOWN_PREFIXES:
            return ox.NamedNode(KNOWN_PREFIXES[prefix] + local)
        return self.iri(name, line)


def to_triples(header: Stanza, stanzas: list[Stanza]) -> Iterator[Triple]:
    """The OWL triples of a parsed OBO file (see the module docstring for the mapping)."""
    ids = _Ids(header, stanzas)
    annotation_props: set[ox.NamedNode] = set()
    typedefs = {s.value("id") for s in stanzas if s.kind == "Typedef"}
    onto = OBO[f"{ids.ontology}.owl"]
    yield onto, RDF.type, OWL.Ontology
    for t, v, n in header.tags:
        if t == "data-version":
            yield onto, OWL.versionInfo, ox.Literal(clean(v))
        elif t == "remark":
            yield onto, RDFS.comment, ox.Literal(clean(v))
        elif t == "property_value":
            yield from _property_value(ids, onto, v, n, annotation_props, typedefs)
    for s in stanzas:
        if s.kind == "Term":
            yield from _term(ids, s, annotation_props, typedefs)
        elif s.kind == "Typedef":
            yield from _typedef(ids, s)
    for p in sorted(annotation_props, key=lambda x: x.value):
        yield p, RDF.type, OWL.AnnotationProperty


def _term(ids: _Ids, s: Stanza, ann: set[ox.NamedNode], typedefs: set[str | None]
          ) -> Iterator[Triple]:
    subject = ids.iri(s.value("id") or "", s.line)
    yield subject, TYPE, CLASS
    intersection: list[Term] = []
    union: list[Term] = []
    for tag, value, n in s.tags:
        if tag == "name":
            yield subject, LABEL, ox.Literal(clean(value))
        elif tag == "def":
            ann.add(DEFINITION)
            yield subject, DEFINITION, ox.Literal(quoted(value, n)[0])
        elif tag == "synonym":
            text, rest = quoted(value, n)
            scope = rest.split()[0] if rest.split() else "RELATED"
            pred = SYNONYM_SCOPES.get(scope, RELATED)
            ann.add(pred)
            yield subject, pred, ox.Literal(text)
        elif tag == "is_a":
            yield subject, SUBCLASS, ids.iri(first_token(value), n)
        elif tag == "relationship":
            rel, target = _pair(value, n)
            node = ox.BlankNode()
            yield from _some(node, ids.relation(rel, n), ids.iri(target, n))
            yield subject, RDFS.subClassOf, node
        elif tag == "intersection_of":
            parts = clean(value).split()
            if len(parts) >= 2:
                node = ox.BlankNode()
                yield from _some(node, ids.relation(parts[0], n), ids.iri(parts[1], n))
                intersection.append(node)
            else:
                intersection.append(ids.iri(first_token(value), n))
        elif tag == "union_of":
            union.append(ids.iri(first_token(value), n))
        elif tag == "equivalent_to":
            yield subject, OWL.equivalentClass, ids.iri(first_token(value), n)
        elif tag == "disjoint_from":
            yield subject, OWL.disjointWith, ids.iri(first_token(value), n)
        elif tag == "is_obsolete" and clean(value) == "true":
            yield subject, OWL.deprecated, TRUE
        elif tag == "subset":
            ann.add(IN_SUBSET)
            yield subject, IN_SUBSET, ox.NamedNode(f"{OBO}{ids.ontology}#{clean(value)}")
        elif tag == "replaced_by":
            ann.add(REPLACED_BY)
            yield subject, REPLACED_BY, ids.iri(first_token(value), n)
        elif tag in LITERAL_TAGS:
            pred = LITERAL_TAGS[tag]
            if tag != "comment":
                ann.add(pred)
            text = first_token(value) if tag == "xref" else clean(value)
            yield subject, pred, ox.Literal(text)
        elif tag == "property_value":
            yield from _property_value(ids, subject, value, n, ann, typedefs)
    for members, op in ((intersection, OWL.intersectionOf), (union, OWL.unionOf)):
        if members:
            node = ox.BlankNode()
            head = yield from _rdf_list(members)
            yield node, RDF.type, OWL.Class
            yield node, op, head
            yield subject, OWL.equivalentClass, node


def _typedef(ids: _Ids, s: Stanza) -> Iterator[Triple]:
    rid = s.value("id") or ""
    subject = ids.relation(rid, s.line)
    yield subject, RDF.type, OWL.ObjectProperty
    for tag, value, n in s.tags:
        if tag == "name":
            yield subject, RDFS.label, ox.Literal(clean(value))
        elif tag == "def":
            yield subject, DEFINITION, ox.Literal(quoted(value, n)[0])
        elif tag == "is_transitive" and clean(value) == "true":
            yield subject, RDF.type, OWL.TransitiveProperty
        elif tag == "is_a":
            yield subject, RDFS.subPropertyOf, ids.relation(first_token(value), n)


def _property_value(ids: _Ids, subject: ox.NamedNode, value: str, n: int,
                    ann: set[ox.NamedNode], typedefs: set[str | None]) -> Iterator[Triple]:
    parts = value.split(None, 1)
    if len(parts) < 2:
        raise OboSyntaxError(n, f"property_value needs a property and a value, got {value!r}")
    prop = ids.property(parts[0], n)
    if parts[0] not in typedefs:
        ann.add(prop)
    rest = parts[1].strip()
    if rest.startswith('"'):
        text, tail = quoted(rest, n)
        dtype = first_token(tail) if tail else ""
        if dtype and dtype not in ("xsd:string", "string"):
            yield subject, prop, ox.Literal(text, datatype=ids.property(dtype, n))
        else:
            yield subject, prop, ox.Literal(text)
    else:
        yield subject, prop, ids.property(first_token(rest), n)


def _pair(value: str, n: int) -> tuple[str, str]:
    parts = clean(value).split()
    if len(parts) < 2:
        raise OboSyntaxError(n, f"expected 'RELATION TARGET', got {value!r}")
    return parts[0], parts[1]


def _some(node: ox.BlankNode, prop: ox.NamedNode, filler: ox.NamedNode) -> Iterator[Triple]:
    yield node, RDF.type, OWL.Restriction
    yield node, OWL.onProperty, prop
    yield node, OWL.someValuesFrom, filler


def _rdf_list(items: list[Term]) -> Generator[Triple, None, ox.NamedNode | ox.BlankNode]:
    """Yield an RDF collection's triples; the generator's return value is its head."""
    head: ox.NamedNode | ox.BlankNode = RDF.nil
    for item in reversed(items):
        cell = ox.BlankNode()
        yield cell, RDF.first, item
        yield cell, RDF.rest, head
        head = cell
    return head
