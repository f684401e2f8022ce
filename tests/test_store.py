"""The store: opening, value conversion, building per source, and a SPARQL endpoint.

Builds use a loader module written by the test (no real sources), so they take milliseconds.
The endpoint tests start ``oxigraph serve`` (PyPI package ``oxigraph``) on 127.0.0.1.
"""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyoxigraph as ox
import pytest

import kg.build
from kg.build import build
from kg.errors import SourceError, StoreError
from kg.manifest import Source, SourceFile
from kg.store import LocalStore, RemoteStore, open_store
from kg.vocab import graph, inferred_graph
from probes.engine.export import export, instances_for
from probes.engine.spec import discover
from tests.local_server import free_port

GOOD = Path(__file__).parent / "fixtures" / "probes" / "good"
EX = "http://example.org/"
ANIMALS, COLOURS = graph("animals").value, graph("colours").value

# --- opening and reading ---------------------------------------------------------------------


def test_open_missing_store_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        LocalStore.open(tmp_path / "nowhere")
    msg = str(info.value)
    assert str(tmp_path / "nowhere") in msg and "python -m kg.build" in msg
    assert not (tmp_path / "nowhere").exists()


def test_store_on_disk_opens_read_only(tiny_store_path: Path, tiny_quads: list[ox.Quad]) -> None:
    store = LocalStore.open(tiny_store_path)
    assert store.graphs() == sorted([ANIMALS, COLOURS])
    n_animals = sum(1 for q in tiny_quads if q.graph_name.value == ANIMALS)
    assert store.count(ANIMALS) == n_animals
    assert store.count() == len(tiny_quads)
    with pytest.raises(Exception, match="read-write"):
        store.oxigraph.add(ox.Quad(ox.NamedNode(EX + "x"), ox.NamedNode(EX + "y"),
                                   ox.Literal("z"), graph("animals")))
    assert LocalStore.open(tiny_store_path).count() == len(tiny_quads)


def test_values_are_plain_python(tiny_store: LocalStore) -> None:
    got = tiny_store.query("""
        PREFIX ex: <http://example.org/>
        SELECT ?legs ?weight ?tame ?iri ?label ?none WHERE {
          GRAPH ?g { ex:dog ex:legs ?legs ; ex:weight ?weight ; ex:tame ?tame ;
                            <http://www.w3.org/2000/01/rdf-schema#label> ?label }
          BIND(ex:dog AS ?iri)
          FILTER(LANG(?label) = "fr")
          OPTIONAL { ex:dog ex:nothing ?none }
        }""")
    assert got == [{"legs": 4, "weight": 30.5, "tame": True, "iri": EX + "dog",
                    "label": "chien", "none": None}]
    assert type(got[0]["legs"]) is int and type(got[0]["weight"]) is float
    assert tiny_store.query("ASK { GRAPH ?g { ?s ?p ?o } }") == [{"ask": True}]


def test_construct_is_refused(tiny_store: LocalStore) -> None:
    with pytest.raises(StoreError, match="SELECT or ASK"):
        tiny_store.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }")


# --- building --------------------------------------------------------------------------------

LOADER = '''"""A loader for tests: ex:<item> ex:item "<source>" for each item in the options."""
import pyoxigraph as ox

EX = "http://example.org/"


def load(ctx):
    def triples(items):
        return [(ox.NamedNode(EX + i), ox.NamedNode(EX + "item"), ox.Literal(ctx.source.name))
                for i in items]

    ctx.add(triples(ctx.options.get("items", [])))
    ctx.add(triples(ctx.options.get("inferred", [])), to=ctx.inferred)
    if ctx.options.get("fail"):
        raise RuntimeError("test loader failed half-way")
'''


@pytest.fixture
def fake_sources(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> dict[str, Source]:
    """Make kg.build see test sources (loader module ``kgp_test_loader``) instead of the manifest.

    Tests put sources into the returned dict before calling ``build``.
    """
    folder = tmp_path_factory.mktemp("loader")
    (folder / "kgp_test_loader.py").write_text(LOADER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "kgp_test_loader", raising=False)
    sources: dict[str, Source] = {}
    monkeypatch.setattr(kg.build, "pick", lambda names: [sources[n] for n in names])
    return sources


def source(name: str, files: tuple[SourceFile, ...] = (), **options: Any) -> Source:
    return Source(name=name, title=f"test source {name}", loader="kgp_test_loader", root="data",
                  format="test", license="CC0-1.0", url=f"https://example.org/{name}",
                  files=files, options=options)


def items(store_path: Path, graph_iri: str) -> list[str]:
    store = LocalStore.open(store_path)
    rows = store.query(f"SELECT ?s WHERE {{ GRAPH <{graph_iri}> {{ ?s <{EX}item> ?o }} }}")
    return sorted(r["s"].removeprefix(EX) for r in rows)


def quads(store_path: Path) -> set[ox.Quad]:
    return set(ox.Store.read_only(str(store_path)))


def leftovers(store_path: Path) -> list[str]:
    """Staging or old copies the build left beside the store."""
    return sorted(p.name for p in store_path.parent.iterdir()
                  if ".staging-" in p.name or ".old-" in p.name)


def test_one_graph_per_source_and_a_rebuild_replaces_only_its_graphs(
        fake_sources: dict[str, Source], tmp_path: Path) -> None:
    path = tmp_path / "store"
    fake_sources["alpha"] = source("alpha", items=["a1", "a2", "a3"], inferred=["i1"])
    fake_sources["beta"] = source("beta", items=["b1", "b2"])
    reports = build(["alpha", "beta"], path, tmp_path, progress=False)
    alpha, beta = graph("alpha").value, graph("beta").value
    assert LocalStore.open(path).graphs() == sorted([alpha, inferred_graph("alpha").value, beta])
    assert items(path, alpha) == ["a1", "a2", "a3"] and items(path, beta) == ["b1", "b2"]
    assert items(path, inferred_graph("alpha").value) == ["i1"]
    by_name = {r.name: r for r in reports}
    assert by_name["alpha"].triples == LocalStore.open(path).count(alpha)
    assert by_name["alpha"].inferred == 1
    beta_before = {q for q in quads(path) if q.graph_name.value == beta}

    fake_sources["alpha"] = source("alpha", items=["a4"])
    build(["alpha"], path, tmp_path, progress=False)
    assert items(path, alpha) == ["a4"]
    assert inferred_graph("alpha").value not in LocalStore.open(path).graphs()
    assert {q for q in quads(path) if q.graph_name.value == beta} == beta_before
    assert leftovers(path) == []


def test_a_rebuild_starts_from_the_kept_graphs_only(fake_sources: dict[str, Source],
                                                   tmp_path: Path) -> None:
    """Over an existing store the staging store holds the other sources' graphs and the default
    graph, copied; the rebuilt source's graphs and every derived graph (made again from the
    current queries/derived files) are not copied, so nothing is deleted in the new store."""
    path = tmp_path / "store"
    fake_sources["alpha"] = source("alpha", items=["a1"])
    fake_sources["beta"] = source("beta", items=["b1", "b2"])
    build(["alpha", "beta"], path, tmp_path, progress=False)
    store = ox.Store(str(path))
    extra = ox.Quad(ox.NamedNode(EX + "x"), ox.NamedNode(EX + "item"), ox.Literal("kept"))
    stale = [ox.Quad(ox.NamedNode(EX + "y"), ox.NamedNode(EX + "item"), ox.Literal("old"),
                     graph(name)) for name in ("derived/gone", "derived-staging/killed")]
    store.extend([extra, *stale])
    store.flush()
    del store
    fake_sources["alpha"] = source("alpha", items=["a2"])
    build(["alpha"], path, tmp_path, progress=False)
    after = quads(path)
    assert extra in after and not any(q in after for q in stale)
    assert items(path, graph("alpha").value) == ["a2"]
    assert items(path, graph("beta").value) == ["b1", "b2"]


def test_failed_build_leaves_the_previous_store_usable(fake_sources: dict[str, Source],
                                                       tmp_path: Path) -> None:
    path = tmp_path / "store"
    fake_sources["alpha"] = source("alpha", items=["a1", "a2"])
    fake_sources["beta"] = source("beta", items=["b1"])
    build(["alpha", "beta"], path, tmp_path, progress=False)
    before = quads(path)
    counts = {g: LocalStore.open(path).count(g) for g in LocalStore.open(path).graphs()}

    fake_sources["alpha"] = source("alpha", items=["x1", "x2", "x3"], fail=True)
    with pytest.raises(RuntimeError, match="half-way"):
        build(["alpha"], path, tmp_path, progress=False)
    assert quads(path) == before
    after = LocalStore.open(path)
    assert {g: after.count(g) for g in after.graphs()} == counts
    assert items(path, graph("alpha").value) == ["a1", "a2"]
    assert leftovers(path) == []


def test_failed_first_build_leaves_nothing(fake_sources: dict[str, Source],
                                           tmp_path: Path) -> None:
    path = tmp_path / "store"
    fake_sources["alpha"] = source("alpha", items=["a1"], fail=True)
    with pytest.raises(RuntimeError):
        build(["alpha"], path, tmp_path, progress=False)
    assert not path.exists() and leftovers(path) == []


def test_missing_source_file_fails_before_touching_the_store(
        fake_sources: dict[str, Source], tmp_path: Path) -> None:
    path = tmp_path / "store"
    fake_sources["alpha"] = source("alpha", items=["a1"])
    build(["alpha"], path, tmp_path, progress=False)
    before = quads(path)
    fake_sources["alpha"] = source("alpha", files=(SourceFile("alpha/data.txt"),), items=["a9"])
    with pytest.raises(SourceError) as info:
        build(["alpha"], path, tmp_path, progress=False)
    msg = str(info.value)
    assert str(tmp_path / "alpha" / "data.txt") in msg and "KGPROBE_DATA_DIR" in msg
    assert quads(path) == before and leftovers(path) == []


def test_a_second_build_is_refused_while_one_runs(fake_sources: dict[str, Source],
                                                  tmp_path: Path) -> None:
    path = tmp_path / "store"
    fake_sources["alpha"] = source("alpha", items=["a1"])
    with (tmp_path / "store.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreError, match=r"another `python -m kg\.build`"):
            build(["alpha"], path, tmp_path, progress=False)
    assert not path.exists()


def test_unknown_source_name_suggests_the_right_one(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"(?i)did you mean 'wordnet'"):
        build(["wordnett"], tmp_path / "store", tmp_path, progress=False)
    assert not (tmp_path / "store").exists()


# --- a SPARQL endpoint -----------------------------------------------------------------------


QUERIES = {
    "every quad": "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g ?s ?p ?o",
    "numbers and unbound": """
        PREFIX ex: <http://example.org/>
        SELECT ?a ?legs ?weight ?tame WHERE {
          GRAPH ?g { ?a ex:legs ?legs OPTIONAL { ?a ex:weight ?weight }
                     OPTIONAL { ?a ex:tame ?tame } }
        } ORDER BY ?a""",
    "aggregates": """
        SELECT ?g (COUNT(*) AS ?n) (SUM(?x) AS ?sum) (AVG(?x) AS ?avg) WHERE {
          GRAPH ?g { ?s ?p ?o BIND(IF(isNUMERIC(?o), ?o, 0) AS ?x) }
        } GROUP BY ?g ORDER BY ?g""",
    "language tags": """
        SELECT ?l (LANG(?l) AS ?lang) WHERE {
          GRAPH ?g { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l } } ORDER BY ?l""",
    "ask": "ASK { GRAPH ?g { <http://example.org/dog> ?p ?o } }",
    "default graph": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
}


def test_endpoint_answers_like_the_embedded_store(tiny_endpoint: str, tiny_store: LocalStore,
                                                  tiny_quads: list[ox.Quad]) -> None:
    remote = RemoteStore(tiny_endpoint)
    for name, query in QUERIES.items():
        assert remote.query(query) == tiny_store.query(query), name
    assert remote.graphs() == tiny_store.graphs() == sorted([ANIMALS, COLOURS])
    typed = {r["a"].removeprefix(EX): r for r in remote.query(QUERIES["numbers and unbound"])}
    assert typed["dog"]["legs"] == 4 and type(typed["dog"]["legs"]) is int
    assert typed["dog"]["weight"] == 30.5 and typed["cat"]["weight"] == 4.5
    assert typed["dog"]["tame"] is True and typed["sparrow"]["weight"] is None
    assert remote.query(QUERIES["default graph"]) == [{"n": len(tiny_quads)}]


def test_export_through_the_endpoint_matches_the_local_store(
        tiny_endpoint: str, tiny_store_path: Path, tmp_path: Path) -> None:
    probes = discover([GOOD], include_default=False)
    via_endpoint = open_store(endpoint=tiny_endpoint)
    local = open_store(path=tiny_store_path)
    assert isinstance(via_endpoint, RemoteStore) and isinstance(local, LocalStore)
    for probe in probes:
        a, b = instances_for(probe, via_endpoint), instances_for(probe, local)
        assert a.height > 0 and a.sort("instance_id").equals(b.sort("instance_id")), \
            probe.spec.name
    export(probes, via_endpoint, tmp_path / "remote.duckdb", None, progress=False)
    export(probes, local, tmp_path / "local.duckdb", None, progress=False)
    tables = []
    for f in ("remote.duckdb", "local.duckdb"):
        con = duckdb.connect(str(tmp_path / f), read_only=True)
        tables.append(con.execute("SELECT * EXCLUDE (exported_at) FROM instances "
                                  "ORDER BY probe, split, instance_id").fetchall())
        con.close()
    assert tables[0] == tables[1] and len(tables[0]) == 16


def test_unreachable_endpoint_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    with pytest.raises(StoreError) as info:
        RemoteStore(url, timeout=5).query("ASK {}")
    assert url in str(info.value) and "--endpoint" in str(info.value)
