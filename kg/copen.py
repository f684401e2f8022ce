"""Load the COPEN concept taxonomy (``father.txt``) and its Wikidata alignment (``mapping.txt``).

Both files hold one pair per line, separated by two tabs: ``Child<TAB><TAB>Parent`` (``Root``
as parent marks a top-level concept) and ``QID<TAB><TAB>Concept``. Each concept becomes a
``skos:Concept`` in the scheme ``data_ns("copen")["scheme"]``, with its DBpedia-style name as
``rdfs:label``, the name split into lower-case words as ``skos:prefLabel``, ``skos:broader`` to
its parent, ``kgp:depth`` (0 for top-level concepts) and ``skos:exactMatch`` to Wikidata items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox

from kg.build import LoadContext, Triple
from kg.errors import SourceError
from kg.vocab import KGP, RDF, RDFS, SKOS, WD, data_ns

NS = data_ns("copen")
SCHEME = NS["scheme"]
ROOT = "Root"
SEPARATOR = "\t\t"

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_QID = re.compile(r"Q[1-9][0-9]*\Z")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def camel_words(name: str) -> str:
    """Split a CamelCase concept name into lower-case words.

    >>> camel_words("SoccerPlayer")
    'soccer player'
    >>> camel_words("MeanOfTransportation")
    'mean of transportation'
    >>> camel_words("NCAATeamSeason")
    'ncaa team season'
    """
    return " ".join(w.lower() for w in _WORD.findall(name))


def read_pairs(path: Path) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line number, left, right)`` for each non-blank line split on two tabs.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "father.txt"
    >>> _ = p.write_text("Sport\\t\\tActivity\\n\\nActivity\\t\\tRoot\\n")
    >>> list(read_pairs(p))
    [(1, 'Sport', 'Activity'), (3, 'Activity', 'Root')]
    """
    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split(SEPARATOR)
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise SourceError(
                    f"{path}:{lineno}: expected two fields separated by two tabs "
                    f"(e.g. 'SoccerPlayer\\t\\tAthlete'), got {line!r}. Fix the separator or "
                    "restore the original file."
                )
            yield lineno, parts[0].strip(), parts[1].strip()


def read_taxonomy(path: Path) -> tuple[dict[str, str], dict[str, int]]:
    """Parse ``father.txt`` into ``{child: parent}`` and ``{concept: line number}``.

    Checks that each concept has one parent, that parents are concepts (or ``Root``) and that
    names are usable as IRI local names.
    """
    parent: dict[str, str] = {}
    line_of: dict[str, int] = {}
    for lineno, child, par in read_pairs(path):
        for name in (child, par):
            if not _NAME.match(name):
                raise SourceError(
                    f"{path}:{lineno}: {name!r} is not a concept name (letters, digits and '_', "
                    "starting with a letter). Fix the line."
                )
        if child == ROOT:
            raise SourceError(f"{path}:{lineno}: 'Root' cannot be a child concept. Fix the line.")
        if child in parent:
            raise SourceError(
                f"{path}:{lineno}: concept {child!r} already has parent {parent[child]!r} "
                f"(line {line_of[child]}); the taxonomy is a tree, keep one of the two lines."
            )
        parent[child] = par
        line_of[child] = lineno
    for child, par in parent.items():
        if par != ROOT and par not in parent:
            raise SourceError(
                f"{path}:{line_of[child]}: parent {par!r} of {child!r} is not a concept (it has "
                f"no line of its own). Add a line '{par}\\t\\t<its parent or Root>' or fix "
                "the name."
            )
    return parent, line_of


def top_concepts(parent: dict[str, str]) -> dict[str, str]:
    """``{concept: its top-level concept}`` (a top-level concept is its own).

    >>> top_concepts({"Mammal": "Animal", "Horse": "Mammal", "Animal": "Root"})["Horse"]
    'Animal'
    """
    out: dict[str, str] = {}
    for concept in parent:
        top, seen = concept, set()
        while parent.get(top, ROOT) != ROOT and top not in seen:
            seen.add(top)
            top = parent[top]
        out[concept] = top
    return out


def depths(parent: dict[str, str], line_of: dict[str, int], path: Path) -> dict[str, int]:
    """Depth of each concept (0 = child of ``Root``); a cycle is a :class:`SourceError`.

    >>> depths({"A": "Root", "B": "A", "C": "B"}, {}, Path("father.txt"))
    {'A': 0, 'B': 1, 'C': 2}
    """
    depth: dict[str, int] = {}
    for start in parent:
        chain: list[str] = []
        seen: set[str] = set()
        node = start
        while node != ROOT and node not in depth:
            if node in seen:
                cycle = [*chain[chain.index(node):], node]
                raise SourceError(
                    f"{path}:{line_of.get(node, '?')}: the taxonomy has a cycle "
                    f"({' -> '.join(cycle)}); one of these concepts needs another parent."
                )
            seen.add(node)
            chain.append(node)
            node = parent[node]
        base = -1 if node == ROOT else depth[node]
        for i, n in enumerate(reversed(chain), start=1):
            depth[n] = base + i
    return depth


def read_mapping(path: Path, concepts: set[str]) -> list[tuple[str, str]]:
    """Parse ``mapping.txt`` into ``(concept, QID)`` pairs, checking both sides."""
    pairs = []
    for lineno, qid, concept in read_pairs(path):
        if not _QID.match(qid):
            raise SourceError(
                f"{path}:{lineno}: {qid!r} is not a Wikidata item id (Q followed by digits). "
                "Fix the line."
            )
        if concept not in concepts:
            raise SourceError(
                f"{path}:{lineno}: {qid} maps to {concept!r}, which is not a concept of the "
                "taxonomy (father.txt). Fix the name or add the concept to father.txt."
            )
        pairs.append((concept, qid))
    return pairs


def triples(parent: dict[str, str], depth: dict[str, int],
            mapping: list[tuple[str, str]]) -> Iterator[Triple]:
    """The RDF triples of the taxonomy and its Wikidata alignment."""
    yield SCHEME, RDF.type, SKOS.ConceptScheme
    yield SCHEME, RDFS.label, ox.Literal("COPEN concept taxonomy")
    for name, par in parent.items():
        c = NS[name]
        yield c, RDF.type, SKOS.Concept
        yield c, RDF.type, KGP.CopenConcept
        yield c, SKOS.inScheme, SCHEME
        yield c, RDFS.label, ox.Literal(name)
        yield c, SKOS.prefLabel, ox.Literal(camel_words(name))
        yield c, KGP.depth, ox.Literal(depth[name])
        if par == ROOT:
            yield c, SKOS.topConceptOf, SCHEME
            yield SCHEME, SKOS.hasTopConcept, c
        else:
            yield c, SKOS.broader, NS[par]
    for name, qid in mapping:
        yield NS[name], SKOS.exactMatch, WD[qid]


def load(ctx: LoadContext) -> None:
    """Write the COPEN taxonomy into ``ctx.graph`` (files: father.txt, mapping.txt)."""
    father, mapping_file = ctx.files
    parent, line_of = read_taxonomy(father)
    depth = depths(parent, line_of, father)
    mapping = read_mapping(mapping_file, set(parent))
    ctx.add(triples(parent, depth, mapping))
    unmapped = len(set(parent) - {c for c, _ in mapping})
    ctx.stats.update(concepts=len(parent), mapped=len(parent) - unmapped,
                     mapping_lines=len(mapping))
