"""Load HyperLex (Vulic et al. 2017): graded "X is a type of Y" ratings for word pairs.

Files: ``hyperlex-all.txt`` and the three ``splits/random`` files, all space-separated with the
header ``WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD SCORES..`` and a variable number of
individual ratings after ``STD``. Each pair of ``hyperlex-all.txt`` becomes one ``kgp:WordPair``
named after its line number (``pair-<line>``, the header being line 1), so IRIs are stable; the
random split a pair belongs to becomes ``kgp:split``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from kg.build import LoadContext, Triple
from kg.errors import SourceError
from kg.vocab import KGP, RDF, data_ns

NS = data_ns("hyperlex")
HEADER = ["WORD1", "WORD2", "POS", "TYPE", "AVG_SCORE", "AVG_SCORE_0_10", "STD"]
POS = {"N", "V"}
TYPES = {"hyp-1", "hyp-2", "hyp-3", "hyp-4", "r-hyp-1", "r-hyp-2", "r-hyp-3", "r-hyp-4",
         "cohyp", "mero", "syn", "ant", "no-rel"}
"""The TYPE values of the released data (reverse hypernymy written ``r-hyp-N``)."""
_SPLIT = re.compile(r"hyperlex_(training|dev|test)_")
_SPLIT_NAME = {"training": "train", "dev": "dev", "test": "test"}


@dataclass(frozen=True)
class Pair:
    """One rated pair: the line it is on and its fields."""

    line: int
    word1: str
    word2: str
    pos: str
    type: str
    score: float
    score10: float
    std: float

    @property
    def key(self) -> tuple[str, str, str]:
        return self.word1, self.word2, self.pos


def parse_line(line: str, lineno: int, path: Path) -> Pair:
    """Parse one data line.

    >>> p = parse_line("conflict disagreement N r-hyp-1 5.20 8.67 1.25 5 6 6", 2, Path("x.txt"))
    >>> p.word1, p.pos, p.type, p.score, p.score10
    ('conflict', 'N', 'r-hyp-1', 5.2, 8.67)
    """
    fields = line.split()
    if len(fields) < len(HEADER):
        raise SourceError(
            f"{path}:{lineno}: expected at least {len(HEADER)} space-separated fields "
            f"({' '.join(HEADER)} ...), got {len(fields)}: {line!r}. Restore the original file."
        )
    w1, w2, pos, typ = fields[:4]
    if pos not in POS:
        raise SourceError(f"{path}:{lineno}: POS must be N or V, got {pos!r}. Fix the line.")
    try:
        score, score10, std = (float(x) for x in fields[4:7])
    except ValueError as e:
        raise SourceError(
            f"{path}:{lineno}: AVG_SCORE, AVG_SCORE_0_10 and STD must be numbers ({e}). "
            "Fix the line."
        ) from e
    if not (0 <= score <= 6 and 0 <= score10 <= 10):
        raise SourceError(
            f"{path}:{lineno}: scores out of range (AVG_SCORE {score} must be 0-6, "
            f"AVG_SCORE_0_10 {score10} must be 0-10). Fix the line."
        )
    return Pair(lineno, w1, w2, pos, typ, score, score10, std)


def read_pairs(path: Path) -> list[Pair]:
    """All pairs of one HyperLex file, after checking its header."""
    with path.open(encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    if not lines or lines[0].split()[: len(HEADER)] != HEADER:
        raise SourceError(
            f"{path}:1: expected the header '{' '.join(HEADER)} SCORES..', got "
            f"{(lines[0] if lines else '')!r}. Is this a HyperLex file?"
        )
    return [parse_line(line, i, path) for i, line in enumerate(lines[1:], start=2)
            if line.strip()]


def split_name(path: Path) -> str:
    """The split a random-split file holds, from its name.

    >>> split_name(Path("splits/random/hyperlex_training_all_random.txt"))
    'train'
    """
    m = _SPLIT.search(path.name)
    if not m:
        raise SourceError(
            f"{path}: cannot tell the split from the file name; expected "
            "hyperlex_{training,dev,test}_all_random.txt (check kg/sources.toml)."
        )
    return _SPLIT_NAME[m.group(1)]


def assign_splits(pairs: list[Pair], split_files: list[Path]) -> dict[tuple[str, str, str], str]:
    """Map each pair key (word1, word2, pos) to its split; a pair in two splits is an error."""
    known = {p.key for p in pairs}
    split_of: dict[tuple[str, str, str], str] = {}
    where: dict[tuple[str, str, str], str] = {}
    for path in split_files:
        name = split_name(path)
        for p in read_pairs(path):
            if p.key not in known:
                raise SourceError(
                    f"{path}:{p.line}: pair {p.word1!r} {p.word2!r} ({p.pos}) is not in "
                    "hyperlex-all.txt; the split files and hyperlex-all.txt come from different "
                    "releases. Restore both from the same archive."
                )
            if p.key in split_of:
                raise SourceError(
                    f"{path}:{p.line}: pair {p.word1!r} {p.word2!r} ({p.pos}) is already in the "
                    f"{split_of[p.key]} split ({where[p.key]}); a pair belongs to one split."
                )
            split_of[p.key] = name
            where[p.key] = f"{path.name}:{p.line}"
    return split_of


def triples(pairs: list[Pair], split_of: dict[tuple[str, str, str], str]) -> Iterator[Triple]:
    """The RDF triples of the pairs."""
    for p in pairs:
        s = NS[f"pair-{p.line}"]
        yield s, RDF.type, KGP.WordPair
        yield s, KGP.word1, ox.Literal(p.word1)
        yield s, KGP.word2, ox.Literal(p.word2)
        yield s, KGP.pos, ox.Literal(p.pos)
        yield s, KGP.relationType, ox.Literal(p.type)
        yield s, KGP.score, ox.Literal(p.score)
        yield s, KGP.score10, ox.Literal(p.score10)
        yield s, KGP.scoreStd, ox.Literal(p.std)
        if p.key in split_of:
            yield s, KGP["split"], ox.Literal(split_of[p.key])


def load(ctx: LoadContext) -> None:
    """Write HyperLex into ``ctx.graph`` (files: hyperlex-all.txt, then the split files)."""
    all_file, *split_files = ctx.files
    pairs = read_pairs(all_file)
    seen: dict[tuple[str, str, str], int] = {}
    for p in pairs:
        if p.key in seen:
            raise SourceError(
                f"{all_file}:{p.line}: pair {p.word1!r} {p.word2!r} ({p.pos}) repeats line "
                f"{seen[p.key]}. Remove one of the two lines."
            )
        seen[p.key] = p.line
    split_of = assign_splits(pairs, split_files)
    unknown = sorted({p.type for p in pairs} - TYPES)
    if unknown:
        ctx.warn(f"TYPE values not in the released data: {', '.join(unknown)} (loaded as written)")
    unsplit = sum(p.key not in split_of for p in pairs)
    if unsplit:
        ctx.warn(f"{unsplit} pairs are in no random split (no kgp:split)")
    ctx.add(triples(pairs, split_of))
    ctx.stats.update(pairs=len(pairs))
