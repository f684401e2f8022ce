"""``eval``: metric files (header validation) and the first metrics on hand-worked examples.

Every expected number below is worked out by hand in the comments from the rows inserted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval.report import build_report, main, tables
from eval.sqlfile import MetricFileError, discover_metrics, parse_metric, run_metric
from probes.results import connect
from probes.results.writers import Run, insert_run
from tests.test_stats import wilson_by_hand

NOW = datetime(2025, 1, 1)


def add_instance(con: duckdb.DuckDBPyConnection, probe: str, split: str, iid: str,
                 gold: list[str]) -> None:
    con.execute("INSERT INTO instances VALUES (?, ?, ?, NULL, ?, [], '{}', ?)",
                [probe, split, iid, gold, NOW])


def add_run(con: duckdb.DuckDBPyConnection, run_id: str, model: str, probe: str, task: str,
            status: str = "done") -> None:
    insert_run(con, Run(run_id=run_id, model=model, probe=probe, task=task, status=status))


def add_scores(con: duckdb.DuckDBPyConnection, run_id: str, probe: str, split: str, iid: str,
               scores: dict[str, Sequence[float]], labels: dict[str, str] | None = None) -> None:
    """scores: candidate -> one score per prompt."""
    for cand, per_prompt in scores.items():
        for pid, s in enumerate(per_prompt):
            label = (labels or {}).get(cand, cand)
            con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                        "candidate, label, score) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, probe, split, iid, pid, cand, label, s])


def metric_values(con: duckdb.DuckDBPyConnection, name: str) -> dict[tuple, tuple[float, int]]:
    metric = {m.name: m for m in discover_metrics()}[name]
    cols, rows = run_metric(con, metric)
    out = {}
    for row in rows:
        d = dict(zip(cols, row, strict=True))
        out[(d["run_id"], d["probe"], d["split"])] = (float(d["value"]), d["n"])
    return out


@pytest.fixture
def choice_db() -> duckdb.DuckDBPyConnection:
    con = connect(":memory:")
    for iid, gold in (("i1", ["b"]), ("i2", ["x"]), ("i3", []), ("i4", ["p", "q"])):
        add_instance(con, "t/c", "test", iid, gold)
    add_instance(con, "t/c", "dev", "i5", ["a"])
    add_run(con, "r1", "m1", "t/c", "choice")
    add_run(con, "r2", "m2", "t/c", "choice")
    add_run(con, "r3", "m3", "t/c", "choice", status="running")
    # r1, test:
    #  i1: means a=(-1-3)/2=-2, b=(-2-1)/2=-1.5, c=(-3-2)/2=-2.5 -> gold b first: rank 1
    #      (with the max over prompts a and b would tie at -1: the mean is what is tested)
    #  i2: x=-2 < y=-1 -> rank 2 (rr 1/2)
    #  i3: no gold -> left out, whatever its scores
    #  i4: gold p=-5, q=-2; r=-2 ties with the best gold q -> rank 2 (rr 1/2)
    #  accuracy 1/3, MRR (1 + 1/2 + 1/2)/3 = 2/3, n = 3
    add_scores(con, "r1", "t/c", "test", "i1", {"a": [-1, -3], "b": [-2, -1], "c": [-3, -2]})
    add_scores(con, "r1", "t/c", "test", "i2", {"x": [-2], "y": [-1]})
    add_scores(con, "r1", "t/c", "test", "i3", {"x": [-2], "y": [-1]})
    add_scores(con, "r1", "t/c", "test", "i4", {"p": [-5], "q": [-2], "r": [-2]})
    # r1, dev: i5 a=-1 ties b=-1 -> rank 2: accuracy 0, MRR 1/2, n = 1
    add_scores(con, "r1", "t/c", "dev", "i5", {"a": [-1], "b": [-1]})
    # r2, test:
    #  i1: gold b was not scored -> wrong, rr 0
    #  i2: x=-1 > y=-3 -> rank 1
    #  i4: best gold p=-1 > r=-2 -> rank 1
    #  accuracy 2/3, MRR (0 + 1 + 1)/3 = 2/3
    add_scores(con, "r2", "t/c", "test", "i1", {"a": [-1], "c": [-2]})
    add_scores(con, "r2", "t/c", "test", "i2", {"x": [-1], "y": [-3]})
    add_scores(con, "r2", "t/c", "test", "i4", {"p": [-1], "q": [-4], "r": [-2]})
    # r3 is not finished: left out even though its gold wins
    add_scores(con, "r3", "t/c", "test", "i2", {"x": [0], "y": [-3]})
    return con


def test_choice_accuracy_by_hand(choice_db: duckdb.DuckDBPyConnection) -> None:
    got = metric_values(choice_db, "choice_accuracy")
    assert got.keys() == {("r1", "t/c", "test"), ("r1", "t/c", "dev"), ("r2", "t/c", "test")}
    assert got[("r1", "t/c", "test")] == (pytest.approx(1 / 3), 3)
    assert got[("r1", "t/c", "dev")] == (0.0, 1)
    assert got[("r2", "t/c", "test")] == (pytest.approx(2 / 3), 3)


def test_choice_mrr_by_hand(choice_db: duckdb.DuckDBPyConnection) -> None:
    got = metric_values(choice_db, "choice_mrr")
    assert got[("r1", "t/c", "test")] == (pytest.approx(2 / 3), 3)
    assert got[("r1", "t/c", "dev")] == (pytest.approx(0.5), 1)
    assert got[("r2", "t/c", "test")] == (pytest.approx(2 / 3), 3)


def test_binary_accuracy_by_hand() -> None:
    con = connect(":memory:")
    for iid, gold in (("j1", ["True"]), ("j2", ["false"]), ("j3", ["true"]), ("j4", [])):
        add_instance(con, "t/b", "test", iid, gold)
    add_run(con, "b1", "m1", "t/b", "binary")
    add_run(con, "c1", "m1", "t/b", "choice")  # not a binary run: left out
    classes = {"yes": "true", "right": "true", "no": "false"}
    # j1 (gold True; label classes compare case-insensitively): yes mean (-1-3)/2=-2,
    #     right -2.5, no -2.2 -> best true -2 > best false -2.2: right
    # j2 (gold false): yes -1 ties no -1 -> wrong
    # j3 (gold true): yes mean (-0.5-5.5)/2=-3 < no -1 -> wrong (the max over prompts, -0.5,
    #     would have won: the mean is what is tested)
    # j4: no gold -> left out.   accuracy 1/3, n 3
    add_scores(con, "b1", "t/b", "test", "j1", {"yes": [-1, -3], "right": [-2.5, -2.5],
                                                "no": [-2.2, -2.2]}, classes)
    add_scores(con, "b1", "t/b", "test", "j2", {"yes": [-1], "no": [-1]}, classes)
    add_scores(con, "b1", "t/b", "test", "j3", {"yes": [-0.5, -5.5], "no": [-1, -1]}, classes)
    add_scores(con, "b1", "t/b", "test", "j4", {"yes": [-1], "no": [-9]}, classes)
    add_scores(con, "c1", "t/b", "test", "j3", {"true": [0], "false": [-9]})
    got = metric_values(con, "binary_accuracy")
    assert got == {("b1", "t/b", "test"): (pytest.approx(1 / 3), 3)}
    # The majority baseline of b1: gold classes true, false, true (j4 has none) -> 2/3, n 3.
    # c1 (a choice run) scored j3's two candidates, one of them gold: chance 1/2, n 1.
    assert metric_values(con, "chance_accuracy") == {
        ("b1", "t/b", "test"): (pytest.approx(2 / 3), 3),
        ("c1", "t/b", "test"): (pytest.approx(1 / 2), 1)}


def test_chance_accuracy_of_choice_by_hand(choice_db: duckdb.DuckDBPyConnection) -> None:
    # A uniformly random pick among the scored candidates is right with gold / candidates:
    # r1 test: i1 1 of 3, i2 1 of 2, i4 2 of 3 -> (1/3 + 1/2 + 2/3) / 3 = 1/2; dev: i5 1 of 2.
    # r2 test: i1 scored a, c (gold b not scored: 0 of 2), i2 1 of 2, i4 2 of 3
    #   -> (0 + 1/2 + 2/3) / 3 = 7/18. r3 (running) is left out.
    assert metric_values(choice_db, "chance_accuracy") == {
        ("r1", "t/c", "test"): (pytest.approx(0.5), 3),
        ("r1", "t/c", "dev"): (pytest.approx(0.5), 1),
        ("r2", "t/c", "test"): (pytest.approx(7 / 18), 3)}


def add_responses(con: duckdb.DuckDBPyConnection, run_id: str, probe: str, iid: str,
                  prompt_id: int, tokens: Sequence[str]) -> None:
    for rank, tok in enumerate(tokens, start=1):
        con.execute("INSERT INTO responses (run_id, probe, split, instance_id, prompt_id, "
                    "rank, token, probability) VALUES (?, ?, 'test', ?, ?, ?, ?, ?)",
                    [run_id, probe, iid, prompt_id, rank, tok, 1.0 / (rank + 1)])


def test_relatum_precision_and_hits_by_hand() -> None:
    con = connect(":memory:")
    for iid, gold in (("k1", ["Animal", "canine"]), ("k2", ["fruit"]), ("k3", [])):
        add_instance(con, "t/r", "test", iid, gold)
    add_run(con, "q1", "m1", "t/r", "relatum")
    add_run(con, "q2", "m1", "t/r", "relatum", status="failed")  # not finished: left out
    # k1 prompt 0: top-1 "animal" matches gold "Animal" (lower-cased) -> P@1 hit, hits@10 hit
    # k1 prompt 1: top-1 "pet", "canine" at rank 3 -> P@1 miss, hits@10 hit
    # k2 prompt 0: "food", then 10 wrong words, "fruit" at rank 12 -> P@1 miss, hits@10 miss
    # k3: no gold -> left out.   P@1 = 1/3, hits@10 = 2/3 over the 3 (instance, prompt)
    # pairs; n = 2 instances (k1, k2)
    add_responses(con, "q1", "t/r", "k1", 0, ["animal", "dog"])
    add_responses(con, "q1", "t/r", "k1", 1, ["pet", "dog", "canine"])
    add_responses(con, "q1", "t/r", "k2", 0, ["food"] + [f"w{i}" for i in range(10)] + ["fruit"])
    add_responses(con, "q1", "t/r", "k3", 0, ["anything"])
    add_responses(con, "q2", "t/r", "k2", 0, ["fruit"])
    assert metric_values(con, "relatum_precision_at_1") == {
        ("q1", "t/r", "test"): (pytest.approx(1 / 3), 2)}
    assert metric_values(con, "relatum_hits_at_10") == {
        ("q1", "t/r", "test"): (pytest.approx(2 / 3), 2)}
    # per prompt: P@1 prompt 0 = (k1 hit + k2 miss) / 2 = 0.5, prompt 1 = k1 miss = 0 (n 1);
    # hits@10 prompt 0 = (k1 hit + k2 miss) / 2 = 0.5, prompt 1 = k1 hit = 1 (n 1);
    # spread: min, max and the population sd of two values a, b: |a - b| / 2
    by_name = {r.metric.name: r.rows for r in build_report(con).results}
    (p1,), (h10,) = by_name["relatum_precision_at_1"], by_name["relatum_hits_at_10"]
    assert p1["per_prompt"] == [{"prompt_id": 0, "value": 0.5, "n": 2},
                                {"prompt_id": 1, "value": 0.0, "n": 1}]
    assert h10["per_prompt"] == [{"prompt_id": 0, "value": 0.5, "n": 2},
                                 {"prompt_id": 1, "value": 1.0, "n": 1}]
    assert (p1["prompt_min"], p1["prompt_max"]) == (0.0, 0.5)
    assert p1["prompt_sd"] == pytest.approx(0.25)
    assert (p1["n_prompts"], p1["instances"], p1["ci_method"]) == (2, 2, "cluster bootstrap")
    # the cluster bootstrap draws k1 (1 hit in 2 pairs) and k2 (0 in 1) with replacement:
    # all-k2 draws (p 1/4) give 0, all-k1 draws (p 1/4) 1/2: the interval is 0 to 0.5
    assert (p1["ci_low"], p1["ci_high"]) == (0.0, 0.5)


# --- the report -----------------------------------------------------------------------------

def test_report_table_has_one_row_per_model_probe_split(
        choice_db: duckdb.DuckDBPyConnection) -> None:
    report = build_report(choice_db)
    (names, text), = tables(report)
    # no token or character counts and no baseline here: the normalised accuracies have no
    # value, so their columns are left out (a table shows only the metrics that apply)
    # prompt_consistency: the fixture's probe has two prompts (issue 47's metric for any probe)
    assert names == ["chance_accuracy", "choice_accuracy", "choice_mrr", "prompt_consistency"]
    lines = text.splitlines()
    assert lines[0] == ("| model | probe | split | n | chance_accuracy | choice_accuracy | "
                        "choice_accuracy 95% CI | choice_accuracy prompts | choice_mrr | "
                        "choice_mrr 95% CI | choice_mrr prompts | prompt_consistency |")
    # accuracy 95% CI: the Wilson interval of 1/3, 0/1 and 2/3 (never zero-width).
    # prompts (r1 test): i1 under prompt 0 alone a=-1 beats gold b=-2 (wrong, RR 1/2), under
    # prompt 1 b=-1 wins (right, RR 1); i2, i4 have prompt 0 only (wrong, RR 1/2 each):
    # accuracy 0/3 and 1/1, population sd |0 - 1| / 2 = 0.5; RR 1/2 and 1, sd 0.25.
    # MaxP (Mizrahi et al.) is the better prompt's value (1 and 1), AvgP the mean of the two
    # prompts' values ((0 + 1) / 2 and (1/2 + 1) / 2).
    # MRR 95% CI: the bootstrap over the instances' reciprocal ranks (not a share): r1 test
    # 1, 1/2, 1/2 -> means from 1/2 (p 1/8 > 2.5 %) to 1 (p 1/27 > 2.5 %); r2 0, 1, 1 -> 0 to 1
    # (each p 1/27); dev one instance, 1/2.
    w = {k: "{:.3f}–{:.3f}".format(*wilson_by_hand(k, n)) for k, n in ((1, 3), (0, 1), (2, 3))}
    assert ("| m1 | t/c | test | 3 | 0.500 | 0.333 | " + w[1] + " | 0.000–1.000 (sd 0.500, MaxP "
            "1.000, AvgP 0.500) | 0.667 | 0.500–1.000 | 0.500–1.000 (sd 0.250, MaxP 1.000, AvgP "
            "0.750) | 0.000 |") in lines
    # prompt_consistency: only r1's test i1 has two prompts, and they pick a and b: 0 of 1 pair
    # agrees; no other instance has a pair (–)
    assert ("| m1 | t/c | dev | 1 | 0.500 | 0.000 | " + w[0] + " | – | 0.500 | 0.500–0.500 "
            "| – | – |") in lines
    assert ("| m2 | t/c | test | 3 | 0.389 | 0.667 | " + w[2] + " | – | 0.667 | 0.000–1.000 "
            "| – | – |") in lines
    assert len(lines) == 2 + 3
    assert "binary_accuracy (no binary runs)" in report.skipped
    assert all("choice" not in skipped for skipped in report.skipped)


def test_report_filters_models_and_probes(choice_db: duckdb.DuckDBPyConnection) -> None:
    rows = build_report(choice_db, models=["m2"]).results[0].rows
    assert {r["model"] for r in rows} == {"m2"}
    assert all(not r.rows for r in build_report(choice_db, probes=["other/*"]).results)


def test_report_filters_models_of_a_model_grain(choice_db: duckdb.DuckDBPyConnection) -> None:
    # A grain with `model` and no `run_id` (like the semrel metrics): the rows' own model is
    # filtered. Runs: m1, m2 (done), m3 (running); all three are counted here.
    m = parse_metric("-- name: runs_per_model\n-- description: Runs.\n-- tasks: [choice]\n"
                     "-- grain: [model, probe]\n"
                     "SELECT model, probe, count(*) AS value FROM runs GROUP BY ALL\n",
                     "runs_per_model.sql")
    (result,) = build_report(choice_db, [m], models=["m2", "m3"]).results
    assert sorted((r["model"], r["value"]) for r in result.rows) == [("m2", 1), ("m3", 1)]
    (result,) = build_report(choice_db, [m]).results
    assert {r["model"] for r in result.rows} == {"m1", "m2", "m3"}
    (_, text), = tables(build_report(choice_db, [m], models=["m1"]))
    assert text.splitlines()[2:] == ["| m1 | t/c | – | 1 |"]


def test_report_cli_writes_markdown_and_plots(choice_db: duckdb.DuckDBPyConnection,
                                              tmp_path: Path, capsys: Any) -> None:
    results = tmp_path / "r.duckdb"
    choice_db.execute(f"ATTACH '{results}' AS f")
    choice_db.execute("COPY FROM DATABASE memory TO f")
    choice_db.execute("DETACH f")
    out = tmp_path / "rep"
    assert main(["--results", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| m2 | t/c | test | 3 | 0.389 | 0.667 | 0.208–0.939 | – | 0.667 |" in printed
    md = (out / "report.md").read_text()
    assert "| m1 | t/c | dev | 1 | 0.500 | 0.000 | 0.000–0.793 | – | 0.500 |" in md
    # per prompt (see test_report_table_has_one_row_per_model_probe_split) and m1 against m2
    # on their 3 shared instances: right i2 (m2 only), i4 (m2 only), i1 (m2 wrong: gold not
    # scored; m1 right) -> mean 1/3 - 2/3; McNemar 1 vs 2 discordant, p = 1
    assert "| m1 | t/c | test | 1 | – | 1 | 1.000 | 1.000 |" in md
    assert ("| choice_accuracy | t/c | test | m1 | m2 | 3 | 0.333 | 0.667 | -0.333 |"
            in md)
    assert "![choice_accuracy](choice_accuracy.png)" in md
    for name in ("choice_accuracy", "choice_mrr"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert not (out / "binary_accuracy.png").exists()


def test_report_on_missing_results_file_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    assert main(["--results", str(tmp_path / "none.duckdb"), "--out", str(tmp_path)]) == 2
    assert "python -m probes.engine.export" in capsys.readouterr().err


def test_two_runs_of_one_model_get_a_run_column(choice_db: duckdb.DuckDBPyConnection) -> None:
    choice_db.execute("UPDATE runs SET model = 'm1' WHERE run_id = 'r2'")
    (_, text), = tables(build_report(choice_db))
    assert text.splitlines()[0] == ("| model | probe | split | run | n | chance_accuracy | "
                                    "choice_accuracy | choice_accuracy 95% CI | "
                                    "choice_accuracy prompts | choice_mrr | choice_mrr 95% CI "
                                    "| choice_mrr prompts | prompt_consistency |")


# --- metric files ---------------------------------------------------------------------------

HEADER = ("-- name: demo\n-- description: Runs per probe.\n-- tasks: [choice]\n"
          "-- grain: [probe]\n")


def test_metric_header_parses() -> None:
    m = parse_metric(HEADER + "SELECT probe, count(*) AS value FROM runs GROUP BY probe\n",
                     "demo.sql")
    assert (m.name, m.description, m.tasks, m.grain, m.plot) == (
        "demo", "Runs per probe.", ["choice"], ["probe"], True)


@pytest.mark.parametrize(("text", "line", "needle"), [
    (HEADER.replace("tasks:", "taks:"), 3, "unknown header field 'taks' (did you mean 'tasks'?)"),
    (HEADER.replace("-- grain: [probe]\n", ""), 1, "'grain' is required"),
    (HEADER.replace("[choice]", "[choise]"), 3, "unknown task 'choise' (did you mean 'choice'?)"),
    (HEADER.replace("name: demo", "name: Demo-1"), 1, "must be lower-case"),
    (HEADER + "-- plot: maybe\n", 5, "plot: Input should be a valid boolean; write it as "
     "'-- plot: true|false'"),
    (HEADER + "-- items: _no_such_items.sql\nSELECT 1\n", 5, "items file _no_such_items.sql "
     "does not exist"),
    (HEADER + "-- items: [a.sql, b.sql]\nSELECT 1\n", 5, "items: Input should be a valid "
     "string; write it as '-- items: _x_items.sql'"),
    ("SELECT 1\n", 1, "no header"),
    (HEADER, 5, "no query after the header"),
])
def test_bad_metric_headers_name_file_and_line(text: str, line: int, needle: str) -> None:
    with pytest.raises(MetricFileError) as info:
        parse_metric(text + ("" if "SELECT" in text or text == HEADER else "SELECT 1\n"),
                     "bad.sql")
    assert info.value.path == "bad.sql" and info.value.line == line
    assert needle in str(info.value)


def test_metric_without_grain_or_value_columns_is_an_error() -> None:
    con = connect(":memory:")
    m = parse_metric(HEADER + "SELECT count(*) AS value FROM runs\n", "nograin.sql")
    with pytest.raises(MetricFileError, match=r"nograin.sql:4: .*does not return column\(s\) "
                       r"probe"):
        run_metric(con, m)


def test_metric_sql_error_names_the_line() -> None:
    con = connect(":memory:")
    m = parse_metric(HEADER + "SELECT probe,\n  count(*) AS value\nFROM no_such_table\n",
                     "broken.sql")
    with pytest.raises(MetricFileError, match=r"broken.sql:7: the query fails"):
        run_metric(con, m)


def test_duplicate_metric_names_are_an_error(tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "m.sql").write_text(HEADER + "SELECT 'x' AS probe, 1 AS value\n")
    with pytest.raises(MetricFileError, match="already used by"):
        discover_metrics([tmp_path])


def test_shipped_metric_files_are_valid_and_run_on_an_empty_file() -> None:
    con = connect(":memory:")
    metrics = discover_metrics()
    assert {m.name for m in metrics} >= {"choice_accuracy", "choice_mrr", "binary_accuracy"}
    for m in metrics:
        cols, rows = run_metric(con, m)
        assert rows == [] and {"value", *m.grain} <= set(cols)


def _to_file(con: duckdb.DuckDBPyConnection, path: Path) -> Path:
    con.execute(f"ATTACH '{path}' AS f")
    con.execute("COPY FROM DATABASE memory TO f")
    con.execute("DETACH f")
    return path


def test_own_metrics_add_to_the_built_in_ones(choice_db: duckdb.DuckDBPyConnection,
                                              tmp_path: Path, capsys: Any) -> None:
    results = _to_file(choice_db, tmp_path / "r.duckdb")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "runs_per_probe.sql").write_text(
        "-- name: runs_per_probe\n-- description: Runs.\n-- tasks: [choice]\n"
        "-- grain: [probe]\nSELECT probe, count(*) AS value FROM runs GROUP BY ALL\n")
    out = tmp_path / "rep"
    assert main(["--results", str(results), "--metrics", str(mine), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "**choice_accuracy**" in md and "**runs_per_probe**" in md
    assert "| t/c | – | 3 |" in md  # r1, r2, r3 are three runs of t/c
    # the built-in folder named again is read once (no "name already used" error)
    builtin = str(discover_metrics()[0].path.parent)
    assert main(["--results", str(results), "--metrics", builtin, "--out", str(out)]) == 0


def test_each_call_writes_a_folder_of_its_own_and_stale_plots_go(
        choice_db: duckdb.DuckDBPyConnection, tmp_path: Path, capsys: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    results = _to_file(choice_db, tmp_path / "r.duckdb")
    monkeypatch.setenv("KGPROBE_HOME", str(tmp_path / "home"))
    assert main(["--results", str(results)]) == 0
    assert main(["--results", str(results), "--model", "m1"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("wrote")]
    folders = [Path(line.split()[1]).parent for line in printed]
    assert len(set(folders)) == 2 and all(f.parent == tmp_path / "home" / "reports"
                                          for f in folders)
    assert all((f / "report.md").is_file() for f in folders)
    # an own --out folder: the PNGs of an earlier call that this call does not draw are
    # removed; a PNG that no report call wrote stays
    out = tmp_path / "rep"
    out.mkdir()
    (out / "mine.png").write_bytes(b"\x89PNG")
    assert main(["--results", str(results), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.png")) == ["choice_accuracy.png",
                                                          "choice_mrr.png", "mine.png",
                                                          "prompt_consistency.png",
                                                          "reliability_diagram.png"]
    assert main(["--results", str(results), "--out", str(out), "--no-plots"]) == 0
    assert sorted(p.name for p in out.glob("*.png")) == ["mine.png"]


def _drawn_figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record every figure eval.plots closes (after it was saved)."""
    import eval.plots as plots_mod

    figures: list[Any] = []
    real_close = plots_mod.plt.close

    def close(fig: Any) -> None:
        figures.append({
            "legends": [[t.get_text() for t in ax.get_legend().get_texts()]
                        if ax.get_legend() else [] for ax in fig.axes],
            "ylim": [ax.get_ylim() for ax in fig.axes],
            "ticks": [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes]})
        real_close(fig)

    monkeypatch.setattr(plots_mod.plt, "close", close)
    return figures


def test_bar_chart_names_models_starts_at_zero_and_wraps(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    from eval.plots import bar_chart

    figures = _drawn_figures(monkeypatch)
    # 30 groups of two models: values 0.40..0.69, far above 0 -> the axis still starts at 0
    points = [(m, f"p{i:02d}", 0.4 + i / 100) for i in range(30) for m in ("gpt2", "bert")]
    bar_chart(points, "acc", tmp_path / "a.png", errors={("gpt2", "p00"): (0.3, 0.5)},
              baselines={"p00": 0.25}, baseline_label="chance_accuracy", max_groups=12)
    (fig,) = figures
    assert len(fig["ylim"]) == 3  # 30 groups wrapped into panels of 12, 12 and 6
    assert [len(t) for t in fig["ticks"]] == [12, 12, 6]
    assert fig["ticks"][2][-1] == "p29"
    assert all(lim == (0.0, 1.0) for lim in fig["ylim"])
    assert fig["legends"][0] == ["chance_accuracy", "gpt2", "bert"]
    # counts above 1: from 0 to 8 % above the largest value
    bar_chart([("m", "a", 10.0), ("m", "b", 50.0)], "n", tmp_path / "n.png")
    assert figures[1]["ylim"] == [(0.0, pytest.approx(54.0))]


def test_report_plot_shows_the_table_rows_with_intervals(choice_db: duckdb.DuckDBPyConnection,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    import eval.report as report_mod

    calls: dict[str, dict[str, Any]] = {}

    def fake_bar_chart(points: Any, title: str, path: Path, **kw: Any) -> Path:
        calls[title] = {"points": sorted(points), **kw}
        return path

    monkeypatch.setattr(report_mod, "bar_chart", fake_bar_chart)
    report_mod.plots(build_report(choice_db), tmp_path)
    acc = calls["choice_accuracy"]
    assert acc["points"] == [("m1", "t/c/dev", 0.0), ("m1", "t/c/test", pytest.approx(1 / 3)),
                             ("m2", "t/c/test", pytest.approx(2 / 3))]
    # the table's intervals (see test_report_table_has_one_row_per_model_probe_split)
    assert acc["errors"] == {("m1", "t/c/dev"): pytest.approx(wilson_by_hand(0, 1)),
                             ("m1", "t/c/test"): pytest.approx(wilson_by_hand(1, 3)),
                             ("m2", "t/c/test"): pytest.approx(wilson_by_hand(2, 3))}
    # chance per group: dev 1/2; test is 1/2 for r1 but 7/18 for r2 (scored other
    # candidates): no single tick for test
    assert acc["baselines"] == {"t/c/dev": 0.5}
    assert "chance_accuracy" not in calls  # plot: false
    # MRR is not a share: the bootstrap over the instances' reciprocal ranks (as in the table)
    assert calls["choice_mrr"]["errors"] == {("m1", "t/c/dev"): (0.5, 0.5),
                                             ("m1", "t/c/test"): (0.5, 1.0),
                                             ("m2", "t/c/test"): (0.0, 1.0)}


def test_a_metric_whose_grain_repeats_is_an_error_naming_the_key() -> None:
    con = connect(":memory:")
    add_run(con, "r1", "m", "p", "choice")
    add_run(con, "r2", "m", "p", "choice")
    # grain [probe], but the query groups by run: probe 'p' comes twice
    m = parse_metric(HEADER + "SELECT probe, run_id, 1 AS value FROM runs GROUP BY ALL\n",
                     "dup.sql")
    with pytest.raises(MetricFileError, match=r"dup.sql:4: the grain \[probe\] does not "
                       r"identify a row: more than one row has probe='p'"):
        run_metric(con, m)


def test_every_shipped_metric_has_a_unique_grain_on_a_fixture(
        choice_db: duckdb.DuckDBPyConnection) -> None:
    root = Path(__file__).resolve().parent.parent / "eval"
    dirs = [root / d for d in ("metrics", "copen", "ontolama", "semrel")]
    ran = {m.name: len(run_metric(choice_db, m)[1]) for m in discover_metrics(dirs)}
    assert ran["choice_accuracy"] > 0 and ran["choice_mrr"] > 0


def test_an_empty_report_fails_loudly(choice_db: duckdb.DuckDBPyConnection, tmp_path: Path,
                                      capsys: Any) -> None:
    # a table that would be empty is an error (exit 2) that says what is missing, and
    # nothing is written
    results = _to_file(choice_db, tmp_path / "r.duckdb")
    out = tmp_path / "rep"
    assert main(["--results", str(results), "--out", str(out), "--probe", "nothing/*"]) == 2
    err = capsys.readouterr().err
    assert "no metric rows for --probe nothing/*" in err and "probes.engine.run" in err
    assert not (out / "report.md").exists()
    empty = tmp_path / "empty.duckdb"
    connect(str(empty)).close()
    assert main(["--results", str(empty), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no metric rows in" in err and "python -m probes.engine.run -m MODEL -p PROBE" in err


def test_items_file_must_extend_the_grain_by_instance_and_prompt(
        choice_db: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    # an items file whose grain lacks prompt_id cannot give per-prompt values: an error that
    # names the items file and the grain it needs
    (tmp_path / "_acc_items.sql").write_text(
        "-- name: acc_items\n-- description: Items.\n-- tasks: [choice]\n"
        "-- grain: [run_id, probe, split, instance_id]\n"
        "SELECT run_id, probe, split, instance_id, 1.0 AS value FROM scores GROUP BY ALL\n")
    metric = tmp_path / "acc.sql"
    metric.write_text("-- name: acc\n-- description: Runs.\n-- tasks: [choice]\n"
                      "-- grain: [run_id, probe, split]\n-- items: _acc_items.sql\n"
                      "SELECT run_id, probe, split, 1.0 AS value FROM scores GROUP BY ALL\n")
    with pytest.raises(MetricFileError, match=r"_acc_items.sql:4: the items of acc need the "
                       r"grain \[run_id, probe, split, instance_id, prompt_id\]"):
        build_report(choice_db, discover_metrics([tmp_path]))
