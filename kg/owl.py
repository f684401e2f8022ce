"""Load an OWL ontology (RDF/XML, gzipped or not) with OntoLAMA's preprocessing and reasoning.

Used for Schema.org, Pizza, FoodOn and GO (``loader = "kg.owl"`` in ``kg/sources.toml``).
``load(ctx)`` does three things:

1. Parses the file's triples unchanged into the source graph ``ctx.graph``.
2. Classifies the ontology with HermiT (``kg.reason``) into ``ctx.inferred``.
3. Adds OntoLAMA's preprocessing to ``ctx.graph`` (``preprocess``, shared with ``kg.obo``):

   - ``C kgp:name "..."`` for every named class ``C`` (an IRI typed ``owl:Class``, not
     ``owl:Thing``/``owl:Nothing``) that is not deprecated (``owl:deprecated true``) and has
     an ``rdfs:label``: the English label (``@en``), else the untagged one (the smallest when
     there are several), with underscores made spaces, whitespace collapsed, lower-cased.
     With the option ``split_camel_case = true`` (Schema.org, whose labels are CamelCase local
     names) the label is first split into words: ``APIReference`` -> ``api reference``,
     ``AMRadioChannel`` -> ``am radio channel``, ``3DModel`` -> ``3d model``.
   - ``C rdf:type kgp:NamedClass`` for the classes a probe may use: named, not deprecated,
     with a name, satisfiable (not ``kgp:unsatisfiable``), and not the excluded top class.
     Probe queries draw concepts (positives and negatives) from ``kgp:NamedClass`` only.
   - Classes without a label get neither; their number is reported with ``ctx.warn``.
   - Option ``top_class`` (DOID: ``"DOID:4"``, "disease"): that class gets
     ``kgp:excludedTop true`` and is kept out of ``kgp:NamedClass`` (it keeps its
     ``kgp:name``), so no subsumption with it as sub- or superclass becomes a probe. Every
     other DOID class is a disease, so "X is a disease" would be a trivially true positive
     for all 11,500 other classes and would dominate the sampled positives; OntoLAMA leaves
     DOID's root concept out of its Atomic SI pairs for this reason. (The paper's exact
     wording could not be checked from here; this is the conservative reading.) The
     subsumptions themselves stay in the inferred graph.

>>> concept_name("APIReference", split_camel_case=True)
'api reference'
>>> concept_name("hereditary_disease  type 1")
'hereditary disease type 1'
"""

from __future__ import annotations

import gzip
import re
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox

from kg import reason
from kg.errors import SourceError
from kg.vocab import KGP, OBO, OWL, RDF, RDFS, XSD

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kg.build import LoadContext

Term = ox.NamedNode | ox.BlankNode | ox.Literal
TRUE = ox.Literal("true", datatype=XSD.boolean)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Z][a-z])")
_TOPS = {OWL.Thing, OWL.Nothing}


def load(ctx: LoadContext) -> None:
    """Parse the RDF/XML file(s), reason, and add OntoLAMA's class names and typing."""
    t0 = time.perf_counter()
    for path in ctx.files:
        ctx.load_rdf(read_bytes(ctx, path), ox.RdfFormat.RDF_XML)
    ctx.stats["parse_s"] = time.perf_counter() - t0
    hierarchy = reason.reason(ctx)
    preprocess(ctx, unsatisfiable=hierarchy.unsatisfiable)


def read_bytes(ctx: LoadContext, path: Path) -> bytes:
    """The file's bytes, gunzipped when it is gzip; a damaged gzip raises SourceError."""
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise SourceError(
            f"source {ctx.source.name!r}: {path} is not a readable gzip file ({e}); it is "
            f"truncated or corrupt: download it again from {ctx.source.url}."
        ) from e


# --- OntoLAMA preprocessing ------------------------------------------------------------------


def split_camel(text: str) -> str:
    """Split CamelCase words, keeping acronyms together.

    >>> [split_camel(w) for w in ["AMRadioChannel", "3DModel", "WebAPI", "DDxElement"]]
    ['AM Radio Channel', '3D Model', 'Web API', 'D Dx Element']
    """
    return _CAMEL.sub(" ", text)


def concept_name(label: str, split_camel_case: bool = False) -> str:
    """OntoLAMA's concept name: underscores to spaces, optional CamelCase split, lower case."""
    text = label.replace("_", " ")
    if split_camel_case:
        text = split_camel(text)
    return " ".join(text.split()).lower()


def pick_label(labels: Iterable[ox.Literal]) -> str | None:
    """The English label, else the untagged one; the smallest when several tie.

    >>> pick_label([ox.Literal("Pizza", language="pt"), ox.Literal("pizza", language="en")])
    'pizza'
    >>> pick_label([ox.Literal("PizzaComUmNome", language="pt")]) is None
    True
    """
    english, plain = [], []
    for lit in labels:
        lang = (lit.language or "").lower()
        if lang == "en" or lang.startswith("en-"):
            english.append(lit.value)
        elif not lang:
            plain.append(lit.value)
    for pool in (english, plain):
        if pool:
            return min(pool)
    return None


def class_iri(ref: str) -> ox.NamedNode:
    """An IRI given as such, or an OBO id (``DOID:4``) expanded the OBO way.

    >>> class_iri("DOID:4").value
    'http://purl.obolibrary.org/obo/DOID_4'
    """
    if "://" in ref:
        return ox.NamedNode(ref)
    prefix, _, local = ref.partition(":")
    return OBO[f"{prefix}_{local}"]


@dataclass
class ClassCounts:
    named: int = 0
    deprecated: int = 0
    unlabelled: int = 0
    unsatisfiable: int = 0
    kept: int = 0


def preprocess(ctx: LoadContext, unsatisfiable: Iterable[str] = ()) -> ClassCounts:
    """Write ``kgp:name``, ``rdf:type kgp:NamedClass`` and ``kgp:excludedTop`` into ctx.graph."""
    g = ctx.graph
    split = bool(ctx.options.get("split_camel_case", False))
    top = class_iri(str(ctx.options["top_class"])) if ctx.options.get("top_class") else None
    unsat = set(unsatisfiable)
    classes = {q.subject for q in ctx.store.quads_for_pattern(None, RDF.type, OWL.Class, g)
               if isinstance(q.subject, ox.NamedNode) and q.subject not in _TOPS}
    deprecated = {q.subject for q in ctx.store.quads_for_pattern(None, OWL.deprecated, None, g)
                  if isinstance(q.object, ox.Literal) and q.object.value in ("true", "1")}
    labels: dict[ox.NamedNode, list[ox.Literal]] = {}
    for q in ctx.store.quads_for_pattern(None, RDFS.label, None, g):
        if (isinstance(q.subject, ox.NamedNode) and q.subject in classes
                and isinstance(q.object, ox.Literal)):
            labels.setdefault(q.subject, []).append(q.object)
    counts = ClassCounts(named=len(classes))
    triples: list[tuple[ox.NamedNode, ox.NamedNode, Term]] = []
    for c in sorted(classes, key=lambda n: n.value):
        if c in deprecated:
            counts.deprecated += 1
            continue
        label = pick_label(labels.get(c, ()))
        name = concept_name(label, split) if label is not None else ""
        if not name:
            counts.unlabelled += 1
            continue
        triples.append((c, KGP["name"], ox.Literal(name)))
        if c == top:
            triples.append((c, KGP.excludedTop, TRUE))
        elif c.value in unsat:
            counts.unsatisfiable += 1
        else:
            triples.append((c, RDF.type, KGP.NamedClass))
            counts.kept += 1
    ctx.add(triples)
    if top is not None and top not in classes:
        ctx.warn(f"top_class {ctx.options['top_class']} is not a class of this ontology; "
                 "nothing was excluded.")
    if counts.unlabelled:
        ctx.warn(f"{counts.unlabelled} classes have no label; they are left out of probes.")
    ctx.stats.update(named_classes=counts.named, deprecated_classes=counts.deprecated,
                     unlabelled_classes=counts.unlabelled, probe_classes=counts.kept)
    return counts
