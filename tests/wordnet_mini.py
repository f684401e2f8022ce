"""A hand-made WordNet database with the words the verbaliser's tests need, loaded into a store
with the real loader (kg/wordnet.py), so that tests read parts of speech from a ``wordnet``
graph as the verbaliser does (kg/lexicon.py).

Every part of speech listed is one WordNet 3.0 gives the word (checked by hand against the
Princeton index files); parts of speech the "is" rule never looks at for these words are left
out (e.g. "result" as a noun: the "-s" verb rule decides "results" first), so the rule decides
as it does on the full WordNet graph:

- nouns: part, member, output, characteristic, topping, base, in ("inch"), over (cricket);
- verbs: derive, regulate, result, occur, locate, surround, realize, realise, make, speak,
  have, output, part;
- adjectives: capable, characteristic, on, about, made, spoken;
- irregular verb forms (``verb.exc``): had -> have, made -> make, spoken -> speak.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyoxigraph as ox

from kg.build import load_source
from kg.manifest import pick

NOUNS = ["part", "member", "output", "characteristic", "topping", "base", "in", "over"]
VERBS = ["derive", "regulate", "result", "occur", "locate", "surround", "realize", "realise",
         "make", "speak", "have", "output", "part"]
ADJECTIVES = ["capable", "characteristic", "on", "about", "made", "spoken"]
VERB_FORMS = ["had have", "made make", "spoken speak"]


def _lines(words: list[str], pos: str, frames: str = "") -> list[str]:
    return [f"{i + 1:08d} 00 {pos} 01 {w} 0 000{frames} | a test word  "
            for i, w in enumerate(words)]


def write_mini_wordnet(folder: Path) -> list[Path]:
    """Write the database files into ``folder``; return them in manifest order."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "data.noun": _lines(NOUNS, "n"),
        "data.verb": _lines(VERBS, "v", " 01 + 02 00"),
        "data.adj": _lines(ADJECTIVES, "a"),
        "data.adv": [],
        "index.sense": [],
        "verb.exc": VERB_FORMS,
    }
    for name, lines in files.items():
        (folder / name).write_text("".join(line + "\n" for line in lines))
    return [folder / name for name in files]


def add_mini_wordnet(store: ox.Store, folder: Path) -> None:
    """Load the hand-made database into ``store``'s ``wordnet`` graph."""
    files = write_mini_wordnet(folder)
    source = dataclasses.replace(pick(["wordnet"])[0], options={"check_version": False})
    load_source(store, source, files, folder)
