"""Issue 13, security and wrong numbers: probe files are data, and no number is silently wrong.

Every endpoint here is a server on 127.0.0.1 started by the test (tests/hostile_http.py).
"""

from __future__ import annotations

import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import duckdb
import pyoxigraph as ox
import pytest
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

from kg.errors import StoreError
from kg.store import LocalStore, QueryLimitError, RemoteStore, TaggedStr, json_rows
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.export import QueryLimits, export, instances_for
from probes.engine.export import main as export_main
from probes.engine.spec import discover, parse_probe
from tests.hostile_http import serving
from tests.test_run import FakeScorer, choice_probe, query, run, setup

HEAD = "# name: t/x\n# task: records\n# split: test\n"


def rows(results: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(results), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# --- 1. SERVICE ---------------------------------------------------------------------------------

def service_probe(url: str) -> str:
    return HEAD + f"SELECT ?x WHERE {{\n  SERVICE <{url}> {{ ?x ?p ?o }}\n}}\n"


def test_validation_never_calls_a_service_endpoint() -> None:
    with serving("record") as served:
        probe = parse_probe(service_probe(served.url), "s.rq")
        time.sleep(0.2)
        assert served.bodies == []  # parsing the probe sent nothing
    assert probe.services == (served.url,) and probe.variables == ["x"]


def test_list_of_a_folder_with_a_service_probe_sends_nothing(tmp_path: Path,
                                                             capsys: Any) -> None:
    with serving("silent") as served:
        (tmp_path / "s.rq").write_text(service_probe(served.url))
        t0 = time.monotonic()
        assert export_main(["--queries", str(tmp_path), "--only-extra", "--list"]) == 0
        assert time.monotonic() - t0 < 5 and served.bodies == []
    assert "t/x" in capsys.readouterr().out


def test_service_is_refused_at_export_unless_allowed(tmp_path: Path) -> None:
    with serving("record") as served:
        probe = parse_probe(service_probe(served.url), "s.rq")
        with pytest.raises(ProbeFileError, match="--allow-service"):
            instances_for(probe, LocalStore.in_memory())
        assert served.bodies == []


def test_allowed_service_is_bounded_by_the_query_timeout() -> None:
    with serving("silent") as served:
        probe = parse_probe(service_probe(served.url), "s.rq")
        t0 = time.monotonic()
        with pytest.raises(ProbeError, match=r"t/x.*--query-timeout"):
            instances_for(probe, LocalStore.in_memory(),
                          QueryLimits(timeout_s=1.0, allow_service=True))
        assert time.monotonic() - t0 < 5
        assert len(served.bodies) == 1  # it was called, because it was allowed


def test_service_with_a_variable_endpoint_is_a_clear_error() -> None:
    with pytest.raises(ProbeFileError) as info:
        parse_probe(HEAD + "SELECT ?x WHERE {\n  SERVICE ?endpoint { ?x ?p ?o }\n}\n", "v.rq")
    assert str(info.value).startswith("v.rq:5: SERVICE ?endpoint")


def test_service_inside_a_string_or_comment_is_not_a_service() -> None:
    probe = parse_probe(HEAD + 'SELECT ?x WHERE  # SERVICE <http://127.0.0.1:9/> { }\n'
                        '{ BIND("SERVICE <http://127.0.0.1:9/>" AS ?x) }\n', "c.rq")
    assert probe.services == ()


# --- 2. split values are names ------------------------------------------------------------------

def test_split_value_with_a_path_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    text = ("# name: t/s\n# task: records\n# split: ?split\n"
            'SELECT ?x ?split WHERE { VALUES (?x ?split) { ("a" "../../x") ("b" "test") } }\n')
    probe = parse_probe(text, "s.rq")
    out = tmp_path / "a" / "b" / "exports"
    with pytest.raises(ProbeFileError, match=r"s\.rq:3: .*'\.\./\.\./x'.* not a split name"):
        export([probe], LocalStore.in_memory(), tmp_path / "r.duckdb", out, progress=False)
    assert sorted(p.name for p in tmp_path.rglob("*.parquet")) == []
    assert rows(tmp_path / "r.duckdb", "SELECT count(*) FROM instances") == [(0,)]


# --- 3. builder registry ------------------------------------------------------------------------

def test_builder_outside_the_registry_is_never_imported() -> None:
    sys.modules.pop("this", None)
    probe = parse_probe(HEAD + "# builder: this:main\nSELECT ?x WHERE { }\n", "b.rq")
    with pytest.raises(ProbeFileError, match=r"b\.rq:4: builder 'this:main' is not allowed"):
        export([probe], LocalStore.in_memory(), ":memory:", None, progress=False)
    assert "this" not in sys.modules  # the Zen of Python was not printed: nothing imported


def test_builder_module_under_the_users_probe_folder_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "mybuild").mkdir()
    (tmp_path / "mybuild" / "rows.py").write_text(
        "from probes.engine.export import instances_for\n"
        "def make(probe, store):\n    return instances_for(probe, store).head(1)\n")
    (tmp_path / "p.rq").write_text(HEAD + "# builder: mybuild.rows:make\n"
                                   'SELECT ?x WHERE { VALUES ?x { "a" "b" } }\n')
    probes = discover([tmp_path], include_default=False)
    results = tmp_path / "r.duckdb"
    export(probes, LocalStore.in_memory(), results, None, progress=False,
           builder_dirs=[tmp_path])
    assert rows(results, "SELECT count(*) FROM instances") == [(1,)]
    # the same file, not passed as a probe folder: refused
    with pytest.raises(ProbeFileError, match="not allowed"):
        export(probes, LocalStore.in_memory(), results, None, progress=False)


# --- 4. endpoint responses ----------------------------------------------------------------------

@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "127.0.0.1:7878"])
def test_endpoint_must_be_http(url: str) -> None:
    with pytest.raises(StoreError, match="is not an http"):
        RemoteStore(url)


@pytest.mark.parametrize(("kind", "message"), [
    ("html", "did not answer with SPARQL JSON results"),
    ("json-no-results", "answered JSON without 'results'"),
])
def test_endpoint_answers_that_are_not_results(kind: str, message: str) -> None:
    with serving(kind) as served, pytest.raises(StoreError, match=message):
        RemoteStore(served.url, timeout=5).query("SELECT ?x WHERE { ?x ?p ?o }")


def test_error_text_of_a_bad_request_reaches_the_message() -> None:
    with serving("bad-request") as served, pytest.raises(StoreError) as err:
        RemoteStore(served.url, timeout=5).query("SELECT ?x WHERE { ?x ?p ?o }")
    # the server's text on one line, then SPARQLWrapper's hint for a 400
    assert str(err.value) == (
        f"SPARQL endpoint {served.url} failed: HTTP 400 Bad Request: Parser error at line 1, "
        "column 8: expected 'WHERE' — got '?' (A bad request has been sent to the endpoint: "
        "probably the SPARQL query is badly formed)")
    assert isinstance(err.value.__cause__, QueryBadFormed)


def test_error_status_sparqlwrapper_does_not_name_keeps_the_error_text() -> None:
    with serving("forbidden") as served, pytest.raises(StoreError) as err:
        RemoteStore(served.url, timeout=5).query("SELECT ?x WHERE { ?x ?p ?o }")
    assert str(err.value) == (f"SPARQL endpoint {served.url} failed: HTTP 403 Forbidden: "
                              "Parser error at line 1, column 8: expected 'WHERE' — got '?'")
    assert err.value.__cause__ is None


def test_trickling_endpoint_hits_the_total_deadline() -> None:
    with serving("trickle") as served:
        t0 = time.monotonic()
        with pytest.raises(QueryLimitError, match="did not answer within 1 s; raise --timeout"):
            RemoteStore(served.url, timeout=1).query("SELECT ?x WHERE { ?x ?p ?o }")
        assert time.monotonic() - t0 < 3  # each byte came within the per-read timeout


def test_export_timeout_flag_reaches_the_endpoint(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "p.rq").write_text(HEAD + "SELECT ?x WHERE { ?x ?p ?o }\n")
    with serving("silent") as served:
        code = export_main(["--queries", str(tmp_path), "--only-extra", "--endpoint",
                            served.url, "--timeout", "1", "--results",
                            str(tmp_path / "r.duckdb"), "--no-parquet", "--quiet"])
    assert code == 2 and "did not answer within 1 s" in capsys.readouterr().err


# --- 10. queries are sent as queries ------------------------------------------------------------

def test_update_words_in_comments_are_still_sent_as_a_query() -> None:
    text = ("# name: t/x\n# task: records\n# split: test\n# description: we drop graph noise, "
            "load <x>, insert data\nSELECT ?x WHERE { ?x ?p ?o } # DROP ALL; INSERT DATA {}\n")
    probe = parse_probe(text, "u.rq")
    with serving("record") as served:
        RemoteStore(served.url, timeout=5).query(probe.query)
    form = urllib.parse.parse_qs(served.bodies[0].decode())
    assert list(form) == ["query"] and form["query"][0] == text


@pytest.mark.parametrize("text", [
    # SPARQLWrapper's own guess reads these as ADD and MOVE (words in the second comment line)
    "# name: t/x\n# description: the address of a page\nASK { ?s ?p ?o }",
    "# a\n# then remove the row\nPREFIX ex: <http://e.org/>\nSELECT ?x WHERE { ?x ex:p ?o }",
])
def test_the_parsed_form_is_sent_as_a_query(text: str) -> None:
    with serving("record") as served:
        RemoteStore(served.url, timeout=5).query(text)
    form = urllib.parse.parse_qs(served.bodies[0].decode())
    assert list(form) == ["query"] and form["query"][0] == text


def test_construct_is_refused_before_anything_is_sent() -> None:
    with serving("record") as served, pytest.raises(StoreError, match="SELECT or ASK"):
        RemoteStore(served.url, timeout=5).query(
            "# select the triples\nCONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert served.bodies == []


# --- 5. choice without candidates ---------------------------------------------------------------

def test_choice_probe_without_candidates_is_refused() -> None:
    text = ("# name: t/c\n# task: choice\n# split: test\n# target: ?w\n# gold: ?g\n"
            'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") } }\n')
    with pytest.raises(ProbeFileError, match=r"c\.rq:2: a choice probe needs 'candidates"):
        parse_probe(text, "c.rq")


# --- 6. a probe edited since export -------------------------------------------------------------

def test_run_stops_when_the_probe_changed_since_export(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    text = (qdir / "p0.rq").read_text()
    (qdir / "p0.rq").write_text(text.replace('("owl" "bird" "tree")', ""))
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 2
    err = capsys.readouterr().err
    assert "changed since its instances were exported" in err
    assert "python -m probes.engine.export -p t/choice" in err
    assert query(results, "SELECT count(*) FROM scores") == [(0,)]
    setup(tmp_path, (qdir / "p0.rq").read_text())  # the fix: re-export
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0


def test_prompt_edit_needs_no_reexport(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    (qdir / "p0.rq").write_text(choice_probe(prompts='["[W] is [DET] [V]."]'))
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0


# --- 8. a run's times describe one invocation ----------------------------------------------------

def test_a_cached_rerun_records_its_own_times(tmp_path: Path) -> None:
    """The runs row's started_at, finished_at and wall_s are the latest invocation's: a re-run
    answered wholly from the cache overwrites the 36.6 s of the scoring run with its own
    seconds (at most the time measured around the call), starts after the first run ended,
    and its finished_at is started_at + wall_s; it found all 3 x 3 x 2 = 18 requests cached."""
    from datetime import datetime, timedelta

    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    ((first_end,),) = query(results, "SELECT finished_at FROM runs")
    con = duckdb.connect(str(results))
    con.execute("UPDATE runs SET wall_s = 36.6")  # as if scoring had taken 36.6 s
    con.close()
    t0 = time.perf_counter()
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    elapsed = time.perf_counter() - t0
    ((started, finished, wall, hits),) = query(
        results, "SELECT started_at, finished_at, wall_s, cache_hits FROM runs")
    assert hits == 18
    assert 0 <= wall <= elapsed < 36.6
    assert isinstance(started, datetime) and started >= first_end
    assert abs(finished - (started + timedelta(seconds=wall))) <= timedelta(microseconds=1)


def test_a_scoring_run_records_finished_at_as_started_at_plus_wall_s(tmp_path: Path) -> None:
    from datetime import timedelta

    qdir, results = setup(tmp_path, choice_probe())
    t0 = time.perf_counter()
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    elapsed = time.perf_counter() - t0
    ((started, finished, wall, hits, status),) = query(
        results, "SELECT started_at, finished_at, wall_s, cache_hits, status FROM runs")
    assert (status, hits) == ("done", 0)
    assert 0 < wall <= elapsed
    assert abs(finished - (started + timedelta(seconds=wall))) <= timedelta(microseconds=1)


# --- 11. seed and reproducible ordering ---------------------------------------------------------

@pytest.mark.parametrize(("query_text", "message"), [
    ("SELECT ?x WHERE { ?x ?p ?o } ORDER BY RAND() LIMIT 100", "RAND() gives a different"),
    ("SELECT ?x WHERE { ?x ?p ?o BIND(STRUUID() AS ?u) } ORDER BY ?u", "STRUUID()"),
    ("SELECT ?x WHERE { ?x ?p ?o } ORDER BY ?x LIMIT 100", "seed 1 does not appear"),
    ("SELECT ?x WHERE { <http://e.org/1> ?p ?x } ORDER BY ?x", "seed 1 does not appear"),
])
def test_seed_must_be_a_token_and_ordering_reproducible(query_text: str, message: str) -> None:
    with pytest.raises(ProbeFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_probe(HEAD + "# seed: 1\n" + query_text + "\n", "s.rq")


def test_seed_token_in_the_hash_ordering_is_accepted() -> None:
    probe = parse_probe(HEAD + '# seed: 1\nSELECT ?x WHERE { ?x ?p ?o } '
                        'ORDER BY MD5(CONCAT(STR(?x), "1")) LIMIT 100\n', "s.rq")
    assert probe.spec.seed == 1


# --- 12. language tags and datatypes ------------------------------------------------------------

def test_language_tags_keep_rows_apart() -> None:
    store = LocalStore.in_memory()
    s, p = ox.NamedNode("http://e.org/s"), ox.NamedNode("http://e.org/label")
    g = ox.NamedNode("https://w3id.org/kgprobe/graph/t")
    for lang in ("en", "de"):
        store.oxigraph.add(ox.Quad(s, p, ox.Literal("bank", language=lang), g))
    store.oxigraph.add(ox.Quad(s, p, ox.Literal("bank", datatype=ox.NamedNode(
        "http://e.org/word")), g))
    probe = parse_probe(HEAD + "# id: ?l\nSELECT ?l WHERE { ?s ?p ?l }\n", "l.rq")
    df = instances_for(probe, store)
    assert df.height == 3 and df["instance_id"].n_unique() == 3
    assert sorted(df["fields"].to_list()) == ['{"l": "bank"}'] * 3  # the text is unchanged


def test_endpoint_rows_keep_language_tags() -> None:
    data = {"head": {"vars": ["l"]}, "results": {"bindings": [
        {"l": {"type": "literal", "value": "bank", "xml:lang": "en"}},
        {"l": {"type": "literal", "value": "bank", "xml:lang": "de"}}]}}
    en, de = (r["l"] for r in json_rows(data))
    assert isinstance(en, TaggedStr) and en != de and (en.language, de.language) == ("en", "de")


# --- 16. YAML errors on the line of the mistake -------------------------------------------------

@pytest.mark.parametrize(("header", "line"), [
    ('# name: t/x\n# task: records\n# description: "unclosed\n# split: test\n', 3),
    ('# name: t/x\n# task: records\n# split: test\n# prompts: ["a", "b"\n# seed: 1\n', 4),
    ("# name: t/x\n# task: [records\n# split: test\n", 2),
    ("# name: t/x\n# task: records\n# split: test\n# description: a: b\n", 4),
])
def test_yaml_error_is_reported_where_the_mistake_starts(header: str, line: int) -> None:
    with pytest.raises(ProbeFileError) as info:
        parse_probe(header + "SELECT ?a WHERE { }\n", "y.rq")
    assert str(info.value).startswith(f"y.rq:{line}: header is not valid YAML")
