"""The BEAR SQL metrics (eval/bear/*.sql) on a hand-worked example.

Two relations, two templates each (lm-pub-quiz rows = instance x template):

- P10 (domain A; answers Rome, Paris, Berlin): I1 "Paris Hilton" gold Paris (idx 1),
  I2 "Romeo" gold Rome (idx 0);
- P2 (domains A and B; answers French, English): I3 "Jane" gold English (idx 1).

Summed scores (n_tokens 1 unless said) and what lm-pub-quiz does with them
(`pll_scores.index(max(...))`: a tie goes to the earlier answer; `sort_scores`: a stable sort):

    I1 t0: -3 -1 -2  -> Paris, right;           gold rank 1
    I1 t1: -1 -1 -4  -> tie Rome/Paris: Rome, wrong; gold rank 2
    I2 t0: -5 -2 -3  -> Paris, wrong;           gold rank 3
    I2 t1: -2 -1.5 -3 -> Paris, wrong;          gold rank 2
    I3 t0: -2 -1     -> English, right;         gold rank 1
    I3 t1: -4 (4 tokens) -3 -> English, right (sum); mean: French -1 > English -3, wrong

Relation accuracies: P10 1/4 (support 4), P2 2/2 (support 2). lm-pub-quiz's aggregate
(accumulate_metrics: np.average weighted by support) = (0.25*4 + 1*2) / 6 = 0.5 (the plain mean
of the relations would be 0.625). Domains (divide_support: a relation's support is split over
its domains): A = (0.25*4/1 + 1*2/2) / (4 + 1) = 0.4, support 5; B = 1.0, support 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.sqlfile import discover_metrics, run_metric
from probes.results import connect
from probes.results.writers import Run, insert_run

METRICS = {m.name: m for m in discover_metrics([Path(__file__).parents[1] / "eval" / "bear"])}
PROBE = "bear/bear"
ANSWERS = {"P10": ["Rome", "Paris", "Berlin"], "P2": ["French", "English"]}
INSTANCES = [("I1", "P10", "Paris Hilton", "Paris", ["A"]), ("I2", "P10", "Romeo", "Rome", ["A"]),
             ("I3", "P2", "Jane", "English", ["A", "B"])]
SCORES: dict[tuple[str, int], list[float | tuple[float, int]]] = {
    ("I1", 0): [-3, -1, -2], ("I1", 1): [-1, -1, -4],
    ("I2", 0): [-5, -2, -3], ("I2", 1): [-2, -1.5, -3],
    ("I3", 0): [-2, -1], ("I3", 1): [(-4, 4), -3],
}


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = connect(":memory:")
    for iid, rel, subject, gold, domains in INSTANCES:
        fields = {"relation": rel, "subject": subject, "domain": domains}
        c.execute("""INSERT INTO instances (probe, split, instance_id, target, gold, candidates,
                     fields, exported_at) VALUES (?, 'test', ?, ?, ?, ?, ?::JSON, now())""",
                  [PROBE, iid, subject, [gold], ANSWERS[rel], json.dumps(fields)])
    insert_run(c, Run(run_id="R", model="m", probe=PROBE, task="choice", config={},
                      status="done"))
    rel_of = {i[0]: i[1] for i in INSTANCES}
    for (iid, pid), vals in SCORES.items():
        # rows written in reverse answer order: the metrics must not depend on row order
        for cand, v in reversed(list(zip(ANSWERS[rel_of[iid]], vals, strict=True))):
            score, n = v if isinstance(v, tuple) else (v, 1)
            c.execute("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                         candidate, label, prompt, score, n_tokens)
                         VALUES ('R', ?, 'test', ?, ?, ?, ?, '', ?, ?)""",
                      [PROBE, iid, pid, cand, cand, score, n])
    return c


def metric(con: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    cols, rows = run_metric(con, METRICS[name])
    return [dict(zip(cols, r, strict=True)) for r in rows]


def by(rows: list[dict[str, Any]], *keys: str) -> dict[Any, float]:
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r["value"]
            for r in rows}


def test_accuracy_aggregate_is_support_weighted(con: duckdb.DuckDBPyConnection) -> None:
    (row,) = metric(con, "bear_accuracy")
    assert row["value"] == pytest.approx(0.5)
    assert (row["n"], row["rows"]) == (3, 6)


def test_accuracy_per_relation_and_template(con: duckdb.DuckDBPyConnection) -> None:
    assert by(metric(con, "bear_accuracy_relation"), "relation") == {
        "P10": pytest.approx(0.25), "P2": pytest.approx(1.0)}
    assert by(metric(con, "bear_accuracy_template"), "relation", "prompt_id") == {
        ("P10", 0): 0.5, ("P10", 1): 0.0, ("P2", 0): 1.0, ("P2", 1): 1.0}
    spread = {r["relation"]: r for r in metric(con, "bear_template_spread")}
    assert spread["P10"]["value"] == pytest.approx(0.5)
    assert spread["P10"]["template_sd"] == pytest.approx(0.25)
    assert spread["P2"]["value"] == 0.0


def test_domain_weighting_as_lm_pub_quiz(con: duckdb.DuckDBPyConnection) -> None:
    rows = {r["domain"]: r for r in metric(con, "bear_accuracy_domain")}
    assert rows["A"]["value"] == pytest.approx(0.4)
    assert rows["A"]["support"] == pytest.approx(5.0)
    assert rows["B"]["value"] == pytest.approx(1.0)
    assert rows["B"]["support"] == pytest.approx(1.0)


def test_mean_reduction(con: duckdb.DuckDBPyConnection) -> None:
    # I3 t1 flips to French under score / n_tokens: 2 rows right of 6
    (row,) = metric(con, "bear_accuracy_mean")
    assert row["value"] == pytest.approx(2 / 6)


def test_precision_at_k(con: duckdb.DuckDBPyConnection) -> None:
    # P10 gold ranks 1, 2, 3, 2; P2 1, 1
    assert by(metric(con, "bear_precision_at_k"), "relation", "k") == {
        ("P10", 1): 0.25, ("P10", 2): 0.75, ("P10", 3): 1.0, ("P2", 1): 1.0, ("P2", 2): 1.0}


def softmax(xs: list[float]) -> list[float]:
    e = [math.exp(x) for x in xs]   # lm-pub-quiz: np.exp(scores) / sum
    return [v / sum(e) for v in e]


def test_confidence_metrics(con: duckdb.DuckDBPyConnection) -> None:
    rows = by(metric(con, "bear_confidence"), "relation", "measure", "subset")
    p1 = {k: softmax([v if isinstance(v, float | int) else v[0] for v in vals])
          for k, vals in SCORES.items() if k[0] != "I3"}
    right = {("I1", 0)}
    top = {k: max(p) for k, p in p1.items()}
    second = {k: sorted(p)[-2] for k, p in p1.items()}
    ent = {k: -sum(x * math.log2(x) for x in p) for k, p in p1.items()}

    def mean(d: dict, keys: Any) -> float:
        keys = list(keys)
        return sum(d[k] for k in keys) / len(keys)

    wrong = [k for k in p1 if k not in right]
    assert rows[("P10", "confidence_score", "all")] == pytest.approx(mean(top, p1))
    assert rows[("P10", "confidence_score", "correct")] == pytest.approx(mean(top, right))
    assert rows[("P10", "confidence_score", "incorrect")] == pytest.approx(mean(top, wrong))
    margin = {k: top[k] - second[k] for k in p1}
    assert rows[("P10", "margin_of_confidence", "all")] == pytest.approx(mean(margin, p1))
    # two distinct gold answers in P10: entropy / log2(2)
    assert rows[("P10", "uncertainty_score", "all")] == pytest.approx(mean(ent, p1))
    # P2: every row right (no "incorrect" row, lm-pub-quiz's None); one distinct gold answer:
    # lm-pub-quiz divides by log2(1) = 0, here NULL
    assert ("P2", "confidence_score", "incorrect") not in rows
    assert rows[("P2", "confidence_score", "all")] == pytest.approx(math.e / (1 + math.e))
    assert rows[("P2", "uncertainty_score", "all")] is None


def test_brier_score(con: duckdb.DuckDBPyConnection) -> None:
    # P2: both rows softmax (0.269, 0.731), gold English; sklearn brier_score_loss per answer
    # column: French mean(0.269^2), English mean((1 - 0.731)^2), then their mean
    q = 1 / (1 + math.e)
    assert by(metric(con, "bear_brier_score"), "relation")["P2"] == pytest.approx(q * q)


def test_chance(con: duckdb.DuckDBPyConnection) -> None:
    assert by(metric(con, "bear_chance"), "relation") == {
        "P10": pytest.approx(1 / 3), "P2": pytest.approx(0.5),
        "all": pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3)}


def test_shortcut_panel_and_ceiling(con: duckdb.DuckDBPyConnection) -> None:
    panel = by(metric(con, "bear_shortcut_panel"), "relation", "rule")
    # longest: Berlin (P10: never gold), English (P2: right); shortest: Rome (I2 right), French
    # majority_loo: I1 sees only I2's Rome, I2 only I1's Paris, I3 nobody (tie: French): 0
    # subject_overlap: I1 "Paris Hilton" shares "paris" with Paris: right; I2, I3 share nothing
    assert panel == {
        ("P10", "longest"): 0.0, ("P10", "shortest"): 0.5, ("P10", "majority_loo"): 0.0,
        ("P10", "subject_overlap"): 0.5, ("P2", "longest"): 1.0, ("P2", "shortest"): 0.0,
        ("P2", "majority_loo"): 0.0, ("P2", "subject_overlap"): 0.0,
        ("all", "longest"): pytest.approx(1 / 3), ("all", "shortest"): pytest.approx(1 / 3),
        ("all", "majority_loo"): 0.0, ("all", "subject_overlap"): pytest.approx(1 / 3)}
    # 2-fold cross-fitting over relations: MD5("P10") starts with a (fold 1), MD5("P2") with 5
    # (fold 0). P10 takes the rule best on fold 0 = P2 (longest: 0 on P10); P2 the rule best on
    # fold 1 = P10 (shortest and subject_overlap tie at 0.5; by name: shortest, 0 on P2)
    ceiling = {r["relation"]: (r["value"], r["rule"]) for r in metric(con, "bear_shortcut_ceiling")}
    assert ceiling == {"P10": (0.0, "longest"), "P2": (0.0, "shortest"), "all": (0.0, "longest")}


def test_unfinished_runs_and_other_probes_are_left_out(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("UPDATE runs SET status = 'running'")
    assert metric(con, "bear_accuracy") == []


# --- against lm-pub-quiz's own metric code ------------------------------------------------
# tests/fixtures/bear/lmpq_reference.json: seeded synthetic scores (with exact ties) and what
# lm-pub-quiz 0.3.3's DatasetResults.get_metrics returns for them (made by
# scripts/bear_lmpq_reference.py in a virtual environment with lm-pub-quiz installed).
REFERENCE = Path(__file__).parent / "fixtures" / "bear" / "lmpq_reference.json"


@pytest.fixture(scope="module")
def reference() -> tuple[duckdb.DuckDBPyConnection, dict[str, Any]]:
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    c = connect(":memory:")
    insert_run(c, Run(run_id="L", model="m", probe=PROBE, task="choice", config={},
                      status="done"))
    for code, rel in ref["inputs"].items():
        answers = rel["answers"]
        seen = set()
        for row in rel["rows"]:
            iid = f"{code}-{row['instance_index']}"
            if iid not in seen:
                seen.add(iid)
                c.execute("""INSERT INTO instances (probe, split, instance_id, target, gold,
                             candidates, fields, exported_at)
                             VALUES (?, 'test', ?, 'x', ?, ?, ?::JSON, now())""",
                          [PROBE, iid, [answers[row["answer_idx"]]], answers,
                           json.dumps({"relation": code, "domain": rel["domains"]})])
            c.executemany("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                             candidate, label, prompt, score, n_tokens)
                             VALUES ('L', ?, 'test', ?, ?, ?, ?, '', ?, 1)""",
                          [[PROBE, iid, row["template_index"], a, a, s]
                           for a, s in zip(answers, row["pll_scores"], strict=True)])
    return c, ref["expected"]


def test_aggregate_and_domains_equal_lm_pub_quiz(reference: tuple) -> None:
    con, exp = reference
    (row,) = metric(con, "bear_accuracy")
    assert row["value"] == pytest.approx(exp["accuracy"], rel=1e-12)
    domains = {r["domain"]: r for r in metric(con, "bear_accuracy_domain")}
    assert {d: r["value"] for d, r in domains.items()} == pytest.approx(exp["accuracy_domains"])
    assert {d: r["support"] for d, r in domains.items()} == pytest.approx(exp["support_domains"])


def test_relation_metrics_equal_lm_pub_quiz(reference: tuple) -> None:
    con, exp = reference
    acc = by(metric(con, "bear_accuracy_relation"), "relation")
    pak = metric(con, "bear_precision_at_k")
    conf = by(metric(con, "bear_confidence"), "relation", "measure", "subset")
    brier = by(metric(con, "bear_brier_score"), "relation")
    for code, e in exp["relations"].items():
        assert acc[code] == pytest.approx(e["accuracy"]), code
        got = [r["value"] for r in sorted(pak, key=lambda r: r["k"]) if r["relation"] == code]
        assert got == pytest.approx(e["precision_at_k"]), code
        for m in ("confidence_score", "margin_of_confidence", "uncertainty_score"):
            for subset in ("all", "correct", "incorrect"):
                want = e.get(f"{m}_{subset}")
                if want is None:
                    assert conf.get((code, m, subset)) is None, (code, m, subset)
                else:
                    # values of order 1: a relative tolerance of 1e-9
                    assert conf[(code, m, subset)] == pytest.approx(want, rel=1e-9), (code, m)
        assert brier[code] == pytest.approx(e["brier_score"], rel=1e-9), code
