"""Issue 21, point 2: probe files and derived files are data and never act.

SERVICE, RAND()/UUID()/NOW(), the query form and the seed are read from a parser's algebra;
validation never runs a query; derived graphs are replaced only when their query succeeded;
headers refuse YAML anchors, aliases and repeated keys; only regular files of bounded size are
read; a syntax error is reported fast; FROM is honoured by the embedded store. Every server here
is on 127.0.0.1, started by the test (tests/hostile_http.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from kg.derived import Derived, DerivedError, derived_graph, discover, main, materialise
from kg.store import LocalStore
from kg.textfile import MAX_BYTES
from probes.engine.errors import ProbeFileError
from probes.engine.export import export, instances_for
from probes.engine.export import main as export_main
from probes.engine.spec import discover as discover_probes
from probes.engine.spec import load_probe, parse_probe
from tests.hostile_http import serving

HEAD = "# name: t/x\n# task: records\n# split: test\n"


# --- SERVICE, RAND and the form from the algebra ------------------------------------------------

PREFIX = "PREFIX ex: <http://e.org/>\n"


def spellings(url: str) -> dict[str, str]:
    """The four legal spellings that slipped past the old keyword detector, each with a SERVICE
    to ``url``: after a backslash-escaped '#' (read as a comment) or "'" (read as a string up to
    the next quote), named by a prefix with a middle dot, or after a comment ended by a CR."""
    service = f"SERVICE <{url}> {{ ?x ?p 'v' }}"
    return {
        "escaped #": f"{PREFIX}SELECT ?x WHERE {{ ?x ex:a\\# ?o . {service} }}",
        "escaped '": f"{PREFIX}SELECT ?x WHERE {{ ?x ex:it\\'s ?o . {service} }}",
        "middle dot": f"PREFIX e\u00b7x: <{url.rsplit('/', 1)[0]}/>\nSELECT ?x WHERE {{ "
                      f"SERVICE e\u00b7x:{url.rsplit('/', 1)[1]} {{ ?x ?p ?o }} }}",
        "CR line ends": f"SELECT ?x WHERE {{ # a comment\r {service}\r}}",
    }


@pytest.mark.parametrize("spelling", ["escaped #", "escaped '", "middle dot", "CR line ends"])
def test_service_in_every_spelling_is_found_and_never_called(tmp_path: Path, capsys: Any,
                                                             spelling: str) -> None:
    with serving("silent") as served:
        text = HEAD + spellings(served.url)[spelling] + "\n"
        (tmp_path / "s.rq").write_bytes(text.encode())
        t0 = time.monotonic()
        try:  # found (and refused at export), or refused outright: never sent
            probe = parse_probe(text, "s.rq")
        except ProbeFileError as e:
            assert str(e).startswith("s.rq:") and "spell that part plainly" in str(e)
        else:
            assert probe.services == (served.url,)
            with pytest.raises(ProbeFileError, match="--allow-service"):
                instances_for(probe, LocalStore.in_memory())
        export_main(["--queries", str(tmp_path), "--only-extra", "--list"])
        assert time.monotonic() - t0 < 20
        time.sleep(0.2)
        assert served.bodies == []  # no request: parsing, listing and refusing sent nothing


def test_rand_after_a_cr_only_comment_is_refused() -> None:
    text = HEAD + "SELECT ?x WHERE { ?x ?p ?o } # sample\rORDER BY RAND()\r"
    with pytest.raises(ProbeFileError) as info:
        parse_probe(text, "r.rq")
    assert str(info.value).startswith("r.rq:5: RAND() gives a different result")


@pytest.mark.parametrize("call", ["NOW()", "UUID()", "BNODE()"])
def test_nondeterministic_calls_in_any_case_are_refused(call: str) -> None:
    text = HEAD + f"SELECT ?x WHERE {{ BIND({call.lower()} AS ?x) }}\n"
    with pytest.raises(ProbeFileError, match=rf"{call[:-2]}\(\) gives a different result"):
        parse_probe(text, "n.rq")


def test_rand_in_a_string_or_comment_is_no_call() -> None:
    probe = parse_probe(HEAD + '# seed: 7\nSELECT ?x WHERE { BIND("RAND()" AS ?x) } # RAND()\n'
                        'ORDER BY MD5(CONCAT(STR(?x), "7"))\n', "ok.rq")
    assert probe.variables == ["x"]


def test_seed_only_in_a_comment_or_iri_is_not_a_value() -> None:
    for body in ('SELECT ?x WHERE { ?x ?p ?o } # "3"\n',
                 "SELECT ?x WHERE { <http://e.org/3> ?p ?x }\n"):
        with pytest.raises(ProbeFileError, match=r"s\.rq:4: seed 3 does not appear"):
            parse_probe(HEAD + "# seed: 3\n" + body, "s.rq")


def test_construct_is_refused_by_its_form_not_its_words() -> None:
    with pytest.raises(ProbeFileError) as info:
        parse_probe(HEAD + "\n# construct a view\nCONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }\n",
                    "c.rq")
    assert str(info.value).startswith("c.rq:6: a probe file must hold a SELECT query, not "
                                      "CONSTRUCT")


def test_one_bad_file_does_not_stop_other_probes(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "good.rq").write_text(HEAD.replace("t/x", "t/good") +
                                      'SELECT ?x WHERE { VALUES ?x { "a" } }\n')
    (tmp_path / "bad.rq").write_text(HEAD.replace("t/x", "t/bad") + "SELECT ?x WHERE { ?x\n")
    (tmp_path / "noname.rq").write_text("# name: [\nSELECT ?x WHERE { }\n")
    assert [p.spec.name for p in discover_probes([tmp_path], ["t/good"], False)] == ["t/good"]
    export(discover_probes([tmp_path], ["t/good"], False), LocalStore.in_memory(),
           tmp_path / "r.duckdb", None, progress=False)
    assert export_main(["--queries", str(tmp_path), "--only-extra", "--list"]) == 2
    out, err = capsys.readouterr()
    assert "t/good" in out
    assert "bad.rq:4: SPARQL syntax error" in err and "noname.rq:1:" in err
    with pytest.raises(ProbeFileError, match=r"bad\.rq:4: SPARQL syntax error"):
        discover_probes([tmp_path], ["t/bad"], False)  # asked for: its own error


# --- a syntax error is reported fast ------------------------------------------------------------

def test_syntax_error_in_a_large_query_is_reported_fast() -> None:
    rows = " ".join(f'("w{i}" "x{i}")' for i in range(20_000))  # ~0.4 MB
    text = HEAD + f"SELECT ?a ?b WHERE {{\n VALUES (?a ?b) {{\n{rows}\n}}\n ?a ?p ?b\n"
    t0 = time.monotonic()
    with pytest.raises(ProbeFileError) as info:
        parse_probe(text, "big.rq")  # the closing brace is missing
    assert time.monotonic() - t0 < 5
    message = str(info.value)
    assert message.startswith("big.rq:") and "SPARQL syntax error" in message
    assert "\n" not in message and len(message) < 500


# --- files that are not regular text files ------------------------------------------------------

def test_fifo_and_device_links_are_refused_in_one_line(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "good.rq").write_text(HEAD + 'SELECT ?x WHERE { VALUES ?x { "a" } }\n')
    os.mkfifo(tmp_path / "fifo.rq")
    (tmp_path / "zero.rq").symlink_to("/dev/zero")
    t0 = time.monotonic()
    assert export_main(["--queries", str(tmp_path), "--only-extra", "--list"]) == 2
    assert time.monotonic() - t0 < 20
    out, err = capsys.readouterr()
    assert "t/x" in out
    assert "fifo.rq: it is a FIFO (named pipe), not a regular file" in err
    assert "zero.rq: it is a character device, not a regular file" in err


def test_file_over_the_size_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.rq"
    path.write_text(HEAD + "SELECT ?x WHERE { }\n" + "#" * MAX_BYTES)
    with pytest.raises(ProbeFileError, match=r"huge\.rq: the file is larger than 1,000,000"):
        load_probe(path)


# --- YAML headers -------------------------------------------------------------------------------

def bomb(levels: int) -> str:
    lines = ['# builder_params: {a: &a ["lol", "lol", "lol"],']
    prev = ["a", *(f"l{i}" for i in range(levels))]
    lines += [f"#   l{i}: &l{i} [*{prev[i]}, *{prev[i]}]" + ("," if i < levels - 1 else "}")
              for i in range(levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("header", "line", "message"), [
    (bomb(9), 4, "YAML anchor '&a' is not allowed"),
    ("# builder_params: *x\n", 4, "YAML alias '*x' is not allowed"),
    ("# builder_params: &x [*x]\n", 4, "YAML anchor '&x' is not allowed"),
    ("# name: t/y\n", 4, "field 'name' is given twice"),
    ("# params: " + "[" * 50_000 + "]" * 50_000 + "\n", 4, "header values nest deeper than 20"),
])
def test_yaml_header_refusals(header: str, line: int, message: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(ProbeFileError) as info:
        parse_probe(HEAD + header + "SELECT ?x WHERE { }\n", "h.rq")
    assert time.monotonic() - t0 < 5
    assert str(info.value).startswith(f"h.rq:{line}: {message}")


def test_byte_order_mark_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bom.rq"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + "SELECT ?x WHERE { }\n").encode())
    with pytest.raises(ProbeFileError, match=r"bom\.rq:1: the file starts with a byte-order "
                       r"mark .*save it as UTF-8 without BOM"):
        load_probe(path)


# --- derived graphs never lose a graph ----------------------------------------------------------

SRC = "https://w3id.org/kgprobe/graph/src"


def derived_store() -> ox.Store:
    """A store with 30 source triples and the derived graph 'copy' (30 quads) built from them."""
    store = ox.Store()
    ex = "http://e.org/"
    store.extend(ox.Quad(ox.NamedNode(f"{ex}s{i}"), ox.NamedNode(f"{ex}p"),
                         ox.Literal(i), ox.NamedNode(SRC)) for i in range(30))
    materialise(store, [copy_file("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")])
    return store


def copy_file(query: str) -> Derived:
    return Derived(name="copy", path=Path("copy.rq"), query=query)


def derived_quads(store: ox.Store) -> int:
    return len(list(store.quads_for_pattern(None, None, None, derived_graph("copy"))))


@pytest.mark.parametrize(("query", "limits", "message"), [
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ", {}, "the CONSTRUCT query failed"),
    ("CONSTRUCT { ?a ?p ?c } WHERE { ?a ?p ?b . ?c ?q ?d }", {"max_triples": 100},
     "more than 100 triples; narrow its pattern or raise --max-rows"),
    ("CONSTRUCT { ?a ?b ?c } WHERE { ?a ?p ?x . ?b ?q ?y . ?c ?r ?z . ?d ?t ?w . ?e ?u ?v }",
     {"timeout": 0.5}, "ran longer than 0.5 s; narrow its pattern or raise --query-timeout"),
])
def test_failing_construct_keeps_the_derived_graph(query: str, limits: dict[str, float],
                                                   message: str) -> None:
    store = derived_store()
    assert derived_quads(store) == 30
    with pytest.raises(DerivedError) as info:
        materialise(store, [copy_file(query)], **limits)  # type: ignore[arg-type]
    assert str(info.value).startswith("copy.rq: ") and message in str(info.value)
    assert "derived/copy is unchanged" in str(info.value)
    assert derived_quads(store) == 30  # before and after: nothing lost
    assert len(store) == 60  # no staging graph left


def test_successful_construct_replaces_the_graph_whole() -> None:
    store = derived_store()
    materialise(store, [copy_file('CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o FILTER(?o < 10) }')])
    assert derived_quads(store) == 10 and len(store) == 40


def test_service_in_a_derived_file_is_refused_and_never_called(tmp_path: Path) -> None:
    with serving("record") as served:
        (tmp_path / "remote.rq").write_text(
            "# description: remote\nCONSTRUCT { ?s ?p ?o } WHERE {\n"
            f"  SERVICE <{served.url}> {{ ?s ?p ?o }}\n}}\n")
        with pytest.raises(DerivedError, match=r"remote\.rq:3: SERVICE .* is not allowed in a "
                           "derived file"):
            discover(tmp_path)
        time.sleep(0.2)
        assert served.bodies == []


def test_derived_header_refuses_aliases_and_unknown_fields(tmp_path: Path) -> None:
    (tmp_path / "a.rq").write_text("# description: &d x\n# requires: []\n"
                                   "CONSTRUCT { } WHERE { }\n")
    with pytest.raises(DerivedError, match=r"a\.rq:1: YAML anchor '&d' is not allowed"):
        discover(tmp_path)
    (tmp_path / "a.rq").write_text("# require: [b]\nCONSTRUCT { } WHERE { }\n")
    with pytest.raises(DerivedError, match=r"a\.rq:1: unknown header field 'require' \(did you "
                       "mean 'requires'"):
        discover(tmp_path)


def test_mistyped_store_is_an_error_not_a_new_store(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "copy.rq").write_text("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }\n")
    missing = tmp_path / "stroe"
    assert main(["--store", str(missing), "--folder", str(tmp_path / "d")]) == 2
    assert not missing.exists()
    assert "no store at" in capsys.readouterr().err


# --- FROM -----------------------------------------------------------------------------------------

def test_from_is_honoured_by_the_embedded_store() -> None:
    store = LocalStore.in_memory()
    ex = "http://e.org/"
    for g, n in (("a", 2), ("b", 3)):
        store.oxigraph.extend(ox.Quad(ox.NamedNode(f"{ex}s{i}"), ox.NamedNode(f"{ex}p"),
                                      ox.Literal(i), ox.NamedNode(f"{ex}g/{g}")) for i in range(n))
    count = "SELECT (COUNT(*) AS ?n) {} WHERE {{ ?s ?p ?o }}"
    assert store.query(count.format(""))[0]["n"] == 5  # no FROM: the union of all graphs
    assert store.query(count.format(f"FROM <{ex}g/a>"))[0]["n"] == 2
    assert store.query(count.format(f"FROM <{ex}g/none>"))[0]["n"] == 0
    assert store.query(count.format(f"FROM <{ex}g/a> FROM <{ex}g/b>"))[0]["n"] == 5
    # the word in a comment is no FROM clause
    assert store.query("# read from all graphs\n" + count.format(""))[0]["n"] == 5


def test_probe_with_from_exports_only_that_graph(tmp_path: Path) -> None:
    store = LocalStore.in_memory()
    ex = "http://e.org/"
    for g in ("a", "b"):
        store.oxigraph.add(ox.Quad(ox.NamedNode(f"{ex}{g}"), ox.NamedNode(f"{ex}p"),
                                   ox.Literal(g), ox.NamedNode(f"{ex}g/{g}")))
    probe = parse_probe(HEAD + f"SELECT ?x FROM <{ex}g/a> WHERE {{ ?s ?p ?x }}\n", "f.rq")
    export([probe], store, tmp_path / "r.duckdb", None, progress=False)
    import duckdb

    con = duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True)
    assert con.execute("SELECT fields FROM instances").fetchall() == [('{"x": "a"}',)]
    con.close()


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { ?b ?a ?c }",
    "SELECT * WHERE { VALUES (?z ?y) { (1 2) } BIND(3 AS ?x) ?z ?m ?k }",
    "SELECT ?b (STR(?a) AS ?s) ?c WHERE { ?b ?a ?c }",
])
def test_variables_from_the_algebra_are_oxigraphs(query: str) -> None:
    # the run's rows come from Oxigraph; its order of the variables is what the probe keeps
    expected = [v.value for v in ox.Store().query(query).variables]
    assert parse_probe(HEAD + query + "\n", "v.rq").variables == expected
