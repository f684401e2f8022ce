"""The results contract (probes.results): upgrade of older files, transactions, writers, and
that eval depends on it alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from eval.sqlfile import discover_metrics, run_metric
from probes.results import ResultsError, connect, transaction
from probes.results.writers import Run, ScoreRow, insert_run, start_run, write_scores

ROOT = Path(__file__).resolve().parent.parent

# The tables of a results file written before the settings columns and the prompts table (and,
# older still, before the ALTER TABLE columns task, requests, cache_hits, label, model, op).
OLD_SCHEMA = """
CREATE TABLE instances (probe VARCHAR NOT NULL, split VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL, target VARCHAR, gold VARCHAR[], candidates VARCHAR[],
    fields JSON, exported_at TIMESTAMP NOT NULL, PRIMARY KEY (probe, split, instance_id));
CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, model VARCHAR NOT NULL, revision VARCHAR,
    backend VARCHAR, probe VARCHAR NOT NULL, config JSON, dtype VARCHAR, device VARCHAR,
    batch_size INTEGER, started_at TIMESTAMP, finished_at TIMESTAMP, wall_s DOUBLE,
    status VARCHAR NOT NULL);
CREATE TABLE scores (run_id VARCHAR NOT NULL, probe VARCHAR NOT NULL, split VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL, prompt_id INTEGER NOT NULL, candidate VARCHAR NOT NULL,
    prompt VARCHAR, score DOUBLE, n_tokens INTEGER,
    PRIMARY KEY (run_id, probe, split, instance_id, prompt_id, candidate));
CREATE TABLE score_cache (key VARCHAR PRIMARY KEY, score DOUBLE, n_tokens INTEGER,
    payload JSON);
ALTER TABLE runs ADD COLUMN task VARCHAR;
ALTER TABLE scores ADD COLUMN label VARCHAR;
"""

SETS = {"L2": {"1": ["Right"], "0": ["Wrong"]}, "L1": {"1": ["Yes"], "0": ["No"]}}
KSHOT = {"k": 4, "seed": 7, "template": "T2", "label_set": "L2", "best_epoch": 1}
COPEN = {"method": "zero-shot", "task": "cic", "part": "concept", "context": False}


def old_file(path: Path) -> None:
    """A results file as an older kgprobe left it: a zero-shot and a K-shot subsumption run
    and a COPEN run whose settings exist only inside config, and their scores."""
    con = duckdb.connect(str(path))
    con.execute(OLD_SCHEMA)
    con.execute("INSERT INTO instances VALUES ('o/p', 'test', 'i1', 'owl', ['1'], [], '{}', "
                "TIMESTAMP '2025-01-01')")
    cfg = {"prompts": ["A [V]", "B [V]"], "params": {"label_words": SETS}}
    for rid, extra in (("Z", {}), ("K", {"kshot": KSHOT})):
        con.execute("INSERT INTO runs (run_id, model, probe, config, status, task) VALUES "
                    "(?, 'm', 'o/p', ?::JSON, 'done', 'subsumption')",
                    [rid, json.dumps({**cfg, **extra})])
    con.execute("INSERT INTO runs (run_id, model, probe, config, status, task) VALUES "
                "('C', 'm', 'copen/cic', ?::JSON, 'done', 'choice')",
                [json.dumps({"method": "zero-shot", "runtime": {"copen": COPEN}})])
    # Z: prompt 3 = T2 x L2 (template 1 * 2 sets + set 1); gold class 1 wins there.
    for pid, word, cls, score in ((3, "Right", "1", -1.0), (3, "Wrong", "0", -2.0),
                                  (0, "Yes", "1", -3.0), (0, "No", "0", -2.0)):
        con.execute("INSERT INTO scores VALUES ('Z', 'o/p', 'test', 'i1', ?, ?, '', ?, 1, ?)",
                    [pid, word, score, cls])
    con.execute("INSERT INTO scores VALUES ('K', 'o/p', 'test', 'i1', 3, 'Right', '', -1, 1, "
                "'1'), ('K', 'o/p', 'test', 'i1', 3, 'Wrong', '', -5, 1, '0')")
    con.close()


def test_an_old_file_is_upgraded_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    old_file(path)
    with pytest.raises(ResultsError, match=r"python -m probes\.results upgrade"):
        connect(path, read_only=True)  # cannot upgrade read-only: says how
    con = connect(path)
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'runs'").fetchall()}
    assert {"requests", "cache_hits", "method", "part", "context", "k", "seed",
            "scoring"} <= cols
    settings = con.execute("SELECT run_id, method, part, context, k, seed, scoring FROM runs "
                           "ORDER BY run_id").fetchall()
    assert settings == [("C", "zero-shot", "concept", False, None, None, None),
                        ("K", "kshot", None, None, 4, 7, "sum_prob"),  # default scoring
                        ("Z", None, None, None, None, None, None)]
    # prompt ids of both subsumption runs: T1 L1, T1 L2, T2 L1, T2 L2 (sets sorted by name)
    prompts = con.execute("SELECT prompt_id, template, text, label_set, label_words::VARCHAR "
                          "FROM prompts WHERE run_id = 'Z' ORDER BY prompt_id").fetchall()
    assert [p[:4] for p in prompts] == [(0, "T1", "A [V]", "L1"), (1, "T1", "A [V]", "L2"),
                                        (2, "T2", "B [V]", "L1"), (3, "T2", "B [V]", "L2")]
    assert json.loads(prompts[3][4]) == {"0": ["Wrong"], "1": ["Right"]}
    assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == 6
    con.close()
    connect(path, read_only=True).close()  # now current


def test_metrics_read_the_upgraded_settings(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    old_file(path)
    con = connect(path)
    metrics = {m.name: m for m in discover_metrics([ROOT / "eval" / "ontolama"])}
    _, rows = run_metric(con, metrics["ontolama_accuracy"])
    got = {(r[0], r[3], r[4], r[5]): r[6] for r in rows if r[5] == "sum_prob"}
    # Z: T1 L1 has Yes -3 < No -2 (wrong), T2 L2 has Right -1 > Wrong -2 (right); K: right.
    assert got == {("Z", "T1", "L1", "sum_prob"): 0.0, ("Z", "T2", "L2", "sum_prob"): 1.0,
                   ("K", "T2", "L2", "sum_prob"): 1.0}
    cols, rows = run_metric(con, metrics["ontolama_kshot"])
    assert [dict(zip(cols, r, strict=True))["k"] for r in rows] == [4]
    assert [dict(zip(cols, r, strict=True))["label_set"] for r in rows] == ["L2"]


def test_transaction_rolls_back_every_write_of_a_failed_block() -> None:
    con = connect(":memory:")
    run = Run(run_id="r", model="m", probe="p", task="choice", status="done")
    with pytest.raises(duckdb.Error), transaction(con):
        insert_run(con, run)
        write_scores(con, [ScoreRow("r", "p", "t", "i", 0, "a", "a", "", -1.0, 1)] * 2)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_start_run_restarts_a_run_and_keeps_its_identity() -> None:
    con = connect(":memory:")
    start_run(con, Run(run_id="r", model="m", probe="p", task="choice", wall_s=5.0,
                       requests=3, cache_hits=2))
    start_run(con, Run(run_id="r", model="other", probe="p", task="choice", wall_s=1.0,
                       requests=4))
    assert con.execute("SELECT model, wall_s, requests, cache_hits, status FROM runs"
                       ).fetchall() == [("m", 1.0, 4, 2, "running")]


def test_eval_imports_no_probes_module_but_the_results_contract() -> None:
    code = ("import sys, eval.report, eval.copen_report, eval.ontolama_report, "
            "eval.semrel_report, eval.stats, eval.sqlfile\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('probes', 'torch', 'transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    loaded = json.loads(out.replace("'", '"'))
    assert [m for m in loaded if not m.startswith("probes.results")] == ["probes"]
