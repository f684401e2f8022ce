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

from eval.copen_report import build, paired_zero_shot, render
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
    # A: the authors' stable sort (computeMR): h2 -1 above a; e2 ties a (-2) but comes after a
    # in the file's order, so a keeps rank 2; B: rank 1. MRR = (1/2 + 1) / 2 = 3/4.
    (row,) = metric(csj, "copen_csj_mrr")
    assert row["value"] == pytest.approx(3 / 4) and row["n"] == 2


def test_csj_ties_go_to_the_earliest_candidate_as_the_authors_stable_sort() -> None:
    con = connect(":memory:")
    p = "copen/csj"
    # T1: d1, a, d2 all tie: d1 (first in the file) is predicted, a ranks 2nd (d1 before it)
    add_instance(con, p, "dev", "T1", ["a"], ["d1", "a", "d2"], hard=[], easy=["d1", "d2"])
    # T2: a ties d1 and comes first: a is predicted, rank 1
    add_instance(con, p, "dev", "T2", ["a"], ["a", "d1", "d2"], hard=[], easy=["d1", "d2"])
    add_run(con, "R", p, "choice", part="query", context=True)
    add_scores(con, "R", p, "dev", "T1", [("d1", -1, 1), ("a", -2, 2), ("d2", -3, 3)])
    add_scores(con, "R", p, "dev", "T2", [("a", -2, 2), ("d1", -1, 1), ("d2", -4, 1)])
    (acc,) = metric(con, "copen_accuracy")
    assert (acc["value"], acc["n"]) == (0.5, 2)  # T1 wrong, T2 right
    (mrr,) = metric(con, "copen_csj_mrr")
    assert mrr["value"] == pytest.approx((1 / 2 + 1) / 2)


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
        "S4": ("false", "c2", {"true": -0.5, "false": -0.5}),  # tie: judged false (the
                                              # authors' int(pos > neg)): right
        "S5": ("true", "c3", {"true": -1, "false": -2}),     # right
        "S6": ("false", None, {"true": -2, "false": -1}),    # right, no chain
        "S7": ("false", "c3", {"true": -3, "false": -1}),    # right
        "S9": ("true", None, {"true": -1, "false": -1}),     # tie judged false: wrong (false
                                                              # negative), no chain
        "S10": ("true", "c5", {"true": -2, "false": -1}),    # wrong, a chain of one statement
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
    assert (acc["value"], acc["n"]) == (pytest.approx(5 / 9), 9)  # S1, S4, S5, S6, S7
    (chain,) = metric(cpj, "copen_cpj_chain_accuracy")
    # c1 = {S1 ok, S2 wrong}, c2 = {S3 wrong, S4 ok}, c3 = {S5, S7 ok}; S8 hidden; S6 and S9
    # no chain; c5 = {S10} has one statement: left out (with it: 1/4 over 4 chains).
    assert (chain["value"], chain["n"]) == (pytest.approx(1 / 3), 3)
    (fp,) = metric(cpj, "copen_cpj_false_positive_share")
    assert (fp["value"], fp["n"]) == (pytest.approx(1 / 4), 4)  # S2 of S2, S3, S9, S10
    # random guess: 0.5^2 for each labelled chain of two (c1, c2, c3); S8 is hidden, c5 too short
    (rnd,) = metric(cpj, "copen_cpj_chain_random")
    assert (rnd["value"], rnd["n"]) == (pytest.approx(0.25), 3)


def test_chain_random_on_the_authors_102_test_chains() -> None:
    """The authors' stored probing results (code/probing/task2/output/results/*.json, key
    consistency) count 15, 20, 21, 17, 13, 14 and 2 test chains of 2..8 statements; a uniform
    guess is right on a chain of L with probability 0.5^L:
    (15/4 + 20/8 + 21/16 + 17/32 + 13/64 + 14/128 + 2/256) / 102 = 8.4140625 / 102 = 8.25 %
    (the paper prints 7.2)."""
    con = connect(":memory:")
    lengths = {2: 15, 3: 20, 4: 21, 5: 17, 6: 13, 7: 14, 8: 2}
    k = 0
    for length, count in lengths.items():
        for c in range(count):
            for _ in range(length):
                add_instance(con, "copen/cpj", "test", f"s{k}", ["true"], ["true", "false"],
                             chain_id=f"L{length}-{c}")
                k += 1
    (rnd,) = metric(con, "copen_cpj_chain_random")
    assert rnd["n"] == 102
    assert rnd["value"] == pytest.approx(8.4140625 / 102)
    assert round(100 * rnd["value"], 2) == 8.25


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
        "G": {"writer": -1, "person": -1},           # tie: the earliest on the chains,
                                                     # 'writer', wins (`prob > flag`): right
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
    assert acc["IN"] == (pytest.approx(0.4), 5)    # F, G
    assert acc["OUT"] == (pytest.approx(0.8), 5)   # D wrong ('work'); E, F, G, I right
    types = {(r["run_id"], r["error_type"]): (r["value"], r["n"])
             for r in metric(cic, "copen_cic_error_types")}
    # Tables 6/13 count entities with two or more chains: I (one chain) is left out.
    # IN errors: D wrong level, E disambiguation.
    assert types[("IN", "wrong_level")] == (pytest.approx(1 / 2), 2)
    assert types[("IN", "disambiguation")] == (pytest.approx(1 / 2), 2)
    assert types[("OUT", "wrong_level")] == (1.0, 1)


def test_two_models_zero_shot_are_compared_on_the_same_instances(
        cic: duckdb.DuckDBPyConnection) -> None:
    # a third model in context scoring as OUT did: right on E, F, G, I of the dev split
    # (D wrong; H is test, without a label). m (run IN) is right on F only, "other" (LONE)
    # scores as IN. alt against m: 4/5 against 1/5, 3 discordant instances all for alt:
    # McNemar p = 2 * 0.5^3 = 0.25; m against other: no discordant instance, p = 1
    add_run(cic, "ALT", "copen/cic", "choice", model="alt", part="concept", context=True)
    cic.execute("INSERT INTO scores SELECT 'ALT', * EXCLUDE (run_id) FROM scores "
                "WHERE run_id = 'OUT'")
    rows = [[c.strip() for c in line.split("|")[1:-1]]
            for line in paired_zero_shot(build(cic)).splitlines()[2:]]
    assert [r[:7] + r[8:] for r in rows] == [
        ["CiC (dev)", "alt", "m", "5", "80.0", "20.0", "+60.0", "mcnemar", "0.25"],
        ["CiC (dev)", "alt", "other", "5", "80.0", "20.0", "+60.0", "mcnemar", "0.25"],
        ["CiC (dev)", "m", "other", "5", "20.0", "20.0", "+0.0", "mcnemar", "1"]]
    assert "### Zero-shot: two models on the same instances" in render(build(cic))


def test_cic_out_of_context_agreement(cic: duckdb.DuckDBPyConnection) -> None:
    """Table 5: out-of-context predictions among the incorrect in-context predictions."""
    rows = {(r["run_id"], r["split"]): (r["value"], r["n"])
            for r in metric(cic, "copen_cic_out_of_context")}
    # in-context predictions D work, E group, F athlete and G writer (right: not counted), I y;
    # without context: work, school, -, -, x. Of the three wrong ones only D agrees -> 1/3. H
    # has a hidden label: left out. The other model has no out-of-context run: no row.
    assert rows == {("IN", "dev"): (pytest.approx(1 / 3), 3)}


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
    # CiC zero-shot: run IN, Table 8's GPT-2 part, 2 of 5 right (ties to the earliest candidate,
    # as the authors' code). Its 95 % Wilson interval:
    # (p + z²/2n ± z sqrt(p(1 - p)/n + z²/4n²)) / (1 + z²/n) with p = 0.4, n = 5, z = 1.96:
    # (0.78416 ± 0.57617) / 1.76832 = 0.118 .. 0.769
    assert cells[10] == "40.0 [11.8–76.9] (concept)"
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


def _table2_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    table = render(build(con)).split("## Table 2")[1].split("##")[0]
    rows = {}
    for line in table.splitlines():
        if line.startswith("| ") and not line.startswith("| model"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    # cells: CSJ ZP LP FT, CPJ ZP LP FT, CPJ chain ZP LP FT, CiC ZP LP FT
    return rows


def test_table2_never_pools_runs_of_different_settings() -> None:
    con = connect(":memory:")
    p = "copen/csj"
    add_instance(con, p, "dev", "A", ["a"], ["a", "b"])
    add_instance(con, p, "dev", "B", ["x"], ["x", "y"])
    # two zero-shot runs of one model and part that differ only in --span: token gets both
    # right (1.0), progressive both wrong (0.0). Pooled they would read "50.0 ± 50.0".
    for rid, span, good in (("TOK", "token", True), ("PRO", "progressive", False)):
        add_run(con, rid, p, "choice", part="query", context=True, kind="masked",
                model_type="bert", span=span, tokenisation="words", max_tokens=120)
        for iid, (gold, other) in {"A": ("a", "b"), "B": ("x", "y")}.items():
            add_scores(con, rid, p, "dev", iid, [(gold, -1 if good else -3, 1), (other, -2, 1)])
    # linear probing: seeds 42 and 43 of one setting are pooled; lr 1e-2 is another row
    for rid, seed, lr, right in (("L42", 42, 1e-3, 2), ("L43", 43, 1e-3, 1),
                                 ("X42", 42, 1e-2, 0)):
        cfg = {"runtime": {"copen": {"method": "linear", "seed": seed, "lr": lr,
                                     "epochs": 9, "best_epoch": seed - 40}}}
        insert_run(con, Run(run_id=rid, model="m", probe=p, task="choice", config=cfg,
                            status="done", method="linear", seed=seed))
        for k, (iid, gold, other) in enumerate((("A", "a", "b"), ("B", "x", "y"))):
            add_scores(con, rid, p, "dev", iid, [(gold, -1 if k < right else -3, 1),
                                                 (other, -2, 1)])
    rows = _table2_rows(con)
    # 95 % Wilson intervals over n = 2: at 0/2 the upper end is z²/(n + z²) = 3.8416/5.8416
    # = 0.658, at 2/2 the lower end is n/(n + z²) = 2/5.8416 = 0.342
    assert rows["m [span=progressive]"][0] == "0.0 [0.0–65.8] (query)"
    assert rows["m [span=token]"][0] == "100.0 [34.2–100.0] (query)"
    # seeds of lr 1e-3: 1.0 and 0.5 -> mean 75.0, population std 25.0; lr 1e-2 apart: 0.0
    assert rows["m [lr=0.001]"][1] == "75.0 ± 25.0"
    assert rows["m [lr=0.01]"][1] == "0.0"
    assert not any("±" in c for r, cells in rows.items() if "span" in r for c in cells)


def test_settings_that_differ_only_between_tasks_split_no_row() -> None:
    # the paper's per-task hyper-parameters: CSJ linear probing at lr 1e-3, CPJ at 1e-2. Each
    # task's cell has one setting, so the model keeps one row (no "[lr=...]" names); CSJ: A
    # right -> 100.0, CPJ: B wrong -> 0.0
    con = connect(":memory:")
    add_instance(con, "copen/csj", "dev", "A", ["a"], ["a", "b"])
    add_instance(con, "copen/cpj", "dev", "B", ["x"], ["x", "y"])
    for rid, probe, lr, iid, gold, other, good in (("C", "copen/csj", 1e-3, "A", "a", "b", True),
                                                   ("P", "copen/cpj", 1e-2, "B", "x", "y", False)):
        cfg = {"runtime": {"copen": {"method": "linear", "seed": 42, "lr": lr}}}
        insert_run(con, Run(run_id=rid, model="m", probe=probe, task="choice", config=cfg,
                            status="done", method="linear", seed=42))
        add_scores(con, rid, probe, "dev", iid, [(gold, -1 if good else -3, 1), (other, -2, 1)])
    rows = _table2_rows(con)
    assert [r for r in rows if r.startswith("m")] == ["m"]
    assert rows["m"][1] == "100.0" and rows["m"][4] == "0.0"


def test_chain_level_cells_use_the_answer_part_and_bart_all() -> None:
    """The authors' merge_result (code/utils.py): PB-chain = the answer part's consistency,
    BART's all; the instance-level CPJ cell keeps Table 8's part (concept for both)."""
    con = connect(":memory:")
    p = "copen/cpj"
    for c in range(2):  # two chains of two statements, every gold true
        for s in range(2):
            add_instance(con, p, "dev", f"c{c}s{s}", ["true"], ["true", "false"],
                         chain_id=f"c{c}")
    # per part, which statements are right: concept all 4, answer only chain c0, all none
    right = {"concept": {"c0s0", "c0s1", "c1s0", "c1s1"}, "answer": {"c0s0", "c0s1"},
             "all": set()}
    for model, model_type, kind in (("bert", "bert", "masked"), ("bart", "bart", "seq2seq")):
        for part, ok in right.items():
            rid = f"{model}-{part}"
            add_run(con, rid, p, "binary", model=model, part=part, context=True, kind=kind,
                    model_type=model_type, span="token")
            for iid in ("c0s0", "c0s1", "c1s0", "c1s1"):
                add_scores(con, rid, p, "dev", iid,
                           [("true", -1 if iid in ok else -2, 1), ("false", -1.5, 1)])
    rows = _table2_rows(con)
    # instance level (Table 8: concept): 4/4; chain level: bert answer 1/2 chains, bart all 0/2
    assert rows["bert"][3].startswith("100.0") and rows["bert"][3].endswith("(concept)")
    assert rows["bert"][6].startswith("50.0") and rows["bert"][6].endswith("(answer)")
    assert rows["bart"][3].endswith("(concept)")
    assert rows["bart"][6].startswith("0.0") and rows["bart"][6].endswith("(all)")


def test_table5_pairs_in_and_out_of_context_runs_of_one_setting(
        cic: duckdb.DuckDBPyConnection) -> None:
    # an out-of-context run of another span for the same model and part must not pair with IN
    # (IN and OUT have no span: causal); its predictions would agree with every IN error
    add_run(cic, "OUTP", "copen/cic", "choice", part="concept", context=False, span="progressive")
    best = {"D": "work", "E": "group", "F": "athlete", "G": "writer", "H": "q", "I": "y"}
    for iid, cand in best.items():
        cands = cic.execute("SELECT candidates FROM instances WHERE instance_id = ?",
                            [iid]).fetchone()[0]
        split = "test" if iid == "H" else "dev"
        add_scores(cic, "OUTP", "copen/cic", split, iid,
                   [(c, -1 if c == cand else -5, 1) for c in cands])
    rows = {(r["run_id"], r["split"]): (r["value"], r["n"])
            for r in metric(cic, "copen_cic_out_of_context")}
    # as in test_cic_out_of_context_agreement: IN pairs with OUT only (1 of its 3 errors)
    assert rows == {("IN", "dev"): (pytest.approx(1 / 3), 3)}
