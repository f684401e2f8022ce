"""Cao et al.'s definitions pinned on a second hand-worked results file (beside
tests/semrel_fixtures.py): what each equation averages over, the prototypicality probe set, the
normalisation of distinguishability, the target words W^r and the conflict rule. Each expected
value is worked out by hand below from the paper's equations (quoted), never from kgprobe.

No shared vocabulary is declared, so nothing is limited.

Instances of semrel/hyp (fields: relation, word, answered):

====== ======== ===================== ==========================================
word   answered gold Y^HYP (exported) other sets (semrel/relata)
====== ======== ===================== ==========================================
oak    1        {tree, plant}         HPO {sapling}
elm    1        {tree}                -
ash    0        {tree}                - (only a tuple has it: W^r of 'tuples')
====== ======== ===================== ==========================================

Tuples: (oak, HYP, tree), (oak, HYP, wood) (wood was removed as a conflict: it is in no set),
(ash, HYP, tree), (elm, HYP, bark) and (elm, MER, bark) (bark: a tuple relatum of two
relations).

Ranked lists (prompts 0, 1, 2):

========= ======================== ===============================
probe     mX                       human (pooled) / raw answers
========= ======================== ===============================
oak p0    tree sapling x           tree plant / [tree] [tree, plant]
oak p1    x tree                   tree wood / [tree] [wood]
oak p2    y                        -
elm p0    tree                     tree / [tree]
ash p0    z                        -
========= ======================== ===============================
"""

from __future__ import annotations

import json
from datetime import datetime
from math import log2
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.sqlfile import discover_metrics, run_metric
from eval.stats import entropy_tests
from probes.results import connect
from probes.results.writers import Run, insert_run

SEMREL = Path(__file__).parents[1] / "eval" / "semrel"
METRICS = {m.name: m for m in discover_metrics([SEMREL])}
HYP = "semrel/hyp"

INSTANCES = [("oak", 1, ["tree", "plant"]), ("elm", 1, ["tree"]), ("ash", 0, ["tree"])]
RELATA = [("oak", "HYP", ["tree", "plant"]), ("oak", "HPO", ["sapling"]),
          ("elm", "HYP", ["tree"]), ("ash", "HYP", ["tree"])]
TUPLES = [("oak", "HYP", "tree"), ("oak", "HYP", "wood"), ("ash", "HYP", "tree"),
          ("elm", "HYP", "bark"), ("elm", "MER", "bark")]
LISTS = {
    "mX": {("oak", 0): ["tree", "sapling", "x"], ("oak", 1): ["x", "tree"], ("oak", 2): ["y"],
           ("elm", 0): ["tree"], ("ash", 0): ["z"]},
    "human": {("oak", 0): ["tree", "plant"], ("oak", 1): ["tree", "wood"],
              ("elm", 0): ["tree"]},
    # a whole-vocabulary list (vocab: all): the top token is a non-word, kept as ⟨token⟩
    "mN": {("elm", 0): ["⟨ĠTree⟩", "tree"]},
}
HUMAN = {("oak", 0): [["tree"], ["tree", "plant"]], ("oak", 1): [["tree"], ["wood"]],
         ("elm", 0): [["tree"]]}
# a model list that lacks "elm" (declared only by test_entropy_population_is_a_setting)
VOCAB_V = ["oak", "ash", "tree", "plant", "sapling", "wood", "bark", "x", "y", "z"]


def build(path: Path) -> None:
    con = connect(path)
    add = """INSERT INTO instances (probe, split, instance_id, target, gold, fields, exported_at)
             VALUES (?, 'test', ?, ?, ?, ?::JSON, now())"""
    for word, answered, gold in INSTANCES:
        con.execute(add, [HYP, f"i_{word}", word, gold,
                          json.dumps({"relation": "HYP", "word": word, "answered": answered})])
    for n, (word, rel, relata) in enumerate(RELATA):
        con.execute(add, ["semrel/relata", f"r{n}", word, relata,
                          json.dumps({"relation": rel, "word": word})])
    for n, (word, rel, relatum) in enumerate(TUPLES):
        con.execute(add, ["semrel/tuples", f"t{n}", word, [relatum],
                          json.dumps({"relation": rel, "word": word, "relatum": relatum,
                                      "derivation": ["source"]})])
    for model, backend in (("mX", "causal"), ("human", "human"), ("mN", "causal")):
        rid = f"{model}_hyp"
        insert_run(con, Run(run_id=rid, model=model, backend=backend, probe=HYP,
                            task="relatum", status="done", finished_at=datetime(2024, 1, 2)))
        for (word, pid), words in LISTS[model].items():
            for rank, token in enumerate(words, start=1):
                con.execute("INSERT INTO responses (run_id, probe, split, instance_id, "
                            "prompt_id, rank, token, probability) "
                            "VALUES (?, ?, 'test', ?, ?, ?, ?, ?)",
                            [rid, HYP, f"i_{word}", pid, rank, token, 1 / (rank + 1)])
    for (word, pid), annotators in HUMAN.items():
        for a, answers in enumerate(annotators, start=1):
            for pos, answer in enumerate(answers, start=1):
                con.execute("INSERT INTO human_responses VALUES (?, ?, ?, ?, ?, ?)",
                            [HYP, f"i_{word}", pid, a, pos, answer])
    con.executemany("INSERT INTO model_vocab VALUES ('mV', 'lowercase', ?)",
                    [[w] for w in VOCAB_V])
    con.close()


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("semrel_defs") / "r.duckdb"
    build(p)
    return p


def metric(path: Path, name: str, **settings: str) -> dict[tuple, dict[str, Any]]:
    con = connect(path, read_only=True)
    try:
        for key, value in settings.items():
            con.execute(f"SET VARIABLE semrel_{key} = ?" if key != "vocab_models" else
                        f"SET VARIABLE semrel_{key} = ?::VARCHAR[]", [value])
        m = METRICS[name]
        cols, rows = run_metric(con, m)
    finally:
        con.close()
    out = {}
    for row in rows:
        d = dict(zip(cols, row, strict=True))
        out[tuple(d.pop(g) for g in m.grain)] = d
    return out


def value(path: Path, name: str, *key: Any, **settings: str) -> Any:
    return metric(path, name, **settings)[key]["value"]


def test_soundness_averages_per_word_then_over_words(path: Path) -> None:
    # eq. 11: S(w) = 1/|P^r| sum_p Precision@1; eq. 12: S(r) = 1/|W^r| sum_w S(w).
    # mX: oak p0 tree (in Y) 1, p1 x 0, p2 y 0 -> S(oak) = 1/3; elm p0 tree 1 -> S(elm) = 1.
    # S(HYP) = (1/3 + 1) / 2 = 2/3. (Averaged per probe instead: 2/4 = 1/2.)
    assert value(path, "semrel_soundness", "mX", HYP) == pytest.approx(2 / 3)
    assert metric(path, "semrel_soundness")[("mX", HYP)]["n"] == 2


def test_target_words_are_the_answered_words(path: Path) -> None:
    # W^HYP = the words the annotators answered: oak, elm (ash has only a tuple). Table 1:
    # |W| = 2, |X| = |P| x |W| = 3 x 2 = 6 (prompts 0, 1, 2 in the lists); both answered.
    t = metric(path, "semrel_tables")[(HYP,)]
    assert (t["prompts"], t["words"], t["value"], t["answered"]) == (3, 2, 6, 2)
    # The 'tuples' reading: W^HYP = {oak, ash, elm} (targets of the HYP tuples); ash p0 z -> 0:
    # S = (1/3 + 1 + 0) / 3 = 4/9.
    assert value(path, "semrel_soundness", "mX", HYP, targets="tuples") == pytest.approx(4 / 9)
    assert metric(path, "semrel_tables", targets="tuples")[(HYP,)]["words"] == 3


def test_completeness_denominator_is_min_of_set_and_list(path: Path) -> None:
    # eq. 13 with "k [set] to the size of the relatum set or the size of the response list,
    # whichever is smaller". oak (|Y| = 2): p0 [tree, sapling, x], k = 2, top 2 holds tree ->
    # 1/2; p1 [x, tree], k = 2 -> 1/2; p2 [y], k = min(2, 1) = 1 -> 0: C(oak) = 1/3.
    # elm (|Y| = 1) p0 [tree] -> 1. C(HYP) = (1/3 + 1) / 2 = 2/3.
    # (Denominator |Y| always: oak (1/2 + 1/2 + 0) / 3 = 1/3 too, but see p2 of the first
    # fixture; denominator = list length: oak p0 1/3 -> C(oak) = 5/18, C = 23/36.)
    assert value(path, "semrel_completeness", "mX", HYP) == pytest.approx(2 / 3)


def test_prototypicality_drops_probes_whose_human_r_is_one(path: Path) -> None:
    # Section 6.2: "We also remove probes whose responses show a R of 1.0". Human R (eq. 19):
    # oak p0 tokens tree x2, plant x1 -> R = H(2/3, 1/3) / log2 2 = 0.918 < 1: kept;
    # oak p1 tree, wood -> R = 1: removed; elm p0 tree -> R = 0 (|D| = 1): kept.
    assert value(path, "semrel_proto_probes", HYP) == 2
    # eqs. 20-23: rho = 1/2 [top-1 equal] + 1/2 (1 - d / 2k), k = the human list's length,
    # d = edit distance (substitution 2). oak p0: human [tree, plant], mX top 2 [tree, sapling]:
    # 1/2 + 1/2 (1 - 2/4) = 3/4. elm p0: [tree] = [tree]: 1. P(HYP) = (3/4 + 1) / 2 = 7/8.
    # (With oak p1 kept: [x, tree] vs [tree, wood], d = 2 -> 1/4; P(oak) = 1/2, P = 3/4.)
    assert value(path, "semrel_prototypicality", "mX", HYP) == pytest.approx(7 / 8)
    r = metric(path, "semrel_response_entropy")[("human", HYP)]
    h = -(2 / 3 * log2(2 / 3) + 1 / 3 * log2(1 / 3))
    assert (r["r0"], r["r1"]) == (1, 1)
    assert r["value"] == pytest.approx((h + 1 + 0) / 3)


def test_distinguishability_normalises_by_the_prompted_relations_set(path: Path) -> None:
    # eq. 24, "normalization of rho(a, b) by k (here set to the size of the relatum set of
    # target word w)" of the prompted relation r = HYP: k = |Y^HYP(oak)| = 2, |Y^HYP(elm)| = 1.
    # rho = (rank - 1) / k; delta(w, p, s) = the mean over the s-relata in L_k, 1 when none is.
    # delta(HYP, HYP): oak p0 L_2 [tree, sapling]: tree 0; p1 [x, tree]: 1/2; p2 [y]: 1;
    #   elm p0 [tree]: 0 -> (0 + 1/2 + 1 + 0) / 4 = 3/8.
    # delta(HYP, HPO) (only oak has an HPO set {sapling}): p0 sapling at rank 2 -> 1/2; p1, p2
    #   absent -> 1, 1 -> 5/6. D = 5/6 - 3/8 = 11/24.
    # (Normalised by |Y^HPO(oak)| = 1 instead: p0 sapling -> 1 (or out of L_1), D = 5/8.)
    assert value(path, "semrel_distinguishability", "mX", HYP, "HPO") == pytest.approx(11 / 24)


def test_conflict_rule_is_a_setting(path: Path) -> None:
    # Table 2 "after expansion" = the mean set size over W^HYP = {oak, elm}.
    # 'all' (default): oak {tree, plant}, elm {tree} -> 3/2.
    # 'keep-tuples': the tuple relatum wood (removed as a conflict, in no set of oak) goes back
    # into Y^HYP(oak) -> 3; bark is a tuple relatum of elm for HYP and MER: stays out -> 1: 2.
    assert metric(path, "semrel_tables")[(HYP,)]["after_mean"] == pytest.approx(1.5)
    assert metric(path, "semrel_tables", conflicts="keep-tuples")[(HYP,)][
        "after_mean"] == pytest.approx(2.0)
    # and S does not change (top-1 tree is in both), C does: oak p0 k = 3, [tree, sapling, x]
    # -> 1/3; p1 k = 2 -> 1/2; p2 k = 1 -> 0: C(oak) = 5/18; C = (5/18 + 1) / 2 = 23/36.
    assert value(path, "semrel_completeness", "mX", HYP,
                 conflicts="keep-tuples") == pytest.approx(23 / 36)


def test_entropy_tests_are_the_same_on_two_reads(path: Path) -> None:
    def run() -> list[tuple]:
        con: duckdb.DuckDBPyConnection = connect(path, read_only=True)
        try:
            return entropy_tests(con).rows()
        finally:
            con.close()
    assert run() == run()


def test_entropy_population_is_a_setting(path: Path) -> None:
    # Declared vocabulary without "elm": W^HYP = {oak}. Human R (eq. 19) per probe: oak p0
    # 0.918, oak p1 1, elm p0 0 (one distinct answer).
    # 'file' (default): every loaded answer, elm included -> n = 3, one R = 0, one R = 1.
    r = metric(path, "semrel_response_entropy", vocab_models=["mV"])[("human", HYP)]
    assert (r["n"], r["r0"], r["r1"]) == (3, 1, 1)
    # 'targets': only W^r's answers -> oak p0, p1: n = 2, no R = 0.
    r = metric(path, "semrel_response_entropy", vocab_models=["mV"],
               entropy_population="targets")[("human", HYP)]
    assert (r["n"], r["r0"], r["r1"]) == (2, 0, 1)
    # The prototypicality set stays inside W^r either way: oak p0 only (p1 has R = 1).
    assert value(path, "semrel_proto_probes", HYP, vocab_models=["mV"]) == 1


def test_a_non_word_top_1_is_a_miss(path: Path) -> None:
    # Section 5: the list is "as long as their vocabulary"; a non-word token at the top is no
    # relatum: elm p0 [⟨ĠTree⟩, tree] -> Precision@1 = 0 (not lower-cased into "tree"), and
    # Recall@k with k = min(|Y| = 1, 2) = 1 -> 0.
    assert metric(path, "semrel_soundness")[("mN", HYP)] == {"value": 0.0, "n": 1}
    assert value(path, "semrel_completeness", "mN", HYP) == 0.0
