"""Load the Battig & Montague (1969) category norms (a tab-separated file, one exemplar a row).

Columns: ``word catnum catname syl letters freq frequency rank rfreq``. Each row becomes a
``kgp:CategoryExemplar`` named ``exemplar-<catnum>-<n>`` (``n`` = 1-based position of the row
within its category in file order, which equals ``rank`` in the released file) and linked by
``kgp:inCategory`` to a ``kgp:NormCategory`` named ``category-<catnum>``. Empty cells (the
source's NA) give no triple.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kg.build import LoadContext, Triple
from kg.errors import SourceError
from kg.vocab import KGP, RDF, RDFS, data_ns

NS = data_ns("norms")
COLUMNS = ["word", "catnum", "catname", "syl", "letters", "freq", "frequency", "rank", "rfreq"]
REQUIRED = {"word", "catnum", "catname", "freq", "rank"}

# column -> (predicate, parser); word/catnum/catname are handled apart.
_PROPS: dict[str, tuple[ox.NamedNode, Callable[[str], Any]]] = {
    "freq": (KGP.productionFrequency, int),
    "rank": (KGP.rank, int),
    "syl": (KGP.syllables, int),
    "letters": (KGP.letterCount, int),
    "frequency": (KGP.kuceraFrancisFrequency, int),
    "rfreq": (KGP.ratedFrequency, float),
}


def category(catnum: int) -> ox.NamedNode:
    """The IRI of a category.

    >>> category(12).value
    'https://w3id.org/kgprobe/data/norms/category-12'
    """
    return NS[f"category-{catnum}"]


def row_triples(row: dict[str, str], n: int, path: Path, lineno: int) -> Iterator[Triple]:
    """The triples of one row (``n`` = its position within the category).

    >>> row = {"word": "ruby", "catnum": "1", "catname": "precious stone", "freq": "419",
    ...        "rank": "2", "frequency": ""}
    >>> sorted(p.value.split("#")[1] for _, p, _ in row_triples(row, 2, Path("t.tsv"), 3))
    ['category', 'categoryNumber', 'exemplar', 'inCategory', 'productionFrequency', 'rank', 'type']
    """
    catnum = _parse(row["catnum"], int, "catnum", path, lineno)
    s = NS[f"exemplar-{catnum}-{n}"]
    yield s, RDF.type, KGP.CategoryExemplar
    yield s, KGP.exemplar, ox.Literal(row["word"])
    yield s, KGP.category, ox.Literal(row["catname"])
    yield s, KGP.categoryNumber, ox.Literal(catnum)
    yield s, KGP.inCategory, category(catnum)
    for col, (pred, parse) in _PROPS.items():
        cell = row.get(col, "")
        if cell:
            yield s, pred, ox.Literal(_parse(cell, parse, col, path, lineno))


def _parse(cell: str, parse: Callable[[str], Any], col: str, path: Path, lineno: int) -> Any:
    try:
        return parse(cell)
    except ValueError as e:
        kind = "an integer" if parse is int else "a number"
        raise SourceError(
            f"{path}:{lineno}: column {col!r} must be {kind}, got {cell!r}. Fix the cell (leave "
            "it empty for a missing value)."
        ) from e


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line number, {column: cell})`` for each data row, after checking the header."""
    with path.open(encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    header = lines[0].split("\t") if lines else []
    missing = REQUIRED - set(header)
    if missing:
        raise SourceError(
            f"{path}:1: header lacks column(s) {', '.join(sorted(missing))}; expected the "
            f"tab-separated columns {' '.join(COLUMNS)}."
        )
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise SourceError(
                f"{path}:{lineno}: {len(cells)} tab-separated cells, the header has "
                f"{len(header)}. Fix the line (empty cells stay as empty fields)."
            )
        row = {h: c.strip() for h, c in zip(header, cells, strict=True)}
        for col in ("word", "catnum", "catname"):
            if not row[col]:
                raise SourceError(f"{path}:{lineno}: column {col!r} is empty. Fix the line.")
        yield lineno, row


def load(ctx: LoadContext) -> None:
    """Write the category norms into ``ctx.graph`` (file: battig_montague_1969.tsv)."""
    (path,) = ctx.files
    position: Counter[int] = Counter()
    names: dict[int, tuple[str, int]] = {}

    def all_triples() -> Iterator[Triple]:
        for lineno, row in read_rows(path):
            catnum = _parse(row["catnum"], int, "catnum", path, lineno)
            name = row["catname"]
            if catnum in names and names[catnum][0] != name:
                raise SourceError(
                    f"{path}:{lineno}: category {catnum} is named {name!r} here but "
                    f"{names[catnum][0]!r} on line {names[catnum][1]}. Use one name."
                )
            names.setdefault(catnum, (name, lineno))
            position[catnum] += 1
            yield from row_triples(row, position[catnum], path, lineno)
        for catnum, (name, _) in sorted(names.items()):
            yield category(catnum), RDF.type, KGP.NormCategory
            yield category(catnum), RDFS.label, ox.Literal(name)
            yield category(catnum), KGP.categoryNumber, ox.Literal(catnum)

    ctx.add(all_triples())
    ctx.stats.update(rows=sum(position.values()), categories=len(names))
