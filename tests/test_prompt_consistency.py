"""prompt_consistency with its n and a 95 % interval over instances (issue 47): the metric
(eval/metrics/prompt_consistency.sql), and its own table in report.md (n instances, pairs,
value, interval and its method) while the run table keeps only its value.

Two hand-made choice probes, candidates a, b, c, one run (model m), the answer under each
prompt the candidate scored 0 (the others -1):

- t/two, two prompts: j1 a a, j2 b b, j3 c c, j4 a b. Shares (one pair each) 1, 1, 1, 0:
  value 3/4 over n = 4 instances and 4 pairs; every share is 0 or 1, so the interval is the
  Wilson interval of 3 of 4.
- t/three, three prompts: i1 a a a (3 of 3 pairs agree: 1), i2 a b a (only prompts 0 and 2
  agree: 1/3), i3 a b c (0), i4 scored under prompt 0 alone (no pair: left out). Value
  (1 + 1/3 + 0) / 3 = 4/9 over n = 3 instances and 9 pairs; the shares are not all 0 or 1, so
  the percentile bootstrap over the 3 instances: a resample of i3 three times (mean 0) has
  probability 1/27 = 3.7 % > 2.5 %, and of i1 three times (mean 1) too, so the 2.5 % and
  97.5 % quantiles of the resampled means are 0 and 1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eval.report import main as report_main
from eval.sqlfile import default_metric_dir, load_metric, run_metric
from probes.results import connect
from probes.results.writers import Run, insert_run
from tests.test_stats import wilson_by_hand

CANDIDATES = ["a", "b", "c"]
ANSWERS = {"t/two": {"j1": "aa", "j2": "bb", "j3": "cc", "j4": "ab"},
           "t/three": {"i1": "aaa", "i2": "aba", "i3": "abc", "i4": "a"}}


def results(path: Path) -> Path:
    con = connect(str(path))
    for probe, answers in ANSWERS.items():
        n_prompts = max(len(a) for a in answers.values())
        insert_run(con, Run(run_id=probe, model="m", probe=probe, task="choice", config={
            "prompts": [f"[W] {k} [V]" for k in range(n_prompts)]}, status="done"))
        for iid, picks in answers.items():
            con.execute("""INSERT INTO instances (probe, split, instance_id, target, gold,
                           candidates, fields, exported_at)
                           VALUES (?, 'test', ?, ?, ['a'], ?, ?::JSON, now())""",
                        [probe, iid, iid, CANDIDATES, json.dumps({})])
            for pid, pick in enumerate(picks):
                for cand in CANDIDATES:
                    con.execute("""INSERT INTO scores (run_id, probe, split, instance_id,
                                   prompt_id, candidate, label, prompt, score, n_tokens)
                                   VALUES (?, ?, 'test', ?, ?, ?, ?, '', ?, 1)""",
                                [probe, probe, iid, pid, cand, cand,
                                 0.0 if cand == pick else -1.0])
    con.close()
    return path


def test_the_metric_gives_n_pairs_and_the_interval_over_instances(tmp_path: Path) -> None:
    con = connect(str(results(tmp_path / "r.duckdb")), read_only=True)
    cols, rows = run_metric(con, load_metric(default_metric_dir() / "prompt_consistency.sql"))
    got: dict[str, dict[str, Any]] = {r["probe"]: r for r in
                                      (dict(zip(cols, row, strict=True)) for row in rows)}
    two, three = got["t/two"], got["t/three"]
    assert (two["value"], two["n"], two["pairs"]) == (0.75, 4, 4)
    assert (two["ci_low"], two["ci_high"]) == pytest.approx(wilson_by_hand(3, 4))
    assert two["ci_method"] == "Wilson"
    assert three["value"] == pytest.approx(4 / 9) and (three["n"], three["pairs"]) == (3, 9)
    assert (three["ci_low"], three["ci_high"]) == (0.0, 1.0)
    assert three["ci_method"] == "cluster bootstrap"


def test_the_report_shows_them_in_a_table_of_their_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = results(tmp_path / "r.duckdb")
    assert report_main(["--results", str(res), "--out", str(tmp_path / "rep"),
                        "--no-plots"]) == 0
    lines = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("## Prompt consistency")
    head = next(x for x in lines[start:] if x.startswith("|"))
    assert head == ("| model | probe | split | n | pairs | prompt_consistency | 95% CI | "
                    "interval |")
    lo, hi = wilson_by_hand(3, 4)
    assert f"| m | t/two | test | 4 | 4 | 0.750 | {lo:.3f}–{hi:.3f} | Wilson |" in lines
    assert "| m | t/three | test | 3 | 9 | 0.444 | 0.000–1.000 | cluster bootstrap |" in lines
    # the run table keeps prompt_consistency's value, without an interval column of its own
    run_head = next(x for x in lines if x.startswith("| model | probe | split | n |")
                    and "choice_accuracy" in x)
    assert "| prompt_consistency |" in run_head
    assert "prompt_consistency 95% CI" not in run_head
    assert "| 0.000–1.000 | cluster bootstrap |" in capsys.readouterr().out


def test_the_html_leaderboard_shows_n_and_the_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = results(tmp_path / "r.duckdb")
    html = tmp_path / "r.html"
    assert report_main(["--results", str(res), "--out", str(tmp_path / "rep"), "--no-plots",
                        "--html", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    board = text[text.index('<section id="leaderboard">'):]
    board = board[:board.index("</section>")]
    head = re.findall(r"<th>(.*?)</th>", board)
    rows = [dict(zip(head, re.findall(r"<td[^>]*>(.*?)</td>", tr), strict=True))
            for tr in re.findall(r"<tr>(.*?)</tr>", board) if "<td" in tr]
    (two,) = [r for r in rows if r["metric"] == "prompt_consistency" and r["probe"] == "t/two"]
    lo, hi = wilson_by_hand(3, 4)
    assert (two["value"], two["n"], two["95% CI"]) == ("0.750", "4", f"{lo:.3f}–{hi:.3f}")
