"""BEAR's headline row in the one report (issue 46): ``kgprobe report`` over a file with a BEAR
run shows bear_accuracy with its n and 95 % interval, and beside it BEAR's chance (the mean of
1 / answer-space size over the probe's instances, lm-pub-quiz's random baseline: bear_chance)
and its shortcut ceiling (bear_shortcut_ceiling), in report.md's headline table and in the
HTML leaderboard (the browser reads those cells in tests/test_html_browser.py).

The file is tests/test_bear_metrics.py's hand-worked example, whose values are derived there:
rows right 3 of 6 (I1 t0, I3 t0, I3 t1), so bear_accuracy 0.5 over n = 3 instances; answer
spaces of 3, 3 and 2 answers, so chance (1/3 + 1/3 + 1/2) / 3 = 7/18 = 0.389; the cross-fitted
shortcut rules (longest for P10, shortest for P2) right on none of the three: ceiling 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.report import main as report_main
from probes.results import connect
from probes.results.writers import Run, insert_run
from tests.test_bear_metrics import ANSWERS, INSTANCES, PROBE, SCORES


def bear_results(path: Path) -> Path:
    """tests/test_bear_metrics.py's run R (model m) written to a results file."""
    c = connect(str(path))
    for iid, rel, subject, gold, domains in INSTANCES:
        fields = {"relation": rel, "subject": subject, "domain": domains}
        c.execute("""INSERT INTO instances (probe, split, instance_id, target, gold, candidates,
                     fields, exported_at) VALUES (?, 'test', ?, ?, ?, ?, ?::JSON, now())""",
                  [PROBE, iid, subject, [gold], ANSWERS[rel], json.dumps(fields)])
    insert_run(c, Run(run_id="R", model="m", probe=PROBE, task="choice", config={},
                      status="done"))
    rel_of = {i[0]: i[1] for i in INSTANCES}
    for (iid, pid), vals in SCORES.items():
        for cand, v in zip(ANSWERS[rel_of[iid]], vals, strict=True):
            score, n = v if isinstance(v, tuple) else (v, 1)
            c.execute("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                         candidate, label, prompt, score, n_tokens)
                         VALUES ('R', ?, 'test', ?, ?, ?, ?, '', ?, ?)""",
                      [PROBE, iid, pid, cand, cand, score, n])
    c.close()
    return path


def _table(text: str, first: str) -> list[dict[str, str]]:
    """The rows of the markdown table whose header row starts with ``| first |``, as dicts."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"| {first} |")
                 and "chance, ceiling" in x)
    head = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for x in lines[start + 2:]:
        if not x.startswith("|"):
            break
        rows.append(dict(zip(head, [c.strip() for c in x.strip("|").split("|")], strict=True)))
    return rows


def test_bear_headline_row_has_n_interval_chance_and_ceiling(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = bear_results(tmp_path / "r.duckdb")
    assert report_main(["--results", str(results), "--out", str(tmp_path / "rep"),
                        "--no-plots"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "## Headlines" in text
    (row,) = [r for r in _table(text, "benchmark") if r["benchmark"] == "BEAR"]
    assert (row["measure"], row["model"], row["probe"], row["split"]) == (
        "accuracy", "m", PROBE, "test")
    assert (row["value"], row["n"]) == ("0.500", "3")
    assert row["chance"] == f"{7 / 18:.3f}" == "0.389"
    assert row["shortcut ceiling"] == "0.000"
    assert row["chance, ceiling"] == "bear_chance, bear_shortcut_ceiling"
    lo, hi = (float(v) for v in row["95% CI"].split("–"))
    # the cluster bootstrap over the 3 instances (instance means 0.5, 0, 1): around 0.5
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    # the per-relation chance and ceiling are kgprobe bear report's, not tables here
    assert "| P10 |" not in text
    # printed too
    assert "bear_chance, bear_shortcut_ceiling" in capsys.readouterr().out


def test_the_headline_follows_the_probe_filter(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    results = bear_results(tmp_path / "r.duckdb")
    assert report_main(["--results", str(results), "--out", str(tmp_path / "rep"),
                        "--no-plots", "-m", "m"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    # a model filter keeps the model-free chance and ceiling beside the model's row
    (row,) = [r for r in _table(text, "benchmark") if r["benchmark"] == "BEAR"]
    assert (row["chance"], row["shortcut ceiling"]) == ("0.389", "0.000")
    assert report_main(["--results", str(results), "--out", str(tmp_path / "rep2"),
                        "--no-plots", "-p", "other/*"]) == 2
