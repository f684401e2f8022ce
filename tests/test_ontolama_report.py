"""The OntoLAMA report (eval/ontolama_report.py) on a tiny hand-made results file.

Every expected number is worked out by hand in the comments from the rows inserted.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from eval import ontolama_kshot as kshot
from eval import ontolama_report as report
from eval import ontolama_results as results
from eval.sqlfile import discover_metrics, run_metric
from probes.results import connect
from probes.results.writers import PromptRow, Run, insert_run, write_prompts

PIZZA, GO = "ontolama/pizza-atomic", "ontolama/go-complex"
SETS = {"L1": {"1": ["Yes"], "0": ["No"]}, "L2": {"1": ["Right"], "0": ["Wrong"]},
        "L3": {"1": ["Yes", "Right"], "0": ["No", "Wrong"]}}
WORDS = [SETS[name] for name in ("L1", "L2", "L3")]  # set index = position of the sorted name


def add_instance(con: duckdb.DuckDBPyConnection, probe: str, iid: str, gold: str,
                 split: str = "test") -> None:
    con.execute("INSERT INTO instances VALUES (?, ?, ?, NULL, [?], [], '{}', now())",
                [probe, split, iid, gold])


def add_run(con: duckdb.DuckDBPyConnection, rid: str, probe: str, *, kshot: dict | None = None,
            wall: float | None = None, requests: int | None = None,
            status: str = "done", model: str = "m") -> None:
    cfg: dict = {"params": {"label_words": SETS}, "limit": None}
    if kshot:
        cfg["kshot"] = kshot
    insert_run(con, Run(run_id=rid, model=model, probe=probe, task="subsumption", config=cfg,
                        wall_s=wall, requests=requests, status=status,
                        method="kshot" if kshot else None, k=(kshot or {}).get("k"),
                        seed=(kshot or {}).get("seed"), scoring=(kshot or {}).get("scoring")))
    # prompt_id = template_index * 3 + index of the sorted set name (T1 L1 = 0, ..., T2 L3 = 5)
    write_prompts(con, [PromptRow(rid, t * 3 + s, f"T{t + 1}", None, name, SETS[name])
                        for t in range(2) for s, name in enumerate(sorted(SETS))])


def decide(con: duckdb.DuckDBPyConnection, rid: str, probe: str, iid: str, gold: str, pid: int,
           right: bool) -> None:
    """Scores under prompt ``pid`` (template pid // 3, set pid % 3) that make the gold class
    win (-1 against -2) or lose."""
    for cls, words in WORDS[pid % 3].items():
        score = -1.0 if (cls == gold) == right else -2.0
        for w in words:
            con.execute("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                           candidate, label, score) VALUES (?, ?, 'test', ?, ?, ?, ?, ?)""",
                        [rid, probe, iid, pid, w, cls, score])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.duckdb"
    con = connect(path)
    gold = {"A": "1", "B": "0", "C": "1", "D": "0", "E": "1", "F": "1", "G": "0"}
    for iid in "ABCD":
        add_instance(con, PIZZA, iid, gold[iid])
    for iid in "EFG":
        add_instance(con, GO, iid, gold[iid])
    add_instance(con, GO, "H", "0")  # never scored: the go runs score a sample of 3 of 4
    # pizza's train split: 2 of 3 positive, so the shortcut panel's majority rule answers "1"
    # (texts are empty: no other rule); on A-D (1, 0, 1, 0) it scores 2/4. GO has no train
    # split: no panel, no ceiling.
    for iid, g in (("T1", "1"), ("T2", "1"), ("T3", "0")):
        add_instance(con, PIZZA, iid, g, "train")
    # Zero-shot on pizza: who is right under each prompt id (T1 L1, T1 L2, T1 L3, T2 L1, ...)
    right = ["ABCD", "ABC", "AB", "A", "", "AB"]
    add_run(con, "Z1", PIZZA, wall=8.0, requests=20)
    for pid, who in enumerate(right):
        for iid in "ABCD":
            decide(con, "Z1", PIZZA, iid, gold[iid], pid, iid in who)
    # Zero-shot on go complex: E and F right, G wrong, under every prompt
    add_run(con, "Z2", GO, wall=3.0, requests=6)
    for pid in range(6):
        for iid in "EFG":
            decide(con, "Z2", GO, iid, gold[iid], pid, iid != "G")
    # a failed run: left out everywhere
    add_run(con, "X", GO, status="failed")
    for iid in "EFG":
        decide(con, "X", GO, iid, gold[iid], 0, False)
    # K-shot on pizza, T1 L1 (prompt id 0): K=4 seed 1 right on A, B; seed 2 on all; K=8 on A-C
    # and the fully supervised setting (K = -1), right on A-C
    for rid, k, seed, who in (("K4a", 4, 1, "AB"), ("K4b", 4, 2, "ABCD"), ("K8", 8, 1, "ABC"),
                              ("KF", -1, 1, "ABC")):
        add_run(con, rid, PIZZA, kshot={"k": k, "seed": seed, "template": "T1",
                                        "label_set": "L1"}, wall=60.0)
        for iid in "ABCD":
            decide(con, rid, PIZZA, iid, gold[iid], 0, iid in who)
    con.close()
    return path


def built(path: Path) -> results.Results:
    con = connect(path, read_only=True)
    try:
        return results.build(con)
    finally:
        con.close()


def test_majority_baseline_metric(db: Path) -> None:
    (metric,) = [m for m in discover_metrics([results.METRIC_DIR])
                 if m.name == "ontolama_majority_baseline"]
    con = connect(db, read_only=True)
    cols, rows = run_metric(con, metric)
    con.close()
    got = {r[0]: dict(zip(cols, r, strict=True)) for r in rows}
    assert set(got) == {"Z1", "Z2", "K4a", "K4b", "K8", "KF"}  # not the failed run
    # pizza: 2 of 4 positive -> 0.5; go: 2 of 3 positive -> 2/3
    assert got["Z1"]["value"] == 0.5 and got["Z1"]["positive_share"] == 0.5
    assert got["Z2"]["value"] == pytest.approx(2 / 3) and got["Z2"]["n"] == 3


def test_zero_shot_table(db: Path) -> None:
    table = report.zero_shot_table(built(db)).splitlines()
    assert table[0] == ("| dataset | n | of split | T1 L1 | T1 L2 | T1 L3 | T2 L1 | T2 L2 | "
                        "T2 L3 | mean ± std | 95% CI (sample) | majority | shortcut ceiling | "
                        "positives |")
    # pizza: 4/4, 3/4, 2/4, 1/4, 0/4, 2/4; mean 3/6 = 0.5; deviations .5 .25 0 -.25 -.5 0,
    # squares sum 0.625, / 6 = 0.10417, std 0.3227
    assert table[2] == ("| pizza atomic | 4 | 4 | 100.0 | 75.0 | 50.0 | 25.0 | 0.0 | 50.0 | "
                        "50.0 ± 32.3 | full split | 50.0 | 50.0 (majority, on train); best 50.0, "
                        "null 50.0 / 50.0 | 50.0 |")
    # go complex: 2/3 under every prompt, std 0; majority 2/3 (2 of 3 positive); 3 of the
    # split's 4 instances, so a sample: Wilson 95 % at p = 2/3, n = 3, z = 1.96: centre
    # (2/3 + z²/6) / (1 + z²/3) = 0.5731, half-width z sqrt(2/27 + z²/36) / (1 + z²/3) = 0.3654
    assert table[3] == ("| go complex | 3 (sample) | 4 | 66.7 | 66.7 | 66.7 | 66.7 | 66.7 | "
                        "66.7 | 66.7 ± 0.0 | 20.8–93.9 | 66.7 | – | 66.7 |")
    assert len(table) == 4  # K-shot runs are not zero-shot rows


def test_two_models_on_the_same_instances_are_paired(db: Path) -> None:
    assert report.paired_table(built(db)) == ""  # one model: nothing to compare
    con = connect(db)
    add_run(con, "Y1", PIZZA, model="m2")  # right on A and B under every prompt, never C, D
    gold = {"A": "1", "B": "0", "C": "1", "D": "0"}
    for pid in range(6):
        for iid in "ABCD":
            decide(con, "Y1", PIZZA, iid, gold[iid], pid, iid in "AB")
    con.close()
    (row,) = report.paired_table(built(db)).splitlines()[2:]
    cells = [c.strip() for c in row.strip("|").split("|")]
    # m (Z1) per instance, the share of its 6 prompts right: A 5/6, B 4/6, C 2/6, D 1/6
    # (mean 1/2); m2: 1, 1, 0, 0 (mean 1/2). Differences -1/6, -2/6, +2/6, +1/6: mean 0;
    # Wilcoxon's signed ranks 1.5 + 3.5 on each side: no evidence either way (p = 1)
    assert cells[:8] == ["pizza atomic", "m", "m2", "4", "50.0", "50.0", "+0.0", cells[7]]
    low, high = (float(v) for v in cells[7].split(" to "))
    assert low < 0 < high and low >= -100 / 3 and high <= 100 / 3
    assert cells[8:] == ["wilcoxon", "1"]
    assert "### Two models on the same instances" in report.render(built(db))


def test_kshot_table_and_curve(db: Path) -> None:
    res = built(db)
    table = kshot.kshot_table(res).splitlines()
    assert table[0] == ("| dataset | K | prompt | accuracy | seeds | n | zero-shot (n) | "
                        "majority | shortcut ceiling |")
    # K=4: seeds 2/4 and 4/4: mean 0.75, population std 0.25; zero-shot T1 L1 4/4
    assert table[2] == ("| pizza atomic | 4 | T1 L1 | 75.0 ± 25.0 | 2 | 4 | 100.0 (4) | 50.0 | "
                        "50.0 (majority, on train); best 50.0, null 50.0 / 50.0 |")
    # K=8: one seed, 3/4: no std
    assert table[3] == ("| pizza atomic | 8 | T1 L1 | 75.0 | 1 | 4 | 100.0 (4) | 50.0 | "
                        "50.0 (majority, on train); best 50.0, null 50.0 / 50.0 |")
    # the fully supervised run last, named "full" (3/4), and left off the curve
    assert table[4] == ("| pizza atomic | full | T1 L1 | 75.0 | 1 | 4 | 100.0 (4) | 50.0 | "
                           "50.0 (majority, on train); best 50.0, null 50.0 / 50.0 |")
    # The curve is the protocol's mean over all runs of a K; K = 0 is the zero-shot mean over
    # the six prompts: 4, 3, 2, 1, 0, 2 of 4 right: mean 0.5, deviations 0.5, 0.25, 0, -0.25,
    # -0.5, 0: population variance 0.625 / 6.
    assert kshot.kshot_curves(res) == {
        "pizza atomic": [(0, 0.5, pytest.approx((0.625 / 6) ** 0.5)), (4, 0.75, 0.25),
                         (8, 0.75, None)]}
    assert kshot.kshot_baselines(res) == {"majority class": 0.5}
    assert kshot.kshot_ceilings(res) == {"pizza atomic": 0.5}
    # Per prompt: T1 L1 has runs at K = 4 and 8, so it is a curve; its K = 0 is its own
    # zero-shot accuracy (4 of 4 right), not the mean of six prompts; full is left off.
    assert kshot.kshot_prompt_curves(res) == {
        "pizza atomic T1 L1": [(0, 1.0, None), (4, 0.75, 0.25), (8, 0.75, None)]}
    assert kshot.kshot_prompt_ceilings(res) == {"pizza atomic T1 L1": 0.5}
    protocol = kshot.protocol_table(res).splitlines()
    assert protocol[2] == ("| m | pizza atomic | 4 | 75.0 ± 25.0 | 2 | 4 | 4 | 50.0 | "
                           "50.0 (majority, on train); best 50.0, null 50.0 / 50.0 |")
    assert protocol[4] == ("| m | pizza atomic | full | 75.0 | 1 | 4 | 4 | 50.0 | "
                           "50.0 (majority, on train); best 50.0, null 50.0 / 50.0 |")


def test_runs_table(db: Path) -> None:
    table = report.runs_table(built(db)).splitlines()
    # Z1: 20 requests / 8 s = 2.50, 4 instances / 8 s = 0.50; Z2: 6 / 3 = 2.00, 3 / 3 = 1.00
    assert table[2] == "| m | pizza atomic | Z1 | 4 | 20 | 8.0 | 2.50 | 0.50 |"
    assert table[3] == "| m | go complex | Z2 | 3 | 6 | 3.0 | 2.00 | 1.00 |"



def test_runs_table_rates_count_only_what_the_invocation_scored() -> None:
    """The rates describe the latest invocation: a re-run answered wholly from the cache
    scored nothing (no rate); a resumed one that found 15 of 20 requests cached scored 5 in
    2 s: 5 / 2 = 2.50 requests/s, and no instances/s (it did not score every instance)."""
    res = results.Results(
        metrics={"ontolama_zero_shot": [{"run_id": r, "split": "test", "n": 4}
                                           for r in ("A", "B")]},
        runs={"A": results.RunInfo("A", "m", PIZZA, None, None, 0.5, 20, 20),
              "B": results.RunInfo("B", "m", GO, None, None, 2.0, 20, 15)})
    table = report.runs_table(res).splitlines()
    rows = {line.split(" | ")[2]: line for line in table[2:]}
    assert rows["A"].endswith("| 0.5 | – | – |")
    assert rows["B"].endswith("| 2.0 | 2.50 | – |")

def test_main_writes_markdown_and_png(db: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports"
    assert report.main(["--results", str(db), "--out", str(out)]) == 0
    text = (out / "ontolama_report.md").read_text()
    assert "## Zero-shot" in text and "## K-shot" in text and "![K-shot accuracy]" in text
    assert (out / "ontolama_kshot.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "ontolama_kshot_prompts.png").read_bytes()[:4] == b"\x89PNG"
    assert "![K-shot accuracy per prompt](ontolama_kshot_prompts.png)" in text
    assert "| pizza atomic | 4 | T1 L1 | 75.0 ± 25.0 |" in capsys.readouterr().out
    # the shortcut panel: pizza's majority rule (train 2 of 3 positive -> "1") on A-D
    # (only the majority rule: it is the rule chosen on train, and the best one on test; the
    # labels shuffled, it still answers "1" on two of A-D: its null is 50.0 too)
    assert "| majority | 50.0 |" in text
    assert "| **shortcut ceiling** (rule chosen on dev, else train) | **50.0** (majority) |" \
        in text
    assert "| pizza atomic | train | 3 | 66.7 | majority | train | 66.7 | majority |" in text


def test_missing_results_file_is_a_clear_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["--results", str(tmp_path / "none.duckdb"),
                        "--out", str(tmp_path)]) == 2
    assert "no results file" in capsys.readouterr().err
