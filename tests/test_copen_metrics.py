"""The COPEN SQL metrics (eval/copen/*.sql), each on a hand-worked example.

Scores are chosen so that the per-token mean (score / n_tokens, as in the COPEN probing code)
and the plain sum rank candidates differently, and every expected value below is worked out by
hand in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.copen_report import build, render
from eval.sqlfile import discover_metrics, run_metric
from probes.results import connect
from probes.results.writers import Run, insert_run

METRICS = {m.name: m for m in discover_metrics([Path(__file__).parents[1] / "eval" / "copen"])}


def add_instance(con: duckdb.DuckDBPyConnection, probe: str, split: str, iid: str,
                 gold: list[str], candidates: list[str], **fields: Any) -> None:
    con.execute("""INSERT INTO instances VALUES (?, ?, ?, NULL, ?, ?, ?::JSON, now())""",
                [probe, split, iid, gold, candidates, json.dumps(fields)])


def add_run(con: duckdb.DuckDBPyConnection, rid: str, probe: str, task: str, model: str = "m",
            **copen: Any) -> None:
    cfg = {"task": task, "runtime": {"copen": {"method": "zero-shot", "kind": "causal",
                                               **copen}}}
    insert_run(con, Run(run_id=rid, model=model, probe=probe, task=task, config=cfg,
                        status="done", method="zero-shot", part=copen.get("part"),
                        context=copen.get("context")))


def add_scores(con: duckdb.DuckDBPyConnection, rid: str, probe: str, split: str, iid: str,
               rows: list[tuple], label_of: dict[str, str] | None = None) -> None:
    """rows: (candidate, score, n_tokens[, prompt_id])."""
    for row in rows:
        cand, score, n = row[:3]
        pid = row[3] if len(row) > 3 else 0
        con.execute("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                       candidate, label, prompt, score, n_tokens)
                       VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?)""",
                    [rid, probe, split, iid, pid, cand, (label_of or {}).get(cand, cand),
                     score, n])


def metric(con: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    cols, rows = run_metric(con, METRICS[name])
    return [dict(zip(cols, r, strict=True)) for r in rows]


@pytest.fixture
def csj() -> duckdb.DuckDBPyConnection:
    con = connect(":memory:")
    p = "copen/csj"
    add_instance(con, p, "dev", "A", ["a"], ["a", "h1", "h2", "e1", "e2"],
                 hard=["h1", "h2"], easy=["e1", "e2"])
    add_instance(con, p, "dev", "B", ["x"], ["x", "y"], hard=["y"], easy=[])
    add_instance(con, p, "test", "C", [], ["p", "q"], hard=["q"], easy=["p"])
    add_run(con, "R1", p, "choice", part="candidate", context=True)
    # A per token: a -4/2=-2, h1 -3, h2 -1, e1 -9/3=-3, e2 -2 (ties a). Sums would rank a (-4)
    # below e2 (-2) and h1 (-3) but above e1 (-9): a different rank.
    add_scores(con, "R1", p, "dev", "A", [("a", -4, 2), ("h1", -3, 1), ("h2", -1, 1),
                                          ("e1", -9, 3), ("e2", -2, 1)])
    # B, two prompts: x mean(-1, -3) = -2, y mean(-5, -1) = -3: x wins.
    add_scores(con, "R1", p, "dev", "B", [("x", -1, 1, 0), ("y", -5, 1, 0), ("x", -3, 1, 1),
                                          ("y", -1, 1, 1)])
    add_scores(con, "R1", p, "test", "C", [("p", -1, 1), ("q", -2, 1)])
    return con


def test_csj_accuracy_and_mrr(csj: duckdb.DuckDBPyConnection) -> None:
    # A wrong (h2 -1 > a -2), B right; C is hidden: dev accuracy 1/2, no test row.
    assert metric(csj, "copen_accuracy") == [
        {"run_id": "R1", "probe": "copen/csj", "split": "dev", "value": 0.5, "n": 2}]
    # A: rank 1 + |{h2 -1, e2 -2 (tie)}| = 3; B: rank 1. MRR = (1/3 + 1) / 2 = 2/3.
    (row,) = metric(csj, "copen_csj_mrr")
    assert row["value"] == pytest.approx(2 / 3) and row["n"] == 2


def test_csj_mrr_against_hard_and_easy_distractors(csj: duckdb.DuckDBPyConnection) -> None:
    """Table 3: each distractor's reciprocal rank among the distractors (the answer left out),
    averaged per kind."""
    rows = {r["distractors"]: (r["value"], r["n"]) for r in metric(csj,
                                                                   "copen_csj_mrr_distractors")}
    # A's distractors per token: h2 -1 (rank 1), e2 -2 (rank 2), h1 -3 and e1 -3 (both rank 3:
    # 1 + two strictly higher). B: y alone, rank 1. C has a hidden label: left out.
    # hard: h1 1/3, h2 1, y 1 -> 7/9 over 3; easy: e1 1/3, e2 1/2 -> 5/12 over 2.
    assert rows == {"hard": (pytest.approx(7 / 9), 3), "easy": (pytest.approx(5 / 12), 2)}
    assert "copen_csj_mrr_by_kind" not in METRICS


def test_random_baseline_and_hidden_labels(csj: duckdb.DuckDBPyConnection) -> None:
    (row,) = metric(csj, "copen_random_baseline")
    # dev: A 1/5, B 1/2 -> 0.35; MRR: A (1 + 1/2 + 1/3 + 1/4 + 1/5)/5, B (1 + 1/2)/2.
    assert row["value"] == pytest.approx(0.35)
    assert row["mrr"] == pytest.approx(((137 / 60) / 5 + 0.75) / 2)
    hidden = {r["split"]: (r["value"], r["n"]) for r in metric(csj, "copen_hidden_labels")}
    assert hidden == {"dev": (0, 2), "test": (1, 1)}


@pytest.fixture
def cpj() -> duckdb.DuckDBPyConnection:
    con = connect(":memory:")
    p = "copen/cpj"
    add_run(con, "R2", p, "binary", part="answer", context=True)
    cases = {  # id: (gold, chain, {candidate: score}); all n_tokens 1
        "S1": ("true", "c1", {"true": -1, "false": -2}),     # right
        "S2": ("false", "c1", {"true": -1, "false": -3}),    # wrong: false positive
        "S3": ("true", "c2", {"true": -2, "false": -1, "correct": -1.5}),  # wrong (best true
                                                              # word -1.5 < -1): false negative
        "S4": ("false", "c2", {"true": -0.5, "false": -0.5}),  # tie: wrong, false positive
        "S5": ("true", "c3", {"true": -1, "false": -2}),     # right
        "S6": ("false", None, {"true": -2, "false": -1}),    # right, no chain
        "S7": ("false", "c3", {"true": -3, "false": -1}),    # right
    }
    for iid, (gold, chain, scores) in cases.items():
        add_instance(con, p, "dev", iid, [gold], ["true", "false"], chain_id=chain)
        add_scores(con, "R2", p, "dev", iid, [(c, s, 1) for c, s in scores.items()],
                   label_of={"correct": "true"})
    add_instance(con, p, "test", "S8", [], ["true", "false"], chain_id="c1")
    add_scores(con, "R2", p, "test", "S8", [("true", -1, 1), ("false", -2, 1)])
    return con


def test_cpj_accuracy_chains_and_false_positives(cpj: duckdb.DuckDBPyConnection) -> None:
    (acc,) = metric(cpj, "copen_accuracy")
    assert (acc["value"], acc["n"]) == (pytest.approx(4 / 7), 7)  # S1, S5, S6, S7
    (chain,) = metric(cpj, "copen_cpj_chain_accuracy")
    # c1 = {S1 ok, S2 wrong}, c2 = {S3, S4 wrong}, c3 = {S5, S7 ok}; S8 hidden; S6 no chain.
    assert (chain["value"], chain["n"]) == (pytest.approx(1 / 3), 3)
    (fp,) = metric(cpj, "copen_cpj_false_positive_share")
    assert (fp["value"], fp["n"]) == (pytest.approx(2 / 3), 3)  # S2, S4 of S2, S3, S4
    # random guess: 0.5^2 for each labelled chain of two (c1, c2, c3); S8 is hidden
    (rnd,) = metric(cpj, "copen_cpj_chain_random")
    assert (rnd["value"], rnd["n"]) == (pytest.approx(0.25), 3)


@pytest.fixture
def cic() -> duckdb.DuckDBPyConnection:
    con = connect(":memory:")
    p = "copen/cic"
    chains = {
        "D": [["magazine", "periodical literature", "written work", "work"],
              ["document", "work"]],
        "E": [["school", "educational institution", "organisation"], ["group", "organisation"]],
        "F": [["american football player", "gridiron football player", "athlete", "person"]],
        "G": [["historian", "writer", "person"], ["business person", "person"]],
        "H": [["p", "q"]],
        "I": [["x", "y"]],
    }
    gold = {"D": "magazine", "E": "school", "F": "athlete", "G": "writer", "H": None, "I": "x"}
    for iid, ch in chains.items():
        cands = list(dict.fromkeys(c for chain in ch for c in chain))
        add_instance(con, p, "test" if iid == "H" else "dev", iid,
                     [gold[iid]] if gold[iid] else [], cands, chain_words=ch)
    add_run(con, "IN", p, "choice", part="concept", context=True)
    add_run(con, "OUT", p, "choice", part="concept", context=False)
    add_run(con, "LONE", p, "choice", model="other", part="concept", context=True)
    inside = {  # best candidate per instance (others score -5)
        "D": {"work": -1, "magazine": -2},           # wrong, 'work' shares D's first chain
        "E": {"group": -1, "school": -2},            # wrong, 'group' is on the other chain
        "F": {"athlete": -1},                        # right
        "G": {"writer": -1, "person": -1},           # tie: wrong, prediction 'person'
        "H": {"q": -1},
        "I": {"y": -1},                              # wrong level, but one chain only
    }
    outside = {"D": {"work": -1}, "E": {"school": -1}, "F": {"athlete": -1},
               "G": {"writer": -1}, "H": {"q": -1}, "I": {"x": -1}}
    for rid, best in (("IN", inside), ("OUT", outside), ("LONE", inside)):
        for iid, ch in chains.items():
            cands = list(dict.fromkeys(c for chain in ch for c in chain))
            split = "test" if iid == "H" else "dev"
            add_scores(con, rid, p, split, iid, [(c, best[iid].get(c, -5), 1) for c in cands])
    return con


def test_cic_accuracy_and_error_types(cic: duckdb.DuckDBPyConnection) -> None:
    acc = {r["run_id"]: (r["value"], r["n"]) for r in metric(cic, "copen_accuracy")}
    assert acc["IN"] == (pytest.approx(0.2), 5)    # F only
    assert acc["OUT"] == (pytest.approx(0.8), 5)   # D wrong ('work'); E, F, G, I right
    types = {(r["run_id"], r["error_type"]): (r["value"], r["n"])
             for r in metric(cic, "copen_cic_error_types")}
    # Tables 6/13 count entities with two or more chains: I (one chain) is left out.
    # IN errors: D wrong level, E disambiguation, G wrong level ('person' is on G's chain).
    assert types[("IN", "wrong_level")] == (pytest.approx(2 / 3), 3)
    assert types[("IN", "disambiguation")] == (pytest.approx(1 / 3), 3)
    assert types[("OUT", "wrong_level")] == (1.0, 1)


def test_cic_out_of_context_agreement(cic: duckdb.DuckDBPyConnection) -> None:
    """Table 5: out-of-context predictions among the incorrect in-context predictions."""
    rows = {(r["run_id"], r["split"]): (r["value"], r["n"])
            for r in metric(cic, "copen_cic_out_of_context")}
    # in-context predictions D work, E group, F athlete (right: not counted), G person (a tie
    # goes to the wrong concept), I y; without context: work, school, -, writer, x. Of the four
    # wrong ones only D agrees -> 1/4. H has a hidden label: left out. The other model has no
    # out-of-context run: no row.
    assert rows == {("IN", "dev"): (0.25, 4)}


def test_report_lays_out_table2(cic: duckdb.DuckDBPyConnection) -> None:
    for seed, value in ((42, -1.0), (43, -3.0)):
        rid = f"LP{seed}"
        cfg = {"runtime": {"copen": {"method": "linear", "seed": seed}}}
        insert_run(cic, Run(run_id=rid, model="m", probe="copen/cic", task="choice",
                            config=cfg, status="done", method="linear", seed=seed))
        # seed 42 gets D right (magazine best), seed 43 gets nothing right
        add_scores(cic, rid, "copen/cic", "dev", "D", [("magazine", value, 1), ("work", -2, 1)])
    res = build(cic)
    assert res.splits["cic"] == "dev" and res.split_reason["cic"] == "test labels hidden"
    text = render(res)
    table = text.split("## Table 2")[1].split("##")[0]
    row_m = next(line for line in table.splitlines() if line.startswith("| m |"))
    cells = [c.strip() for c in row_m.strip("|").split("|")]
    # columns: model, CSJ ZP LP FT, CPJ ZP LP FT, CPJ chain ZP LP FT, CiC ZP LP FT
    # CiC zero-shot: run IN, Table 8's GPT-2 part, 1 of 5 right. Its 95 % bootstrap interval:
    # no 1 among 5 draws has p 0.8^5 = 0.33 (low 0); three or more 1s p 0.058 > 0.025, four or
    # more p 0.0067 < 0.025 (high 3/5)
    assert cells[10] == "20.0 [0.0–60.0] (concept)"
    assert cells[11] == "50.0 ± 50.0"     # LP over D only: seed 42 1.0, seed 43 0.0 (pop. std)
    random_row = next(line for line in table.splitlines() if line.startswith("| Random |"))
    # CiC dev: D has 5 candidates, E, F, G 4 each, I 2 -> (1/5 + 3/4 + 1/2) / 5 = 0.29
    assert random_row.endswith("| 29.0 | 29.0 | 29.0 |")
    # no train split in this file: the shortcut ceiling row is there, empty
    ceiling_row = next(line for line in table.splitlines()
                       if line.startswith("| Shortcut ceiling |"))
    assert ceiling_row == "| Shortcut ceiling |" + " – |" * 12
    assert "Table 2 layout, on the splits named in each column (not the test set)" in text
    assert "CiC ZP (dev)" in table
