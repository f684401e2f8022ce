"""kg.header: the one reader of ``.rq`` (``#``) and ``.sql`` (``--``) header comment blocks."""

from __future__ import annotations

import pytest

from eval.sqlfile import MetricFileError, parse_metric
from kg.header import HeaderError, read_header
from probes.engine.errors import ProbeFileError
from probes.engine.spec import parse_probe


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


def test_misspelt_metric_field_gets_did_you_mean_like_a_probe_field() -> None:
    """Probe and metric headers go through the same check (kg.header.validate_header)."""
    rq = "# name: t/x\n# task: records\n# split: test\n# descripton: d\nSELECT ?a {}\n"
    sql = "-- name: x\n-- descripton: d\n-- tasks: [choice]\n-- grain: [probe]\nSELECT 1\n"
    with pytest.raises(ProbeFileError) as p_err:
        parse_probe(rq, "x.rq")
    with pytest.raises(MetricFileError) as m_err:
        parse_metric(sql, "x.sql")
    assert (p_err.value.line, m_err.value.line) == (4, 2)
    for err in (p_err.value, m_err.value):
        assert err.message.startswith("unknown header field 'descripton' (did you mean "
                                      "'description'?); known fields: ")


@pytest.mark.parametrize(("value", "line", "words"), [
    ("-- grain: {probe: 1}", 4, "grain: Input should be a valid list; write it as "
     "'-- grain: [run_id, probe, split]'"),
    ("-- grain: [probe, 3]", 4, "grain: Input should be a valid string"),
    ("-- grain: [probe]\n-- plot: 1", 5, "plot: Input should be a valid boolean; write it as "
     "'-- plot: true|false'"),
    ("-- grain: [probe]\n-- requires: 7", 5, "requires: Input should be a valid list"),
])
def test_wrong_type_in_a_metric_header_names_file_line_field_and_fix(
        value: str, line: int, words: str) -> None:
    sql = f"-- name: x\n-- description: d\n-- tasks: [choice]\n{value}\nSELECT 1\n"
    with pytest.raises(MetricFileError) as info:
        parse_metric(sql, "m.sql")
    assert str(info.value).startswith(f"m.sql:{line}: ") and words in info.value.message


def test_missing_field_names_the_line_to_add_in_either_file() -> None:
    with pytest.raises(ProbeFileError) as p_err:
        parse_probe("# name: t/x\n# split: test\nSELECT ?a {}\n", "x.rq")
    with pytest.raises(MetricFileError) as m_err:
        parse_metric("-- name: x\n-- description: d\n-- grain: [probe]\nSELECT 1\n", "x.sql")
    assert p_err.value.message == (
        "header field 'task' is required: add a line "
        "'# task: relatum|choice|binary|subsumption|records|generate|probing'")
    assert m_err.value.message == ("header field 'tasks' is required: add a line "
                                   "'-- tasks: [choice]'")


def test_wrong_type_in_a_probe_header_names_the_field() -> None:
    with pytest.raises(ProbeFileError) as info:
        parse_probe("# name: t/x\n# task: records\n# split: test\n# seed: [1]\nSELECT ?a {}\n",
                    "x.rq")
    assert info.value.line == 4 and info.value.message.startswith("seed: ")
