"""Bad input through loading, reasoning and the OntoLAMA builders, on a tiny OWL file.

Issue 5: classes without labels, unsatisfiable classes, subclass cycles and a reasoner
time-out each give a clear message, and the rest is still exported. The ontology is written
by the test (no data files, no network)::

    Food; Bread ⊑ Food; Roll ⊑ Bread; Bun ⊑ Roll and Roll ⊑ Bun (a cycle: Bun ≡ Roll);
    Cake ⊑ Food; Pie ⊑ Food; Stone; Wheat; Food disjoint with Stone;
    Impossible ⊑ Food, Impossible ⊑ Stone (unsatisfiable); Mystery ⊑ Food (no label);
    Bread ≡ Food ⊓ ∃madeOf.Wheat (the one Complex SI anchor)

HermiT (via owlready2's Java) classifies it: the probe classes are the 8 labelled, satisfiable
ones and the entailed subsumptions between them are Bread, Cake, Pie ⊑ Food and Roll, Bun ⊑
Bread, Food (7; none between Roll and Bun, which are equivalent).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg.build import SourceReport, load_source
from kg.manifest import Source, SourceFile
from kg.store import LocalStore
from probes.benchmarks import ontolama
from probes.engine.spec import Probe, parse_probe
from probes.results import connect
from tests.wordnet_mini import add_mini_wordnet

T = "http://example.org/t#"
QUERIES = Path(__file__).resolve().parents[1] / "queries" / "ontolama"


def _class(name: str, label: str | None, *parents: str) -> str:
    body = f"<rdfs:label>{label}</rdfs:label>" if label else ""
    body += "".join(f'<rdfs:subClassOf rdf:resource="{T}{p}"/>' for p in parents)
    return f'<owl:Class rdf:about="{T}{name}">{body}</owl:Class>'


TINY = f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
         xmlns:owl="http://www.w3.org/2002/07/owl#" xml:base="http://example.org/t">
  <owl:Ontology rdf:about="http://example.org/t"/>
  <owl:ObjectProperty rdf:about="{T}madeOf"><rdfs:label>made of</rdfs:label></owl:ObjectProperty>
  {_class("Food", "food")}
  {_class("Roll", "roll", "Bread", "Bun")}
  {_class("Bun", "bun", "Roll")}
  {_class("Cake", "cake", "Food")}
  {_class("Pie", "pie", "Food")}
  {_class("Wheat", "wheat")}
  {_class("Impossible", "impossible thing", "Food", "Stone")}
  {_class("Mystery", None, "Food")}
  <owl:Class rdf:about="{T}Stone"><rdfs:label>stone</rdfs:label>
    <owl:disjointWith rdf:resource="{T}Food"/></owl:Class>
  <owl:Class rdf:about="{T}Bread"><rdfs:label>bread</rdfs:label>
    <rdfs:subClassOf rdf:resource="{T}Food"/>
    <owl:equivalentClass><owl:Class><owl:intersectionOf rdf:parseType="Collection">
      <rdf:Description rdf:about="{T}Food"/>
      <owl:Restriction><owl:onProperty rdf:resource="{T}madeOf"/>
        <owl:someValuesFrom rdf:resource="{T}Wheat"/></owl:Restriction>
    </owl:intersectionOf></owl:Class></owl:equivalentClass>
  </owl:Class>
</rdf:RDF>
"""

ENTAILED = {("bread", "food"), ("cake", "food"), ("pie", "food"), ("roll", "bread"),
            ("roll", "food"), ("bun", "bread"), ("bun", "food")}


def tiny_probes(complex_timeout_s: float = 600) -> list[Probe]:
    """The Pizza atomic and complex probe files pointed at the tiny ontology."""
    out = []
    for kind in ("atomic", "complex"):
        text = (QUERIES / f"pizza-{kind}.rq").read_text(encoding="utf-8")
        text = text.replace("graph/pizza", "graph/tiny").replace("ontolama/pizza-",
                                                                  "t/tiny-")
        text = text.replace("graphs: [pizza]", "graphs: [tiny]")
        text = text.replace("ontology: pizza", "ontology: tiny")
        if kind == "complex":
            text = text.replace("kind: complex", f"kind: complex, reasoner_timeout_s: "
                                f"{complex_timeout_s}")
        out.append(parse_probe(text, QUERIES / f"tiny-{kind}.rq"))  # beside atomic.sparql
    return out


def load_tiny(tmp_path: Path, **options: object) -> tuple[LocalStore, SourceReport]:
    (tmp_path / "tiny.owl").write_text(TINY, encoding="utf-8")
    src = Source(name="tiny", title="tiny", loader="kg.owl", root="data", format="test",
                 license="test", url="https://example.org/tiny",
                 files=(SourceFile("tiny.owl"),), options=options)
    store = LocalStore.in_memory()
    report = load_source(store.oxigraph, src, [tmp_path / "tiny.owl"], tmp_path)
    add_mini_wordnet(store.oxigraph, tmp_path / "wordnet")  # the verbaliser's lexicon
    return store, report


def exported(results: Path, probe: str) -> list[dict]:
    con = connect(results, read_only=True)
    try:
        rows = con.execute("SELECT fields::VARCHAR, gold[1] FROM instances WHERE probe = ?",
                           [probe]).fetchall()
    finally:
        con.close()
    return [json.loads(f) | {"gold": g} for f, g in rows]


@pytest.fixture(scope="module")
def reasoned(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalStore, SourceReport]:
    return load_tiny(tmp_path_factory.mktemp("tiny"))


def test_each_problem_has_a_clear_warning(reasoned: tuple[LocalStore, SourceReport]) -> None:
    _, report = reasoned
    text = "\n".join(report.warnings)
    assert "1 classes have no label; they are left out of probes" in text
    assert "HermiT found 1 unsatisfiable classes (equivalent to owl:Nothing): Impossible" in text
    assert "1 groups of equivalent named classes (Bun = Roll)" in text
    store, _ = reasoned
    assert store.oxigraph.query(  # marked, so the loaders leave it out of the probe classes
        "ASK { GRAPH <https://w3id.org/kgprobe/graph/tiny/inferred> "
        f"{{ <{T}Impossible> <https://w3id.org/kgprobe/vocab#unsatisfiable> true }} }}")


def test_the_rest_is_exported(reasoned: tuple[LocalStore, SourceReport],
                              tmp_path: Path) -> None:
    store, _ = reasoned
    results = tmp_path / "r.duckdb"
    reports = {r.probe: r for r in ontolama.build(tiny_probes(), store, results)}
    assert reports["t/tiny-atomic"].counts["positive"] == len(ENTAILED)
    rows = exported(results, "t/tiny-atomic")
    names = {n for r in rows for n in (r["sub"], r["super"])}
    # neither the unsatisfiable nor the unlabelled class is probed
    assert names <= {"food", "bread", "roll", "bun", "cake", "pie", "wheat", "stone"}
    assert {(r["sub"], r["super"]) for r in rows if r["gold"] == "1"} == ENTAILED
    assert not {("roll", "bun"), ("bun", "roll")} & {(r["sub"], r["super"]) for r in rows}
    assert len(rows) == 2 * len(ENTAILED)  # balanced
    complex_rows = exported(results, "t/tiny-complex")
    assert complex_rows and all("impossible" not in r["sub"] + r["super"]
                                for r in complex_rows)


def test_complex_reasoner_time_out_keeps_the_atomic_dataset(
        reasoned: tuple[LocalStore, SourceReport], tmp_path: Path) -> None:
    store, _ = reasoned
    results = tmp_path / "r.duckdb"
    reports = ontolama.build(tiny_probes(complex_timeout_s=0.01), store, results)
    by = {r.probe: r for r in reports}
    assert by["t/tiny-complex"].counts == {}
    (note,) = by["t/tiny-complex"].notes
    assert note.startswith("not built: tiny: checking Complex SI negatives with HermiT failed")
    assert "reasoner_timeout_s" in note
    assert "reasoner_timeout_s" in ontolama.format_build(reports)
    assert len(exported(results, "t/tiny-atomic")) == 2 * len(ENTAILED)
    assert exported(results, "t/tiny-complex") == []


def test_load_time_out_falls_back_and_reports_the_cycle(tmp_path: Path) -> None:
    store, report = load_tiny(tmp_path, reasoner_timeout_s=0.001)
    text = "\n".join(report.warnings)
    assert "tiny: no reasoner result" in text and "asserted rdfs:subClassOf" in text
    assert "1 pairs of classes subsume each other through an asserted subClassOf cycle" in text
    # without a reasoner the unsatisfiable class is not detected, the unlabelled one still is
    assert "1 classes have no label" in text
    results = tmp_path / "r.duckdb"
    (atomic,) = [p for p in tiny_probes() if p.spec.name == "t/tiny-atomic"]
    (rep,) = ontolama.build([atomic], store, results)
    positives = {(r["sub"], r["super"]) for r in exported(results, "t/tiny-atomic")
                 if r["gold"] == "1"}
    # the asserted closure: both directions of the cycle, and Impossible's asserted parents
    assert positives >= ENTAILED | {("roll", "bun"), ("bun", "roll"),
                                    ("impossible thing", "food"), ("impossible thing", "stone")}
    assert rep.counts["positive"] == len(positives)

