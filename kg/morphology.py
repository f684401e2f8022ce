"""WordNet's morphology (morphy(7WN)) over the store's ``wordnet`` graph: base forms of an
inflected word, and the inflected forms that lead back to a lemma.

morphy finds the base forms of a word of one part of speech in two ways:

1. the exception list of that part of speech (``noun.exc``, ``verb.exc``, ``adj.exc``,
   ``adv.exc``; stored by :mod:`kg.wordnet` as ``kgp:NounForm``, ``kgp:VerbForm``, ... with
   ``kgp:inflectedForm`` and ``kgp:baseForm``): "feet" -> "foot";
2. otherwise the rules of detachment (:data:`RULES`, the table of morphy(7WN)): an ending is
   replaced ("ies" -> "y": "bodies" -> "body").

A candidate counts only when WordNet has it as a lemma of that part of speech. As in morphy's C
code, a noun that ends in "ss" or has at most two letters is not detached ("glass" stays
"glass"), and a word that is itself a lemma is its own base form. As NLTK reads morphy, a word
found in an exception list gets its listed base forms (and itself when it is a lemma) and no
rule. The "-ful" nouns ("boxesful") and collocations are not handled.

:meth:`Morphology.inflected_forms` runs the rules backwards: from a lemma, every form whose base
forms include it ("finger" -> "fingers", "foot" -> "feet"). It is what relatum probes with
``params: {inflections: noun}`` store as the gold's forms (probes.engine.export).

>>> m = Morphology({"noun": frozenset({"finger", "foot", "body", "glass"})},
...                {"noun": {"feet": frozenset({"foot"})}})
>>> sorted(m.base_forms("fingers", "noun")), sorted(m.base_forms("bodies", "noun"))
(['finger'], ['body'])
>>> sorted(m.base_forms("feet", "noun")), sorted(m.base_forms("glass", "noun"))
(['foot'], ['glass'])
>>> sorted(m.inflected_forms("foot", "noun")), sorted(m.inflected_forms("body", "noun"))
(['feet', 'foots'], ['bodies', 'bodys'])
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kg import storecache
from kg.lexicon import LexiconError, _wordnet_graph
from kg.store import KnowledgeStore
from kg.vocab import KGP, WN

POS = ("noun", "verb", "adjective", "adverb")

RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
             ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
             ("ing", "e"), ("ing", "")),
    "adjective": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adverb": (),
}
"""morphy(7WN)'s rules of detachment per part of speech: (inflected ending, base ending)."""

_SENSE_POS = {"NounWordSense": "noun", "VerbWordSense": "verb", "AdjectiveWordSense": "adjective",
              "AdjectiveSatelliteWordSense": "adjective", "AdverbWordSense": "adverb"}
_FORM_POS = {"NounForm": "noun", "VerbForm": "verb", "AdjectiveForm": "adjective",
             "AdverbForm": "adverb"}


@dataclass(frozen=True)
class Morphology:
    """WordNet's lemmas and exception lists per part of speech (``noun``, ``verb``,
    ``adjective``, ``adverb``); lemmas lower case, ``_`` between the words of a collocation."""

    lemmas: Mapping[str, frozenset[str]]
    exceptions: Mapping[str, Mapping[str, frozenset[str]]]

    def base_forms(self, word: str, pos: str) -> set[str]:
        """morphy: the lemmas of part of speech ``pos`` that ``word`` is a form of."""
        word = word.lower().replace(" ", "_")
        lemmas = self.lemmas.get(pos, frozenset())
        listed = self.exceptions.get(pos, {}).get(word)
        if listed is not None:
            candidates = {word, *listed}
        elif pos == "noun" and (word.endswith("ss") or len(word) <= 2):
            candidates = {word}
        else:
            candidates = {word} | {word[:len(word) - len(suffix)] + ending
                                   for suffix, ending in RULES[pos] if word.endswith(suffix)}
        return {c for c in candidates if c in lemmas}

    def inflected_forms(self, lemma: str, pos: str = "any") -> set[str]:
        """Every other form whose base forms (of ``pos``, or of any part of speech with
        ``"any"``) include ``lemma``: the exception lists read backwards and the rules of
        detachment applied backwards, each checked with :meth:`base_forms`. Empty when
        ``lemma`` is not a WordNet lemma of that part of speech."""
        lemma = lemma.lower().replace(" ", "_")
        out: set[str] = set()
        for p in (POS if pos == "any" else (pos,)):
            if lemma not in self.lemmas.get(p, frozenset()):
                continue
            forms = {f for f, bases in self.exceptions.get(p, {}).items() if lemma in bases}
            forms |= {lemma[:len(lemma) - len(ending)] + suffix
                      for suffix, ending in RULES[p] if lemma.endswith(ending)}
            out |= {f for f in forms if f != lemma and lemma in self.base_forms(f, p)}
        return out


    def is_plural(self, phrase: str) -> bool:
        """Whether the noun phrase ``phrase`` is plural, by its head (its last word) and
        WordNet alone (WordNet marks no number, so this reads it from morphy):

        - the head is in the noun exception list as a form of another lemma ("feet", "mice");
        - morphy's rules lead the head to another noun lemma ("trousers" -> "trouser",
          "spectacles" -> "spectacle", "dogs" -> "dog"), unless it ends in "ss" ("glass");
        - the head is a noun lemma that WordNet also has as "pair of <head>" (the plural-only
          tools: "scissors", "tongs", "pliers", "tweezers").

        Mass nouns are not marked in WordNet: "water", "news" count as singular.

        >>> m = Morphology({"noun": frozenset({"trouser", "spectacle", "spectacles", "scissors",
        ...                                   "pair_of_scissors", "foot", "dog", "bus", "glass"})},
        ...                {"noun": {"feet": frozenset({"foot"})}})
        >>> [m.is_plural(w) for w in ["trousers", "spectacles", "scissors", "feet", "red dogs"]]
        [True, True, True, True, True]
        >>> [m.is_plural(w) for w in ["dog", "bus", "glass", "foot", ""]]
        [False, False, False, False, False]
        """
        words = phrase.lower().replace("_", " ").split()
        if not words:
            return False
        head = words[-1]
        nouns = self.lemmas.get("noun", frozenset())
        listed = self.exceptions.get("noun", {}).get(head)
        if listed is not None and listed - {head}:
            return True
        if head.endswith("s") and not head.endswith("ss") and \
                self.base_forms(head, "noun") - {head}:
            return True
        return head in nouns and f"pair_of_{head}" in nouns


def _local(iri: object) -> str:
    return str(iri).rsplit("/", 1)[-1].rsplit("#", 1)[-1].rstrip(">")


MORPHOLOGY_VERSION = 1
"""The version of :func:`read_morphology`'s reading, part of its cache key in the store."""


@functools.cache
def read_morphology(store: KnowledgeStore) -> Morphology:
    """The store's WordNet lemmas and exception lists: read once per store (cached in this
    process, and for a store on disk inside its folder, :mod:`kg.storecache`,
    until the store changes). A ``wordnet`` graph built before the noun exception list was
    loaded is a :class:`kg.lexicon.LexiconError` naming the rebuild."""
    saved = storecache.load(store, "morphology", MORPHOLOGY_VERSION)
    if saved is None:
        saved = _read_morphology(store)
        storecache.save(store, "morphology", MORPHOLOGY_VERSION, saved)
    return Morphology({p: frozenset(v) for p, v in saved["lemmas"].items()},
                      {p: {f: frozenset(b) for f, b in v.items()}
                       for p, v in saved["exceptions"].items()})


def _read_morphology(store: KnowledgeStore) -> dict[str, Any]:
    """The lemmas and exception lists read from the store, as JSON can hold them."""
    g = _wordnet_graph(store)
    senses = ", ".join(f"<{WN[t].value}>" for t in _SENSE_POS)
    lemmas: dict[str, set[str]] = defaultdict(set)
    for r in store.query(f"""SELECT DISTINCT ?form ?type WHERE {{ GRAPH <{g}> {{
            ?sense <{WN.word.value}> ?w ; a ?type . ?w <{WN.lexicalForm.value}> ?form
            FILTER(?type IN ({senses})) }} }}""", max_rows=None):
        lemmas[_SENSE_POS[_local(r["type"])]].add(str(r["form"]).replace(" ", "_"))
    classes = ", ".join(f"<{KGP[c].value}>" for c in _FORM_POS)
    exceptions: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in store.query(f"""SELECT ?type ?form ?base WHERE {{ GRAPH <{g}> {{
            ?v a ?type ; <{KGP.inflectedForm.value}> ?form ; <{KGP.baseForm.value}> ?base
            FILTER(?type IN ({classes})) }} }}""", max_rows=None):
        exceptions[_FORM_POS[_local(r["type"])]][str(r["form"]).replace(" ", "_")].add(
            str(r["base"]).replace(" ", "_"))
    if "noun" not in exceptions:
        raise LexiconError("the store's wordnet graph has no noun exception list (kgp:NounForm, "
                           "from noun.exc): it was built before WordNet's morphology was loaded. "
                           "Rebuild it: python -m kg.build -s wordnet")
    return {"lemmas": {p: sorted(v) for p, v in lemmas.items()},
            "exceptions": {p: {f: sorted(b) for f, b in v.items()}
                           for p, v in exceptions.items()}}
