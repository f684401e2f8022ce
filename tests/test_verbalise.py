"""The OntoLAMA verbaliser (probes/benchmarks/ontolama/verbalise.py) against the rules of the
paper's Table 1.

Worked examples whose expected strings come from OntoLAMA's authors:

- the Complex SI example of the OntoLAMA dataset card (krr-oxford/OntoLAMA on the Hugging Face
  hub, FoodOn): ``ham and cheese sandwich ⊓ ∃derives_from.lima_bean_(whole)`` is verbalised
  "ham and cheese sandwich that derives from some lima bean (whole)";
- the two merging examples the authors give for Table 1's conjunction and disjunction rules
  (DeepOnto's verbaliser documentation): "sea food and non-vegetarian product that derives
  from some shark and goldfish" and "sea food or non-vegetarian product or something that
  derives from some shark or goldfish";
- the figure example of the DeepOnto parser (FoodOn's cephalopod food product): "mollusk food
  product that derives from some cephalopod".

- the five verbalised complex concepts of the paper's Table 6 (GO and FoodOn; their IRIs are
  the real ones where the operand order depends on them), and the "is" rule's examples of
  Appendix C ("characteristic of" → "is characteristic of", "realised in" → "is realised in").

The other cases follow Table 1 row by row (¬, ∃, ∀, the three conjunction cases). Parts of
speech come from a hand-made WordNet graph (tests/wordnet_mini.py) read through kg.lexicon, as
the verbaliser reads the store's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg.build import load_source
from kg.lexicon import LexiconError, parts_of_speech
from kg.manifest import pick
from kg.store import LocalStore
from probes.benchmarks.ontolama.verbalise import (
    And,
    MissingName,
    Named,
    Not,
    Only,
    Or,
    PosLexicon,
    Some,
    Verbaliser,
    article,
    entities,
    functional,
    replace,
)
from tests.wordnet_mini import add_mini_wordnet, write_mini_wordnet

NAMES = {
    "sandwich": "ham and cheese sandwich", "lima": "lima bean (whole)",
    "f1-seafood": "sea food", "f2-nonveg": "non-vegetarian product", "f3-shark": "shark",
    "f4-goldfish": "goldfish", "mollusk": "mollusk food product", "cephalopod": "cephalopod",
    "pizza": "pizza", "mozzarella": "mozzarella topping", "tomato": "tomato topping",
    "fish": "fish topping", "meat": "meat topping", "hot": "hot", "topping": "pizza topping",
}
PROPS = {"derives": "derives from", "topping": "has topping", "spiciness": "has spiciness",
         "part": "part of", "located": "located in", "negreg": "negatively regulates"}


@pytest.fixture(scope="module")
def wordnet_store(tmp_path_factory: pytest.TempPathFactory) -> LocalStore:
    store = ox.Store()
    add_mini_wordnet(store, tmp_path_factory.mktemp("wordnet"))
    return LocalStore(store)


@pytest.fixture(scope="module")
def lexicon(wordnet_store: LocalStore) -> PosLexicon:
    return PosLexicon.from_store(wordnet_store)


def test_lexicon_reads_the_wordnet_graph(wordnet_store: LocalStore, lexicon: PosLexicon) -> None:
    assert parts_of_speech(wordnet_store, "characteristic") == {"noun", "adjective"}
    assert parts_of_speech(wordnet_store, "output") == {"noun", "verb"}
    assert parts_of_speech(wordnet_store, "spoken") == {"adjective"}
    assert parts_of_speech(wordnet_store, "had") == set()  # a verb form, not a lemma
    assert dict(lexicon.verb_forms) == {"had": {"have"}, "made": {"make"}, "spoken": {"speak"}}
    assert {"part", "in", "over"} <= lexicon.nouns and "on" in lexicon.adjectives
    # verb forms are no lemmas: semrel counts answers against wn:lexicalForm
    forms = {str(r["f"]) for r in wordnet_store.query(
        "SELECT ?f WHERE { GRAPH ?g { ?w <http://www.w3.org/2006/03/wn/wn20/schema/lexicalForm> "
        "?f } }")}
    assert "had" not in forms and "have" in forms


@pytest.fixture(scope="module")
def v(lexicon: PosLexicon) -> Verbaliser:
    return Verbaliser(NAMES, PROPS, lexicon)


def test_dataset_card_example(v: Verbaliser) -> None:
    e = And((Named("sandwich"), Some("derives", Named("lima"))))
    assert v(e) == "ham and cheese sandwich that derives from some lima bean (whole)"


def test_cephalopod_example(v: Verbaliser) -> None:
    e = And((Named("mollusk"), Some("derives", Named("cephalopod"))))
    assert v(e) == "mollusk food product that derives from some cephalopod"


def test_merging_examples(v: Verbaliser) -> None:
    conj = And((Named("f1-seafood"), Named("f2-nonveg"), Some("derives", Named("f3-shark")),
                Some("derives", Named("f4-goldfish"))))
    assert v(conj) == ("sea food and non-vegetarian product that derives from some shark "
                       "and goldfish")
    disj = Or((Named("f1-seafood"), Named("f2-nonveg"), Some("derives", Named("f3-shark")),
               Some("derives", Named("f4-goldfish"))))
    assert v(disj) == ("sea food or non-vegetarian product or something that derives from "
                       "some shark or goldfish")


def test_table1_rows(v: Verbaliser) -> None:
    assert v(Named("pizza")) == "pizza"
    assert v(Not(Named("meat"))) == "not meat topping"
    assert v(Some("topping", Named("fish"))) == "something that has topping some fish topping"
    assert v(Only("topping", Named("tomato"))) == "something that has topping only tomato topping"
    # (a) only restrictions, on different properties: no merging; ordered by property IRI
    assert v(And((Some("topping", Named("mozzarella")), Some("spiciness", Named("hot"))))) == (
        "something that has spiciness some hot and has topping some mozzarella topping")
    # (c) no restriction
    assert v(And((Named("pizza"), Not(Named("meat"))))) == "pizza and not meat topping"
    # a negated restriction is not a restriction: case (c)
    veg = And((Named("pizza"), Not(Some("topping", Named("fish"))),
               Not(Some("topping", Named("meat")))))
    assert v(veg) == ("pizza and not something that has topping some fish topping and not "
                      "something that has topping some meat topping")


def test_merging_keeps_quantifiers_apart(v: Verbaliser) -> None:
    e = And((Named("pizza"), Some("topping", Named("mozzarella")),
             Only("topping", Named("tomato"))))
    assert v(e) == ("pizza that has topping some mozzarella topping and has topping only "
                    "tomato topping")


def test_nested_expression(v: Verbaliser) -> None:
    e = And((Named("pizza"), Some("topping", And((Named("topping"),
                                                   Some("spiciness", Named("hot")))))))
    assert v(e) == ("pizza that has topping some pizza topping that has spiciness some hot")


def test_nested_junctions_are_flattened(v: Verbaliser) -> None:
    e = And((Named("pizza"), And((Some("topping", Named("fish")),
                                  Some("topping", Named("meat"))))))
    assert v(e) == "pizza that has topping some fish topping and meat topping"


def test_is_rule(v: Verbaliser) -> None:
    assert v(Some("part", Named("pizza"))) == "something that is part of some pizza"
    assert v(Some("located", Named("pizza"))) == "something that is located in some pizza"
    assert v(Some("negreg", Named("pizza"))) == "something that negatively regulates some pizza"


@pytest.mark.parametrize(("name", "expected"), [
    ("part of", True), ("member of", True), ("capable of", True), ("characteristic of", True),
    ("realized in", True), ("in taxon", False), ("from", False), ("on", False),
    ("located in", True), ("surrounded by", True), ("output of", True),
    ("has part", False), ("derives from", False), ("regulates", False), ("results in", False),
    ("negatively regulates", False), ("is topping of", False), ("occurs in", False),
    # irregular verb forms (verb.exc) that WordNet also lists as adjectives: no "is"
    ("made of", False), ("spoken by", False),
])
def test_pos_lexicon(lexicon: PosLexicon, name: str, expected: bool) -> None:
    assert lexicon.needs_is(name) is expected


def test_lexicon_without_wordnet_graph_names_the_fix() -> None:
    with pytest.raises(LexiconError, match=r"python -m kg\.build -s wordnet"):
        PosLexicon.from_store(LocalStore.in_memory())


def test_lexicon_of_a_graph_without_verb_forms_names_the_fix(tmp_path: Path) -> None:
    """A wordnet graph built before verb.exc was loaded would silently lose rule 3."""
    files = write_mini_wordnet(tmp_path)[:5]  # without verb.exc
    store = ox.Store()
    source = dataclasses.replace(pick(["wordnet"])[0], options={"check_version": False})
    load_source(store, source, files, tmp_path)
    with pytest.raises(LexiconError, match=r"irregular verb forms.*-s wordnet"):
        PosLexicon.from_store(LocalStore(store))


def test_missing_name(v: Verbaliser) -> None:
    with pytest.raises(MissingName, match="nameless"):
        v(And((Named("pizza"), Named("nameless"))))
    with pytest.raises(MissingName, match="property <p>"):
        v(Some("p", Named("pizza")))


def test_article() -> None:
    assert [article(t) for t in ["egg", "onion", "pizza", "university", "something that x"]] == [
        "an", "an", "a", "an", ""]


def test_functional_entities_replace() -> None:
    e = And((Named("http://x/A"), Some("http://x/r", Or((Named("http://x/B"),
                                                         Not(Named("http://x/C")))))))
    assert functional(e) == ("ObjectIntersectionOf(<http://x/A> ObjectSomeValuesFrom(<http://x/r> "
                             "ObjectUnionOf(<http://x/B> ObjectComplementOf(<http://x/C>))))")
    assert [i for _, i in entities(e)] == ["http://x/A", "http://x/r", "http://x/B", "http://x/C"]
    swapped = replace(e, "http://x/B", "http://x/D")
    assert "http://x/D" in functional(swapped) and "http://x/B" not in functional(swapped)
    assert replace(e, "http://x/r", "http://x/s") != e


# --- the paper's Table 6 (He et al. 2023, Appendix D) and Appendix C -------------------------

OBO = "http://purl.obolibrary.org/obo/"
T6_CLASSES = {
    "bioreg": "biological regulation", "proline": "proline biosynthetic process",
    "apoptotic": "apoptotic process", "luteolysis": "lutelysis",  # the paper's spelling
    "concn": "concentration of", "fucose": "fucose", "material": "material entity",
    OBO + "ENVO_00003030": "silage", OBO + "FOODON_00001015": "plant food product",
    "timothy": "timothy plant", "trifolium": "trifolium pratense",
    "apple": "apple (whole or parts)", "peel": "apple peel",
}
T6_PROPS = {"negreg": "negatively regulates", "partof": "part of",
            "charof": "characteristic of", "derives": "derives from", "haspart": "has part",
            "realised": "realised in"}


@pytest.fixture(scope="module")
def v6(lexicon: PosLexicon) -> Verbaliser:
    return Verbaliser(T6_CLASSES, T6_PROPS, lexicon)


def test_table6_go_regulation(v6: Verbaliser) -> None:
    e = And((Named("bioreg"), Some("negreg", Named("proline"))))
    assert v6(e) == ("biological regulation that negatively regulates some proline "
                     "biosynthetic process")


def test_table6_go_part_of(v6: Verbaliser) -> None:
    e = And((Named("apoptotic"), Some("partof", Named("luteolysis"))))
    assert v6(e) == "apoptotic process that is part of some lutelysis"


def test_table6_nested_and_name_ending_in_a_preposition(v6: Verbaliser) -> None:
    e = And((Named("concn"), Some("charof", And((Named("fucose"),
                                                  Some("partof", Named("material")))))))
    assert v6(e) == ("concentration of something that is characteristic of some fucose that "
                     "is part of some material entity")


def test_table6_operand_order_is_the_owl_api_order(v6: Verbaliser) -> None:
    """Table 6 writes the formula ∃derivesFrom.(…) ⊓ PlantFoodProd ⊓ Silage but verbalises
    "silage and plant food product …": named operands are ordered by IRI (ENVO_00003030
    before FOODON_00001015), whatever the order of the RDF list."""
    expected = ("silage and plant food product that derives from some timothy plant or "
                "trifolium pratense")
    restriction = Some("derives", Or((Named("timothy"), Named("trifolium"))))
    silage, plant = Named(OBO + "ENVO_00003030"), Named(OBO + "FOODON_00001015")
    assert v6(And((restriction, plant, silage))) == expected
    assert v6(And((silage, restriction, plant))) == expected


def test_table6_negated_restriction(v6: Verbaliser) -> None:
    e = And((Named("apple"), Not(Some("haspart", Named("peel")))))
    assert v6(e) == "apple (whole or parts) and not something that has part some apple peel"


def test_appendix_c_is_rule(v6: Verbaliser) -> None:
    assert v6.property("charof") == "is characteristic of"
    assert v6.property("realised") == "is realised in"
    assert v6.property("derives") == "derives from"


@pytest.mark.parametrize("preposition", ["in", "on", "about", "over", "from", "of", "at"])
def test_is_rule_never_fires_on_a_preposition(lexicon: PosLexicon, preposition: str) -> None:
    """WordNet lists "in" (inch), "on", "about", "over" as nouns or adjectives; none gets
    "is" (issue 11: "is in taxon" in 70 % of FoodOn complex samples before)."""
    assert not lexicon.needs_is(f"{preposition} taxon")
    assert not PosLexicon.small().needs_is(f"{preposition} taxon")
