"""The semantic-relation report (eval/semrel_report.py) on the hand-worked results file of
tests/semrel_fixtures.py; the expected values are worked out in tests/test_semrel_metrics.py
(recalled in the comments)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from eval import semrel_report
from probes.results import connect
from tests.semrel_fixtures import build

PNGS = ["soundness.png", *(f"{kind}_{agent}.png" for agent in ("human", "mA", "mB")
                           for kind in ("distinguishability", "d_matrix"))]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("semrel_report") / "r.duckdb"
    build(path)
    return path


def section(text: str, heading: str) -> list[str]:
    """The lines of the report section ``## heading``."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None].splitlines()


def test_report_tables_and_plots(results: Path, tmp_path: Path, capsys: Any) -> None:
    digest = hashlib.sha256(results.read_bytes()).hexdigest()
    out = tmp_path / "rep"
    assert semrel_report.main(["--results", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert hashlib.sha256(results.read_bytes()).hexdigest() == digest   # read-only
    text = (out / "semrel_report.md").read_text()
    assert text in printed
    # S (hypernymy): humans animal ✓ mammal ✗ = 1/2; mA animal ✓ cat ✗ = 1/2; mB 2/2.
    # A_k: dog in the lists of target animal: mA @1 and @3 -> 1/2, 0, 0; the others never.
    # P (models only): mA 0.5, mB (5/6 + 1/4) / 2 = 0.542. OOR: humans and mA 1/2 (first
    # related answer @1 and @2: 1.5), mB 0.
    assert section(text, "HYP (hypernymy)")[2:] == [
        "| agent | S | C | A_1 | A_5 | A_10 | P | OOR rate | first non-OOR rank | n |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| human | 0.500 | 0.500 | 1.000 | 1.000 | 1.000 | – | 0.500 | 1.50 | 2 |",
        "| mA | 0.500 | 0.500 | 0.500 | 0.000 | 0.000 | 0.500 | 0.500 | 1.50 | 2 |",
        "| mB | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 0.542 | 0.000 | 1.00 | 2 |"]
    # S (synonymy): humans large ✓ large ✓ big ✓ great ✗ = 3/4; mA 2/4; mB 2/4; mD has a run
    # but no answers: a row of dashes. M_k: humans 3/4, 1, 1; mA 1/2, 3/4, 3/4; mB 1/2, 1, 1.
    syn = section(text, "SYN (synonymy)")
    assert syn[2].startswith("| agent | S | C | M_1 | M_5 | M_10 | P |")
    assert syn[4:8] == [
        "| human | 0.750 | 0.750 | 0.750 | 1.000 | 1.000 | – | 0.250 | 1.25 | 4 |",
        "| mA | 0.500 | 0.500 | 0.500 | 0.750 | 0.750 | 0.750 | 0.250 | 1.00 | 4 |",
        "| mB | 0.500 | 0.500 | 0.500 | 1.000 | 1.000 | 0.250 | 0.000 | 1.00 | 4 |",
        "| mD | – | – | – | – | – | – | – | – | – |"]
    for rel in ("HPO", "HOL", "MER", "ANT"):
        assert f"No runs of semrel/{rel.lower()}." in text
    # macro S = the mean of the two relations, micro = hits / 6 probes.
    averages = section(text, "Averages")
    assert any(line.startswith("| human | macro | 0.625 | 0.625 |") for line in averages)
    assert any(line.startswith("| mB | micro | 0.667 | 0.667 |") for line in averages)
    assert section(text, "AuDC (distinguishability)")[4:7] == [
        "| human | 2.00 | 2 |", "| mA | 1.30 | 2 |", "| mB | 1.50 | 2 |"]
    paper = section(text, "The paper's human figures beside ours")
    assert "| S HYP | 0.63–0.75 | 0.500 |" in paper
    assert "| S SYN | 0.63–0.75 | 0.750 |" in paper
    assert "| S ANT | 0.90 | – |" in paper
    assert "| M SYN (ours: M_1 / M_5 / M_10) | 0.65 | 0.750 / 1.000 / 1.000 |" in paper
    assert "| AuDC (sum over pairs, at most 30) | 21.3 | 2.00 (2 pairs) |" in paper
    # A10, mA vs humans: 0 of 2 trick probes right against 2 of 2: McNemar p = 2 * 0.5^2.
    stats = section(text, "Models against humans (significance)")
    assert "| mA | human | HYP | A10 | mcnemar | 2 | 0.00 | 0.000 | 1.000 | 0.5 |" in stats
    bad = section(text, "Bad inputs")
    assert "| mB | target_not_in_vocab | 1 | 5 | HYP 0/2, SYN 1/3 |" in bad
    assert "| human | multi_word_answer | 1 | 17 | HYP 0/10, SYN 1/7 |" in bad
    assert "| mD | model_without_vocab | 1 | 1 | (all) 1/1 |" in bad
    assert "| semrel/syn | 1 | 1 | 3 |" in bad
    for name in PNGS:
        data = (out / name).read_bytes()
        assert data[:4] == b"\x89PNG" and len(data) > 1000, name
        assert f"wrote {out / name}" in printed
        assert f"![{name[:-4]}]({name})" in text
    assert not list(out.glob("*_mD.png"))      # no distinguishability rows for mD


def test_no_stats_skips_the_tests(results: Path, tmp_path: Path, capsys: Any,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: Any) -> None:
        raise AssertionError("compare_with_humans must not run")
    monkeypatch.setattr(semrel_report, "compare_with_humans", fail)
    assert semrel_report.main(["--results", str(results), "--out", str(tmp_path),
                               "--no-stats"]) == 0
    text = capsys.readouterr().out
    assert section(text, "Models against humans (significance)")[2] == "Skipped (--no-stats)."


def test_no_semrel_runs_names_the_commands(tmp_path: Path, capsys: Any) -> None:
    empty = tmp_path / "empty.duckdb"
    connect(empty).close()
    for path in (empty, tmp_path / "missing.duckdb"):
        assert semrel_report.main(["--results", str(path), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert f"no semrel runs in {path}" in err
        for command in ("python -m probes.export -p 'semrel/*'", "python -m probes.semrel humans",
                        "python -m probes.run -m MODEL -p 'semrel/*'"):
            assert command in err
    assert not (tmp_path / "o").exists()


def test_a_failing_metric_is_named(results: Path, tmp_path: Path, capsys: Any,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = tmp_path / "semrel"
    shutil.copytree(semrel_report.METRIC_DIR, metrics)
    broken = metrics / "semrel_oor_rate.sql"
    text = broken.read_text()
    broken.write_text(text[:text.index("WITH related")] + "SELECT model, probe, value\n"
                      "FROM no_such_view\n")
    monkeypatch.setattr(semrel_report, "METRIC_DIR", metrics)
    assert semrel_report.main(["--results", str(results), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{broken}:" in err and "no_such_view" in err
