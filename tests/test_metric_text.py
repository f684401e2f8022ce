"""Metric files as written (issue 45 point 7): a ``/* comment */`` before a legal ``CREATE TEMP
TABLE`` is read past, and a block comment cannot hide a statement that is not allowed; DuckDB's
advice to ``SET`` a limit, which a metric may not do, is not handed on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eval.report import main
from tests.test_metric_sandbox import HEADER, counts, metric_folder, results  # noqa: F401


def _report(results: Path, tmp_path: Path, text: str) -> int:  # noqa: F811
    mine = metric_folder(tmp_path, {"m.sql": text})
    return main(["--results", str(results), "--metrics", str(mine), "--out",
                 str(tmp_path / "rep"), "--no-plots"])


def test_block_comment_before_create_temp_table(results: Path, tmp_path: Path,  # noqa: F811
                                                capsys: Any) -> None:
    text = (HEADER.format(name="mine") + "/* the gold candidates,\n   one row each */\n"
            "CREATE TEMP TABLE g AS SELECT probe, count(*) AS n FROM scores "
            "WHERE candidate = 'g' GROUP BY probe;\n"
            "SELECT probe, n::DOUBLE AS value, n FROM g\n")
    assert _report(results, tmp_path, text) == 0
    assert "| t/c | 5 | 5.000 |" in (tmp_path / "rep" / "report.md").read_text()  # 5 gold rows


@pytest.mark.parametrize("hidden", ["/* CREATE TEMP TABLE */ COPY (SELECT 1) TO 'x.csv'",
                                    "/* one */ /* two */\nATTACH 'x.duckdb'"])
def test_a_block_comment_hides_no_statement(results: Path, tmp_path: Path,  # noqa: F811
                                            hidden: str, capsys: Any) -> None:
    text = (HEADER.format(name="mine") + "SELECT 1;\n" + hidden
            + ";\nSELECT 'a' AS probe, 1 AS value\n")
    before = counts(results)
    assert _report(results, tmp_path, text) == 2
    err = capsys.readouterr().err.strip()
    line = 6 + hidden.count("\n")
    word = hidden.split("*/")[-1].split()[0]
    assert err.startswith(f"error: {tmp_path / 'mine' / 'm.sql'}:{line}: a metric file may only "
                          f"hold SELECT queries and CREATE TEMP VIEW/MACRO/TABLE statements, "
                          f"not {word}")
    assert counts(results) == before and not (tmp_path / "x.csv").exists()


def test_no_set_advice_for_a_deep_expression(results: Path, tmp_path: Path,  # noqa: F811
                                            capsys: Any) -> None:
    deep = "+".join(["1"] * 1500)
    text = HEADER.format(name="mine") + f"SELECT probe, ({deep})::DOUBLE AS value FROM scores\n"
    assert _report(results, tmp_path, text) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Max expression depth limit of 1000 exceeded" in err
    assert "SET" not in err and "max_expression_depth" not in err
    assert "A metric cannot change DuckDB settings" in err
