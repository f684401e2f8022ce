"""Parts of speech of English words, read from the store's ``wordnet`` graph (:mod:`kg.wordnet`).

:func:`read_lexicon` gives every lemma's parts of speech (noun, verb, adjective; satellites
count as adjectives) and WordNet's irregular verb forms (``verb.exc``: "had" -> "have") in one
:class:`WordNetLexicon`, cached per store. Lemmas are written as in WordNet's index files:
lower case, ``_`` between the words of a collocation. :func:`parts_of_speech` answers for one
word.

Without the ``wordnet`` graph, or with one built before irregular verb forms were loaded, both
raise :class:`LexiconError` naming the fix (``python -m kg.build -s wordnet``); there is no
built-in fallback word list.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from kg.errors import StoreError
from kg.store import KnowledgeStore
from kg.vocab import KGP, WN, graph

#: The word sense classes of the W3C WordNet schema, and the part of speech each stands for.
SENSE_POS = {"NounWordSense": "noun", "VerbWordSense": "verb", "AdjectiveWordSense": "adjective",
             "AdjectiveSatelliteWordSense": "adjective"}


class LexiconError(StoreError):
    """The store has no (or an outdated) ``wordnet`` graph to read parts of speech from."""


@dataclass(frozen=True)
class WordNetLexicon:
    """WordNet's lemmas per part of speech and its irregular verb forms."""

    nouns: frozenset[str]
    verbs: frozenset[str]
    adjectives: frozenset[str]
    verb_forms: Mapping[str, frozenset[str]]
    """Irregular verb form -> its base forms (``verb.exc``)."""


def _wordnet_graph(store: KnowledgeStore) -> str:
    iri = graph("wordnet").value
    if iri not in set(store.graphs()):
        raise LexiconError("the store has no wordnet graph, which the verbaliser reads parts of "
                           "speech from: build it with python -m kg.build -s wordnet")
    return iri


def _lemma(form: object) -> str:
    return str(form).replace(" ", "_")


def _pos_query(g: str, word: str | None = None) -> str:
    types = ", ".join(f"<{WN[t].value}>" for t in SENSE_POS)
    bind = "" if word is None else f'FILTER(?form = "{word}")'
    return f"""SELECT DISTINCT ?form ?type WHERE {{ GRAPH <{g}> {{
        ?sense <{WN.word.value}> ?w ; a ?type . ?w <{WN.lexicalForm.value}> ?form
        FILTER(?type IN ({types})) {bind} }} }}"""


def parts_of_speech(store: KnowledgeStore, word: str) -> set[str]:
    """The parts of speech (``noun``, ``verb``, ``adjective``) WordNet gives ``word`` (a lemma,
    lower case; ``_`` or a space between the words of a collocation)."""
    g = _wordnet_graph(store)
    text = word.lower().replace("_", " ").replace("\\", "\\\\").replace('"', '\\"')
    rows = store.query(_pos_query(g, text), max_rows=None)
    return {SENSE_POS[str(r["type"]).rsplit("/", 1)[-1]] for r in rows}


@functools.cache
def read_lexicon(store: KnowledgeStore) -> WordNetLexicon:
    """Every lemma's parts of speech and the irregular verb forms (cached per store)."""
    g = _wordnet_graph(store)
    by_pos: dict[str, set[str]] = defaultdict(set)
    for r in store.query(_pos_query(g), max_rows=None):
        by_pos[SENSE_POS[str(r["type"]).rsplit("/", 1)[-1]]].add(_lemma(r["form"]))
    forms: dict[str, set[str]] = defaultdict(set)
    for r in store.query(f"""SELECT ?form ?base WHERE {{ GRAPH <{g}> {{
            ?v a <{KGP.VerbForm.value}> ; <{KGP.inflectedForm.value}> ?form ;
               <{KGP.baseForm.value}> ?base }} }}""", max_rows=None):
        forms[_lemma(r["form"])].add(_lemma(r["base"]))
    if not forms:
        raise LexiconError("the store's wordnet graph has no irregular verb forms (kgp:VerbForm, "
                           "from verb.exc): it was built before they were loaded. Rebuild it: "
                           "python -m kg.build -s wordnet")
    return WordNetLexicon(frozenset(by_pos["noun"]), frozenset(by_pos["verb"]),
                          frozenset(by_pos["adjective"]),
                          {f: frozenset(b) for f, b in forms.items()})
