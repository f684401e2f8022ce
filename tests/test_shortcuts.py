"""The shortcut panel and ceiling (issue 23): model-free rules fitted on train only
(eval/metrics/_shortcuts.sql, shortcut_panel.sql, shortcut_ceiling.sql; docs/shortcuts.md).

Three small datasets written here, each rule's accuracy worked out by hand in the comments; a
test flips the evaluated split's labels and checks that no rule's prediction moves.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from eval.sqlfile import discover_metrics, run_metric, run_support
from probes.results import connect

ROOT = Path(__file__).resolve().parents[1]
METRICS = {m.name: m for m in discover_metrics([ROOT / "eval" / "metrics"])}

# Label probe (premise, hypothesis, label). Train labels 1, 1, 0, 0: a tie, broken towards the
# label first in sort order, "0".
LABEL = [("train", "1", "red apple", "fruit", "1"), ("train", "2", "green apple", "fruit", "1"),
         ("train", "3", "car", "fruit", "0"), ("train", "4", "truck", "vehicle", "0"),
         ("test", "5", "blue apple", "fruit", "1"), ("test", "6", "bus", "vehicle", "0"),
         ("test", "7", "green apple", "fruit", "0"), ("test", "8", "wild pear", "plant", "0")]
# Multiple choice (target, candidates, gold).
CHOICE = [("train", "a", "apple", ["fruit", "tool", "animal"], "fruit"),
          ("train", "b", "hammer", ["tool", "fruit", "animal"], "tool"),
          ("train", "c", "pear", ["fruit", "animal", "vehicle"], "fruit"),
          ("test", "d", "saw", ["fruit", "tool", "animal"], "tool"),
          ("test", "e", "dog", ["animal", "fruit", "vehicle"], "animal")]
# Statements (concept, property, label): the property decides, the concept does not.
CPJ = [("train", "p1", "dogs", " have cells.", "true"), ("train", "p2", "cats", " have cells.",
                                                          "true"),
       ("train", "p3", "cats", " have wheels.", "false"),
       ("test", "p4", "cars", " have cells.", "false"), ("test", "p5", "birds", " have cells.",
                                                         "true"),
       ("test", "p6", "birds", " have wheels.", "false")]
# Relatum (gold sets).
RELATUM = [("train", "g1", ["animal", "pet"]), ("train", "g2", ["animal"]),
           ("train", "g3", ["tool"]), ("test", "t1", ["animal"]),
           ("test", "t2", ["tool", "device"]), ("test", "t3", ["plant"])]


def _add(con: duckdb.DuckDBPyConnection, probe: str, split: str, iid: str, target: str,
         gold: list[str], candidates: list[str] | None = None, **fields: str) -> None:
    con.execute("INSERT INTO instances VALUES (?, ?, ?, ?, ?, ?, ?, now())",
                [probe, split, iid, target, gold, candidates or [], json.dumps(fields)])


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = connect(":memory:")
    for split, iid, sub, sup, label in LABEL:
        _add(c, "t/label", split, iid, sub, [label], sub=sub, super=sup)
    for split, iid, target, cands, gold in CHOICE:
        _add(c, "t/choice", split, iid, target, [gold], cands)
    for split, iid, gold in RELATUM:
        _add(c, "t/relatum", split, iid, f"w{iid}", gold)
    _add(c, "t/no-train", "test", "z", "x", ["1"], sub="x", super="y")
    for split, iid, concept, prop, label in CPJ:
        _add(c, "t/cpj", split, iid, concept + prop, [label], concept=concept, post=prop)
    return c


def _rows(con: duckdb.DuckDBPyConnection, name: str) -> list[dict]:
    cols, rows = run_metric(con, METRICS[name])
    return [dict(zip(cols, r, strict=True)) for r in rows]


def _panel(con: duckdb.DuckDBPyConnection, probe: str, split: str) -> dict[str, float]:
    return {r["rule"]: r["value"] for r in _rows(con, "shortcut_panel")
            if r["probe"] == probe and r["split"] == split}


def test_label_rules_on_test(con: duckdb.DuckDBPyConnection) -> None:
    # Test labels 1, 0, 0, 0. Predictions per rule (fitted on train), right ones marked:
    assert _panel(con, "t/label", "test") == pytest.approx({
        # train tie -> "0" everywhere: 6, 7, 8 right
        "majority": 0.75,
        # fruit -> {1, 1, 0} -> "1"; vehicle -> "0"; plant unseen -> majority "0":
        # 5 right, 6 right, 7 wrong, 8 right
        "lookup_super": 0.75,
        # every train premise unique: green apple -> "1" (7 wrong), unseen -> "0" (5 wrong)
        "lookup_sub": 0.5,
        # train, leaving each out: fruit seen (x3) -> {1,1,0} "1", vehicle not -> "0";
        # test: fruit, vehicle seen -> "1" (6, 7 wrong), plant not -> "0"
        "seen_in_train_super": 0.5,
        # train premises all unseen (left out) -> tie "0"; "true" (green apple) is unknown to
        # train -> majority "0": all "0"
        "seen_in_train_sub": 0.75,
        # train: fruit x3 -> "1", vehicle x1 -> "0"; test: fruit x2 (5 right, 7 wrong)
        "frequent_in_split_super": 0.75,
        "frequent_in_split_sub": 0.75,           # all unique -> "0"
        # over the whole dataset: fruit (5) and vehicle (2) both twice or more -> train key
        # true holds 1, 1, 0, 0 -> tie "0"; plant (1) false, unknown to train -> "0"
        "frequent_in_dataset_super": 0.75,
        # green apple twice (2 and 7): true -> "1" (7 wrong); the rest false -> {1, 0, 0} "0"
        # (5 wrong)
        "frequent_in_dataset_sub": 0.5,
        # train: 2 words -> "1", 1 word -> "0"; test: blue apple, green apple, wild pear -> "1"
        "length_sub": 0.5,
        "length_super": 0.75,                    # all one word -> tie "0"
        "length_difference": 0.5,                # as length_sub here (+1 -> "1", 0 -> "0")
        "shared_words": 0.75,                    # no shared words anywhere -> tie "0"
        "head_word_match": 0.75,                 # no match anywhere -> tie "0"
    })


def test_label_rules_on_train_are_in_sample(con: duckdb.DuckDBPyConnection) -> None:
    panel = _panel(con, "t/label", "train")
    assert panel["lookup_sub"] == 1.0            # each premise looks itself up
    # seen in another train instance: fruit -> "1" (1, 2 right, 3 wrong), vehicle not -> "0"
    assert panel["seen_in_train_super"] == pytest.approx(0.75)


def test_choice_rules(con: duckdb.DuckDBPyConnection) -> None:
    # answer_prior, train rates leaving the instance out: a: fruit 1/2, tool 1/1, animal 0 ->
    # max picks tool (wrong), min animal (wrong); b: fruit 2/2 (wrong) or tool/animal tie at 0
    # (1/2); c: fruit 1/2 (right) or animal/vehicle (wrong). max 1/3 > min 1/6 -> max.
    # Test rates fruit 2/3, tool 1/2, animal 0: d picks fruit, e picks fruit -> 0.
    # candidate_frequency over the dataset: fruit 5, animal 5, tool 3, vehicle 2; train: max
    # (1/2, 0, 1/2) = min (0, 1, 0) = 1/3 -> max (tie); test: d fruit/animal 0, e 1/2 -> 1/4.
    # candidate_characters: fruit 5, tool 4, animal 6, vehicle 7; train max 0, min 2/3 -> min;
    # test: d tool right, e fruit wrong -> 1/2. One-word candidates, no shared words or heads:
    # every candidate ties -> 1/3. candidate_position: the gold is first on all of train -> the
    # lowest position; test d has tool second (wrong), e animal first (right) -> 1/2.
    assert _panel(con, "t/choice", "test") == pytest.approx({
        "answer_prior": 0.0, "candidate_frequency": 0.25, "candidate_characters": 0.5,
        "candidate_length": 1 / 3, "shared_words": 1 / 3, "head_word_match": 1 / 3,
        "candidate_position": 0.5})


def test_relatum_constant_answers(con: duckdb.DuckDBPyConnection) -> None:
    # Train answers: animal 2, pet 1, tool 1 -> [animal, pet, tool]. Test: @1 t1 only; @10 t1, t2.
    assert _panel(con, "t/relatum", "test") == pytest.approx({
        "train_top_answers@1": 1 / 3, "train_top_answers@10": 2 / 3})


def test_no_train_split_no_rules(con: duckdb.DuckDBPyConnection) -> None:
    assert _panel(con, "t/no-train", "test") == {}


def test_rules_never_see_the_evaluated_labels(con: duckdb.DuckDBPyConnection) -> None:
    """Flipping every test label must flip every test prediction's correctness: a rule whose
    prediction moved with the labels would have read them."""
    run_support(con, METRICS["shortcut_panel"].requires)   # creates the views on con
    query = ("SELECT probe, instance_id, rule, correct FROM sc_correct "
             "WHERE probe = 't/label' AND split = 'test' ORDER BY ALL")
    before = con.execute(query).fetchall()
    con.execute("UPDATE instances SET gold = [CASE gold[1] WHEN '1' THEN '0' ELSE '1' END] "
                "WHERE probe = 't/label' AND split = 'test'")
    run_support(con, METRICS["shortcut_panel"].requires)   # its tables again, on the new gold
    after = con.execute(query).fetchall()
    assert len(before) == len(after) == 14 * 4
    assert [(p, i, r, 1 - c) for p, i, r, c in before] == after
    # and the choice rules: moving the gold answer of d to another candidate changes d's
    # correctness only through the answer (the picks stay)
    con.execute("UPDATE instances SET gold = ['fruit'] WHERE probe = 't/choice' AND "
                "instance_id = 'd'")
    assert _panel(con, "t/choice", "test")["answer_prior"] == pytest.approx(0.5)  # d now right


def test_ceiling_per_run(con: duckdb.DuckDBPyConnection) -> None:
    """Issue 30 point 11: the ceiling's rule is chosen without the labels it is scored on.
    t/label has no dev split, so the rule is chosen on train, in-sample (train 1-4: red apple /
    fruit 1, green apple / fruit 1, car / fruit 0, truck / vehicle 0). Train accuracy: lookup_sub
    4/4 (each premise finds its own label), length_sub 4/4 (2 words -> 1, 1 word -> 0),
    length_difference 4/4 (+1, +1, 0, 0 -> 1, 1, 0, 0); lookup_super, seen_in_train_super,
    frequent_in_split_super, frequent_in_dataset_sub 3/4; the rest 2/4. The tie goes to the name
    first in sort order: length_difference. On the run's instances 5 (blue apple / fruit, 1)
    and 6 (bus / vehicle, 0) it predicts 1 and 0: 1.0. The best rule on 5 and 6 themselves: 1.0
    too, first by name frequent_in_split_super (lookup_super, length_sub tie it)."""
    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r1', 'm', 't/label', 'done', 'subsumption')")
    for iid in ("5", "6"):
        con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                    "candidate, score) VALUES ('r1', 't/label', 'test', ?, 0, '1', -1.0)", [iid])
    rows = _rows(con, "shortcut_ceiling")
    assert [(r["run_id"], r["split"], r["value"], r["rule"], r["chosen_on"], r["n"],
             r["best_value"], r["best_rule"]) for r in rows] == [
        ("r1", "test", 1.0, "length_difference", "train", 2, 1.0, "frequent_in_split_super")]
    panel = [r for r in _rows(con, "shortcut_panel") if r["probe"] == "t/label" and r["chosen"]]
    assert {(r["split"], r["rule"], r["chosen_on"]) for r in panel} == {
        ("train", "length_difference", "train"), ("test", "length_difference", "train")}
    # on the whole test split (5-8) the chosen rule predicts 1, 0, 1, 1: 2/4 (docs/shortcuts.md)
    assert [r["value"] for r in panel if r["split"] == "test"] == [0.5]


def test_the_rule_is_chosen_on_dev_when_there_is_one(con: duckdb.DuckDBPyConnection) -> None:
    """With a dev split the rule is the best one there (its labels), not the best on test.
    Train: a fruit 1, b fruit 1, c tool 0, d tool 0 (lookup_super: fruit -> 1, tool -> 0).
    Dev: e fruit 1, f tool 0: lookup_super 2/2, so it is chosen (every other rule predicts the
    same for both dev instances or fails one; majority 0 is 1/2).
    Test: g fruit 0, h tool 1 (labels the other way): lookup_super 0/2 is the ceiling, while the
    majority rule (0, 0) reaches 1/2 there."""
    for split, iid, sub, sup, label in (("train", "a", "a", "fruit", "1"),
                                        ("train", "b", "b", "fruit", "1"),
                                        ("train", "c", "c", "tool", "0"),
                                        ("train", "d", "d", "tool", "0"),
                                        ("dev", "e", "e", "fruit", "1"),
                                        ("dev", "f", "f", "tool", "0"),
                                        ("test", "g", "g", "fruit", "0"),
                                        ("test", "h", "h", "tool", "1")):
        _add(con, "t/sel", split, iid, sub, [label], sub=sub, super=sup)
    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r2', 'm', 't/sel', 'done', 'binary')")
    for iid in ("g", "h"):
        con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                    "candidate, score) VALUES ('r2', 't/sel', 'test', ?, 0, '1', -1.0)", [iid])
    (row,) = [r for r in _rows(con, "shortcut_ceiling") if r["run_id"] == "r2"]
    assert (row["rule"], row["chosen_on"], row["value"]) == ("lookup_super", "dev", 0.0)
    assert row["best_value"] == 0.5
    # every 2-instance shuffle either keeps the labels (0, 1) or swaps them (1, 0); a rule
    # predicting (1, 0) exists (lookup_super), so the null's best is 1/2 or 1
    assert row["null_median"] in (0.5, 0.75, 1.0) and 0.5 <= row["null_p95"] <= 1.0


def test_permutation_null_as_documented(con: duckdb.DuckDBPyConnection) -> None:
    """sc_run_null against the rule in docs/shortcuts.md, recomputed here in Python: shuffle k
    (1..200) orders the run's instances by md5("<id>:<k>:42") and hands them the labels in
    instance-id order; the best rule's accuracy per shuffle; median and 95th percentile
    (linear interpolation)."""
    import hashlib
    import statistics

    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r1', 'm', 't/label', 'done', 'subsumption')")
    for iid in ("5", "6", "7", "8"):
        con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                    "candidate, score) VALUES ('r1', 't/label', 'test', ?, 0, '1', -1.0)", [iid])
    (row,) = _rows(con, "shortcut_ceiling")
    ids, labels = ["5", "6", "7", "8"], ["1", "0", "0", "0"]
    # test predictions of every rule on 5, 6, 7, 8 (docs/shortcuts.md's worked example)
    preds = {"majority": "0000", "lookup_super": "1010", "lookup_sub": "0010",
             "seen_in_train_super": "1110", "seen_in_train_sub": "0000",
             "frequent_in_split_super": "1010", "frequent_in_split_sub": "0000",
             "frequent_in_dataset_super": "0000", "frequent_in_dataset_sub": "0010",
             "length_sub": "1011", "length_super": "0000", "length_difference": "1011",
             "shared_words": "0000", "head_word_match": "0000"}
    best = []
    for k in range(1, 201):
        order = sorted(ids, key=lambda i: (hashlib.md5(f"{i}:{k}:42".encode()).hexdigest(), i))
        shuffled = dict(zip(order, labels, strict=True))
        best.append(max(sum(p[j] == shuffled[i] for j, i in enumerate(ids)) / 4
                        for p in preds.values()))
    q = statistics.quantiles(best, n=20, method="inclusive")
    assert row["null_median"] == pytest.approx(statistics.median(best))
    assert row["null_p95"] == pytest.approx(q[18])


def test_output_path_results_carry_the_ceiling(con: duckdb.DuckDBPyConnection) -> None:
    """--output-path's results (probes.app.outputs.compute_metrics) hold the run's ceiling and the
    panel of its probe beside its other metrics."""
    from probes.app.outputs import compute_metrics

    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r1', 'm', 't/label', 'done', 'binary')")
    con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, candidate, "
                "score) VALUES ('r1', 't/label', 'test', '5', 0, '1', -1.0)")
    rows = compute_metrics(con, run_ids=["r1"]).to_dicts()
    (ceiling,) = [r for r in rows if r["metric"] == "shortcut_ceiling"]
    assert (ceiling["run_id"], ceiling["value"], ceiling["n"]) == ("r1", 1.0, 1)
    panel = {(r["probe"], r["rule"]) for r in rows if r["metric"] == "shortcut_panel"
             and r["split"] == "test"}
    assert ("t/label", "lookup_super") in panel


def test_statement_rules(con: duckdb.DuckDBPyConnection) -> None:
    """COPEN CPJ's shape: the concept and the property are sides of their own. Train: true 2,
    false 1 -> majority "true". lookup_property: "have cells." -> true, "have wheels." -> false:
    test p4 wrong, p5, p6 right -> 2/3. lookup_concept: dogs -> true, cats 1:1 -> "false"
    (sort order); test concepts are unseen -> "true": p5 only -> 1/3 (as majority)."""
    panel = _panel(con, "t/cpj", "test")
    assert panel["lookup_property"] == pytest.approx(2 / 3)
    assert panel["lookup_concept"] == pytest.approx(1 / 3)
    assert panel["majority"] == pytest.approx(1 / 3)


def test_eval_report_shows_the_ceiling_beside_chance(con: duckdb.DuckDBPyConnection,
                                                     tmp_path: Path) -> None:
    """eval.report: shortcut_ceiling is a column of the run table, beside chance_accuracy,
    and the chart of binary_accuracy gets it as a second tick."""
    from eval.report import build_report, plots, tables

    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r1', 'm', 't/label', 'done', 'binary')")
    for iid in ("5", "6"):   # "1" scores best: right on 5 (gold 1), wrong on 6 (gold 0)
        for cand, score in (("1", -1.0), ("0", -2.0)):
            con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                        "candidate, label, score) "
                        "VALUES ('r1', 't/label', 'test', ?, 0, ?, ?, ?)",
                        [iid, cand, cand, score])
    report = build_report(con)
    (names, text), = [t for t in tables(report) if "shortcut_ceiling" in t[0]]
    assert names.index("chance_accuracy") < names.index("shortcut_ceiling")
    # accuracy 1/2, its 95 % Wilson interval (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) /
    # (1 + z²/n) with p = .5, n = 2, z = 1.96: (0.5 ± 0.4055) -> 0.095–0.905; chance: the
    # majority class of 5 and 6 (1, 0) -> 0.5; ceiling 1.0 (test_ceiling_per_run)
    assert text.splitlines()[-1] == ("| m | t/label | test | 2 | 0.500 | 0.095–0.905 | 0.500 "
                                     "| 1.000 |")
    assert (tmp_path / "binary_accuracy.png") in plots(report, tmp_path)


def _file(tmp_path: Path, rows: list[tuple[str, str, str, str, str]]) -> Path:
    """A results file with the label probe's instances ``rows`` and no run."""
    path = tmp_path / "r.duckdb"
    c = connect(str(path))
    for split, iid, sub, sup, label in rows:
        _add(c, "t/label", split, iid, sub, [label], sub=sub, super=sup)
    c.close()
    return path


def test_the_panel_from_instances_alone(tmp_path: Path) -> None:
    """A probe designer sees the panel before any model has run: api.metrics and kgprobe
    report both give it (the same values as test_label_rules_on_test: majority 3/4)."""
    from eval.report import main as report_main
    from probes.app import api

    path = _file(tmp_path, LABEL)
    frame = api.metrics(path, "shortcut_panel")
    got = {(r["split"], r["rule"]): r["value"] for r in frame.iter_rows(named=True)}
    assert got[("test", "majority")] == pytest.approx(3 / 4)
    assert report_main(["--results", str(path), "--out", str(tmp_path / "rep"),
                        "--no-plots"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "shortcut_panel" in text and "| t/label | test | majority |" in text


def test_an_empty_panel_says_why(tmp_path: Path) -> None:
    from probes.app import api

    path = _file(tmp_path, [r for r in LABEL if r[0] != "train"])
    with pytest.warns(UserWarning, match="shortcut_panel has no rows: no probe has a train "
                      "split"):
        assert api.metrics(path, "shortcut_panel").is_empty()


def test_the_report_leaves_out_the_panel_of_a_probe_no_model_ran(tmp_path: Path) -> None:
    """Issue 46: the starter report printed a shortcut-panel table for a records probe that no
    model ran. Once the file has runs, the panel keeps the probes they scored."""
    from eval.report import main as report_main

    path = _file(tmp_path, LABEL)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r1', 'm', 't/other', 'done', 'binary')")
    con.close()
    out = tmp_path / "rep"
    assert report_main(["--results", str(path), "--out", str(out), "--no-plots"]) in (0, 2)
    report = out / "report.md"
    assert not report.exists() or "| t/label | test | majority |" not in report.read_text()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO runs (run_id, model, probe, status, task) VALUES "
                "('r2', 'm', 't/label', 'done', 'binary')")
    con.close()
    assert report_main(["--results", str(path), "--out", str(out), "--no-plots"]) == 0
    assert "| t/label | test | majority |" in report.read_text(encoding="utf-8")
