"""``kgprobe bear`` (probes/benchmarks/bear): subset writes a valid probe file, bad input is one
line;
``kgprobe bear report`` (eval/bear_report.py) and the profile's BEAR lines on the hand-worked
results of tests/test_bear_metrics.py."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from eval.bear_report import render
from eval.profile import profile_lines
from eval.report import metric_rows
from probes.app.cli import main
from probes.engine.spec import load_probe
from tests.test_bear_metrics import con  # noqa: F401  (the fixture)

ROOT = Path(__file__).parents[1]


def test_subset_writes_a_probe_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bear", "subset", "--relation", "P19", "--relation", "P103", "--instances",
                 "10", "--name", "bear/mine", "--out", str(tmp_path)]) == 0
    probe = load_probe(tmp_path / "bear_mine.rq")
    assert probe.spec.name == "bear/mine"
    assert 'FILTER(?relation IN ("P19", "P103"))' in probe.query
    assert "FILTER(?index < 10)" in probe.query
    assert "kgprobe --queries" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--relation", "born"], "--relation 'born' is not a Wikidata property code"),
    (["--probe", "bear/nope"], "--probe 'bear/nope' is not one of"),
    (["--instances", "0"], "--instances must be at least 1"),
    (["--relation", "P99999"], "--relation P99999: no such relation in bear/bear (it has 60: "
                               "P6, P19,"),
    (["--relation", "P19", "--relation", "P414"], "--relation P414: no such relation in "
                                                  "bear/bear (it has 60:")])
def test_subset_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      argv: list[str], message: str) -> None:
    assert main(["bear", "subset", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("out", ["/dev/null", "a-file"])
def test_subset_out_that_is_no_folder_is_one_line(tmp_path: Path, out: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = Path(out) if out.startswith("/") else tmp_path / out
    if not out.startswith("/"):
        target.write_text("keep me")
    assert main(["bear", "subset", "--relation", "P19", "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --out {target} is not a folder; give the folder to write "
                   "bear_subset.rq into")
    if not out.startswith("/"):
        assert target.read_text() == "keep me"


def test_subset_onto_a_fifo_is_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import os

    os.mkfifo(tmp_path / "bear_subset.rq")
    assert main(["bear", "subset", "--out", str(tmp_path)]) == 2  # would block on open
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {tmp_path / 'bear_subset.rq'} is a FIFO (named pipe); remove it or "
                   "give another --out or --name")


def test_report_and_profile(con: duckdb.DuckDBPyConnection,  # noqa: F811
                            tmp_path: Path) -> None:
    rows = metric_rows(con, [ROOT / "eval" / "bear"])
    out = render(con, rows, tmp_path)
    md = out.markdown
    # lm-pub-quiz's aggregate 0.5; per domain A (I1, I2, I3: 0.5, 0, 1) = 0.5, lm-pub-quiz's
    # A 0.4; chance over all (1/3 + 1/3 + 1/2) / 3 = 0.389
    assert "**0.500**" in md
    assert "| A | 3 | 0.500 |" in md and "| 0.400 | 0.389 |" in md
    assert "| P10 | A | 2 | 0.250 |" in md
    assert out.figures and out.figures[0].is_file()
    prows = metric_rows(con, [ROOT / "eval" / "profile_sql"])
    lines = [p for p in profile_lines(prows, "m") if p.benchmark == "BEAR"]
    assert [(p.measure, p.n, p.value) for p in lines] == [
        ("all relations: accuracy (bear)", 3, pytest.approx(0.5)),
        ("A: accuracy (bear)", 3, pytest.approx(0.5)),
        ("B: accuracy (bear)", 1, pytest.approx(1.0))]
    assert lines[0].chance == pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3)
    assert lines[0].ceiling == 0.0
