"""The semantic-relation probe files (queries/semrel): tuples, relatum sets, prompts.

The SPARQL runs against a hand-made miniature of the store (WordNet, HyperLex, category norms,
human probes) whose expected tuples and relatum sets are worked out below.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg import config
from kg.derived import materialise
from kg.store import LocalStore
from probes.backends.protocol import CAUSAL_LM
from probes.engine.export import instances_for
from probes.engine.spec import Probe, discover
from tests.data import require

SEMREL = Path(__file__).resolve().parents[1] / "queries" / "semrel"
RELATION_FILES = {"HYP": "hyp", "HPO": "hpo", "HOL": "hol", "MER": "mer", "ANT": "ant",
                  "SYN": "syn"}
FILE_RELATIONS = {"hyp": "HYP", "rhyp": "HPO", "holo": "HOL", "mero": "MER", "ant": "ANT",
                  "syn": "SYN"}

# Miniature WordNet: dog(1) < canine < animal < organism < being; puppy < dog(1);
# dog(2) = {dog, frank} < sausage; tail part-of dog(1); "hound" is in the synsets of dog(1) and
# of puppy (so for dog it is both a synonym and a hyponym: removed from both); hot <-> cold;
# rex is an instance of dog(1). Every synset is a noun synset but run's.
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
  ex:w-rex wn:lexicalForm "rex" . ex:s-rex wn:containsWordSense ex:ws-rex .
  ex:ws-rex wn:word ex:w-rex . ex:s-rex kgp:instanceHyponymOf ex:s-dog1 .
  ex:s-dog1 a wn:NounSynset . ex:s-dog2 a wn:NounSynset . ex:s-canine a wn:NounSynset .
  ex:s-animal a wn:NounSynset . ex:s-organism a wn:NounSynset . ex:s-being a wn:NounSynset .
  ex:s-puppy a wn:NounSynset . ex:s-sausage a wn:NounSynset . ex:s-tail a wn:NounSynset .
  ex:s-hot a wn:NounSynset . ex:s-cold a wn:NounSynset . ex:s-rex a wn:NounSynset .
  ex:w-run wn:lexicalForm "run" . ex:s-run wn:containsWordSense ex:ws-run .
  ex:ws-run wn:word ex:w-run . ex:s-run a wn:VerbSynset .
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
    reports = materialise(store.oxigraph)
    assert [r.name for r in reports] == ["semrel-source-tuples", "semrel-tuples",
                                         "semrel-relata"]
    return store


@pytest.fixture(scope="module")
def probes() -> dict[str, Probe]:
    return {p.spec.name: p for p in discover(None, ["semrel/*"])}


def gold_by_target(probe: Probe, store: LocalStore) -> dict[str, list[str]]:
    df = instances_for(probe, store)
    return {t: sorted(g) for t, g in df.select("target", "gold").rows()}


def test_tuples_before_and_after_augmentation(probes, mini_store) -> None:
    df = instances_for(probes["semrel/tuples"], mini_store)
    got = {(w, json.loads(f)["relation"], g[0]): sorted(json.loads(f)["derivation"])
           for w, g, f in df.select("target", "gold", "fields").rows()}
    # HyperLex is read with WORD2 as the target: hyp-1/hyp-2 (dog, animal) -> (animal, HPO, dog)
    # (once), mero (tail, dog) -> (dog, MER, tail), ant (hot, cold) -> (cold, ANT, hot); the norms
    # give (animal, HPO, dog) again (rank 1) but not cat (rank 11 <= 20, yet no WordNet noun);
    # cohyp, the verb pair and the unlisted category are dropped. Eqs. 4-7 add the reverses.
    assert got == {("animal", "HPO", "dog"): ["source"], ("dog", "HYP", "animal"): ["reversed"],
                   ("dog", "MER", "tail"): ["source"], ("tail", "HOL", "dog"): ["reversed"],
                   ("cold", "ANT", "hot"): ["source"], ("hot", "ANT", "cold"): ["reversed"]}


def test_relation_probe_targets_and_relatum_sets(probes, mini_store) -> None:
    # Targets: the targets of r's tuples and the words the annotators answered for r (puppy,
    # HYP: its set is computed too); the sets: tuple relata + noun-sense WordNet relata within
    # path length 2 (an instance at the first step: rex), conflicts removed (hound; for puppy
    # hound is a synonym and, in dog(1), a hypernym).
    assert gold_by_target(probes["semrel/hyp"], mini_store) == {
        "dog": ["animal", "canine", "sausage"], "puppy": ["canine", "dog"]}
    df = instances_for(probes["semrel/hyp"], mini_store)
    # answered = 1 marks the paper's W^r (section 6.1), 0 a word only a tuple has
    assert {t: json.loads(f)["answered"] for t, f in df.select("target", "fields").rows()} == {
        "dog": 0, "puppy": 1}
    assert gold_by_target(probes["semrel/hpo"], mini_store) == {
        "animal": ["canine", "dog", "hound"]}
    assert gold_by_target(probes["semrel/mer"], mini_store) == {"dog": ["tail"]}
    assert gold_by_target(probes["semrel/hol"], mini_store) == {"tail": ["dog", "hound"]}
    assert gold_by_target(probes["semrel/ant"], mini_store) == {"cold": ["hot"],
                                                                "hot": ["cold"]}
    assert gold_by_target(probes["semrel/syn"], mini_store) == {}
    # trick probes: the relata of the relation's tuples in the target slot
    assert gold_by_target(probes["semrel/hyp-trick"], mini_store) == {
        "animal": ["being", "organism"]}
    assert gold_by_target(probes["semrel/mer-trick"], mini_store) == {"tail": []}


def test_relata_hold_every_relation_of_every_word(probes, mini_store) -> None:
    df = instances_for(probes["semrel/relata"], mini_store)
    got = {(t, json.loads(f)["relation"]): sorted(g)
           for t, g, f in df.select("target", "gold", "fields").rows()}
    assert got[("dog", "HPO")] == ["puppy", "rex"]  # hound: also a synonym of dog, removed
    assert got[("dog", "SYN")] == ["frank"]
    assert got[("dog", "HYP")] == ["animal", "canine", "sausage"]
    assert ("dog", "ANT") not in got


def test_probe_files_are_short_selects_over_the_derived_graphs() -> None:
    for path in SEMREL.glob("*.rq"):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) < 40, path
        assert "derived/semrel-" in text, path
    assert list(SEMREL.parent.joinpath("derived").glob("*.rq")) != []


APPENDIX_A = {"HYP": 7, "HPO": 4, "HOL": 7, "MER": 6, "ANT": 9, "SYN": 7}


def test_prompts_are_appendix_a_lower_case(probes) -> None:
    from probes.benchmarks.semrel.humans import prompt_key

    path = require(config.data_dir() / "cao-probe-responses" / "human_responses.json.gz",
                   "the human responses of Cao et al.")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    human: dict[str, set[str]] = defaultdict(set)
    for rels in data.values():
        for rel, by_prompt in rels.items():
            human[FILE_RELATIONS[rel]].update(prompt_key(p) for p in by_prompt)
    for code, stem in RELATION_FILES.items():
        spec = probes[f"semrel/{stem}"].spec
        assert len(spec.prompts) == APPENDIX_A[code]
        assert spec.params["lower_case"] is True and spec.params["slot_det"] == "both"
        assert all(t == t.lower().replace("[det]", "[DET]").replace("[w]", "[W]")
                   .replace("[v]", "[V]") for t in spec.prompts)
        # every Appendix A prompt keys a prompt of the response file
        assert {prompt_key(t) for t in spec.prompts} <= human[code]
    assert "[DET] [W] is the opposite of [DET] [V]" in probes["semrel/ant"].spec.prompts
    assert sum(APPENDIX_A.values()) == 40


HUMANS = """
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
@prefix ex: <http://example.org/> .
GRAPH <https://w3id.org/kgprobe/graph/responses> {
  ex:hh1 a kgp:HumanProbe ; kgp:targetWord "dog" ; kgp:relationCode "HYP" ;
        kgp:prompt "[DET] [W] is a kind of [V]" .
  ex:a1 kgp:answerOf ex:hh1 ; kgp:annotator 1 ; kgp:position 1 ; kgp:normalisedText "animal" .
  ex:a2 kgp:answerOf ex:hh1 ; kgp:annotator 1 ; kgp:position 2 ; kgp:normalisedText "a pet" .
  ex:a3 kgp:answerOf ex:hh1 ; kgp:annotator 2 ; kgp:position 1 ; kgp:normalisedText "pet" .
  ex:a4 kgp:answerOf ex:hh1 ; kgp:annotator 3 ; kgp:position 1 ;
        kgp:normalisedText "good boy" .
  ex:a5 kgp:answerOf ex:hh1 ; kgp:annotator 4 ; kgp:position 1 ; kgp:normalisedText "animal" .
  ex:a6 kgp:answerOf ex:hh1 ; kgp:annotator 4 ; kgp:position 2 ; kgp:normalisedText "doggo" .
  ex:hh2 a kgp:HumanProbe ; kgp:targetWord "dog" ; kgp:relationCode "HYP" ;
        kgp:prompt "[W] is a baby [V]" .
  ex:a7 kgp:answerOf ex:hh2 ; kgp:annotator 1 ; kgp:position 1 ; kgp:normalisedText "cat" .
}
"""


def test_human_agent_ranks_counts_and_keeps_other_rows(probes, mini_store,
                                                       tmp_path: Path) -> None:
    from probes.benchmarks.semrel.humans import load_humans, relation_probes
    from probes.engine.export import export
    from probes.results import connect
    from probes.results.writers import Run, insert_run

    store = LocalStore.in_memory()
    store.oxigraph.load((MINI + HUMANS).encode(), format=ox.RdfFormat.TRIG)
    materialise(store.oxigraph)
    results = tmp_path / "r.duckdb"
    export(list(probes.values()), store, results, progress=False)
    con = connect(results)
    insert_run(con, Run(run_id="m1", model="some-model", probe="semrel/hyp", task=None,
                        status="done"))
    report = load_humans(con, store, relation_probes())
    rows = con.execute("""SELECT i.target, r.prompt_id, r.rank, r.token, r.probability
                          FROM responses r JOIN instances i USING (probe, split, instance_id)
                          WHERE r.run_id = 'human-semrel/hyp' ORDER BY rank""").fetchall()
    # 6 tokens pooled: animal 2, pet 2 (tie: both first at position 0 -> alphabetical),
    # "good boy" 1 (position 0), doggo 1 (position 1). The file's "[DET] [W] is a kind of [V]"
    # keys Appendix A's "[DET] [W] is a kind of [DET] [V]", prompt 1.
    assert [(t, p, k, w) for t, p, k, w, _ in rows] == [
        ("dog", 1, 1, "animal"), ("dog", 1, 2, "pet"), ("dog", 1, 3, "good boy"),
        ("dog", 1, 4, "doggo")]
    assert [p for *_, p in rows] == pytest.approx([2 / 6, 2 / 6, 1 / 6, 1 / 6])
    # answers (tokens) that are several words ("good boy") or no WordNet lemma (pet twice, doggo)
    assert report.multi_word == 1 and report.not_a_lemma == 3
    assert not report.unmatched_targets
    assert report.unmatched_prompts == {"HYP": 1}  # "[W] is a baby [V]" is not in Appendix A
    assert con.execute("SELECT count(*) FROM human_responses").fetchall()[0][0] == 6
    load_humans(con, store, relation_probes())  # again: replaced, not duplicated
    assert con.execute("SELECT count(*) FROM human_responses").fetchall()[0][0] == 6
    assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 7  # 6 human + m1


def test_lists_rank_the_whole_vocabulary_and_reach_the_set_size(probes) -> None:
    # Section 5: "The list returned by models is as long as their vocabulary"; eq. 13 sets
    # completeness's k to the relatum set size (eq. 24 distinguishability's too), so the stored
    # list must not be shorter than the set: 100 answers, or the set size rounded up to 2^n.
    from probes.engine.tasks import Instance, TaskContext
    from probes.engine.tasks.relatum import TASK

    for stem in RELATION_FILES.values():
        params = probes[f"semrel/{stem}"].spec.params
        assert params["vocab"] == "all" and params["top_k_gold"] is True, stem
        assert probes[f"semrel/{stem}-trick" if stem in ("hyp", "hpo", "hol", "mer")
                      else f"semrel/{stem}"].spec.params["vocab"] == "all"
    spec = probes["semrel/hpo"].spec
    ctx = TaskContext(CAUSAL_LM, 10)
    for n, k in ((3, 100), (100, 100), (101, 128), (600, 1024)):
        inst = Instance("semrel/hpo", "test", "i", "animal", [f"w{i}" for i in range(n)], [], {})
        assert {dict(r.options)["k"] for item in TASK.items(inst, spec, ctx)
                for r in item.requests} == {k}, n
