"""Probe files: header validation, query checks and discovery, each error naming file and line.

Every bad fixture in ``tests/fixtures/probes/bad/`` marks the offending line with ``<- error``
(or the line above a ``# ^ error`` line), so the expected line number comes from the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.engine.errors import ProbeFileError
from probes.engine.spec import discover, load_probe, parse_probe

FIXTURES = Path(__file__).parent / "fixtures" / "probes"
GOOD, BAD, DUP = FIXTURES / "good", FIXTURES / "bad", FIXTURES / "dup"

HEADER = "# name: t/x\n# task: records\n# split: test\n"
"""A valid three-line header; queries appended to it start on line 4."""


def marked_line(path: Path) -> int:
    """The 1-based line a bad fixture marks as wrong."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, start=1):
        if "<- error" in line:
            return i
        if line.strip().startswith("# ^ error"):
            return i - 1
    raise AssertionError(f"{path} has no '<- error' marker")


# file -> words the message must hold: what is wrong and how to fix it.
BAD_CASES = {
    "bad_yaml.rq": ["not valid YAML", "quote values"],
    "unknown_field.rq": ["unknown header field 'tagret'", "did you mean 'target'"],
    "missing_field.rq": ["'task' is required", "# task:"],
    "bad_task.rq": ["'relation' is not one of", "relatum", "subsumption"],
    "not_selected.rq": ["?relatum is not selected", "add ?relatum to the SELECT", "?w"],
    "syntax_error.rq": ["SPARQL syntax error", "FILTER(?w = )"],
    "syntax_error_eol.rq": ["SPARQL syntax error", "FILTER(STRLEN(?w) > )"],
    "update_insert.rq": ["INSERT DATA", "UPDATE", "write a SELECT"],
    "update_delete_where.rq": ["DELETE WHERE", "UPDATE", "write a SELECT"],
    "update_load.rq": ["LOAD", "UPDATE", "write a SELECT"],
    "update_clear.rq": ["CLEAR GRAPH", "UPDATE", "write a SELECT"],
    "update_drop.rq": ["DROP GRAPH", "UPDATE", "write a SELECT"],
    "construct.rq": ["must hold a SELECT", "CONSTRUCT", "rewrite it as SELECT"],
    "seed_missing.rq": ["seed 42 does not appear", 'ORDER BY MD5(CONCAT(STR(?x), "42"))'],
    "unknown_param.rq": ["unknown params key 'vocabs'", "did you mean 'vocab'", "task relatum"],
    "bad_param_value.rq": ["params labels.true must be a non-empty string", "quote words"],
}


def test_every_bad_fixture_is_covered() -> None:
    assert sorted(p.name for p in BAD.glob("*.rq")) == sorted(BAD_CASES)


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_probe_file_names_file_line_and_fix(name: str) -> None:
    path = BAD / name
    with pytest.raises(ProbeFileError) as info:
        load_probe(path)
    err = info.value
    line = marked_line(path)
    assert err.path == str(path)
    assert err.line == line
    assert str(err).startswith(f"{path}:{line}: ")
    for words in BAD_CASES[name]:
        assert words in str(err)


def test_good_fixtures_parse() -> None:
    probes = {p.spec.name: p for p in discover([GOOD], include_default=False)}
    assert sorted(probes) == ["tiny/features", "tiny/hypernyms", "tiny/pairs"]
    hyp = probes["tiny/hypernyms"]
    assert hyp.variables == ["child", "parent"]
    assert hyp.spec.gold == ["?parent"] and hyp.spec.group_by == ["?child"]
    assert hyp.spec.graphs == ["animals"]
    assert hyp.header_lines["target"] == 5
    pairs = probes["tiny/pairs"]
    assert pairs.spec.split_variable == "split" and pairs.spec.seed == 7
    assert pairs.spec.id == ["?child", "?parent"]


@pytest.mark.parametrize("update", [
    "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }",
    "insert data { <http://x/a> <http://x/b> <http://x/c> }",
    "DELETE DATA { <http://x/a> <http://x/b> <http://x/c> }",
    "DELETE WHERE { ?s ?p ?o }",
    "DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } WHERE { ?s ?p ?o }",
    "WITH <http://x/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "LOAD SILENT <http://x/data.ttl> INTO GRAPH <http://x/g>",
    "CLEAR GRAPH <http://x/g>",
    "CLEAR ALL",
    "DROP GRAPH <http://x/g>",
    "DROP DEFAULT",
    "CREATE GRAPH <http://x/g>",
    "COPY <http://x/a> TO <http://x/b>",
])
def test_update_is_rejected_on_its_line(update: str) -> None:
    text = HEADER + "PREFIX ex: <http://x/>\n\n" + update + "\n"
    with pytest.raises(ProbeFileError) as info:
        parse_probe(text, "u.rq")
    assert info.value.line == 6
    assert "SPARQL UPDATE" in str(info.value) and "write a SELECT" in str(info.value)
    assert str(info.value).startswith("u.rq:6: ")


def test_update_words_inside_strings_iris_and_comments_are_not_updates() -> None:
    text = HEADER + (
        "PREFIX delete: <http://x/delete/>\n"
        "# DROP GRAPH <http://x/g> would be an update, but this is a comment\n"
        "SELECT ?insert ?load WHERE {\n"
        '  VALUES (?insert ?load) { ("insert data { }" <http://x/delete>) }\n'
        "  ?s <http://x/load> ?o ; delete:where ?w .\n"
        '  FILTER(?o != """CLEAR GRAPH <http://x/g>""" && ?w != \'drop all\')\n'
        "}\n"
    )
    probe = parse_probe(text, "ok.rq")
    assert probe.variables == ["insert", "load"]


@pytest.mark.parametrize("query,form", [
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "CONSTRUCT"),
    ("ASK { ?s ?p ?o }", "ASK"),
    ("DESCRIBE <http://x/a>", "DESCRIBE"),
])
def test_non_select_is_rejected(query: str, form: str) -> None:
    text = HEADER + "PREFIX ask: <http://x/>\n" + query + "\n"
    with pytest.raises(ProbeFileError) as info:
        parse_probe(text, "q.rq")
    assert info.value.line == 5
    assert form in str(info.value) and "SELECT" in str(info.value)


def test_seed_present_in_query_is_accepted() -> None:
    query = 'SELECT ?w WHERE { VALUES ?w { "a" } } ORDER BY MD5(CONCAT(?w, "13"))'
    assert parse_probe(HEADER + "# seed: 13\n" + query, "s.rq").spec.seed == 13


@pytest.mark.parametrize("written", [
    "# id: [?a, ?b]",  # YAML reads this flow list as [{'a': None}, {'b': None}]
    '# id: ["?a", "?b"]',
    "# id: ?a ?b",
    "# id: ?a, ?b",
    "# id:\n#   - ?a\n#   - ?b",
])
def test_variable_lists_can_be_written_several_ways(written: str) -> None:
    text = HEADER + written + "\n# graphs: animals, colours\n# prompts: '[W] is a [V]'\n"
    spec = parse_probe(text + "SELECT ?a ?b WHERE { }\n", "l.rq").spec
    assert spec.id == ["?a", "?b"]
    assert spec.graphs == ["animals", "colours"]
    assert spec.prompts == ["[W] is a [V]"]


def test_header_variable_must_be_a_variable() -> None:
    with pytest.raises(ProbeFileError) as info:
        parse_probe(HEADER + "# target: word\nSELECT ?word WHERE { }\n", "v.rq")
    assert info.value.line == 4
    assert "not a SPARQL variable" in str(info.value) and "?name" in str(info.value)


def test_split_variable_must_be_selected() -> None:
    text = "# name: t/x\n# task: records\n# split: ?part\nSELECT ?w WHERE { }\n"
    with pytest.raises(ProbeFileError) as info:
        parse_probe(text, "s.rq")
    assert info.value.line == 3 and "?part" in str(info.value)


def test_file_without_header_is_an_error() -> None:
    with pytest.raises(ProbeFileError) as info:
        parse_probe("SELECT ?w WHERE { }\n", "h.rq")
    assert info.value.line == 1 and "# name:" in str(info.value)


def test_duplicate_probe_names_across_folders_name_both_files() -> None:
    with pytest.raises(ProbeFileError) as info:
        discover([GOOD, DUP], include_default=False)
    err = info.value
    dup = DUP / "hypernyms_copy.rq"
    assert err.path == str(dup) and err.line == 1
    assert "'tiny/hypernyms'" in str(err)
    assert str(GOOD / "hypernyms.rq") in str(err) and "unique" in str(err)


def test_patterns_select_probes() -> None:
    chosen = discover([GOOD], ["tiny/h*", "tiny/features"], include_default=False)
    assert sorted(p.spec.name for p in chosen) == ["tiny/features", "tiny/hypernyms"]


def test_pattern_matching_nothing_lists_known_probes() -> None:
    with pytest.raises(ProbeFileError) as info:
        discover([GOOD], ["semrel/*"], include_default=False)
    msg = str(info.value)
    assert str(GOOD) in msg and "semrel/*" in msg
    for name in ("tiny/features", "tiny/hypernyms", "tiny/pairs"):
        assert name in msg


def test_missing_probe_folder(tmp_path: Path) -> None:
    with pytest.raises(ProbeFileError) as info:
        discover([tmp_path / "nope"], include_default=False)
    assert str(tmp_path / "nope") in str(info.value) and "does not exist" in str(info.value)


def test_unreadable_probe_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "latin1.rq"
    path.write_bytes(HEADER.encode() + b"SELECT ?w WHERE { } # caf\xe9\n")
    with pytest.raises(ProbeFileError) as info:
        load_probe(path)
    lineno = HEADER.count("\n") + 1  # the SELECT line holds the byte
    assert str(info.value).startswith(f"{path}:{lineno}: the file is not UTF-8")
    assert "0xe9" in str(info.value)
