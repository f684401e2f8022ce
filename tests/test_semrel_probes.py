"""The semantic-relation probe files (queries/semrel): tuples, relatum sets, prompts.

The SPARQL runs against a hand-made miniature of the store (WordNet, HyperLex, category norms,
human probes) whose expected tuples and relatum sets are worked out below.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg import config
from kg.store import LocalStore
from probes.export import instances_for
from probes.spec import Probe, discover

SEMREL = Path(__file__).resolve().parents[1] / "queries" / "semrel"
RELATION_FILES = {"HYP": "hyp", "HPO": "hpo", "HOL": "hol", "MER": "mer", "ANT": "ant",
                  "SYN": "syn"}
FILE_RELATIONS = {"hyp": "HYP", "rhyp": "HPO", "holo": "HOL", "mero": "MER", "ant": "ANT",
                  "syn": "SYN"}

# Miniature WordNet: dog(1) < canine < animal < organism < being; puppy < dog(1);
# dog(2) = {dog, frank} < sausage; tail part-of dog(1); "hound" is in the synsets of dog(1) and
# of puppy (so for dog it is both a synonym and a hyponym: removed from both); hot <-> cold.
MINI = """
@prefix wn: <http://www.w3.org/2006/03/wn/wn20/schema/> .
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
@prefix ex: <http://example.org/> .
GRAPH <https://w3id.org/kgprobe/graph/wordnet> {
  ex:w-dog wn:lexicalForm "dog" . ex:w-canine wn:lexicalForm "canine" .
  ex:w-animal wn:lexicalForm "animal" . ex:w-organism wn:lexicalForm "organism" .
  ex:w-being wn:lexicalForm "being" . ex:w-puppy wn:lexicalForm "puppy" .
  ex:w-frank wn:lexicalForm "frank" . ex:w-sausage wn:lexicalForm "sausage" .
  ex:w-tail wn:lexicalForm "tail" . ex:w-hound wn:lexicalForm "hound" .
  ex:w-hot wn:lexicalForm "hot" . ex:w-cold wn:lexicalForm "cold" .
  ex:w-hotdog wn:lexicalForm "hot dog" .
  ex:s-dog1 wn:containsWordSense ex:ws-dog1, ex:ws-hound1, ex:ws-hotdog1 .
  ex:ws-dog1 wn:word ex:w-dog . ex:ws-hound1 wn:word ex:w-hound .
  ex:ws-hotdog1 wn:word ex:w-hotdog .
  ex:s-dog2 wn:containsWordSense ex:ws-dog2, ex:ws-frank .
  ex:ws-dog2 wn:word ex:w-dog . ex:ws-frank wn:word ex:w-frank .
  ex:s-canine wn:containsWordSense ex:ws-canine . ex:ws-canine wn:word ex:w-canine .
  ex:s-animal wn:containsWordSense ex:ws-animal . ex:ws-animal wn:word ex:w-animal .
  ex:s-organism wn:containsWordSense ex:ws-organism . ex:ws-organism wn:word ex:w-organism .
  ex:s-being wn:containsWordSense ex:ws-being . ex:ws-being wn:word ex:w-being .
  ex:s-puppy wn:containsWordSense ex:ws-puppy, ex:ws-hound2 .
  ex:ws-puppy wn:word ex:w-puppy . ex:ws-hound2 wn:word ex:w-hound .
  ex:s-sausage wn:containsWordSense ex:ws-sausage . ex:ws-sausage wn:word ex:w-sausage .
  ex:s-tail wn:containsWordSense ex:ws-tail . ex:ws-tail wn:word ex:w-tail .
  ex:s-hot wn:containsWordSense ex:ws-hot . ex:ws-hot wn:word ex:w-hot .
  ex:s-cold wn:containsWordSense ex:ws-cold . ex:ws-cold wn:word ex:w-cold .
  ex:ws-hot wn:antonymOf ex:ws-cold . ex:ws-cold wn:antonymOf ex:ws-hot .
  ex:s-dog1 wn:hyponymOf ex:s-canine . ex:s-canine wn:hyponymOf ex:s-animal .
  ex:s-animal wn:hyponymOf ex:s-organism . ex:s-organism wn:hyponymOf ex:s-being .
  ex:s-puppy wn:hyponymOf ex:s-dog1 . ex:s-dog2 wn:hyponymOf ex:s-sausage .
  ex:s-tail wn:partMeronymOf ex:s-dog1 .
}
GRAPH <https://w3id.org/kgprobe/graph/hyperlex> {
  ex:p1 a kgp:WordPair ; kgp:pos "N" ; kgp:relationType "hyp-2" ;
        kgp:word1 "dog" ; kgp:word2 "animal" .
  ex:p2 a kgp:WordPair ; kgp:pos "N" ; kgp:relationType "hyp-1" ;
        kgp:word1 "dog" ; kgp:word2 "animal" .
  ex:p3 a kgp:WordPair ; kgp:pos "N" ; kgp:relationType "mero" ;
        kgp:word1 "tail" ; kgp:word2 "dog" .
  ex:p4 a kgp:WordPair ; kgp:pos "N" ; kgp:relationType "ant" ;
        kgp:word1 "hot" ; kgp:word2 "cold" .
  ex:p5 a kgp:WordPair ; kgp:pos "N" ; kgp:relationType "cohyp" ;
        kgp:word1 "cat" ; kgp:word2 "dog" .
  ex:p6 a kgp:WordPair ; kgp:pos "V" ; kgp:relationType "hyp-1" ;
        kgp:word1 "run" ; kgp:word2 "move" .
}
GRAPH <https://w3id.org/kgprobe/graph/norms> {
  ex:e1 a kgp:CategoryExemplar ; kgp:category "four-footed animal" ; kgp:rank 1 ;
        kgp:exemplar "dog" .
  ex:e2 a kgp:CategoryExemplar ; kgp:category "four-footed animal" ; kgp:rank 11 ;
        kgp:exemplar "cat" .
  ex:e3 a kgp:CategoryExemplar ; kgp:category "girls first name" ; kgp:rank 1 ;
        kgp:exemplar "mary" .
}
GRAPH <https://w3id.org/kgprobe/graph/responses> {
  ex:h1 a kgp:HumanProbe ; kgp:targetWord "puppy" ; kgp:relationCode "HYP" .
}
"""


@pytest.fixture(scope="module")
def mini_store() -> LocalStore:
    store = LocalStore.in_memory()
    store.oxigraph.load(MINI.encode(), format=ox.RdfFormat.TRIG)
    return store


@pytest.fixture(scope="module")
def probes() -> dict[str, Probe]:
    return {p.spec.name: p for p in discover(None, ["semrel/*"])}


def gold_by_target(probe: Probe, store: LocalStore) -> dict[str, list[str]]:
    df = instances_for(probe, store)
    return {t: sorted(g) for t, g in df.select("target", "gold").rows()}


def test_tuples_are_mapped_augmented_and_deduplicated(probes, mini_store) -> None:
    df = instances_for(probes["semrel/tuples"], mini_store)
    got = sorted((json.loads(f)["word"], json.loads(f)["relation"], json.loads(f)["relatum"])
                 for f in df["fields"])
    # hyp-1 and hyp-2 (dog, animal) and the norms' dog -> "animal" give one HYP tuple and its
    # reverse; cohyp, verbs, rank > 10 and first names are dropped.
    assert got == [("animal", "HPO", "dog"), ("cold", "ANT", "hot"), ("dog", "HYP", "animal"),
                   ("dog", "MER", "tail"), ("hot", "ANT", "cold"), ("tail", "HOL", "dog")]


def test_relation_probe_targets_and_relatum_sets(probes, mini_store) -> None:
    hyp = gold_by_target(probes["semrel/hyp"], mini_store)
    # targets: the HYP/HPO tuple words (dog, animal) and the human HYP target puppy.
    # dog: both senses, path <= 2 (organism is 3 away); puppy: "hound" is also its synonym.
    assert hyp == {"animal": ["being", "organism"], "dog": ["animal", "canine", "sausage"],
                   "puppy": ["canine", "dog"]}
    hpo = gold_by_target(probes["semrel/hpo"], mini_store)
    # animal: canine, then dog(1) = {dog, hound} two steps down (puppy is three); dog: hound is
    # removed (it is also a synonym of dog)
    assert hpo == {"animal": ["canine", "dog", "hound"], "dog": ["puppy"]}
    syn = gold_by_target(probes["semrel/syn"], mini_store)
    assert syn == {}  # no SYN tuples and no human SYN targets
    assert gold_by_target(probes["semrel/mer"], mini_store) == {"dog": ["tail"],
                                                                 "tail": []}
    # the holonyms of tail: every word of the synset dog(1)
    assert gold_by_target(probes["semrel/hol"], mini_store) == {"dog": [],
                                                                 "tail": ["dog", "hound"]}
    assert gold_by_target(probes["semrel/ant"], mini_store) == {"cold": ["hot"],
                                                                 "hot": ["cold"]}


def test_relata_hold_every_relation_of_every_target(probes, mini_store) -> None:
    df = instances_for(probes["semrel/relata"], mini_store)
    sets = {(t, json.loads(f)["relation"]): sorted(g)
            for t, f, g in df.select("target", "fields", "gold").rows()}
    assert sets[("dog", "SYN")] == ["frank"]  # "hot dog" is not one word; hound conflicts
    assert sets[("dog", "HPO")] == ["puppy"]
    assert sets[("dog", "MER")] == ["tail"]
    assert ("dog", "ANT") not in sets
    assert sets[("puppy", "HYP")] == ["canine", "dog"]
    words = {t for t, _ in sets}
    assert {"dog", "animal", "puppy", "tail", "hot", "cold"} <= words


def _block(text: str, name: str) -> str:
    m = re.search(rf"# --- {name}: begin.*?# --- {name}: end", text, re.S)
    assert m, f"no {name} block"
    return "\n".join(line.strip() for line in m.group(0).splitlines())


def test_shared_blocks_are_identical_in_every_file() -> None:
    texts = {p.name: p.read_text(encoding="utf-8") for p in SEMREL.glob("*.rq")}
    assert len(texts) == 8
    for name in ("tuples", "wordnet"):
        blocks = {f: _block(t, name) for f, t in texts.items() if f"# --- {name}: begin" in t}
        assert len(set(blocks.values())) == 1, f"the {name} blocks differ: {sorted(blocks)}"
    assert sum("# --- wordnet: begin" in t for t in texts.values()) == 7


def test_prompts_are_the_human_files_per_relation(probes) -> None:
    path = config.data_dir() / "cao-probe-responses" / "human_responses.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    prompts: dict[str, set[str]] = defaultdict(set)
    for rels in data.values():
        for rel, by_prompt in rels.items():
            prompts[FILE_RELATIONS[rel]].update(by_prompt)
    for code, stem in RELATION_FILES.items():
        spec = probes[f"semrel/{stem}"].spec
        assert set(spec.prompts) == prompts[code]
        assert len(spec.prompts) == len(set(spec.prompts))
        assert spec.params["slot_det"] == "both"
    assert {c: len(prompts[c]) for c in RELATION_FILES} == {
        "HYP": 7, "HPO": 7, "HOL": 7, "MER": 6, "ANT": 9, "SYN": 7}


HUMANS = """
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
@prefix ex: <http://example.org/> .
GRAPH <https://w3id.org/kgprobe/graph/responses> {
  ex:h1 kgp:prompt "[DET] [W] is a kind of [V]" .
  ex:a1 kgp:answerOf ex:h1 ; kgp:annotator 1 ; kgp:position 1 ; kgp:normalisedText "dog" .
  ex:a2 kgp:answerOf ex:h1 ; kgp:annotator 1 ; kgp:position 2 ; kgp:normalisedText "a canine" .
  ex:a3 kgp:answerOf ex:h1 ; kgp:annotator 2 ; kgp:position 1 ; kgp:normalisedText "dog" .
  ex:a4 kgp:answerOf ex:h1 ; kgp:annotator 3 ; kgp:position 1 ;
        kgp:normalisedText "young dog" .
  ex:a5 kgp:answerOf ex:h1 ; kgp:annotator 4 ; kgp:position 1 ; kgp:normalisedText "doggo" .
  ex:h2 a kgp:HumanProbe ; kgp:targetWord "kitten" ; kgp:relationCode "HYP" ;
        kgp:prompt "[W] is a baby [V]" .
  ex:a6 kgp:answerOf ex:h2 ; kgp:annotator 1 ; kgp:position 1 ; kgp:normalisedText "cat" .
}
"""


def test_human_agent_ranks_counts_and_keeps_other_rows(probes, tmp_path: Path) -> None:
    from probes.export import export
    from probes.results import connect
    from probes.semrel import load_humans, relation_probes

    store = LocalStore.in_memory()
    store.oxigraph.load((MINI + HUMANS).encode(), format=ox.RdfFormat.TRIG)
    results = tmp_path / "r.duckdb"
    export(list(probes.values()), store, results, progress=False)
    con = connect(results)
    con.execute("INSERT INTO runs (run_id, model, probe, status) VALUES "
                "('m1', 'some-model', 'semrel/hyp', 'done')")
    report = load_humans(con, store, relation_probes())
    rows = con.execute("""SELECT i.target, r.prompt_id, r.rank, r.token, r.probability
                          FROM responses r JOIN instances i USING (probe, split, instance_id)
                          WHERE r.run_id = 'human-semrel/hyp' ORDER BY rank""").fetchall()
    # annotator 1: dog, canine (1/2 each of 1/4); 2: dog; 3: "young dog"; 4: "doggo"
    assert [(t, p, k, w) for t, p, k, w, _ in rows] == [
        ("puppy", 0, 1, "dog"), ("puppy", 0, 2, "doggo"), ("puppy", 0, 3, "young dog"),
        ("puppy", 0, 4, "canine")]
    assert [p for *_, p in rows] == pytest.approx([0.375, 0.25, 0.25, 0.125])
    assert report.multi_word == 1 and report.not_a_lemma == 1  # "young dog"; "doggo"
    assert report.unmatched_prompts == {"HYP": 1}  # "[W] is a baby [V]" is no template
    assert con.execute("SELECT count(*) FROM human_responses").fetchall()[0][0] == 5
    load_humans(con, store, relation_probes())  # again: replaced, not duplicated
    assert con.execute("SELECT count(*) FROM human_responses").fetchall()[0][0] == 5
    assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 7  # 6 human + m1
