"""The example probe files of ``queries/examples/`` (sampling idioms for probe authors), run on
small stores built here; expected instances are worked out in Python from the idiom each file
documents (seeded MD5 hashes, the hierarchy's closure), not taken from the query's output."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg.store import LocalStore
from kg.vocab import graph
from probes.engine.errors import ProbeFileError
from probes.engine.export import build_instances
from probes.engine.spec import load_probe, parse_probe

EXAMPLES = Path(__file__).parents[1] / "queries" / "examples"
KGP = "https://w3id.org/kgprobe/vocab#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
# category -> exemplars, most often produced first; "plum" is listed under two categories
NORMS = {
    "fruit": ["apple", "plum", "pear"],
    "bird": ["robin", "sparrow", "eagle"],
    "colour": ["red", "plum", "blue"],
    "tool": ["hammer", "saw", "drill"],
    "metal": ["iron", "copper", "gold"],
    "vehicle": ["car", "bus", "ice cream van"],
    "weapon": ["gun", "knife", "sword"],
}
# COPEN-like concept -> parent
TAXONOMY = {"Animal": None, "Bird": "Animal", "Owl": "Bird", "Fish": "Animal",
            "Tool": None, "Hammer": "Tool"}


def norms_store() -> LocalStore:
    g = graph("norms")
    quads = []
    for cat, exemplars in NORMS.items():
        for rank, word in enumerate(exemplars, start=1):
            e = ox.NamedNode(f"http://example.org/norms/{cat}-{rank}")
            quads += [ox.Quad(e, RDF_TYPE, ox.NamedNode(KGP + "CategoryExemplar"), g),
                      ox.Quad(e, ox.NamedNode(KGP + "category"), ox.Literal(cat), g),
                      ox.Quad(e, ox.NamedNode(KGP + "exemplar"), ox.Literal(word), g),
                      ox.Quad(e, ox.NamedNode(KGP + "rank"), ox.Literal(rank), g)]
    store = LocalStore.in_memory()
    store.oxigraph.extend(quads)
    return store


def copen_store() -> LocalStore:
    g = graph("copen")
    quads = []
    for name, parent in TAXONOMY.items():
        c = ox.NamedNode(f"http://example.org/copen/{name}")
        quads += [ox.Quad(c, RDF_TYPE, ox.NamedNode(KGP + "CopenConcept"), g),
                  ox.Quad(c, ox.NamedNode(SKOS + "prefLabel"), ox.Literal(name.lower()), g)]
        if parent:
            quads.append(ox.Quad(c, ox.NamedNode(SKOS + "broader"),
                                 ox.NamedNode(f"http://example.org/copen/{parent}"), g))
    store = LocalStore.in_memory()
    store.oxigraph.extend(quads)
    return store


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def test_choice_draws_4_distractors_by_the_seeded_hash() -> None:
    probe = load_probe(EXAMPLES / "choice-distractors.rq")
    df = build_instances(probe, norms_store())
    listed = {w: {c for c, ws in NORMS.items() if w in ws} for ws in NORMS.values() for w in ws}
    # targets: ranks 1-2 and listed under one category only ("plum" is under two)
    targets = {w for ws in NORMS.values() for w in ws[:2] if len(listed[w]) == 1}
    assert set(df["target"]) == targets and "plum" not in targets
    for row in df.iter_rows(named=True):
        word = row["target"]
        (gold,) = listed[word]
        others = [c for c in NORMS if c not in listed[word]]
        drawn = sorted(others, key=lambda c: md5(f"{word}|{c}|42"))[:4]
        assert row["gold"] == [gold]
        assert sorted(row["candidates"]) == sorted([gold, *drawn])
    assert build_instances(probe, norms_store()).equals(df)  # the same draw every time


def test_sampled_distractors_match_the_idiom() -> None:
    """Issue 30 point 7: the header option distractors: draws what the SPARQL idiom draws
    (choice-distractors.rq, here at small size), and what the hash says, worked out here."""
    store = norms_store()
    idiom = build_instances(load_probe(EXAMPLES / "choice-distractors.rq"), store)
    probe = load_probe(EXAMPLES / "choice-distractors-sampled.rq")
    assert probe.spec.distractors is not None and probe.spec.distractors.seed == 42
    sampled = build_instances(probe, store)
    key = ["split", "instance_id", "target", "gold", "candidates"]
    assert sampled.select(key).sort("target").equals(idiom.select(key).sort("target"))
    for row in sampled.iter_rows(named=True):
        (gold,) = row["gold"]
        others = sorted((c for c in NORMS if c != gold), key=lambda c: md5(
            f"{row['target']}|{c}|42"))
        assert row["candidates"] == sorted([gold, *others[:4]])
        assert "pool" not in json.loads(row["fields"])


def test_sampled_distractors_another_seed_and_a_short_pool(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = (EXAMPLES / "choice-distractors-sampled.rq").read_text()
    seven = build_instances(parse_probe(text.replace("seed: 42}", "seed: 7}"), "s.rq"),
                            norms_store())
    for row in seven.iter_rows(named=True):
        (gold,) = row["gold"]
        others = sorted((c for c in NORMS if c != gold), key=lambda c: md5(
            f"{row['target']}|{c}|7"))
        assert row["candidates"] == sorted([gold, *others[:4]])
    # 7 categories: 6 others per target, so n = 9 leaves every target short, in one line
    short = build_instances(parse_probe(text.replace("n: 4", "n: 9"), "s.rq"), norms_store())
    assert all(len(c) == 7 for c in short["candidates"])
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "got fewer" in x]
    assert f"{short.height} target(s) got fewer than 9 distractors" in line


def test_distractors_need_a_choice_probe() -> None:
    text = (EXAMPLES / "choice-distractors-sampled.rq").read_text()
    with pytest.raises(ProbeFileError, match="distractors: needs a choice probe"):
        parse_probe(text.replace("# task: choice", "# task: binary"), "b.rq")


def test_binary_negatives_are_unrelated_and_balanced() -> None:
    df = build_instances(load_probe(EXAMPLES / "binary-negatives.rq"), copen_store())

    def ancestors(c: str) -> set[str]:
        out, p = set(), TAXONOMY[c]
        while p:
            out.add(p)
            p = TAXONOMY[p]
        return out

    related = {(c.lower(), a.lower()) for c in TAXONOMY for a in ancestors(c)}
    unrelated = {(c.lower(), d.lower()) for c, d in itertools.permutations(TAXONOMY, 2)
                 if d not in ancestors(c) and c not in ancestors(d)}
    pairs = {(json.loads(f)["sub"], json.loads(f)["super"]): g[0]
             for f, g in zip(df["fields"], df["gold"], strict=True)}
    assert {p for p, label in pairs.items() if label == "true"} == related  # 5 < LIMIT 100
    assert {p for p, label in pairs.items() if label == "false"} == unrelated
    assert len(related) == 5 and len(unrelated) == 30 - 2 * 5


def test_relatum_gold_sets_are_the_single_word_exemplars() -> None:
    df = build_instances(load_probe(EXAMPLES / "relatum-gold-set.rq"), norms_store())
    got = {t: sorted(g) for t, g in zip(df["target"], df["gold"], strict=True)}
    assert got == {c: sorted(w for w in ws if " " not in w) for c, ws in NORMS.items()}
    assert "ice cream van" not in got["vehicle"]


@pytest.mark.parametrize("name", ["choice-distractors", "choice-distractors-sampled",
                                  "binary-negatives", "relatum-gold-set",
                                  "hypernymy-choice-wordnet"])
def test_examples_use_no_rand_and_name_their_idiom(name: str) -> None:
    text = (EXAMPLES / f"{name}.rq").read_text()
    probe = load_probe(EXAMPLES / f"{name}.rq")  # parses: header, seed, no RAND()
    assert probe.spec.name == f"examples/{name}"
    assert "# The idiom" in text


WN = "http://www.w3.org/2006/03/wn/wn20/schema/"


def sampled(word: str) -> bool:
    """The example's target sample: single words of 3+ letters whose MD5(word + "42") starts
    with "0" (fewer than its LIMITs here, so all of them)."""
    return hashlib.md5(f"{word}42".encode()).hexdigest().startswith("0") and word.isalpha()


def wordnet_store(hypernyms: dict[str, str], others: list[str]) -> LocalStore:
    """Noun synsets in the store's WordNet shape: one word each, ``word`` hyponymOf its
    ``hypernyms[word]``; ``others`` are nouns of their own."""
    g = graph("wordnet")
    quads = []
    words = sorted({*hypernyms, *hypernyms.values(), *others})
    for w in words:
        synset, sense, node = (ox.NamedNode(f"http://example.org/wn/{kind}-{w}")
                               for kind in ("synset", "sense", "word"))
        quads += [ox.Quad(synset, RDF_TYPE, ox.NamedNode(WN + "NounSynset"), g),
                  ox.Quad(synset, ox.NamedNode(WN + "containsWordSense"), sense, g),
                  ox.Quad(sense, RDF_TYPE, ox.NamedNode(WN + "NounWordSense"), g),
                  ox.Quad(sense, ox.NamedNode(WN + "word"), node, g),
                  ox.Quad(node, RDF_TYPE, ox.NamedNode(WN + "Word"), g),
                  ox.Quad(node, ox.NamedNode(WN + "lexicalForm"), ox.Literal(w), g)]
    for w, h in hypernyms.items():
        quads.append(ox.Quad(ox.NamedNode(f"http://example.org/wn/synset-{w}"),
                             ox.NamedNode(WN + "hyponymOf"),
                             ox.NamedNode(f"http://example.org/wn/synset-{h}"), g))
    store = LocalStore.in_memory()
    store.oxigraph.extend(quads)
    return store


def test_hypernymy_choice_draws_from_the_whole_noun_vocabulary() -> None:
    """Issue 46: the hypernymy choice probe of queries/examples draws 4 distractors per noun
    from every noun of the store (here 300 made-up ones besides the targets and their
    hypernyms), by the seeded hash worked out here; each instance keeps its 3 templates."""
    letters = ("".join(p) for p in itertools.product("abcdefghij", repeat=4))
    targets = list(itertools.islice((w for w in letters if sampled(w)), 12))
    hypernyms = {w: ["thing", "entity", "object"][i % 3] for i, w in enumerate(targets)}
    others = [f"noun{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(300)]
    store = wordnet_store(hypernyms, [*others, "cat"])  # "cat": not sampled, in the pool
    assert not sampled("cat")
    probe = load_probe(EXAMPLES / "hypernymy-choice-wordnet.rq")
    assert probe.spec.distractors is not None and len(probe.spec.prompts) == 3
    df = build_instances(probe, store)
    vocabulary = {*hypernyms, *hypernyms.values(), *others, "cat"}
    # sampled and with a hypernym: the 12 targets (sampled nouns without one are no target)
    assert sorted(df["target"]) == sorted(w for w in vocabulary if sampled(w) and w in hypernyms)
    assert len(targets) == 12 and any(sampled(w) for w in vocabulary - set(hypernyms))
    for row in df.iter_rows(named=True):
        gold = hypernyms[row["target"]]
        drawn = sorted((n for n in vocabulary if n != gold),
                       key=lambda n: md5(f"{row['target']}|{n}|42"))[:4]
        assert row["gold"] == [gold]
        assert row["candidates"] == sorted([gold, *drawn])
        assert "noun" not in json.loads(row["fields"])  # the pool variable is not a field
