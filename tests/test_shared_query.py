"""Shared queries (issue 43, point 5): a probe file whose header names ``query: FILE.sparql``
runs that file's query with its declared parameters bound to the header's ``values:``, each
written as a typed SPARQL term. Good and bad inputs, injection attempts, and the probe run on
a small store."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from kg.store import LocalStore
from probes.engine.errors import ProbeFileError
from probes.engine.instances import run_query
from probes.engine.spec import discover, load_probe

G = "http://e.org/g"
SHARED = """# parameters: {graph: iri, n: integer, word: string}

# a note after the header: $graph, "$n" and <$word> here are text, never replaced
SELECT ?s ?o (STRLEN(STR(?o)) AS ?len) ?not_a_parameter WHERE {
  GRAPH $graph { ?s <http://e.org/p> ?o }
  FILTER(STRLEN(STR(?o)) >= $n || ?o = $word)
  BIND("$n" AS ?not_a_parameter)
} ORDER BY ?s
"""
HEADER = """# name: t/shared
# task: records
# split: test
# target: ?s
# query: shared.sparql
"""


def folder(tmp_path: Path, values: str, shared: str = SHARED, extra: str = "") -> Path:
    """A probe folder: shared.sparql and p.rq (HEADER + ``values`` + ``extra``)."""
    (tmp_path / "shared.sparql").write_text(shared)
    (tmp_path / "p.rq").write_text(HEADER + values + extra)
    return tmp_path / "p.rq"


def store() -> LocalStore:
    s = LocalStore.in_memory()
    for subject, word, graph in (("a", "xy", G), ("b", "hello", G), ("c", "hello", G + "2")):
        s.oxigraph.add(ox.Quad(ox.NamedNode(f"http://e.org/{subject}"),
                               ox.NamedNode("http://e.org/p"), ox.Literal(word),
                               ox.NamedNode(graph)))
    return s


def error(tmp_path: Path, values: str, **kw: str) -> str:
    with pytest.raises(ProbeFileError) as info:
        load_probe(folder(tmp_path, values, **kw))
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text  # one line
    return text


def test_values_are_written_as_typed_terms(tmp_path: Path) -> None:
    path = folder(tmp_path, f'# values: {{graph: {G}, n: 4, word: "xy"}}\n')
    probe = load_probe(path)
    assert probe.query_file == tmp_path / "shared.sparql" and probe.path == path
    assert probe.spec.values == {"graph": G, "n": 4, "word": "xy"}
    lines = probe.query.splitlines()
    assert lines[4] == f"  GRAPH <{G}> {{ ?s <http://e.org/p> ?o }}"
    assert lines[5] == '  FILTER(STRLEN(STR(?o)) >= 4 || ?o = "xy")'
    # strings and comments keep their text; the resolved query keeps the shared file's lines
    assert lines[6] == '  BIND("$n" AS ?not_a_parameter)'
    assert lines[2].endswith('"$n" and <$word> here are text, never replaced')
    assert len(lines) == len(SHARED.splitlines())
    assert probe.variables == ["s", "o", "len", "not_a_parameter"]
    rows = run_query(probe, store())
    assert [(r["s"], r["o"]) for r in rows] == [("http://e.org/a", "xy"),
                                                 ("http://e.org/b", "hello")]


def test_each_value_changes_the_query_and_the_export_hash(tmp_path: Path) -> None:
    one = load_probe(folder(tmp_path, f'# values: {{graph: {G}, n: 4, word: "xy"}}\n'))
    other = load_probe(folder(tmp_path, f'# values: {{graph: {G}, n: 5, word: "xy"}}\n'))
    rows = run_query(other, store())
    assert [r["o"] for r in rows] == ["xy", "hello"]  # "xy" by the word, "hello" by length 5
    assert one.instances_hash != other.instances_hash
    again = load_probe(folder(tmp_path, f'# values: {{graph: {G}, n: 4, word: "xy"}}\n'))
    assert again.instances_hash == one.instances_hash


def test_a_string_value_cannot_inject_sparql(tmp_path: Path) -> None:
    """A string value is one literal, whatever it holds: the query keeps its shape and the
    value is compared as a whole (no row of the other graph leaks in)."""
    attack = 'x" || true) } UNION { GRAPH ?g { ?s ?p ?o } FILTER("1'
    probe = load_probe(folder(tmp_path, f"# values: {{graph: {G}, n: 99, word: '{attack}'}}\n"))
    assert r'?o = "x\" || true) } UNION { GRAPH ?g { ?s ?p ?o } FILTER(\"1")' in probe.query
    assert probe.variables == ["s", "o", "len", "not_a_parameter"]
    assert run_query(probe, store()) == []
    newline = load_probe(folder(tmp_path, f'# values: {{graph: {G}, n: 1, word: "a\\n}}#"}}\n'))
    assert '?o = "a\\n}#")' in newline.query
    assert len(newline.query.splitlines()) == len(SHARED.splitlines())


@pytest.mark.parametrize(("values", "words"), [
    ("{graph: 'http://e.org/g> } UNION { GRAPH ?g { ?s ?p ?o } } #', n: 1, word: x}",
     "values: graph must be an absolute IRI"),
    ("{graph: 'http://e.org/a b', n: 1, word: x}", "values: graph must be an absolute IRI"),
    ("{graph: g, n: 1, word: x}", "values: graph must be an absolute IRI"),
    (f"{{graph: {G}, n: '1) }} UNION {{ ?s ?p ?o', word: x}}", "values: n must be an integer"),
    (f"{{graph: {G}, n: '4', word: x}}", "values: n must be an integer (as 3, unquoted)"),
    (f"{{graph: {G}, n: true, word: x}}", "values: n must be an integer"),
    (f"{{graph: {G}, n: 1, word: 3}}", "values: word must be a string"),
    (f"{{graph: {G}, n: 1, word: [x]}}", "values: word must be a string"),
])
def test_a_value_of_the_wrong_type_is_refused(tmp_path: Path, values: str, words: str) -> None:
    text = error(tmp_path, f"# values: {values}\n")
    assert text.startswith(f"{tmp_path / 'p.rq'}:6: {words}"), text


def test_unknown_and_missing_values(tmp_path: Path) -> None:
    text = error(tmp_path, f"# values: {{graph: {G}, n: 1, wrod: x}}\n")
    assert text == (f"{tmp_path / 'p.rq'}:6: values: 'wrod' is not a parameter of "
                    f"{tmp_path / 'shared.sparql'} (did you mean 'word'?); its parameters: "
                    "graph, n, word")
    text = error(tmp_path, f"# values: {{graph: {G}, word: x}}\n")
    assert text == (f"{tmp_path / 'p.rq'}:6: values: parameter 'n' of "
                    f"{tmp_path / 'shared.sparql'} (integer) has no value; add it: values: "
                    "{n: ...}")
    assert "parameter 'graph'" in error(tmp_path, "")  # no values: at all
    (tmp_path / "q.rq").write_text(HEADER.replace("# query: shared.sparql\n", "")
                                   + "# values: {n: 1}\nSELECT ?s WHERE { ?s ?p ?o }\n")
    with pytest.raises(ProbeFileError, match=r"q.rq:5: values: binds the parameters of a shared "
                       r"query; add 'query: FILE.sparql'"):
        load_probe(tmp_path / "q.rq")


@pytest.mark.parametrize("query", ["../shared.sparql", "/etc/shared.sparql", "shared.rq",
                                   "a/../../shared.sparql"])
def test_the_shared_file_lies_under_the_probe_s_folder(tmp_path: Path, query: str) -> None:
    values = f"# values: {{graph: {G}, n: 1, word: x}}\n"
    (tmp_path / "shared.sparql").write_text(SHARED)
    (tmp_path / "p.rq").write_text(HEADER.replace("shared.sparql", query) + values)
    with pytest.raises(ProbeFileError) as info:
        load_probe(tmp_path / "p.rq")
    assert str(info.value) == (f"{tmp_path / 'p.rq'}:5: query: {query!r} is not a shared query "
                               "of this folder; name a .sparql file under the probe file's "
                               "folder, as atomic.sparql")


def test_a_missing_shared_file_and_sparql_in_the_probe_file(tmp_path: Path) -> None:
    values = f"# values: {{graph: {G}, n: 1, word: x}}\n"
    (tmp_path / "p.rq").write_text(HEADER + values)
    with pytest.raises(ProbeFileError, match=r"p.rq:5: query: shared.sparql: cannot read the "
                       r"file: No such file or directory \(.*shared.sparql\); name a .sparql "
                       "file under the probe file's folder"):
        load_probe(tmp_path / "p.rq")
    text = error(tmp_path, values, extra="\n# a comment is fine\nSELECT ?s WHERE { ?s ?p ?o }\n")
    assert text.startswith(f"{tmp_path / 'p.rq'}:9: this probe runs the shared query "
                           "shared.sparql (its 'query:' line), so it holds no SPARQL of its own")


def test_mistakes_in_the_shared_file_name_it_and_its_line(tmp_path: Path) -> None:
    values = f"# values: {{graph: {G}, n: 1, word: x}}\n"
    shared = tmp_path / "shared.sparql"
    text = error(tmp_path, values, shared=SHARED.replace("?o = $word", "?o = $wrod"))
    assert text.startswith(f"{shared}:6: $wrod is not a declared parameter (its parameters: "
                           "graph, n, word); declare it under parameters:, or write the "
                           "variable as ?wrod"), text
    text = error(tmp_path, values, shared=SHARED.replace("?o = $word", "?o = ?word"))
    assert text == (f"{shared}:1: parameter 'word' is declared but the query never uses $word; "
                    "use it or drop it from parameters:")
    text = error(tmp_path, values, shared="# task: records\n" + SHARED)
    assert text.startswith(f"{shared}:1: unknown header field 'task'")
    text = error(tmp_path, values, shared=SHARED.replace("n: integer", "n: float"))
    assert text.startswith(f"{shared}:1: parameters.n: Input should be 'iri', 'integer' or "
                           "'string'") or text.startswith(f"{shared}:1: parameters: "), text
    text = error(tmp_path, values, shared=SHARED.replace("{ ?s <http", "{ ?s <http ?"))
    assert text.startswith(f"{shared}:5: SPARQL syntax error"), text
    text = error(tmp_path, values, shared=SHARED.replace("ORDER BY ?s", "ORDER BY RAND()"))
    assert text.startswith(f"{shared}:8: RAND() gives a different result"), text


def test_discover_reads_probes_not_shared_files(tmp_path: Path) -> None:
    folder(tmp_path, f'# values: {{graph: {G}, n: 1, word: "xy"}}\n')
    (tmp_path / "unused.sparql").write_text("not even SPARQL")
    (probe,) = discover([tmp_path], include_default=False)
    assert probe.spec.name == "t/shared" and probe.query_file == tmp_path / "shared.sparql"


def test_every_shipped_probe_parses_and_the_atomic_ones_share_their_query() -> None:
    root = Path(__file__).resolve().parents[1] / "queries"
    probes = discover()
    shipped = {p.resolve() for p in root.rglob("*.rq") if "derived" not in p.parts}
    assert {p.path.resolve() for p in probes} == shipped
    shared = {p.spec.name: p.query_file.resolve() for p in probes if p.query_file is not None}
    names = [f"{o}-atomic" for o in ("pizza", "schemaorg", "go", "doid", "foodon")]
    names += ["pizza-atomic-controlled", "schemaorg-atomic-controlled"]
    assert shared == {f"ontolama/{n}": root / "ontolama" / "atomic.sparql" for n in names}
