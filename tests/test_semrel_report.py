"""The semantic-relation report (eval/semrel_report.py) on the hand-worked results file of
tests/semrel_fixtures.py; the expected values are worked out in tests/test_semrel_metrics.py
(recalled in the comments)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from eval import semrel_report, semrel_results, sqlfile
from probes.results import connect
from tests.semrel_fixtures import build

PNGS = ["soundness.png", "eta_curves.png", *(f"d_matrix_{a}.png" for a in ("human", "mA", "mB"))]


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


def test_report_tables_and_plots(results: Path, tmp_path: Path, capsys: Any,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    declared = tmp_path / "shared_vocab.yaml"
    declared.write_text("name: test-vocab\nversion: 3\nmodels: [mA, mB]\n")
    monkeypatch.setattr(semrel_results, "SHARED_VOCAB", declared)
    monkeypatch.setattr(semrel_results.declared_models, "__defaults__", (declared,))
    digest = hashlib.sha256(results.read_bytes()).hexdigest()
    out = tmp_path / "rep"
    assert semrel_report.main(["--results", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert hashlib.sha256(results.read_bytes()).hexdigest() == digest   # read-only
    text = (out / "semrel_report.md").read_text()
    assert text in printed and "test-vocab v3 (mA, mB)" in text
    # values of tests/test_semrel_metrics.py: S, C; A_k models only; P models only
    assert section(text, "HYP (hypernymy)")[2:] == [
        "| agent | S | S 95% CI | C | A_1 | A_5 | A_10 | P | words |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        # one word each: every resample is that word, a zero-width interval
        "| human | 0.500 | 0.500–0.500 | 0.500 | – | – | – | – | 1 |",
        "| mA | 0.500 | 0.500–0.500 | 0.500 | 0.000 | 0.500 | 0.500 | 0.750 | 1 |",
        "| mB | 1.000 | 1.000–1.000 | 1.000 | 0.000 | 0.500 | 0.500 | 0.250 | 1 |",
        # dog is the only word of W^HYP: its leave-one-out list is empty
        "| constant answer (leave-one-out) | 0.000 | – | 0.000 | – | – | – | – | 1 |", "",
        "constant answer (leave-one-out): the relata of the other words of W^HYP, most "
        "frequent first (ties alphabetical), never the word's own; the most frequent relatum "
        "of all of W^HYP: animal; hits@10 of the list: 0.000."]
    assert semrel_results.CONSTANT_NOTE in text
    assert ("| constant answer (leave-one-out) | micro | 0.000 | – | 0.000 | – | – | – | – | – | – "
            "| – | 3 |") in section(text, "Averages")
    # Appendix F, each prompt alone (test_soundness_per_prompt_appendix_f): mA SYN 1 then 0
    per_prompt = section(text, "Soundness per prompt (Appendix F)")
    assert "| SYN | mA | 1.000 / 0.000 | 0.000–1.000 (sd 0.500) | 2 |" in per_prompt
    assert "| SYN | mB | 0.500 / 0.500 | 0.500–0.500 (sd 0.000) | 2 |" in per_prompt
    audc = section(text, "AuDC (distinguishability, eqs. 24-28)")
    assert "| human | 1.38 | 2 |" in audc and "| mA | 0.25 | 2 |" in audc
    paper = "\n".join(section(text, "The paper's human figures beside ours"))
    assert "| A (asymmetry) | not scored for humans (section 5.2) | – |" in paper
    assert "| AuDC (absent = present, rank = zero) | 21.3 | 1.38 (2 pairs) |" in paper
    assert "| HYP/SYN | 4 |" in "\n".join(section(text, "Footnote 15: Mann-Whitney U between "
                                                         "relations' R"))
    for png in PNGS:
        assert (out / png).stat().st_size > 1000, png


def test_no_stats_skips_the_tests(results: Path, tmp_path: Path, capsys: Any,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: Any) -> None:
        raise AssertionError("compare_with_humans must not run")
    monkeypatch.setattr(semrel_results, "compare_with_humans", fail)
    declared = tmp_path / "shared_vocab.yaml"   # the fixture's models (they have vocabularies)
    declared.write_text("name: test-vocab\nversion: 3\nmodels: [mA, mB]\n")
    monkeypatch.setattr(semrel_results.declared_models, "__defaults__", (declared,))
    assert semrel_report.main(["--results", str(results), "--out", str(tmp_path),
                               "--no-stats"]) == 0
    text = capsys.readouterr().out
    assert section(text, "Significance (section 7.3, Appendix F)")[2] == "Skipped (--no-stats)."


def test_no_semrel_runs_names_the_commands(tmp_path: Path, capsys: Any) -> None:
    empty = tmp_path / "empty.duckdb"
    connect(empty).close()
    for path in (empty, tmp_path / "missing.duckdb"):
        assert semrel_report.main(["--results", str(path), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert f"no semrel runs in {path}" in err
        for command in ("python -m probes.engine.export -p 'semrel/*'",
                        "python -m probes.benchmarks.semrel humans",
                        "python -m probes.engine.run -m MODEL -p 'semrel/*'"):
            assert command in err
    assert not (tmp_path / "o").exists()


def test_a_failing_metric_is_named(results: Path, tmp_path: Path, capsys: Any,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = tmp_path / "semrel"
    shutil.copytree(semrel_results.METRIC_DIR, metrics)
    broken = metrics / "semrel_oor.sql"
    text = broken.read_text()
    broken.write_text(text[:text.index("WITH related")] + "SELECT model, probe, value\n"
                      "FROM no_such_view\n")
    monkeypatch.setattr(semrel_report, "METRIC_DIR", metrics)
    assert semrel_report.main(["--results", str(results), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{broken}:" in err and "no_such_view" in err


def test_missing_vocabulary_is_named_with_its_command(results: Path, tmp_path: Path,
                                                      capsys: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # mB's vocabulary was never written (`probes.benchmarks.semrel vocab` not run): the shared
    # vocabulary is empty and every figure would be –; the report says so and writes nothing
    declared = tmp_path / "shared_vocab.yaml"
    declared.write_text("name: test-vocab\nversion: 3\nmodels: [mA, mB]\n")
    monkeypatch.setattr(semrel_results.declared_models, "__defaults__", (declared,))
    copy = tmp_path / "r.duckdb"
    shutil.copy(results, copy)
    con = connect(copy)
    con.execute("DELETE FROM model_vocab WHERE model = 'mB'")
    con.close()
    out = tmp_path / "o"
    assert semrel_report.main(["--results", str(copy), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no vocabulary (model_vocab) for mB," in err and "test-vocab v3 (mA, mB)" in err
    assert "python -m probes.benchmarks.semrel vocab" in err
    assert not (out / "semrel_report.md").exists()


def test_a_metric_past_its_deadline_names_the_option_the_report_has(
        results: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline's line says "raise --metric-timeout": the semrel report must have it (a
    report on a loaded machine stopped at semrel_symmetry after 600 s, with no way to raise it)."""
    metrics = tmp_path / "semrel"
    shutil.copytree(semrel_results.METRIC_DIR, metrics)
    slow = metrics / "semrel_oor.sql"
    text = slow.read_text()
    slow.write_text(text[:text.index("WITH related")] + "SELECT 'm' AS model, 'p' AS probe, "
                    "count(*)::DOUBLE AS value FROM range(10000000000000::BIGINT)\n")
    monkeypatch.setattr(semrel_report, "METRIC_DIR", metrics)
    monkeypatch.setattr(sqlfile, "METRIC_TIMEOUT_S", sqlfile.METRIC_TIMEOUT_S)  # restored after
    assert semrel_report.main(["--results", str(results), "--out", str(tmp_path / "o"),
                               "--no-stats", "--metric-timeout", "2"]) == 2
    err = capsys.readouterr().err
    # the slow file is sure to pass 2 s; on a loaded machine an earlier metric may pass it first
    assert f"error: {metrics}/" in err and "ran longer than 2 s" in err
    assert "--metric-timeout" in err
    assert semrel_report.main(["--results", str(results), "--metric-timeout", "-1"]) == 2
    assert "--metric-timeout must be a positive number" in capsys.readouterr().err
