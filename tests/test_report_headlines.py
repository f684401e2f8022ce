"""One report for a study (issue 46): ``kgprobe report`` over a file with OntoLAMA runs shows
OntoLAMA's accuracy (the paper's zero-shot mean over templates and label words), with its n,
beside the majority baseline and the shortcut ceiling, not only the ceiling. The runs are those
of tests/test_ontolama_report.py, whose expected values are worked out there by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.report import main as report_main
from tests.test_ontolama_report import db  # noqa: F401  (the fixture)


def test_the_report_shows_ontolama_s_accuracy(db: Path, tmp_path: Path,  # noqa: F811
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main(["--results", str(db), "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    (head,) = [x for x in lines if x.startswith("|") and "ontolama_zero_shot" in x]
    cols = [c.strip() for c in head.strip("|").split("|")]
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in lines
            if x.startswith("| ") and "ontolama/pizza-atomic" in x]
    z1 = [dict(zip(cols, r, strict=True)) for r in rows if len(r) == len(cols)]
    # pizza zero-shot (run Z1): 4/4, 3/4, 2/4, 1/4, 0/4, 2/4 over its six prompts: mean 0.5
    assert any(r.get("ontolama_zero_shot") == "0.500" and r.get("n") == "4" for r in z1), text
    # the majority baseline and the ceiling, each in the report too
    assert "ontolama_majority_baseline" in text and "ontolama_shortcut_ceiling" in text


def test_the_headline_rows_put_ontolama_s_baseline_and_ceiling_beside_it(
        db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    assert report_main(["--results", str(db), "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    lines = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, x in enumerate(lines) if "chance, ceiling" in x)
    cols = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for x in lines[start + 2:]:
        if not x.startswith("|"):
            break
        rows.append(dict(zip(cols, [c.strip() for c in x.strip("|").split("|")], strict=True)))
    # pizza's zero-shot run: 0.5 over 4 instances (above); tests/test_ontolama_report.py works
    # out its majority baseline (2 of 4 positive: 50.0) and shortcut ceiling (50.0) by hand
    pizza = [r for r in rows if r["probe"] == "ontolama/pizza-atomic"
             and r["benchmark"] == "OntoLAMA" and r["value"] == "0.500"]
    assert pizza and all((r["n"], r["chance"], r["shortcut ceiling"]) == ("4", "0.500", "0.500")
                         for r in pizza), rows
    # both scorings of the run (its zero-shot mean under each), each with its n
    assert sorted(r["measure"] for r in pizza) == [
        "zero-shot accuracy (scoring mean_logprob)", "zero-shot accuracy (scoring sum_prob)"]
    assert pizza[0]["chance, ceiling"] == ("ontolama_majority_baseline, "
                                           "ontolama_shortcut_ceiling")
