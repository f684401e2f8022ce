"""kg.header: the one reader of ``.rq`` (``#``) and ``.sql`` (``--``) header comment blocks."""

from __future__ import annotations

import pytest

from eval.sqlfile import MetricFileError, parse_metric
from kg.header import HeaderError, read_header
from probes.errors import ProbeFileError
from probes.spec import parse_probe


@pytest.mark.parametrize("marker", ["#", "--"])
def test_same_block_either_marker(marker: str) -> None:
    text = (f"\n{marker} name: a/b\n{marker} grain:\n{marker}   - probe\n{marker}tasks: [x]\n"
            f"SELECT 1\n{marker} not: header\n")
    h = read_header(text, marker)
    assert h.fields == {"name": "a/b", "grain": ["probe"], "tasks": ["x"]}
    assert h.field_lines == {"name": 2, "grain": 3, "tasks": 5}
    assert h.end == 6 and h.line_of("missing") == 2


@pytest.mark.parametrize(("text", "line", "words"), [
    ("SELECT 1\n", 1, "no header"),
    ("# a: 1\n# b: [x,\n# c: 3\nSELECT 1\n", 2, "not valid YAML"),  # where the [ opened
    ("# - a\n# - b\nSELECT 1\n", 1, "a YAML mapping"),
])
def test_errors_name_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(HeaderError) as info:
        read_header(text, "#")
    assert info.value.line == line and words in info.value.message


def test_probe_and_metric_files_report_yaml_errors_alike() -> None:
    rq = "# name: t/x\n# task: records\n# prompts: ['a,\n# split: test\nSELECT ?a {}\n"
    sql = "-- name: x\n-- description: d\n-- tasks: ['a,\n-- grain: [probe]\nSELECT 1\n"
    with pytest.raises(ProbeFileError) as p_err:
        parse_probe(rq, "x.rq")
    with pytest.raises(MetricFileError) as m_err:
        parse_metric(sql, "x.sql")
    assert p_err.value.line == m_err.value.line == 3
    assert p_err.value.message == m_err.value.message
    assert "not valid YAML" in m_err.value.message
