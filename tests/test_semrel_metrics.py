"""The semantic-relation metrics (eval/semrel/*.sql, Cao et al.) on a hand-worked results file
(tests/semrel_fixtures.py, whose docstring describes it). Every expected value is worked out
by hand in the comments.
"""

from __future__ import annotations

from math import log2
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.sqlfile import MetricFileError, discover_metrics, run_metric
from probes.results import connect
from tests.semrel_fixtures import DECLARED, build

SEMREL = Path(__file__).parents[1] / "eval" / "semrel"
METRICS = {m.name: m for m in discover_metrics([SEMREL])}


def open_results(path: Path, declared: list[str] | None = DECLARED, **settings: str
                 ) -> duckdb.DuckDBPyConnection:
    c = connect(path, read_only=True)      # as python -m eval.semrel_report opens it
    if declared is not None:
        c.execute("SET VARIABLE semrel_vocab_models = ?::VARCHAR[]", [declared])
    for name, value in settings.items():
        c.execute(f"SET VARIABLE semrel_{name} = ?", [value])
    return c


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("semrel") / "r.duckdb"
    build(p)
    return p


@pytest.fixture
def con(path: Path) -> duckdb.DuckDBPyConnection:
    c = open_results(path)
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
    assert {"semrel_soundness", "semrel_completeness", "semrel_symmetry", "semrel_asymmetry",
            "semrel_response_entropy", "semrel_prototypicality", "semrel_distinguishability",
            "semrel_audc", "semrel_oor", "semrel_tables", "semrel_proto_probes",
            "semrel_soundness_per_prompt", "semrel_constant_answer"} <= set(METRICS)


def test_soundness_eqs_11_12(con) -> None:
    # Y(dog) = {animal, pet} (beast is outside the shared vocabulary of mA and mB).
    # mA: dog p0 animal 1, p1 puppy 0 -> S(dog) = .5; big: large 1, small 0 -> .5; large: big 1,
    # thing 0 -> .5. mB: dog pet 1, animal 1 -> 1; big 0, 1; large 1, 0 -> .5.
    # human: dog animal 1, mammal 0 -> .5; big large 1, large 1 -> 1 (large has no human list).
    rows = values(metric(con, "semrel_soundness"), "value", "n")
    assert rows[("mA", HYP)] == (0.5, 1) and rows[("mA", SYN)] == (0.5, 2)
    assert rows[("mB", HYP)] == (1.0, 1) and rows[("mB", SYN)] == (0.5, 2)
    assert rows[("human", HYP)] == (0.5, 1) and rows[("human", SYN)] == (1.0, 1)
    # macro = mean over relations; micro = mean over the per-word scores (1, .5, .5 for mB)
    assert rows[("mB", "macro")] == (0.75, 2)
    assert rows[("mB", "micro")] == (pytest.approx(2 / 3), 3)
    assert ("mC", HYP) not in rows          # no run of mC: it changes nothing


def test_soundness_per_prompt_appendix_f(con) -> None:
    # Appendix F: each prompt as if it were the only one. mA SYN p0: big -> large (in {large})
    # 1, large -> big 1: S = 1 (2 words); p1: big -> small 0, large -> thing 0: S = 0 (their
    # mean per word, .5, is eq. 12's S). mB SYN p0: small 0, big 1 -> .5; p1: large 1, small
    # 0 -> .5. mA HYP: p0 dog -> animal 1, p1 puppy 0. C per prompt (k = min(|Y|, length) = 1
    # for SYN): mA p0 1, p1 0.
    rows = values(metric(con, "semrel_soundness_per_prompt"), "value", "completeness", "n")
    assert rows[("mA", SYN, 0)] == (1.0, 1.0, 2) and rows[("mA", SYN, 1)] == (0.0, 0.0, 2)
    assert rows[("mB", SYN, 0)][::2] == (0.5, 2) and rows[("mB", SYN, 1)][::2] == (0.5, 2)
    assert rows[("mA", HYP, 0)][0] == 1.0 and rows[("mA", HYP, 1)][0] == 0.0
    assert rows[("human", HYP, 0)][0] == 1.0 and rows[("human", HYP, 1)][0] == 0.0


def test_constant_answer_leave_one_out(con) -> None:
    # W^HYP = {dog}: no other word, so dog's list is empty: S = C = hits@10 = 0 (a list fitted
    # on dog itself would answer animal, right). SYN: big's list is large's set {big}, large's
    # is {large}: both wrong. top: the most frequent relatum of all of W^r (ties alphabetical;
    # beast is outside the shared vocabulary).
    rows = values(metric(con, "semrel_constant_answer"), "value", "c", "hits10", "top", "n")
    assert rows[(HYP,)] == (0.0, 0.0, 0.0, "animal", 1)
    assert rows[(SYN,)] == (0.0, 0.0, 0.0, "big", 2)
    assert rows[("macro",)] == (0.0, 0.0, 0.0, None, 2)
    assert rows[("micro",)] == (0.0, 0.0, 0.0, None, 3)


def test_completeness_eqs_13_14(con) -> None:
    # human dog p0: k = min(2, 2) = 2, [animal, pet] -> 2/2; p1: k = min(2, 1) = 1, [mammal]
    # -> 0; C(dog) = .5. mA dog p0 [animal, cat] 1/2, p1 [puppy, animal] 1/2 -> .5.
    rows = values(metric(con, "semrel_completeness"), "value")
    assert rows[("human", HYP)] == 0.5 and rows[("mA", HYP)] == 0.5
    # The denominator (eq. 13, "k to the size of the relatum set or the size of the response
    # list, whichever is smaller"): mB dog p0 [pet, animal], k = 2 -> 2/2; p1 [animal], k =
    # min(2, 1) = 1 -> 1/1: C(dog) = 1 (denominator |Y| = 2 would give (1 + 1/2) / 2 = 3/4).
    # mA dog p0 [animal, cat, pet]: only the top k = 2 count -> 1/2 (the whole list: 2/2).
    # mB SYN (|Y| = 1): big p0 [small] 0, p1 [large] 1; large p0 [big] 1, p1 [small] 0 -> 1/2.
    assert rows[("mB", HYP)] == 1.0 and rows[("mB", SYN)] == 0.5


def test_symmetry_needs_the_forward_hit(con) -> None:
    # eq. 1, mA, k = 1: (big, large) p0 large in [large], big in [big] -> 1; p1 large not in
    # [small] -> 0; (large, big) p0 1, p1 big not in [thing] -> 0: M_1 = .5.
    # k = 5: all four (tuple, prompt) pairs hold both ways -> 1.
    # mB k = 1: (big, large) p0 fwd 0, p1 fwd 1 bwd big in [small]? no -> 0; (large, big)
    # p0 fwd 1, bwd large in [small]? no -> 0; p1 fwd 0 -> M_1 = 0.
    # k = 5: (big, large) p0 1, p1 bwd big in [small] no -> 0; (large, big) p0 1, p1 0 -> .5.
    rows = values(metric(con, "semrel_symmetry"), "value", "n")
    assert rows[("mA", SYN, 1)] == (0.5, 2) and rows[("mA", SYN, 5)] == (1.0, 2)
    assert rows[("mB", SYN, 1)] == (0.0, 2) and rows[("mB", SYN, 5)] == (0.5, 2)
    assert not any(k[0] == "human" for k in rows)   # no human list of "large": no pair


def test_asymmetry_needs_the_forward_hit_and_skips_humans(con) -> None:
    # eq. 2, tuple (dog, HYP, animal) (beast dropped); trick list = semrel/hyp-trick "animal".
    # mA k = 1: p0 fwd animal in [animal] 1, bwd dog in [dog] 1 -> 0; p1 fwd [puppy] 0 -> 0.
    #   (without the forward hit p1 would count 1.) k = 5: p0 bwd dog in [dog, thing] -> 0;
    #   p1 fwd 1, bwd dog not in [thing, cat] -> 1: A_5 = .5.
    # mB k = 1: p0 fwd [pet] 0; p1 fwd 1, bwd dog in [dog] -> 0: 0. k = 5: p0 fwd 1, bwd dog not
    #   in [thing] -> 1; p1 0: .5.
    rows = values(metric(con, "semrel_asymmetry"), "value", "n")
    assert rows[("mA", HYP, 1)] == (0.0, 1) and rows[("mA", HYP, 5)] == (0.5, 1)
    assert rows[("mB", HYP, 1)] == (0.0, 1) and rows[("mB", HYP, 5)] == (0.5, 1)
    assert not any(k[0] == "human" for k in rows)   # section 5.2: humans are not scored


def test_response_entropy_eq_19(con) -> None:
    # dog p0 tokens: animal x3, pet x2 -> p = (.6, .4), R = H / log2 2 = H;
    # dog p1: one answer -> R = 0; big p0: large x2 -> 0; big p1: large, huge -> 1.
    h = -(0.6 * log2(0.6) + 0.4 * log2(0.4))
    rows = metric(con, "semrel_response_entropy")
    hyp, syn = rows[("human", HYP)], rows[("human", SYN)]
    assert hyp["value"] == pytest.approx(h / 2) and hyp["n"] == 2
    assert (hyp["r0"], hyp["r1"], hyp["length"], hyp["tokens"]) == (1, 0, 1.5, 6)
    assert hyp["mean_r_nonzero"] == pytest.approx(h)
    assert (syn["value"], syn["r0"], syn["r1"], syn["mean_r_nonzero"]) == (0.5, 1, 1, 1.0)


def test_prototypicality_probe_set_and_score(con) -> None:
    # The section 6.2 set: dog p0 (R < 1, answers in S) yes; dog p1 (mammal outside S) no;
    # big p0 (R = 0) yes; big p1 (R = 1) no.
    assert values(metric(con, "semrel_proto_probes"), "value") == {
        (HYP,): 1, (SYN,): 1, ("all",): 2}
    # mA dog p0: human [animal, pet], k = 2, mA top 2 [animal, cat]: top-1 equal -> 1/2;
    # edit distance one substitution = 2, E = 1 - 2/4 -> 1/2 * 1/2; P = .75. big p0: [large]
    # both -> 1. mB dog p0 [pet, animal]: top-1 differs; distance 2 (delete + insert),
    # E = .5 -> .25; big p0 [small] vs [large]: 0 + 1/2 (1 - 2/2) = 0.
    rows = values(metric(con, "semrel_prototypicality"), "value")
    assert approx(rows) == {("mA", HYP): 0.75, ("mA", SYN): 1.0, ("mA", "macro"): 0.875,
                            ("mA", "micro"): 0.875, ("mB", HYP): 0.25, ("mB", SYN): 0.0,
                            ("mB", "macro"): 0.125, ("mB", "micro"): 0.125}


def test_distinguishability_eqs_24_28(con) -> None:
    # Default reading: rho = (rank - 1) / k, k = |Y^r(w)|; delta(w, p, s) = the mean rho of the
    # s-relata in L_k, 1 when none is there.
    # mA, r = HYP, w = dog, k = 2: p0 L_2 [animal, cat]: HYP animal 0 -> 0; HPO puppy absent
    #   -> 1; p1 [puppy, animal]: HYP animal 1/2; HPO puppy 0. delta(HYP, HYP) = .25,
    #   delta(HYP, HPO) = .5, D = .25.
    # mA, r = SYN, k = 1: big p0 [large] SYN 0, ANT 1; p1 [small] SYN 1, ANT 0; large p0 [big] 0,
    #   p1 [thing] 1 (no ANT set): delta(SYN, SYN) = .5, delta(SYN, ANT) = .5, D = 0.
    # human: dog p0 [animal, pet] HYP (0 + .5) / 2, p1 [mammal] 1 -> .625; HPO 1 -> D = .375;
    #   big p0, p1 [large] -> SYN 0, ANT 1 -> D = 1.
    # mB: dog p0 [pet, animal] (0 + .5) / 2, p1 [animal] 0 -> .125; HPO 1 -> D = .875; SYN:
    #   big [small] 1 / ANT 0, [large] 0 / 1; large [big] 0, [small] 1 -> D(SYN, ANT) = 0.
    rows = values(metric(con, "semrel_distinguishability"), "value")
    assert approx(rows) == {("mA", HYP, "HPO"): 0.25, ("mA", SYN, "ANT"): 0.0,
                            ("human", HYP, "HPO"): 0.375, ("human", SYN, "ANT"): 1.0,
                            ("mB", HYP, "HPO"): 0.875, ("mB", SYN, "ANT"): 0.0}
    # AuDC = the integral of eta(p) = the sum of D (eq. 28)
    assert approx(values(metric(con, "semrel_audc"), "value")) == {
        ("mA",): 0.25, ("human",): 1.375, ("mB",): 0.875}


def test_distinguishability_readings_are_parameters(path: Path) -> None:
    # 'one': mA dog p0 HYP (0 + 1) / 2, p1 (1/2 + 1) / 2 -> .625 > delta(HYP, HPO) = .5 -> D 0.
    # 'skip': p0 HYP 0, p1 .5 -> .25; HPO p0 left out, p1 0 -> 0 -> D 0.
    # rank 'one' (rho = rank / k), mB: p0 (1/2 + 2/2) / 2 = .75, p1 1/2 -> .625; HPO 1 -> .375.
    for absent, expected in (("one", 0.0), ("skip", 0.0), ("present", 0.25)):
        c = open_results(path, absent=absent)
        assert values(metric(c, "semrel_distinguishability"), "value")[
            ("mA", HYP, "HPO")] == pytest.approx(expected), absent
    c = open_results(path, rank="one")
    assert values(metric(c, "semrel_distinguishability"), "value")[
        ("mB", HYP, "HPO")] == pytest.approx(0.375)


def test_out_of_relatum_statistics(con) -> None:
    # mA top-10 words of the relation probes: dog p0 animal cat* pet, p1 puppy animal thing*,
    # big p0 large small, p1 small large, large p0 big, p1 thing* big: 13 tokens, 3 OOR; types
    # 8, OOR wherever they occur: cat, thing; no list all OOR; first related ranks 1,1,1,1,1,2.
    # human tokens: dog p0 5, p1 mammal*, big p0 2, p1 large huge*: 10, 2 OOR; types animal,
    # pet, mammal*, large, huge* -> 2/5; lists all OOR: dog p1 -> 1/4; first ranks 1, 1, 1.
    rows = metric(con, "semrel_oor")
    a, h = rows[("mA",)], rows[("human",)]
    assert (a["tokens"], a["oor_tokens"], a["types"], a["oor_types"]) == (13, 3, 8, 2)
    assert a["value"] == pytest.approx(3 / 13) and a["all_oor"] == 0
    assert a["first_rank"] == pytest.approx(7 / 6)
    assert (h["tokens"], h["oor_tokens"], h["types"], h["oor_types"]) == (10, 2, 5, 2)
    assert h["all_oor"] == pytest.approx(0.25) and h["first_rank"] == pytest.approx(1.0)
    # OOR is relative to the probe's own word ("a word that is not in the r-relatum set for
    # either relation r" of that target word, section 4.3). mB: dog p0 pet animal, p1 animal,
    # big p0 small large, p1 large big*, large p0 big, p1 small*: 9 tokens; big is no relatum
    # of big and small none of large (though small is big's antonym and big large's synonym:
    # OOR against every word's sets would give 0). Types pet, animal, small, large, big: OOR
    # wherever they occur: none (big and small are related elsewhere; "OOR somewhere" would
    # give 2). Lists all OOR: large p1 -> 1/6; first non-OOR rank 1 in the other five.
    b = rows[("mB",)]
    assert (b["tokens"], b["oor_tokens"], b["types"], b["oor_types"]) == (9, 2, 5, 0)
    assert b["all_oor"] == pytest.approx(1 / 6) and b["first_rank"] == pytest.approx(1.0)
    assert h["file_tokens"] == 10 and h["file_types"] == 5 and b["file_tokens"] is None


def test_tables_1_and_2(con) -> None:
    rows = metric(con, "semrel_tables")
    hyp, syn = rows[(HYP,)], rows[(SYN,)]
    # HYP: W = {dog}, 2 prompts -> 2 probes; T^HYP = {(dog, animal)} (beast dropped), source;
    # before expansion 1 relatum, after 2 ({animal, pet}).
    assert (hyp["prompts"], hyp["words"], hyp["value"], hyp["tuples"],
            hyp["source_tuples"]) == (2, 1, 2, 1, 1)
    assert (hyp["before_mean"], hyp["after_mean"]) == (1.0, 2.0)
    assert (syn["words"], syn["value"], syn["tuples"], syn["source_tuples"]) == (2, 4, 2, 1)


def test_no_declared_models_means_no_restriction(path: Path) -> None:
    # Nothing is limited: (dog, HYP, beast) is a tuple and beast a relatum of dog.
    c = open_results(path, declared=None)
    hyp = metric(c, "semrel_tables")[(HYP,)]
    assert (hyp["tuples"], hyp["after_mean"]) == (2, 3.0)
    # and a declared model without any model_vocab rows limits everything away (counted)
    c = open_results(path, declared=["mA", "nobody"])
    assert (HYP,) not in metric(c, "semrel_tables")


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
