"""OntoLAMA datasets (queries/ontolama, probes/benchmarks/ontolama.py) on the Pizza ontology.

One Pizza store is built with HermiT through ``kg.build``. Expected facts come from the Pizza
README (``shared/data/pizza/README.md``: 15 equivalence axioms, of which Country uses
``owl:oneOf``, InterestingPizza a minimum cardinality and RealItalianPizza ``owl:hasValue``;
IceCream and CheeseyVegetableTopping are unsatisfiable; 5 named individuals) and from the
OntoLAMA rules (issue 5), checked here by independent Python over the store's triples.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg import config, reason
from kg.build import build as kg_build
from kg.build import load_source
from kg.manifest import Source, SourceFile
from kg.store import LocalStore
from kg.vocab import KGP, OWL, RDF, RDFS, graph, inferred_graph
from probes.benchmarks import ontolama
from probes.benchmarks.ontolama.verbalise import Named, Verbaliser, entities, functional
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.spec import discover, parse_probe
from tests.data import needs_data
from tests.wordnet_mini import add_mini_wordnet

DATA = config.data_dir()
if not DATA.is_dir():
    DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PIZZA = "http://www.co-ode.org/ontologies/pizza/pizza.owl#"
QUERIES = Path(__file__).resolve().parents[1] / "queries" / "ontolama"

_pizza = needs_data(DATA / "pizza", "the Pizza ontology folder")


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LocalStore:
    path = tmp_path_factory.mktemp("ontolama") / "store"
    kg_build(["pizza"], store_path=path, data_dir=DATA, progress=False)
    store = LocalStore.open(path, read_only=False)
    add_mini_wordnet(store.oxigraph, path.parent / "wordnet")  # the verbaliser's lexicon
    return store


@pytest.fixture(scope="module")
def facts(store: LocalStore) -> dict:
    """The Pizza facts the datasets must respect, read with pyoxigraph quad patterns."""
    ox_store = store.oxigraph
    g, gi = graph("pizza"), inferred_graph("pizza")
    probe = {q.subject.value for q in ox_store.quads_for_pattern(None, RDF.type, KGP.NamedClass, g)}
    supers: dict[str, set[str]] = defaultdict(set)
    for q in ox_store.quads_for_pattern(None, RDFS.subClassOf, None, gi):
        supers[q.subject.value].add(q.object.value)
    equiv = {(q.subject.value, q.object.value)
             for q in ox_store.quads_for_pattern(None, OWL.equivalentClass, None, gi)}
    parents: dict[str, set[str]] = defaultdict(set)
    for q in ox_store.quads_for_pattern(None, RDFS.subClassOf, None, g):
        if isinstance(q.object, ox.NamedNode):
            parents[q.subject.value].add(q.object.value)
    individuals = {q.subject for q in
                   ox_store.quads_for_pattern(None, RDF.type, OWL.NamedIndividual, g)}
    types = {i.value: {q.object.value for q in ox_store.quads_for_pattern(i, RDF.type, None, g)}
             for i in individuals}
    return {"probe": probe, "supers": supers, "equiv": equiv, "parents": parents,
            "types": types}


@pytest.fixture(scope="module")
def atomic(store: LocalStore) -> tuple[list[dict], dict[str, int]]:
    (probe,) = discover(patterns=["ontolama/pizza-atomic"])
    df, counts = ontolama.atomic_instances(probe, store)
    return [json.loads(f) | {"_split": s} for f, s in zip(df["fields"], df["split"],
                                                          strict=True)], counts


@pytest.fixture(scope="module")
def complex_(store: LocalStore) -> tuple[list[ontolama.Sample], ontolama.ComplexReport,
                                         Verbaliser]:
    (probe,) = discover(patterns=["ontolama/pizza-complex"])
    return ontolama.complex_samples(probe, store)


def _below(facts: dict, c: str) -> set[str]:
    return {x for x, sups in facts["supers"].items() if c in sups} | {c}


def _instances(facts: dict, c: str) -> set[str]:
    under = _below(facts, c)
    return {i for i, ts in facts["types"].items() if ts & under}


def _assumed_disjoint(facts: dict, c: str, d: str) -> bool:
    s = facts["supers"]
    if d in s[c] or c in s[d] or (c, d) in facts["equiv"]:
        return False
    if (_below(facts, c) - {c}) & (_below(facts, d) - {d}) & facts["probe"]:
        return False
    return not (_instances(facts, c) & _instances(facts, d))


# --- probe files --------------------------------------------------------------------------------


def test_atomic_probe_files_share_one_query() -> None:
    """The seven atomic files (five ontologies, two controlled) are headers over one shared
    query, queries/ontolama/atomic.sparql (issue 43): each runs it with its ontology's graphs
    and bucket widths in ``values:``, and they agree on every other field."""
    files = sorted(QUERIES.glob("*-atomic*.rq"))
    assert len(files) == 7
    shared = (QUERIES / "atomic.sparql").read_text()
    probes = [parse_probe(p.read_text(), p) for p in files]
    g = "https://w3id.org/kgprobe/graph"

    def code(text: str) -> list[str]:  # the SPARQL after the header, comment lines left out
        body = text[text.index("\nPREFIX"):]
        return [line for line in body.splitlines() if not line.lstrip().startswith("#")]

    for path, probe in zip(files, probes, strict=True):
        onto = path.name.split("-")[0]
        assert probe.spec.query == "atomic.sparql" and probe.query_file == QUERIES / "atomic.sparql"
        v = probe.spec.values
        assert (v["graph"], v["inferred"]) == (f"{g}/{onto}", f"{g}/{onto}/inferred")
        # every file names its own graph only, in the query and the header
        assert set(re.findall(r"graph/([a-z]+)", probe.query)) == {onto}, path.name
        assert probe.spec.graphs == [onto]
        assert probe.spec.builder_params["ontolama"]["ontology"] == onto
        # the query run is the shared one with each $parameter written as its term
        want = shared.replace("$inferred", f"<{g}/{onto}/inferred>")
        want = want.replace("$graph", f"<{g}/{onto}>")
        for name in ("soft_digits", "hard_digits"):
            want = want.replace(f"${name}", str(v[name]))
        assert code(probe.query) == code(want), path.name
    same = {"name", "description", "graphs", "builder_params", "values"}
    first = probes[0].spec.model_dump(exclude=same)
    assert all(p.spec.model_dump(exclude=same) == first for p in probes)
    assert len({json.dumps(p.spec.builder_params["balance"]) for p in probes}) == 1


def test_controlled_probe_files_are_their_standard_files_with_the_control() -> None:
    """queries/ontolama/<onto>-atomic-controlled.rq (issue 23, to score a controlled split with
    probes.engine.run / probes.benchmarks.ontolama.kshot) is <onto>-atomic.rq with another name and
    control: super_class: the same query, prompts and label words, so only the split differs."""
    files = sorted(QUERIES.glob("*-controlled.rq"))
    assert {f.name for f in files} == {"schemaorg-atomic-controlled.rq",
                                       "pizza-atomic-controlled.rq"}
    for path in files:
        probe = parse_probe(path.read_text(), path)
        base_path = QUERIES / path.name.replace("-controlled", "")
        base = parse_probe(base_path.read_text(), base_path)
        assert probe.spec.name == base.spec.name + "-controlled"
        assert probe.spec.builder_params["ontolama"]["control"] == "super_class"
        assert probe.spec.builder_params == ontolama.controlled(base).spec.builder_params
        def body(text: str) -> str:  # the SPARQL after the YAML header
            return text[text.index("\nPREFIX"):]
        assert body(probe.query) == body(base.query)
        assert probe.spec.prompts == base.spec.prompts
        assert probe.spec.params == base.spec.params
        assert ontolama.control(base) is None


def test_build_control_builds_each_name_once() -> None:
    """``build --control``: a standard probe gains its -controlled variant unless a probe file
    of that name is already selected; a controlled probe gains nothing."""
    every = {p.spec.name: p for p in ontolama.ontolama_probes()}
    names = [p.spec.name for p in ontolama.with_controlled(list(every.values()))]
    assert len(names) == len(set(names))
    assert "ontolama/schemaorg-atomic-controlled" in names
    assert "ontolama/go-complex-controlled" in names  # no file: made by controlled()
    assert "ontolama/schemaorg-atomic-controlled-controlled" not in names
    alone = ontolama.with_controlled([every["ontolama/schemaorg-atomic"]])
    assert [p.spec.name for p in alone] == ["ontolama/schemaorg-atomic",
                                            "ontolama/schemaorg-atomic-controlled"]
    assert ontolama.control(alone[1]) == "super_class"


# The paper's divisions (He et al. 2023, L129): 8:1:1, and 2:1:7 for Schema.org's Atomic SI and
# FoodOn's Complex SI; Pizza's Complex SI (not in the paper, 12 usable anchors) takes 2:1:7 too.
PAPER_SPLITS = {("schemaorg", "atomic"): (0.2, 0.1, 0.7), ("foodon", "complex"): (0.2, 0.1, 0.7),
                ("pizza", "complex"): (0.2, 0.1, 0.7)}


@pytest.mark.parametrize("path", sorted(QUERIES.glob("*.rq")), ids=lambda p: p.name)
def test_split_proportions_are_written_once_in_the_header(path: Path) -> None:
    """The builder splits by ``builder_params.ontolama.splits``; the query makes no split of
    its own (it binds the placeholder "unsplit", which the builder replaces)."""
    probe = parse_probe(path.read_text(), path)
    cfg = probe.spec.builder_params["ontolama"]
    splits = cfg["splits"]
    expected = PAPER_SPLITS.get((cfg["ontology"], cfg["kind"]), (0.8, 0.1, 0.1))
    assert (splits["train"], splits["dev"], splits["test"]) == expected
    body = probe.query[probe.query.index("\nPREFIX"):]
    code = "\n".join(line.split("#")[0] for line in body.splitlines())
    assert 'BIND("unsplit" AS ?split)' in code
    assert not re.search(r'"(train|dev|test)"|\b0\.[0-9]+ \* 65536', code)
    assert len(probe.spec.prompts) == 2 and set(probe.spec.params["label_words"]) == {
        "L1", "L2", "L3"}


def test_bad_ontolama_params() -> None:
    text = (QUERIES / "pizza-atomic.rq").read_text().replace("kind: atomic", "kind: atom")
    probe = parse_probe(text, QUERIES / "pizza-atomic.rq")
    with pytest.raises(ProbeFileError, match="kind: atomic or complex"):
        ontolama.instances(probe, LocalStore.in_memory())


# --- Atomic SI ---------------------------------------------------------------------------------


def test_positives_are_all_entailed_subsumptions(atomic: tuple, facts: dict) -> None:
    rows, counts = atomic
    pos = {(r["sub_class"], r["super_class"]) for r in rows if r["kind"] == "positive"}
    expected = {(c, d) for c, ds in facts["supers"].items() for d in ds
                if c in facts["probe"] and d in facts["probe"]}
    assert pos == expected
    assert counts["positive"] == len(expected) > 300
    unsat = {PIZZA + "IceCream", PIZZA + "CheeseyVegetableTopping"}
    assert not unsat & {x for r in rows for x in (r["sub_class"], r["super_class"])}


def test_class_balance(atomic: tuple) -> None:
    rows, counts = atomic
    kinds = [r["kind"] for r in rows]
    n_pos = kinds.count("positive")
    assert kinds.count("soft") + kinds.count("hard") == n_pos
    assert abs(kinds.count("soft") - kinds.count("hard")) <= 1
    assert counts == {"positive": n_pos, "soft": kinds.count("soft"),
                      "hard": kinds.count("hard")}
    assert all(r["label"] == (1 if r["kind"] == "positive" else 0) for r in rows)


def test_negatives_pass_assumed_disjointness(atomic: tuple, facts: dict) -> None:
    rows, _ = atomic
    negatives = [r for r in rows if r["label"] == 0]
    assert negatives
    bad = [(r["sub_class"], r["super_class"]) for r in negatives
           if not _assumed_disjoint(facts, r["sub_class"], r["super_class"])]
    assert bad == []


def test_hard_negatives_are_siblings_and_no_pair_is_used_twice(atomic: tuple,
                                                                facts: dict) -> None:
    """Hard: siblings (a shared asserted direct named parent). Soft: two random concepts
    (siblings not excluded, L75); a pair drawn by both kinds is used once."""
    rows, _ = atomic
    p = facts["parents"]
    for r in rows:
        if r["kind"] == "hard":
            assert p[r["sub_class"]] & p[r["super_class"]] & facts["probe"], r
    pairs = [(r["sub_class"], r["super_class"]) for r in rows]
    assert len(pairs) == len(set(pairs))


def test_atomic_names_articles_and_splits(atomic: tuple, store: LocalStore) -> None:
    rows, _ = atomic
    names = ontolama.read_class_names(store, "pizza")
    for r in rows:
        assert r["sub"] == names[r["sub_class"]] and r["super"] == names[r["super_class"]]
        assert r["a_sub"] == ("an " if r["sub"][0] in "aeiou" else "a ")
        assert r["split"] == r["_split"]
    # declared 8:1:1, split per class by exact counts: floor(0.8 P), floor(0.1 P), the rest
    n_pos = sum(r["label"] for r in rows)
    for split, size in (("train", int(0.8 * n_pos)), ("dev", int(0.1 * n_pos))):
        assert sum(r["split"] == split and r["label"] == 1 for r in rows) == size
        assert sum(r["split"] == split and r["label"] == 0 for r in rows) == size


def test_atomic_is_reproducible_and_seeded(store: LocalStore, atomic: tuple,
                                           tmp_path: Path) -> None:
    def pairs(df, label: int) -> set[tuple[str, str]]:
        fields = [json.loads(f) for f in df["fields"]]
        return {(f["sub_class"], f["super_class"]) for f in fields if f["label"] == label}

    rows, _ = atomic
    negatives = {(r["sub_class"], r["super_class"]) for r in rows if r["label"] == 0}
    (probe,) = discover(patterns=["ontolama/pizza-atomic"])
    assert pairs(ontolama.instances(probe, store), 0) == negatives
    # reseeded: the probe file and its shared query (query: atomic.sparql) copied, seed 42 -> 7
    path = tmp_path / "pizza-atomic.rq"
    for name in ("pizza-atomic.rq", "atomic.sparql"):
        text = (QUERIES / name).read_text().replace('"42"', '"7"').replace("seed: 42", "seed: 7")
        (tmp_path / name).write_text(text)
    reseeded = ontolama.instances(parse_probe(path.read_text(), path), store)
    assert pairs(reseeded, 0) != negatives and len(pairs(reseeded, 0)) == len(negatives)
    assert pairs(reseeded, 1) == {(r["sub_class"], r["super_class"]) for r in rows
                                  if r["label"] == 1}


# --- Complex SI --------------------------------------------------------------------------------


def test_complex_anchors_and_skips(complex_: tuple) -> None:
    samples, report, _ = complex_
    assert report.anchors == report.axioms == 15
    assert report.used == 12
    assert set(report.skipped) == {"uses owl:oneOf", "uses owl:minCardinality",
                                   "uses owl:hasValue"}
    skipped = {PIZZA + x for x in ("Country", "InterestingPizza", "RealItalianPizza")}
    anchors = {s.anchor for s in samples}
    assert len(anchors) == 12 and not anchors & skipped


def test_complex_at_most_four_per_anchor(complex_: tuple, facts: dict) -> None:
    samples, report, _ = complex_
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in samples:
        per[s.anchor][s.label] += 1
    assert all(neg <= 4 and pos <= 4 for neg, pos in per.values())
    expected = 0
    for anchor, (_, pos) in per.items():  # A itself twice, plus its sub- and superclasses
        below = {c for c in _below(facts, anchor) if c in facts["probe"]} - {anchor}
        above = facts["supers"][anchor] & facts["probe"]
        assert pos <= min(4, 2 + len(below) + len(above)), anchor
        expected += min(4, 2 + len(below) + len(above))
    # before the per-split balance every anchor had all the positives it could have; after
    # it, as many positives as negatives are kept
    assert report.before_balance[0] >= expected
    assert sum(p for _, p in per.values()) == sum(n for n, _ in per.values())


def test_complex_positives_are_entailed(complex_: tuple, facts: dict) -> None:
    samples, _, _ = complex_
    for s in (x for x in samples if x.label == 1):
        if isinstance(s.sub, Named):  # A' ⊑ C: A' is A or below it
            assert s.sup == s.definition
            assert s.sub.iri == s.anchor or s.anchor in facts["supers"][s.sub.iri]
        else:  # C ⊑ A': A' is A or above it
            assert s.sub == s.definition and isinstance(s.sup, Named)
            assert s.sup.iri == s.anchor or s.sup.iri in facts["supers"][s.anchor]


def test_complex_negatives_change_one_entity(complex_: tuple, facts: dict) -> None:
    samples, _, _ = complex_
    negatives = [s for s in samples if s.label == 0]
    assert len(negatives) >= 12
    for s in negatives:
        named, expr = (s.sub, s.sup) if isinstance(s.sub, Named) else (s.sup, s.sub)
        assert isinstance(named, Named) and named.iri in facts["probe"]
        if named.iri != s.anchor:
            assert expr == s.definition
        else:
            old, new = list(entities(s.definition)), list(entities(expr))
            assert len(old) == len(new) and old != new
            changed = {(a, b) for a, b in zip(old, new, strict=True) if a != b}
            assert len({a for a, _ in changed}) == 1  # one entity, wherever it occurs
        # with C unchanged (C = A), the named side must not be below or above A
        if expr == s.definition:
            assert s.anchor not in facts["supers"][named.iri]
            assert named.iri not in facts["supers"][s.anchor]


def test_complex_instances_verbalise_the_axiom(store: LocalStore, complex_: tuple) -> None:
    samples, report, verbaliser = complex_
    df = ontolama.sample_instances("ontolama/pizza-complex", samples, verbaliser)
    names = ontolama.read_class_names(store, "pizza")
    rows = [json.loads(f) for f in df["fields"]]
    assert len(rows) == report.positives + report.negatives == df.height
    cheesey = [r for r in rows if r["anchor"] == PIZZA + "CheeseyPizza" and r["label"] == 1]
    expected = f"{names[PIZZA + 'Pizza']} that has topping some {names[PIZZA + 'CheeseTopping']}"
    assert cheesey and all(expected in (r["sub"], r["super"]) for r in cheesey)
    for r in rows:
        assert r["axiom"].startswith("SubClassOf(") and r["anchor_axiom"].startswith(
            f"EquivalentClasses(<{r['anchor']}> ")
        assert r["a_sub"] == ("" if r["sub"].startswith("something") else
                              "an " if r["sub"][0] in "aeiou" else "a ")


# --- bad input ---------------------------------------------------------------------------------

TINY = """<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
         xmlns:owl="http://www.w3.org/2002/07/owl#" xml:base="http://example.org/t">
  <owl:Ontology rdf:about="http://example.org/t"/>
  <owl:ObjectProperty rdf:about="http://example.org/t#madeOf"/>
  <owl:Class rdf:about="http://example.org/t#Food"><rdfs:label>food</rdfs:label></owl:Class>
  <owl:Class rdf:about="http://example.org/t#Wheat"><rdfs:label>wheat</rdfs:label></owl:Class>
  <owl:Class rdf:about="http://example.org/t#Stone"><rdfs:label>stone</rdfs:label></owl:Class>
  <owl:Class rdf:about="http://example.org/t#Mystery"/>
  <owl:Class rdf:about="http://example.org/t#Bread">
    <rdfs:label>bread</rdfs:label>
    <owl:equivalentClass><owl:Class><owl:intersectionOf rdf:parseType="Collection">
      <rdf:Description rdf:about="http://example.org/t#Food"/>
      <owl:Restriction><owl:onProperty rdf:resource="http://example.org/t#madeOf"/>
        <owl:someValuesFrom rdf:resource="http://example.org/t#Wheat"/></owl:Restriction>
    </owl:intersectionOf></owl:Class></owl:equivalentClass>
  </owl:Class>
  <owl:Class rdf:about="http://example.org/t#Odd">
    <rdfs:label>odd food</rdfs:label>
    <owl:equivalentClass><owl:Class><owl:intersectionOf rdf:parseType="Collection">
      <rdf:Description rdf:about="http://example.org/t#Food"/>
      <owl:Restriction><owl:onProperty rdf:resource="http://example.org/t#madeOf"/>
        <owl:someValuesFrom rdf:resource="http://example.org/t#Mystery"/></owl:Restriction>
    </owl:intersectionOf></owl:Class></owl:equivalentClass>
  </owl:Class>
  <owl:Class rdf:about="http://example.org/t#Roll">
    <rdfs:label>roll</rdfs:label><rdfs:subClassOf rdf:resource="http://example.org/t#Bread"/>
  </owl:Class>
</rdf:RDF>
"""

COMPLEX_HEADER = """# name: t/tiny-complex
# task: subsumption
# split: ?split
# target: ?anchor
# id: ?anchor
# graphs: [tiny]
# builder_params: {ontolama: {ontology: tiny, kind: complex, negative_tries: 8}}
PREFIX owl: <http://www.w3.org/2002/07/owl#>
PREFIX kgp: <https://w3id.org/kgprobe/vocab#>
SELECT DISTINCT ?anchor ?split WHERE {
  GRAPH <https://w3id.org/kgprobe/graph/tiny> {
    ?anchor a kgp:NamedClass ; owl:equivalentClass ?e FILTER(isBlank(?e)) }
  BIND("test" AS ?split) }
"""


def test_unlabelled_class_skips_only_its_anchor(tmp_path: Path) -> None:
    (tmp_path / "tiny.owl").write_text(TINY)
    src = Source(name="tiny", title="tiny", loader="kg.owl", root="data", format="test",
                 license="test", url="https://example.org/tiny",
                 files=(SourceFile("tiny.owl"),), options={"reason": False})
    store = LocalStore.in_memory()
    load_source(store.oxigraph, src, [tmp_path / "tiny.owl"], tmp_path)
    add_mini_wordnet(store.oxigraph, tmp_path / "wordnet")
    probe = parse_probe(COMPLEX_HEADER, "tiny-complex.rq")
    samples, report, _ = ontolama.complex_samples(probe, store)
    assert report.anchors == 2 and report.used == 1
    assert report.skipped == {"a class in it has no name (no label)": 1}
    assert "Mystery" in report.examples["a class in it has no name (no label)"]
    assert {s.anchor for s in samples} == {"http://example.org/t#Bread"}
    axioms = {s.axiom for s in samples if s.label == 1}
    bread = "ObjectIntersectionOf(<http://example.org/t#Food> ObjectSomeValuesFrom(" \
            "<http://example.org/t#madeOf> <http://example.org/t#Wheat>))"
    assert f"SubClassOf(<http://example.org/t#Roll> {bread})" in axioms
    assert all(functional(s.definition) == bread for s in samples)


def test_reasoner_timeout_is_a_clear_error(store: LocalStore) -> None:
    with pytest.raises(ProbeError, match=r"HermiT failed.*did not finish"):
        ontolama.classify_with_fresh(store, "pizza", [Named(PIZZA + "Pizza")], timeout=0.01)


def test_fresh_classes_reach_hermit_with_the_one_java_heap_setting(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fresh-class run and the build read KGPROBE_JAVA_MEMORY_MB through one function
    (kg.reason.java_memory_mb); the fresh class is defined in the file HermiT reads."""
    seen: dict[str, str] = {}

    def fake_java(command: list[str], timeout: float) -> str:
        seen["heap"] = next(a for a in command if a.startswith("-Xmx"))
        seen["input"] = Path(command[-1].removeprefix("file://")).read_text()
        return f"SubClassOf( <{ontolama.FRESH}0> <{PIZZA}Food> )\n"

    monkeypatch.setattr(reason, "run_java", fake_java)
    monkeypatch.setenv("KGPROBE_JAVA_MEMORY_MB", "777")
    h = ontolama.classify_with_fresh(store, "pizza", [Named(PIZZA + "Pizza")], timeout=5)
    assert seen["heap"] == "-Xmx777M"
    assert (f"<{ontolama.FRESH}0> <http://www.w3.org/2002/07/owl#equivalentClass> "
            f"<{PIZZA}Pizza> .") in seen["input"]
    assert h.subsumptions == {(ontolama.FRESH + "0", PIZZA + "Food")}
    assert reason.java_memory_mb(1234) == 1234  # a source's java_memory_mb option wins
    monkeypatch.delenv("KGPROBE_JAVA_MEMORY_MB")
    import owlready2.reasoning
    monkeypatch.setattr(owlready2.reasoning, "JAVA_MEMORY", 321)
    assert reason.java_memory_mb() == 321


def test_complex_needs_the_embedded_store() -> None:
    (probe,) = discover(patterns=["ontolama/pizza-complex"])

    class Remote:
        def query(self, sparql: str) -> list:
            return []

        def graphs(self) -> list[str]:
            return [graph("pizza").value]

    with pytest.raises(ProbeError, match="embedded store"):
        ontolama.complex_samples(probe, Remote())  # type: ignore[arg-type]


# --- build, stats, export ------------------------------------------------------------------


def test_build_stats_export(store: LocalStore, tmp_path: Path) -> None:
    results = tmp_path / "results.duckdb"
    all_reports = ontolama.build(ontolama.ontolama_probes(), store, results, tmp_path / "pq")
    reports = [r for r in all_reports if r.counts]
    assert {r.probe for r in reports} == {"ontolama/pizza-atomic", "ontolama/pizza-complex",
                                          "ontolama/pizza-atomic-controlled"}
    skipped = {r.probe: r.notes[0] for r in all_reports if not r.counts}
    assert "ontolama/doid-atomic" in skipped  # only Pizza is built: the rest are reported
    assert "python -m kg.build -s doid" in skipped["ontolama/doid-atomic"]
    from probes.app.ontolama import stats_with_ceiling  # kgprobe ontolama stats

    table = stats_with_ceiling(store, results)
    line = next(x for x in table.splitlines() if x.startswith("| pizza |"))
    atomic = next(r for r in reports if r.probe.endswith("atomic"))
    assert "/".join(f"{atomic.splits.get(s, 0):,}" for s in ontolama.SPLITS) in line
    assert "| 15 |" in line  # the 15 equivalence axioms
    # each split's shortcut ceiling (issue 23): a row per dataset and split, with its rule
    assert "Shortcut ceiling per split" in table
    assert any(x.startswith("| ontolama/pizza-atomic | test | ") for x in table.splitlines())
    paths = ontolama.export_files(results, tmp_path / "out")
    names = {(p.parent.name, p.name) for p in paths}
    assert ("pizza-atomic-SI", "validation.jsonl") in names
    recs = [json.loads(x) for p in paths if p.parent.name == "pizza-complex-SI"
            for x in p.read_text().splitlines()]
    assert recs and set(recs[0]) == {"v_sub_concept", "v_super_concept", "label", "axiom",
                                     "anchor_axiom"}
    n_atomic = sum(len(p.read_text().splitlines()) for p in paths
                   if p.parent.name == "pizza-atomic-SI")
    assert n_atomic == sum(atomic.splits.values()) == 2 * atomic.counts["positive"]
