"""The constant-answer baseline of the semrel probes (eval/semrel/semrel_constant_answer.sql,
issue 23) on a tiny results file built here; every expected value is worked out by hand below.

HYP (W^HYP = the six answered words with a non-empty set; "thing" has an empty set and is not
scored, "stone" is not answered and not in W^HYP):

==========  =================  ===============================================  ===  ====  ===
word        Y(w)               the other words' relata, most frequent first      S    C     @10
==========  =================  ===============================================  ===  ====  ===
dog         animal, pet        animal 2, tool 2, blade, livestock, pet, tree     1    1/2   1
cat         animal, pet        (as dog)                                          1    1/2   1
cow         animal, livestock  animal 2, pet 2, tool 2, blade, tree              1    1/2   1
hammer      tool               animal 3, pet 2, blade, livestock, tool, tree     0    0     1
oak         tree               animal 3, pet 2, tool 2, blade, livestock         0    0     0
saw         tool, blade        animal 3, pet 2, livestock, tool, tree            0    0     1
==========  =================  ===============================================  ===  ====  ===

(C: Recall@k of the list, k = min(|Y(w)|, list length): dog's top 2 are animal, tool: 1/2.)
The tie animal/tool at 2 of dog and cat is broken alphabetically: animal first; the other
order would put tool first and score 0. oak's only relatum is in no other word's set, so it is
in no list of oak's: 0 even at hits@10 (a list fitted on all of W^HYP would hold tree).
S = 3/6, C = 1.5/6, hits@10 = 5/6, n = 6; the most frequent relatum of W^HYP: animal (3).

SYN: a {x}, b {y}, c {z}: no relatum is in two sets, so every word's list holds only the
others' relata and scores 0 on every measure. A list that read the word's own gold would
score: fitted on all three words (x, y, z tie at 1, so x first), a's top answer x is right and
S = 1/3. top = x.

macro (mean over the two relations): S (1/2 + 0) / 2 = 1/4, C (1/4 + 0) / 2 = 1/8, hits@10
(5/6 + 0) / 2 = 5/12; micro (over the nine words): S 3/9, C 1.5/9, hits@10 5/9.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.sqlfile import discover_metrics, run_metric
from probes.results import connect

SEMREL = Path(__file__).parents[1] / "eval" / "semrel"
METRIC = {m.name: m for m in discover_metrics([SEMREL])}["semrel_constant_answer"]

HYP = {"dog": ["animal", "pet"], "cat": ["Animal", "pet"], "cow": ["animal", "livestock"],
       "hammer": ["tool"], "oak": ["tree"], "saw": ["tool", "blade"], "thing": []}
SYN = {"a": ["x"], "b": ["y"], "c": ["z"]}


def build(path: Path) -> None:
    con = connect(path)
    add = """INSERT INTO instances (probe, split, instance_id, target, gold, fields, exported_at)
             VALUES (?, 'test', ?, ?, ?, ?::JSON, now())"""
    for probe, relation, sets in (("semrel/hyp", "HYP", HYP), ("semrel/syn", "SYN", SYN)):
        for word, gold in sets.items():
            con.execute(add, [probe, f"{relation}_{word}", word, gold,
                              json.dumps({"relation": relation, "answered": True})])
    # not answered: not in W^HYP, its set counts for nobody's list (else stone's "tree" would
    # put tree in oak's list)
    con.execute(add, ["semrel/hyp", "HYP_stone", "stone", ["tree"],
                      json.dumps({"relation": "HYP", "answered": False})])
    # a trick probe's instance is not a relation probe's word
    con.execute(add, ["semrel/hyp-trick", "T_tree", "tree", ["tree"],
                      json.dumps({"relation": "HYP"})])
    con.close()


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    path = tmp_path_factory.mktemp("semrel_constant") / "r.duckdb"
    build(path)
    con = connect(path, read_only=True)
    cols, got = run_metric(con, METRIC)
    con.close()
    return {d["probe"]: d for d in (dict(zip(cols, r, strict=True)) for r in got)}


def test_hand_worked_relation(rows: dict[str, dict[str, Any]]) -> None:
    hyp = rows["semrel/hyp"]
    assert hyp["value"] == pytest.approx(3 / 6)
    assert hyp["c"] == pytest.approx(1.5 / 6)
    assert hyp["hits10"] == pytest.approx(5 / 6)
    assert (hyp["top"], hyp["n"]) == ("animal", 6)


def test_own_gold_is_never_read(rows: dict[str, dict[str, Any]]) -> None:
    syn = rows["semrel/syn"]
    assert (syn["value"], syn["c"], syn["hits10"], syn["n"]) == (0.0, 0.0, 0.0, 3)
    assert syn["top"] == "x"


def test_averages(rows: dict[str, dict[str, Any]]) -> None:
    macro, micro = rows["macro"], rows["micro"]
    assert (macro["value"], macro["c"], macro["hits10"]) == pytest.approx((1 / 4, 1 / 8, 5 / 12))
    assert macro["n"] == 2
    assert (micro["value"], micro["c"], micro["hits10"]) == pytest.approx((3 / 9, 1.5 / 9, 5 / 9))
    assert micro["n"] == 9
    assert set(rows) == {"semrel/hyp", "semrel/syn", "macro", "micro"}


def test_no_instances_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "empty.duckdb"
    connect(path).close()
    con = connect(path, read_only=True)
    assert run_metric(con, METRIC)[1] == []
    con.close()
