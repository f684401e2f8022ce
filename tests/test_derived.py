"""kg.derived: SPARQL CONSTRUCT files materialised into named graphs, in dependency order."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from kg.derived import DerivedError, derived_graph, discover, main, materialise

DATA = """
@prefix ex: <http://example.org/> .
GRAPH <https://w3id.org/kgprobe/graph/src> { ex:a ex:parent ex:b . ex:b ex:parent ex:c . }
"""


def write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.rq").write_text(text, encoding="utf-8")


def test_materialise_in_dependency_order_and_replace(tmp_path: Path) -> None:
    # "grand" reads the graph of "parents", so it runs second although it sorts first
    write(tmp_path, "grand", "# requires: [parents]\nPREFIX ex: <http://example.org/>\n"
          "CONSTRUCT { ?x ex:grandparent ?z } WHERE { GRAPH <https://w3id.org/kgprobe/graph/"
          "derived/parents> { ?x ex:p ?y . ?y ex:p ?z } }")
    write(tmp_path, "parents", "PREFIX ex: <http://example.org/>\n"
          "CONSTRUCT { ?x ex:p ?y } WHERE { GRAPH <https://w3id.org/kgprobe/graph/src> "
          "{ ?x ex:parent ?y } }")
    store = ox.Store()
    store.load(DATA.encode(), format=ox.RdfFormat.TRIG)
    files = discover(tmp_path)
    assert [d.name for d in files] == ["parents", "grand"]
    reports = materialise(store, files)
    assert [(r.name, r.triples) for r in reports] == [("parents", 2), ("grand", 1)]
    grand = list(store.quads_for_pattern(None, None, None, derived_graph("grand")))
    assert [(q.subject.value, q.object.value) for q in grand] == [
        ("http://example.org/a", "http://example.org/c")]
    materialise(store, files)   # again: each graph replaced whole, nothing doubled
    assert len(list(store.quads_for_pattern(None, None, None, derived_graph("parents")))) == 2


def test_bad_files_are_named(tmp_path: Path) -> None:
    write(tmp_path, "a", "# requires: [b]\nCONSTRUCT {} WHERE {}")
    write(tmp_path, "b", "# requires: [a]\nCONSTRUCT {} WHERE {}")
    with pytest.raises(DerivedError, match="cycle"):
        discover(tmp_path)
    write(tmp_path, "b", "# requires: [nope]\nCONSTRUCT {} WHERE {}")
    with pytest.raises(DerivedError, match=r"no derived file nope\.rq"):
        discover(tmp_path)
    write(tmp_path, "b", "SELECT * WHERE {}")
    with pytest.raises(DerivedError, match=r"b\.rq: a derived-graph file must be a SPARQL"):
        discover(tmp_path)
    write(tmp_path, "b", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p")
    (tmp_path / "a.rq").unlink()
    with pytest.raises(DerivedError, match=r"b\.rq:1: SPARQL syntax error: .*fix the query"):
        discover(tmp_path)
    assert main(["--store", str(tmp_path / "store"), "--folder", str(tmp_path)]) == 2
