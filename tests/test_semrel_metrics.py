"""The semantic-relation metrics (eval/semrel/*.sql, Cao et al.) on a hand-worked results file
(tests/semrel_fixtures.py, whose docstring describes it). Every expected value is worked out
by hand in the comments.
"""

from __future__ import annotations

import json
from math import log
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.sqlfile import MetricFileError, discover_metrics, run_metric
from probes.results import connect
from tests.semrel_fixtures import INSTANCES, LISTS, RUNS, build

SEMREL = Path(__file__).parents[1] / "eval" / "semrel"
METRICS = {m.name: m for m in discover_metrics([SEMREL])}


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    path = tmp_path_factory.mktemp("semrel") / "r.duckdb"
    build(path)
    c = connect(path, read_only=True)      # as python -m eval.report opens it
    yield c
    c.close()


def metric(con: duckdb.DuckDBPyConnection, name: str) -> dict[tuple, dict[str, Any]]:
    """The metric's rows keyed by their grain (without the grain columns)."""
    m = METRICS[name]
    cols, rows = run_metric(con, m)
    out = {}
    for row in rows:
        d = dict(zip(cols, row, strict=True))
        out[tuple(d.pop(g) for g in m.grain)] = d
    return out


def values(rows: dict[tuple, dict[str, Any]], *cols: str) -> dict[tuple, Any]:
    return {k: tuple(v[c] for c in cols) if len(cols) > 1 else v[cols[0]]
            for k, v in rows.items()}


def approx(d: dict) -> dict:
    """``d`` with each value compared approximately (pytest.approx does not nest)."""
    return {k: pytest.approx(v, abs=1e-9) for k, v in d.items()}


HYP, SYN = "semrel/hyp", "semrel/syn"


def test_every_file_is_a_metric_with_its_views() -> None:
    assert set(METRICS) == {
        "semrel_soundness", "semrel_completeness", "semrel_symmetry", "semrel_asymmetry",
        "semrel_response_entropy", "semrel_prototypicality", "semrel_distinguishability",
        "semrel_audc", "semrel_oor_rate", "semrel_oor_first_rank", "semrel_empty_sets",
        "semrel_bad_inputs"}
    assert all(m.requires[0].name == "_views.sql" for m in METRICS.values())


def test_soundness_uses_the_shared_vocabulary(con: duckdb.DuckDBPyConnection) -> None:
    # Probes with a non-empty limited set: dog p0/p1 (hyp; animal's set {creature} is empty),
    # big p0/p1, large p0/p1 (syn; huge has no set).
    # mA hyp: animal (raw top was beast, outside S) ✓, cat ✗ -> 1/2. The older mA run (all pet)
    # is ignored. mA syn: large ✓, small ✗, big ✓, thing (raw top huge) ✗ -> 2/4.
    # mB hyp: animal ✓, pet (raw tiny, pet) ✓ -> 1; syn: small ✗, large ✓, little ✗, big ✓.
    # human hyp: animal ✓, mammal ✗; syn: large ✓, large ✓, big ✓, great ✗.
    # macro = mean of the two relations; micro = hits / 6.
    assert values(metric(con, "semrel_soundness"), "value", "n") == approx({
        ("human", HYP): (0.5, 2), ("human", SYN): (0.75, 4), ("human", "macro"): (0.625, 2),
        ("human", "micro"): (4 / 6, 6),
        ("mA", HYP): (0.5, 2), ("mA", SYN): (0.5, 4), ("mA", "macro"): (0.5, 2),
        ("mA", "micro"): (0.5, 6),
        ("mB", HYP): (1.0, 2), ("mB", SYN): (0.5, 4), ("mB", "macro"): (0.75, 2),
        ("mB", "micro"): (4 / 6, 6)})


def test_completeness_k_is_min_of_set_and_list(con: duckdb.DuckDBPyConnection) -> None:
    # dog's set {animal, pet}: k = 2 unless the list is shorter. mA: [animal, cat] 1/2,
    # [cat, pet] 1/2. mB: [animal, pet] 2/2, [pet] (k = 1) 1/1 -> 1 (k = 2 would give 3/4).
    # human: [animal, beast] 1/2, [mammal, animal] 1/2. syn sets have one word: C = S there.
    assert values(metric(con, "semrel_completeness"), "value", "n") == approx({
        ("human", HYP): (0.5, 2), ("human", SYN): (0.75, 4), ("human", "macro"): (0.625, 2),
        ("human", "micro"): (4 / 6, 6),
        ("mA", HYP): (0.5, 2), ("mA", SYN): (0.5, 4), ("mA", "macro"): (0.5, 2),
        ("mA", "micro"): (0.5, 6),
        ("mB", HYP): (1.0, 2), ("mB", SYN): (0.5, 4), ("mB", "macro"): (0.75, 2),
        ("mB", "micro"): (4 / 6, 6)})


def test_symmetry_joins_the_trick_probe(con: duckdb.DuckDBPyConnection) -> None:
    # SYN tuples: (big, SYN, large): is big in the lists of target large? (large, SYN, big):
    # is large in the lists of target big? (beast, SYN, big) is dropped: beast is outside S.
    # mA: large p0 [big..] @1, large p1 [thing, cat] never, big p0 [large..] @1,
    #     big p1 [small, large, big] @2 -> M1 2/4, M5 = M10 3/4.
    # mB: large p0 [little, big] @2, p1 [big..] @1, big p0 [small, large] @2, p1 @1 ->
    #     M1 2/4, M5 = M10 1. human: @1, @2 ([great, big]), @1, @1 -> M1 3/4, M5 = M10 1.
    rows = values(metric(con, "semrel_symmetry"), "value", "n")
    expected = {}
    for model, m1, m5 in (("mA", 0.5, 0.75), ("mB", 0.5, 1.0), ("human", 0.75, 1.0)):
        for k, v in ((1, m1), (5, m5), (10, m5)):
            expected[(model, SYN, k)] = (v, 4)
            expected[(model, "micro", k)] = (v, 4)
            expected[(model, "macro", k)] = (v, 1)
    assert rows == approx(expected)


def test_asymmetry_joins_the_trick_probe(con: duckdb.DuckDBPyConnection) -> None:
    # HYP tuples with a trick probe: only (dog, HYP, animal) (no probe has target pet; beast
    # and creature are outside S): is dog in the lists of target animal (whose own limited
    # set is empty, which does not matter here)? mA: p0 [dog, thing] @1, p1 [thing, cat, dog]
    # @3 -> A1 = 1/2, A5 = A10 = 0. mB: [thing, cat], [cat, thing, pet]: never -> 1.
    # human: [creature, thing], [creature] -> 1.
    rows = values(metric(con, "semrel_asymmetry"), "value", "n")
    expected = {}
    for model, by_k in (("mA", {1: 0.5, 5: 0.0, 10: 0.0}), ("mB", dict.fromkeys((1, 5, 10), 1.0)),
                        ("human", dict.fromkeys((1, 5, 10), 1.0))):
        for k, v in by_k.items():
            expected[(model, HYP, k)] = (v, 2)
            expected[(model, "micro", k)] = (v, 2)
            expected[(model, "macro", k)] = (v, 1)
    assert rows == approx(expected)


# R of the probes where annotators agree (weights 1 / (answers x annotators)):
# dog p0: a1 {animal, pet} 1/6 each, a2 {animal} 1/3, a3 {beast} 1/3 -> p = animal 1/2,
#   beast 1/3, pet 1/6; H_max = 2 (1/6) ln 6 + 2 (1/3) ln 3.
R_DOG0 = (0.5 * log(2) + log(6) / 6 + log(3) / 3) / (log(6) / 3 + 2 * log(3) / 3)
# animal p0: a1 {creature, thing} 1/4 each, a2 {creature} (said twice: one answer) 1/2 ->
#   p = creature 3/4, thing 1/4; H_max = 2 (1/4) ln 4 + (1/2) ln 2 = 1.5 ln 2.
R_ANIMAL0 = (0.75 * log(4 / 3) + 0.25 * log(4)) / (1.5 * log(2))
# big p0: large, large, huge (1/3 each) -> p = 2/3, 1/3; H_max = ln 3.
R_BIG0 = (2 / 3 * log(3 / 2) + log(3) / 3) / log(3)
# dog p1 (animal / mammal), big p1 ("large big" / large), large p0 (big / bigg): R = 1.


def test_response_entropy(con: duckdb.DuckDBPyConnection) -> None:
    assert 0.76 < R_DOG0 < 0.761 and 0.54 < R_ANIMAL0 < 0.541 and 0.579 < R_BIG0 < 0.58
    hyp, syn = (R_DOG0 + 1 + R_ANIMAL0) / 3, (R_BIG0 + 1 + 1) / 3
    assert values(metric(con, "semrel_response_entropy"), "value", "n", "agreeing") == approx({
        ("human", HYP): (hyp, 3, 2), ("human", SYN): (syn, 3, 1),
        ("human", "macro"): ((hyp + syn) / 2, 2, 3),
        ("human", "micro"): ((R_DOG0 + R_ANIMAL0 + R_BIG0 + 3) / 6, 6, 3)})


def test_prototypicality(con: duckdb.DuckDBPyConnection) -> None:
    # Only probes with human answers and R < 1: dog p0 (human list [animal, beast, pet], k = 3),
    # animal p0 ([creature, thing], k = 2), big p0 ([large, huge], k = 2). Not dog p1 (R = 1;
    # mA's [cat, pet] vs [mammal, animal] would give 0), not animal p1 (no human answers).
    # P = 1/2 [top-1 equal] + 1/2 (1 - d / 2k), substitution costs 2:
    # mA dog p0 [animal, cat] vs [animal, beast, pet]: d = sub 2 + ins 1 = 3 -> .5 + .5 * .5
    #    animal p0 [dog, thing] vs [creature, thing]: d = 2 (sub) -> 0 + .5 * .5 = .25
    #    big p0 [large, small] vs [large, huge]: d = 2 -> .75 (with substitution 1: .875)
    # mB dog p0 [animal, pet, dog] vs [animal, beast, pet]: d = 2 (LCS 2) -> .5 + .5 * 2/3
    #    animal p0 [thing, cat] vs [creature, thing]: d = 2 -> .25
    #    big p0 [small, large] vs [large, huge]: d = 2 -> .25
    b_dog = 0.5 + 0.5 * (1 - 2 / 6)
    assert values(metric(con, "semrel_prototypicality"), "value", "n") == approx({
        ("mA", HYP): (0.5, 2), ("mA", SYN): (0.75, 1), ("mA", "macro"): (0.625, 2),
        ("mA", "micro"): (1.75 / 3, 3),
        ("mB", HYP): ((b_dog + 0.25) / 2, 2), ("mB", SYN): (0.25, 1),
        ("mB", "macro"): (((b_dog + 0.25) / 2 + 0.25) / 2, 2),
        ("mB", "micro"): ((b_dog + 0.5) / 3, 3)})


def test_distinguishability_and_audc(con: duckdb.DuckDBPyConnection) -> None:
    # (HYP, HPO): dog p0/p1, S_HPO(dog) = {puppy}, never answered: D_k = 1 for everyone.
    # (HYP, MER): S_MER(dog) = {tail} is empty once limited: no rows.
    # (SYN, ANT): S_ANT(big) = {small}, S_ANT(large) = {little}.
    # mA: big p0 [large, small] only k = 1; big p1 [small..] never; large p0 [big, little]
    #     only k = 1; large p1 [thing, cat] always -> D1 3/4, D2..10 1/4; AuDC .3
    # mB: big p0 [small, large] never; p1 [large, big] always; large p0 [little, big] never;
    #     p1 [big, small] always (small is big's antonym, not large's) -> D_k 2/4; AuDC .5
    # human: no antonym anywhere -> 1.
    d = values(metric(con, "semrel_distinguishability"), "value", "n")
    assert {(o, k) for (_, p, o, k) in d if p == HYP} == {("HPO", k) for k in range(1, 11)}
    assert {(m, p, o) for (m, p, o, _) in d} == {
        (m, p, o) for m in ("mA", "mB", "human") for p, o in ((HYP, "HPO"), (SYN, "ANT"))}
    assert d[("mA", SYN, "ANT", 1)] == (0.75, 4) and d[("mA", SYN, "ANT", 2)] == (0.25, 4)
    assert d[("mB", SYN, "ANT", 1)] == (0.5, 4) and d[("mB", SYN, "ANT", 10)] == (0.5, 4)
    assert d[("human", SYN, "ANT", 7)] == (1.0, 4) and d[("mA", HYP, "HPO", 3)] == (1.0, 2)
    assert values(metric(con, "semrel_audc"), "value", "n") == approx({
        ("mA", HYP, "HPO"): (1.0, 2), ("mA", SYN, "ANT"): (0.3, 4), ("mA", "all", "all"): (1.3, 2),
        ("mB", HYP, "HPO"): (1.0, 2), ("mB", SYN, "ANT"): (0.5, 4),
        ("mB", "all", "all"): (1.5, 2),
        ("human", HYP, "HPO"): (1.0, 2), ("human", SYN, "ANT"): (1.0, 4),
        ("human", "all", "all"): (2.0, 2)})


def test_out_of_relatum(con: duckdb.DuckDBPyConnection) -> None:
    # Related words (limited): dog {animal, pet, puppy}, big {large, small}, large {big, little}.
    # mA: dog p0 animal, p1 cat (OOR, first related pet @2); big p0 large, p1 small (ANT: not
    #     OOR); large p0 big, p1 [thing, cat] OOR with no related word (excluded from ranks).
    # mB: never OOR. human: dog p1 [mammal, animal] OOR (@2), large p1 [great, big] OOR (@2).
    assert values(metric(con, "semrel_oor_rate"), "value", "n") == approx({
        ("mA", HYP): (0.5, 2), ("mA", SYN): (0.25, 4), ("mA", "macro"): (0.375, 2),
        ("mA", "micro"): (2 / 6, 6),
        ("mB", HYP): (0.0, 2), ("mB", SYN): (0.0, 4), ("mB", "macro"): (0.0, 2),
        ("mB", "micro"): (0.0, 6),
        ("human", HYP): (0.5, 2), ("human", SYN): (0.25, 4), ("human", "macro"): (0.375, 2),
        ("human", "micro"): (2 / 6, 6)})
    assert values(metric(con, "semrel_oor_first_rank"), "value", "n", "excluded") == approx({
        ("mA", HYP): (1.5, 2, 0), ("mA", SYN): (1.0, 3, 1), ("mA", "macro"): (1.25, 2, 1),
        ("mA", "micro"): (6 / 5, 5, 1),
        ("mB", HYP): (1.0, 2, 0), ("mB", SYN): (1.0, 4, 0), ("mB", "macro"): (1.0, 2, 0),
        ("mB", "micro"): (1.0, 6, 0),
        ("human", HYP): (1.5, 2, 0), ("human", SYN): (1.25, 4, 0),
        ("human", "macro"): (1.375, 2, 0), ("human", "micro"): (8 / 6, 6, 0)})


def test_empty_sets_and_bad_inputs(con: duckdb.DuckDBPyConnection) -> None:
    # hyp: animal's {creature} is empty once limited; syn: huge's set is empty already.
    assert values(metric(con, "semrel_empty_sets"), "value", "n", "raw_empty") == {
        (HYP,): (1, 2, 0), (SYN,): (1, 3, 1)}
    # Targets: huge is not in mB's vocabulary. mD has a done run but no vocabulary (mC's run
    # failed: not compared). Human answers: hyp animal, pet, animal, beast, animal, mammal,
    # creature, thing, creature, creature (10; mammal and 3 x creature in no vocabulary);
    # syn large, large, huge, "large big", large, big, bigg (7; "large big" has two words and,
    # with bigg, is in no vocabulary).
    assert values(metric(con, "semrel_bad_inputs"), "value", "n") == {
        ("mA", HYP, "target_not_in_vocab"): (0, 2), ("mA", SYN, "target_not_in_vocab"): (0, 3),
        ("mB", HYP, "target_not_in_vocab"): (0, 2), ("mB", SYN, "target_not_in_vocab"): (1, 3),
        ("mD", "(all)", "model_without_vocab"): (1, 1),
        ("(all)", HYP, "empty_set"): (1, 2), ("(all)", SYN, "empty_set"): (1, 3),
        ("human", HYP, "multi_word_answer"): (0, 10), ("human", SYN, "multi_word_answer"): (1, 7),
        ("human", HYP, "not_in_any_vocab"): (4, 10), ("human", SYN, "not_in_any_vocab"): (2, 7)}


def test_no_vocabulary_means_no_restriction() -> None:
    # Without model_vocab rows nothing is limited: animal's set {creature} is no longer empty
    # (4 probes) and mA's dog p0 list keeps beast at rank 1 (a gold word now):
    # S(mA, hyp) = (beast ✓, cat ✗, dog ✗, thing ✗) = 1/4;
    # S(human, hyp) = (animal ✓, mammal ✗, creature ✓, creature ✓) = 3/4.
    con = connect(":memory:")
    for probe, iid, target, gold in INSTANCES[:2]:
        con.execute("INSERT INTO instances VALUES (?, 'test', ?, ?, ?, NULL, ?::JSON, now())",
                    [probe, iid, target, gold, json.dumps({"relation": "HYP"})])
    for rid in ("A_hyp", "H_hyp"):
        model, backend, probe, status, _ = RUNS[rid]
        con.execute("INSERT INTO runs (run_id, model, backend, probe, task, status) "
                    "VALUES (?, ?, ?, ?, 'relatum', ?)", [rid, model, backend, probe, status])
        for iid, prompts in LISTS[rid].items():
            for pid, words in enumerate(prompts):
                for rank, word in enumerate(words, start=1):
                    con.execute("INSERT INTO responses VALUES (?, ?, 'test', ?, ?, ?, ?, NULL)",
                                [rid, probe, iid, pid, rank, word])
    rows = values(metric(con, "semrel_soundness"), "value", "n")
    assert rows[("mA", HYP)] == (0.25, 4) and rows[("human", HYP)] == (0.75, 4)


def test_metrics_run_on_an_empty_file() -> None:
    con = connect(":memory:")
    for m in METRICS.values():
        cols, rows = run_metric(con, m)
        assert rows == [] and "value" in cols, m.name


def test_required_support_files(tmp_path: Path) -> None:
    (tmp_path / "_support.sql").write_text(
        "CREATE OR REPLACE TEMP VIEW two AS SELECT 2 AS x;\n"
        "CREATE OR REPLACE TEMP VIEW three AS SELECT x + 1 AS x FROM two;\n")
    (tmp_path / "m.sql").write_text("-- name: m\n-- description: d\n-- tasks: [relatum]\n"
                                    "-- grain: [g]\n-- requires: [_support.sql]\n"
                                    "SELECT 'a' AS g, x AS value FROM three\n")
    metrics = discover_metrics([tmp_path])       # _support.sql is not a metric
    assert [m.name for m in metrics] == ["m"]
    assert run_metric(connect(":memory:"), metrics[0]) == (["g", "value"], [("a", 3)])
    (tmp_path / "_support.sql").write_text("CREATE TEMP VIEW v AS\nSELECT * FROM nowhere;\n")
    with pytest.raises(MetricFileError, match=r"_support\.sql:2: the support file fails"):
        run_metric(connect(":memory:"), metrics[0])
    (tmp_path / "n.sql").write_text("-- name: n\n-- description: d\n-- tasks: [relatum]\n"
                                    "-- grain: [g]\n-- requires: [_gone.sql]\nSELECT 1\n")
    with pytest.raises(MetricFileError, match=r"n\.sql:5: required file .*_gone\.sql"):
        discover_metrics([tmp_path])
