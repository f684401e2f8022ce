"""COPEN splits (queries/copen/splits.rq) and instance construction from a Wikidata-shaped graph.

The construction runs against ``oxigraph serve`` on 127.0.0.1 loaded with
tests/fixtures/copen/wikidata.ttl (through kg.store.RemoteStore, as against Wikidata). Expected
facts come from ../shared/data/copen/schema/father.txt (read here directly) and the fixture's
table (tests/fixtures/copen/make_fixture.py).
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

import kg.copen
from kg import config
from kg.store import LocalStore, RemoteStore
from kg.vocab import graph
from probes.benchmarks.copen import TRAIN_TOPS
from probes.benchmarks.copen.construct import (
    bind_values,
    build_csj,
    cic_chains,
    construct_query,
    sparql_term,
    taxonomy,
)
from probes.benchmarks.copen.released import load
from probes.engine.errors import ProbeError
from probes.engine.export import instances_for
from tests.data import require
from tests.local_server import free_port
from tests.sparql_server import serve

FIXTURE = Path(__file__).parent / "fixtures" / "copen"
spec = importlib.util.spec_from_file_location("copen_make_fixture", FIXTURE / "make_fixture.py")
MAKE = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(MAKE)  # type: ignore[union-attr]


def father() -> dict[str, str]:
    path = config.data_dir() / "copen" / "schema" / "father.txt"
    require(path, "the COPEN schema file father.txt")
    return dict(line.split("\t\t") for line in path.read_text().splitlines() if line.strip())


def top_of(parent: dict[str, str], concept: str) -> str:
    while parent[concept] != "Root":
        concept = parent[concept]
    return concept


def ancestors(parent: dict[str, str], concept: str) -> list[str]:
    out = [concept]
    while parent[out[-1]] != "Root":
        out.append(parent[out[-1]])
    return out


@pytest.fixture(scope="module")
def taxonomy_store() -> LocalStore:
    schema = config.data_dir() / "copen" / "schema"
    father()  # skip without the data
    parent, lines = kg.copen.read_taxonomy(schema / "father.txt")
    mapping = kg.copen.read_mapping(schema / "mapping.txt", set(parent))
    store = LocalStore.in_memory()
    store.oxigraph.extend(ox.Quad(s, p, o, graph("copen")) for s, p, o in kg.copen.triples(
        parent, kg.copen.depths(parent, lines, schema / "father.txt"), mapping))
    return store


def test_splits_follow_the_top_level_concepts(taxonomy_store: LocalStore) -> None:
    parent = father()
    tops = {c for c, p in parent.items() if p == "Root"}
    assert len(tops) == 23 and set(TRAIN_TOPS) <= tops and len(tops - set(TRAIN_TOPS)) == 12
    expected = {c: "train" if top_of(parent, c) in TRAIN_TOPS else "test" for c in parent}
    df = instances_for(construct_query("splits"), taxonomy_store)
    got = dict(zip(df["target"], df["split"], strict=True))
    assert got == expected
    assert sum(v == "train" for v in got.values()) == sum(v == "train" for v in expected.values())
    fields = {r["target"]: json.loads(r["fields"]) for r in df.iter_rows(named=True)}
    assert fields["Magazine"]["top"] == ["Work"] and fields["Magazine"]["parent"] == [
        "PeriodicalLiterature"]
    assert len(fields["Person"]["qid"]) == 2  # Q5 and Q215627 in mapping.txt


def test_sparql_terms_and_values_blocks() -> None:
    assert sparql_term('a "b"\n') == '"a \\"b\\"\\n"'
    q = "SELECT * WHERE { VALUES ?x { 1 } VALUES (?a ?b) { } { SELECT * { VALUES ?x {} } } }"
    filled = bind_values(q, ["x"], [[7], [8]])
    assert filled.count("VALUES ?x { 7 8 }") == 2 and "VALUES (?a ?b) { }" in filled
    with pytest.raises(ProbeError, match=r"no VALUES block over \?y"):
        bind_values(q, ["y"], [[1]])
    assert ox.Store().query(bind_values(q, ["a", "b"], [["s", None]])) is not None


# --- the endpoint -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wikidata(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``oxigraph serve`` on 127.0.0.1 over the Wikidata-shaped fixture; yields the query URL."""
    with serve(FIXTURE / "wikidata.ttl", tmp_path_factory.mktemp("wikidata")) as url:
        yield url


@pytest.fixture(scope="module")
def built(taxonomy_store: LocalStore, wikidata: str, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[dict[str, list[dict[str, Any]]], Any, Any, Path]:
    out = tmp_path_factory.mktemp("built")
    csj, report, work = build_csj(taxonomy_store, RemoteStore(wikidata), out)
    return csj, report, work, out


def concept_of_entity() -> dict[str, str]:
    """Fixture entity name -> its COPEN concept (make_fixture.WIKIDATA)."""
    return {name: concept for concept, (_, ents) in MAKE.WIKIDATA.items() for name, _ in ents}


def content_words(text: str) -> set[str]:
    return {w for w in re.sub(r"[^a-z0-9]+", " ", text.lower()).split() if len(w) >= 4}


def test_csj_instances_have_the_paper_structure(built: tuple) -> None:
    csj, report, _, _ = built
    parent = father()
    concept_of = concept_of_entity()
    items = [it for split in csj.values() for it in split]
    assert items and report.instances == {s: len(v) for s, v in csj.items()}
    for it in items:
        cands = it["candidates"]
        assert len(cands) == 21 and len({c["id"] for c in cands}) == 21
        kinds = [c["type"] for c in cands]
        assert (kinds.count("answer"), kinds.count("hard"), kinds.count("easy")) == (1, 5, 15)
        query_concept = it["concept"]  # the query entity's concept or one above it
        assert query_concept in ancestors(parent, concept_of[it["query"]["name"]])
        top = top_of(parent, query_concept)
        answer = next(c for c in cands if c["id"] == it["label"])
        assert answer["type"] == "answer" and answer["name"] != it["query"]["name"]
        assert query_concept in ancestors(parent, concept_of[answer["name"]])
        assert not content_words(answer["name"]) & content_words(it["query"]["name"])
        for c in cands:
            lineage = ancestors(parent, concept_of[c["name"]])
            if c["type"] == "hard":
                assert top in lineage and query_concept not in lineage
            elif c["type"] == "easy":
                assert top not in lineage
                same_side = (top in TRAIN_TOPS) == (lineage[-1] in TRAIN_TOPS)
                assert same_side
    for split, part in csj.items():
        for it in part:
            top = top_of(parent, it["concept"])
            assert (split == "test") == (top not in TRAIN_TOPS)
    assert set(csj) == {"train", "dev", "test"}


def test_entities_named_after_their_concept_are_kept(built: tuple) -> None:
    """The paper has no concept-name filter on members ("Arizona State University" is a real
    University answer); its lexical-overlap filter is between query and answer (Appendix C.3),
    checked in test_csj_instances_have_the_paper_structure."""
    _, report, work, _ = built
    members = {r["l"] for r in work.query(
        "SELECT ?l WHERE { ?i a <http://wikiba.se/ontology#Item> ; "
        "<http://www.w3.org/2000/01/rdf-schema#label> ?l }")}
    assert members == set(concept_of_entity()) and report.members == len(members)
    assert {"Arizona State University", "Ulster Unionist Party"} <= members


def test_members_per_concept_are_capped_per_concept(taxonomy_store: LocalStore,
                                                    wikidata: str) -> None:
    """A cap per concept, not one LIMIT for the whole request: every concept keeps members."""
    from probes.benchmarks.copen.construct import (
        ConstructReport,
        add_members,
        taxonomy,
        working_store,
    )

    concepts = taxonomy(taxonomy_store)
    work = working_store(concepts)
    add_members(work, RemoteStore(wikidata), concepts, ConstructReport(), per_concept=1)
    rows = work.query("""SELECT ?c (COUNT(?i) AS ?n) WHERE {
        ?i a <http://wikiba.se/ontology#Item> , ?c .
        FILTER(?c != <http://wikiba.se/ontology#Item>) } GROUP BY ?c""")
    counts = {str(r["c"]): int(r["n"]) for r in rows}
    assert counts and max(counts.values()) == 1
    # every fixture concept with members keeps one (concepts above them get members too)
    have = {k.rsplit("/", 1)[-1] for k in counts}
    assert {c for c, (_, ents) in MAKE.WIKIDATA.items() if ents} <= have


def test_construction_is_deterministic_and_skips_what_it_cannot_fill(
        built: tuple, taxonomy_store: LocalStore, wikidata: str) -> None:
    csj, report, _, _ = built
    again, _, _ = build_csj(taxonomy_store, RemoteStore(wikidata), None)
    assert again == csj
    concepts = {it["concept"] for split in csj.values() for it in split}
    assert "Holiday" not in concepts  # only one concept under Holiday: no hard distractors
    assert report.skipped.get("too few hard", 0) > 0
    assert report.queries == sum(report.instances.values()) + sum(report.skipped.values())


def test_constructed_files_load_with_distractor_kinds(built: tuple, tmp_path: Path) -> None:
    csj, _, _, out = built
    reports = load(out, tmp_path / "r.duckdb")
    assert {(r.split, r.instances) for r in reports} == {(s, len(v)) for s, v in csj.items()}
    import duckdb

    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    hard, easy = con.execute("""SELECT len(CAST(fields->'$.hard' AS VARCHAR[])),
        len(CAST(fields->'$.easy' AS VARCHAR[])) FROM instances LIMIT 1""").fetchone()
    assert (hard, easy) == (5, 15)


def test_cic_chains_from_wikidata(built: tuple, taxonomy_store: LocalStore,
                                  wikidata: str) -> None:
    _, _, work, _ = built
    ids = {"Kenneth Clarke": "Q99000001", "Florida Panthers": "Q99000019",
           "Peterborough": "Q99000050"}
    chains = cic_chains(work, RemoteStore(wikidata), taxonomy(taxonomy_store), list(ids.values()))
    parent = father()
    assert chains["Q99000001"] == {"name": "Kenneth Clarke",
                                   "concept_chains": [ancestors(parent, "Politician")]}
    # through the made-up subclass Q99100001 -> HockeyTeam -> SportsTeam
    assert chains["Q99000019"]["concept_chains"] == [ancestors(parent, "HockeyTeam")]
    # City (Q515) is a subclass of Q486972, which mapping.txt gives to Settlement and
    # PopulatedPlace: the most specific concept, City, makes the one chain
    assert chains["Q99000050"]["concept_chains"] == [ancestors(parent, "City")]


def test_unreachable_endpoint_is_reported_not_fatal(taxonomy_store: LocalStore) -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    csj, report, _ = build_csj(taxonomy_store, RemoteStore(url, timeout=2), None, batch=500)
    assert csj == {} and len(report.failures) == 1 and url in report.failures[0]
