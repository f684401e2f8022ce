"""Namespaces and terms of the kgprobe vocabulary.

kgprobe reuses standard vocabularies wherever one fits:

- RDF, RDFS, OWL, SKOS for classes, labels and subsumption;
- the W3C WordNet RDF schema (``WN``, http://www.w3.org/2006/03/wn/wn20/schema/) for synsets,
  word senses, words and their pointers;
- Wikidata entity IRIs (``WD``) for COPEN's QID alignments;
- OBO IRIs (``http://purl.obolibrary.org/obo/DOID_4``) for OBO terms.

Terms that none of these has live under ``KGP`` (https://w3id.org/kgprobe/vocab#). They are
listed in README.md ("Vocabulary") with their meaning.

>>> graph("wordnet").value
'https://w3id.org/kgprobe/graph/wordnet'
>>> inferred_graph("pizza").value
'https://w3id.org/kgprobe/graph/pizza/inferred'
"""

from __future__ import annotations

from pyoxigraph import NamedNode


class Namespace:
    """An IRI prefix; ``NS["local"]`` or ``NS.local`` gives a NamedNode.

    >>> KGP.split.value  # not str.split: a Namespace is not a str
    'https://w3id.org/kgprobe/vocab#split'
    >>> str(RDFS)
    'http://www.w3.org/2000/01/rdf-schema#'
    """

    __slots__ = ("iri",)

    def __init__(self, iri: str) -> None:
        self.iri = iri

    def __getitem__(self, local: str) -> NamedNode:
        return NamedNode(self.iri + local)

    def __getattr__(self, local: str) -> NamedNode:
        if local.startswith("__"):
            raise AttributeError(local)
        return NamedNode(self.iri + local)

    def __str__(self) -> str:
        return self.iri

    def __repr__(self) -> str:
        return f"Namespace({self.iri!r})"


RDF = Namespace("http://www.w3.org/1999/02/22-rdf-syntax-ns#")
RDFS = Namespace("http://www.w3.org/2000/01/rdf-schema#")
OWL = Namespace("http://www.w3.org/2002/07/owl#")
XSD = Namespace("http://www.w3.org/2001/XMLSchema#")
SKOS = Namespace("http://www.w3.org/2004/02/skos/core#")
DCTERMS = Namespace("http://purl.org/dc/terms/")
PROV = Namespace("http://www.w3.org/ns/prov#")
WN = Namespace("http://www.w3.org/2006/03/wn/wn20/schema/")
WD = Namespace("http://www.wikidata.org/entity/")
OBO = Namespace("http://purl.obolibrary.org/obo/")
OBOINOWL = Namespace("http://www.geneontology.org/formats/oboInOwl#")

KGP = Namespace("https://w3id.org/kgprobe/vocab#")
"""kgprobe's own terms (see README, Vocabulary)."""

GRAPH_BASE = "https://w3id.org/kgprobe/graph/"
DATA_BASE = "https://w3id.org/kgprobe/data/"


def graph(source: str) -> NamedNode:
    """The named graph that holds one source's triples."""
    return NamedNode(GRAPH_BASE + source)


def inferred_graph(source: str) -> NamedNode:
    """The named graph that holds the reasoner's materialised inferences for one source."""
    return NamedNode(GRAPH_BASE + source + "/inferred")


def data_ns(source: str) -> Namespace:
    """The namespace for resources minted by kgprobe for one source (words, tuples, concepts)."""
    return Namespace(DATA_BASE + source + "/")


PREFIXES = {
    "rdf": RDF,
    "rdfs": RDFS,
    "owl": OWL,
    "xsd": XSD,
    "skos": SKOS,
    "dcterms": DCTERMS,
    "prov": PROV,
    "wn": WN,
    "wd": WD,
    "obo": OBO,
    "oboInOwl": OBOINOWL,
    "kgp": KGP,
}
