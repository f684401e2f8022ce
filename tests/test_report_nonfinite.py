"""A stored score that is not finite is named by the report (issue 45 point 3): the markdown
report, its printed lines and the HTML page each carry one warning per such run, and a file
without one carries none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from eval.report import main as report_main
from tests.test_run import FakeScorer, choice_probe, run, setup


def test_nan_scores_are_named_in_every_form_of_the_report(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    html = tmp_path / "r.html"
    args = ["--results", str(results), "--no-plots", "--html", str(html)]
    assert report_main([*args, "--out", str(tmp_path / "clean")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert "Warning" not in (tmp_path / "clean" / "report.md").read_text()

    con = duckdb.connect(str(results))
    con.execute("UPDATE scores SET score = 'nan'::DOUBLE WHERE candidate = 'tree'")
    bad = con.execute("SELECT count(*) FROM scores WHERE isnan(score)").fetchone()
    run_id = con.execute("SELECT run_id FROM runs").fetchone()
    con.close()
    assert bad and bad[0] > 0 and run_id
    assert report_main([*args, "--out", str(tmp_path / "nan")]) == 0
    line = (f"run {run_id[0][:8]} (model {FakeScorer().name}, probe t/choice) has {bad[0]} "
            "stored scores that are not finite (NaN or ±inf): its metrics are wrong")
    err = capsys.readouterr().err
    assert f"warning: {line}" in err
    assert f"**Warning:** {line}" in (tmp_path / "nan" / "report.md").read_text()
    assert line in html.read_text()
