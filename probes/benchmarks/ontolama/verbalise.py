"""OntoLAMA's recursive concept verbaliser (He et al., Findings of ACL 2023, Table 1).

A class expression is a small immutable tree of :class:`Named`, :class:`Not`, :class:`Some`
(∃r.C), :class:`Only` (∀r.C), :class:`And` (⊓) and :class:`Or` (⊔) (:mod:`kg.owl_expressions`,
re-exported here). :class:`Verbaliser` turns it into English bottom-up, one rule per pattern:

========================  ==========================================================
pattern                   verbalisation V
========================  ==========================================================
A (named class)           its name (``kgp:name``: the label, lower-cased)
r (object property)       its name, with "is" put in front when the name starts with
                          a passive verb, a noun or an adjective (:class:`PosLexicon`)
¬C                        "not V(C)"
∃r.C                      "something that V(r) some V(C)"
∀r.C                      "something that V(r) only V(C)"
C1 ⊓ ... ⊓ Cn             restrictions on the same property with the same quantifier
                          are merged first: ∃r.D1 ⊓ ∃r.D2 becomes ∃r.(D1 ⊓ D2). Then
                          (a) all Ci restrictions: "something that V(r1) some V(D1)
                          and ... and V(rn) some V(Dn)";
                          (b) some restrictions: "V(C1) and ... and V(Cm) that
                          V(r_m+1) some V(D_m+1) and ... and V(rn) some V(Dn)";
                          (c) no restriction: "V(C1) and ... and V(Cn)"
C1 ⊔ ... ⊔ Cn             as ⊓ with "or" (merging ∃r.D1 ⊔ ∃r.D2 into ∃r.(D1 ⊔ D2));
                          case (b) is verbalised as case (c)
========================  ==========================================================

Operands are verbalised in a stable order, the OWL API's (:func:`operand_key`: named classes
by IRI, then intersections, unions, complements, ∃ and ∀ restrictions), so the text does not
depend on the order of the RDF list in the file; in case (b) the non-restrictions come first. A
name that ends in a preposition ("concentration of") is followed by "something" before the
relative clause of case (b) (Table 6: "concentration of something that is characteristic of
…"). :func:`article` is the paper's ``<A>`` rule
for the templates. :func:`functional` writes an expression in OWL functional syntax (the
``axiom`` field of OntoLAMA's files).

>>> names = {"pz": "pizza", "mz": "mozzarella topping", "tm": "tomato topping"}
>>> v = Verbaliser(names, {"ht": "has topping"}, lexicon=PosLexicon.small())
>>> v(And((Named("pz"), Some("ht", Named("mz")), Some("ht", Named("tm")))))
'pizza that has topping some mozzarella topping and tomato topping'
>>> v(Only("ht", Or((Named("mz"), Named("tm")))))
'something that has topping only mozzarella topping or tomato topping'
>>> article("apple"), article("pizza"), article("something that has topping some cheese")
('an', 'a', '')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kg.lexicon import read_lexicon
from kg.owl_expressions import (
    And,
    Expr,
    Named,
    Not,
    Only,
    Or,
    Restriction,
    Some,
    entities,
    functional,
    replace,
)
from kg.store import KnowledgeStore
from probes.engine.errors import ProbeError

__all__ = [
    "CLOSED_CLASS", "And", "Expr", "MissingName", "Named", "Not", "Only", "Or", "PosLexicon",
    "Restriction", "Some", "Verbaliser", "article", "entities", "functional", "operand_key",
    "replace",
]


# The expression tree (Named ... Or, functional, entities, replace) lives in kg.owl_expressions
# and is re-exported here for the verbaliser's callers.


class MissingName(ProbeError):
    """An entity in an expression has no name, so the expression cannot be verbalised."""

    def __init__(self, iri: str, kind: str) -> None:
        super().__init__(f"{kind} <{iri}> has no name (no usable rdfs:label)")
        self.iri = iri
        self.kind = kind


# --- part of speech of a property name's first word ----------------------------------------

#: Closed-class words that a property name can start with and that are never a noun, an
#: adjective or a passive verb: prepositions (and particles, conjunctions, determiners). WordNet
#: lists some of them as nouns or adjectives ("in" = inch, "on", "about"), which is why they are
#: decided here first; a tagger (spaCy, the paper's choice) tags them ADP/SCONJ/DET.
CLOSED_CLASS = frozenset({
    "about", "above", "across", "after", "against", "along", "alongside", "amid", "among",
    "around", "as", "at", "before", "behind", "below", "beneath", "beside", "besides",
    "between", "beyond", "by", "despite", "down", "during", "except", "for", "from", "in",
    "inside", "into", "like", "near", "of", "off", "on", "onto", "out", "outside", "over",
    "past", "per", "since", "than", "through", "throughout", "till", "to", "toward", "towards",
    "under", "underneath", "unlike", "until", "up", "upon", "via", "with", "within", "without",
    "and", "or", "but", "nor", "if", "whether", "because", "while", "the", "a", "an", "some",
    "only", "not", "no", "all", "each", "every", "any",
})

_FINITE = frozenset({"is", "are", "was", "were", "be", "been", "has", "have", "had", "does", "do",
                     "did", "can", "may", "must", "should", "will", "would"})


@dataclass(frozen=True)
class PosLexicon:
    """Word lists for the "is" rule, read from the store's WordNet graph (:mod:`kg.lexicon`).

    :meth:`needs_is` looks at the first word ``w`` of a property name, in this order:

    0. ``w`` is a closed-class word (:data:`CLOSED_CLASS`: a preposition such as "in", "of",
       "from", a conjunction or a determiner): no "is", whatever WordNet lists it as;
    1. ``w`` is a finite auxiliary (is, has, does, can, ...): no "is";
    2. ``w`` ends in "-ed" and is a verb form (its stem, or a base form WordNet's
       ``verb.exc`` gives it, is a verb) or an adjective: a passive participle, so "is";
    3. ``w`` is a third-person verb form ("regulates", "derives", "carries", or a form listed
       in ``verb.exc`` such as "has"): no "is";
    4. ``w`` is a noun or an adjective ("part of", "member of", "capable of", "output of"):
       "is";
    5. anything else (an adverb as in "negatively regulates", a base-form verb, a word WordNet
       does not know): no "is".

    Nouns that are also verbs ("output of", "part of") count as nouns by rule 4, which is what
    property names starting with them mean.
    """

    nouns: frozenset[str]
    verbs: frozenset[str]
    adjectives: frozenset[str]
    verb_forms: Mapping[str, frozenset[str]]
    """Irregular verb form -> its base forms (WordNet's ``verb.exc``)."""

    @classmethod
    def from_store(cls, store: KnowledgeStore) -> PosLexicon:
        """The lexicon of the store's ``wordnet`` graph (:func:`kg.lexicon.read_lexicon`,
        cached); :class:`kg.lexicon.LexiconError` names the fix when the graph is missing."""
        lex = read_lexicon(store)
        return cls(lex.nouns, lex.verbs, lex.adjectives, lex.verb_forms)

    @classmethod
    def small(cls) -> PosLexicon:
        """A tiny hand-made lexicon for doctests and unit tests (never a fallback for WordNet):
        the suffix rules still work, nouns and adjectives are only those listed here."""
        nouns = frozenset({"part", "member", "output", "input", "quality", "bearer",
                           "topping", "base", "ingredient", "component", "participant"})
        verbs = frozenset({"have", "derive", "regulate", "occur", "result", "locate", "start",
                           "end", "happen", "contain", "produce", "output", "part"})
        adjectives = frozenset({"capable", "adjacent", "located", "characteristic"})
        return cls(nouns, verbs, adjectives, {"has": frozenset({"have"}),
                                              "does": frozenset({"do"}),
                                              "is": frozenset({"be"})})

    def _is_verb_stem(self, w: str, suffix: str) -> bool:
        stem = w[: -len(suffix)]
        candidates = {stem, stem + "e"}
        if len(stem) > 2 and stem[-1] == stem[-2]:
            candidates.add(stem[:-1])  # "stopped" -> "stop"
        if suffix == "ies":
            candidates = {stem + "y"}
        return any(c in self.verbs for c in candidates if c)

    def needs_is(self, name: str) -> bool:
        """Whether a property name gets "is" in front of it (rules in the class docstring).

        >>> lex = PosLexicon.small()
        >>> [lex.needs_is(n) for n in ["part of", "located in", "has topping", "derives from",
        ...                            "negatively regulates", "is topping of", "capable of",
        ...                            "in taxon", "from"]]
        [True, True, False, False, False, False, True, False, False]
        """
        words = name.split()
        if not words:
            return False
        w = words[0].lower()
        if w in CLOSED_CLASS or w in _FINITE:
            return False
        if len(w) > 3 and w.endswith("ed"):
            bases = self.verb_forms.get(w, frozenset())
            if (any(b in self.verbs for b in bases) or self._is_verb_stem(w, "ed")
                    or self._is_verb_stem(w, "d") or w in self.adjectives):
                return True
        if w in self.verb_forms and w not in self.nouns:
            return False
        for suffix in ("ies", "es", "s"):
            if len(w) > len(suffix) + 1 and w.endswith(suffix) and self._is_verb_stem(w, suffix):
                return False
        return w in self.nouns or w in self.adjectives


# --- the verbaliser -------------------------------------------------------------------------


def article(text: str) -> str:
    """OntoLAMA's ``<A>`` for a verbalised concept: nothing before "something", "an" before a
    vowel letter, else "a" (the rule of the paper's templates, no exceptions for sounds).

    >>> [article(t) for t in ["egg", "university", "hour", "something that is part of x"]]
    ['an', 'an', 'a', '']
    """
    t = text.strip().lower()
    if t.startswith("something"):
        return ""
    return "an" if t[:1] in ("a", "e", "i", "o", "u") else "a"


def _merge(e: And | Or) -> list[Expr]:
    """Flatten nested junctions of the same kind; merge restrictions on one property."""
    kind = type(e)
    flat: list[Expr] = []
    for x in e.operands:
        flat.extend(_merge(x) if isinstance(x, kind) else [x])
    groups: dict[tuple[type, str], list[Expr]] = {}
    order: list[Expr | tuple[type, str]] = []
    for x in flat:
        if isinstance(x, Some | Only):
            key = (type(x), x.prop)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(x.filler)
        else:
            order.append(x)
    out: list[Expr] = []
    for item in order:
        if isinstance(item, tuple):
            rtype, prop = item
            fillers = groups[item]
            filler = fillers[0] if len(fillers) == 1 else kind(tuple(fillers))
            out.append(rtype(prop, filler))
        else:
            out.append(item)
    return sorted(out, key=operand_key)


#: Rank of each kind of operand in a junction, as the OWL API orders class expressions (named
#: classes first, then intersections, unions, complements, existential and universal
#: restrictions).
_RANK = {"Named": 0, "And": 1, "Or": 2, "Not": 3, "Some": 4, "Only": 5}


def operand_key(e: Expr) -> tuple[int, str]:
    """The sort key of a junction's operand: its kind (:data:`_RANK`), then its text in OWL
    functional syntax (a named class: its IRI). Operands are verbalised in this order, so the
    text does not depend on the order of the RDF list in the source file; it is the order in
    which the OWL API (and so OntoLAMA's verbaliser) holds them: Table 6 verbalises
    ``∃derivesFrom.(…) ⊓ PlantFoodProd ⊓ Silage`` as "silage and plant food product that …",
    silage being ``obo:ENVO_00003030`` and plant food product ``obo:FOODON_00001015``.

    >>> ops = [Some("p", Named("b")), Named("z"), Not(Named("a")), Named("c")]
    >>> [type(x).__name__ for x in sorted(ops, key=operand_key)]
    ['Named', 'Named', 'Not', 'Some']
    >>> sorted(ops, key=operand_key)[:2]
    [Named(iri='c'), Named(iri='z')]
    """
    return _RANK[type(e).__name__], functional(e)


class Verbaliser:
    """Verbalise class expressions with the names of their classes and properties.

    ``class_names`` and ``property_names`` map IRIs to names; a missing name raises
    :class:`MissingName` (the caller decides what to skip).
    """

    def __init__(self, class_names: Mapping[str, str], property_names: Mapping[str, str],
                 lexicon: PosLexicon) -> None:
        self.class_names = class_names
        self.property_names = property_names
        self.lexicon = lexicon

    def __call__(self, e: Expr) -> str:
        return self.verbalise(e)

    def name(self, iri: str) -> str:
        """A named class's name."""
        name = self.class_names.get(iri)
        if not name:
            raise MissingName(iri, "class")
        return name

    def property(self, iri: str) -> str:
        """A property's name, with "is" in front when :meth:`PosLexicon.needs_is` says so.

        >>> Verbaliser({}, {"p": "part of"}, PosLexicon.small()).property("p")
        'is part of'
        """
        name = self.property_names.get(iri)
        if not name:
            raise MissingName(iri, "property")
        return f"is {name}" if self.lexicon.needs_is(name) else name

    def verbalise(self, e: Expr) -> str:
        """V(e) by the rules of Table 1 (module docstring)."""
        if isinstance(e, Named):
            return self.name(e.iri)
        if isinstance(e, Not):
            return f"not {self.verbalise(e.operand)}"
        if isinstance(e, Some | Only):
            return f"something that {self._restriction(e)}"
        return self._junction(e)

    def _restriction(self, e: Restriction) -> str:
        quantifier = "some" if isinstance(e, Some) else "only"
        return f"{self.property(e.prop)} {quantifier} {self.verbalise(e.filler)}"

    def _junction(self, e: And | Or) -> str:
        word = " and " if isinstance(e, And) else " or "
        operands = _merge(e)
        if len(operands) == 1:
            return self.verbalise(operands[0])
        plain = [x for x in operands if not isinstance(x, Some | Only)]
        restrictions = [x for x in operands if isinstance(x, Some | Only)]
        if not plain:  # case (a)
            return "something that " + word.join(self._restriction(r) for r in restrictions)
        if not restrictions or isinstance(e, Or):  # case (c); case (b) of a union
            return word.join(self.verbalise(x) for x in operands)
        head = word.join(self.verbalise(x) for x in plain)
        if head.split()[-1] in CLOSED_CLASS:  # "concentration of" + "something that ..."
            head += " something"
        return (head + " that "  # case (b)
                + word.join(self._restriction(r) for r in restrictions))
