"""Ontology loaders (kg.owl, kg.obo) and reasoning (kg.reason).

Expected counts come from the data READMEs (``shared/data/<source>/README.md``) and the
OntoLAMA brief, not from the code. One Pizza store is built with HermiT through ``kg.build``;
Schema.org, GO and DOID are loaded once, without the reasoner, into an in-memory store. The
full five-ontology build with HermiT is the one slow test.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg import config, reason
from kg.build import SourceReport, build, load_source
from kg.errors import SourceError
from kg.manifest import Source, SourceFile, load_manifest
from kg.vocab import inferred_graph
from tests.data import needs_data

DATA = config.data_dir()
if not DATA.is_dir():
    DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FIXTURES = Path(__file__).parent / "fixtures" / "ontologies"
PIZZA = "http://www.co-ode.org/ontologies/pizza/pizza.owl#"
TST = "http://purl.obolibrary.org/obo/TST_"
PREFIXES = """
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX owl: <http://www.w3.org/2002/07/owl#>
PREFIX kgp: <https://w3id.org/kgprobe/vocab#>
PREFIX oboInOwl: <http://www.geneontology.org/formats/oboInOwl#>
"""

_pizza = needs_data(DATA / "pizza", "the Pizza ontology folder")


def scalar(store: ox.Store, sparql: str) -> object:
    """The first value of the first row (a Python value for numbers and booleans)."""
    res = store.query(PREFIXES + sparql)
    if isinstance(res, ox.QueryBoolean):
        return bool(res)
    row = next(iter(res))
    term = row[0]
    if isinstance(term, ox.Literal) and term.datatype.value.endswith("#integer"):
        return int(term.value)
    return term.value if term is not None else None


def g(name: str) -> str:
    return f"<https://w3id.org/kgprobe/graph/{name}>"


def gi(name: str) -> str:
    return f"<{inferred_graph(name).value}>"


def with_options(name: str, **options: object) -> Source:
    src = load_manifest()[name]
    return dataclasses.replace(src, options={**src.options, **options})


def test_source(name: str, loader: str, path: Path, **options: object) -> Source:
    return Source(name=name, title=name, loader=loader, root="data", format="test",
                  license="test", url=f"https://example.org/{name}",
                  files=(SourceFile(path.name),), options=options)


test_source.__test__ = False  # a helper, not a test


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pizza(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SourceReport]:
    """Pizza built with HermiT through kg.build into an on-disk store."""
    store_path = tmp_path_factory.mktemp("pizza") / "store"
    (report,) = build(["pizza"], store_path=store_path, data_dir=DATA, progress=False)
    return store_path, report


@pytest.fixture(scope="module")
def pizza_store(pizza: tuple[Path, SourceReport]) -> ox.Store:
    return ox.Store.read_only(str(pizza[0]))


@pytest.fixture(scope="module")
def asserted() -> tuple[ox.Store, dict[str, SourceReport]]:
    """Schema.org, GO and DOID without the reasoner (fast), in one in-memory store."""
    store = ox.Store()
    reports = {}
    for name in ("schemaorg", "go", "doid"):
        src = with_options(name, reason=False)
        reports[name] = load_source(store, src, src.resolve(DATA), DATA)
    return store, reports


@pytest.fixture(scope="module")
def cycle() -> tuple[ox.Store, SourceReport]:
    """The tiny OBO fixture, reasoned with HermiT, top class TST:0000001."""
    store = ox.Store()
    path = FIXTURES / "cycle.obo"
    src = test_source("tst", "kg.obo", path, top_class="TST:0000001")
    return store, load_source(store, src, [path], FIXTURES)


# --- Schema.org -------------------------------------------------------------------------------


def test_schemaorg_has_896_named_classes(asserted: tuple[ox.Store, dict]) -> None:
    store, _ = asserted
    n = scalar(store, f"SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE {{ GRAPH {g('schemaorg')} "
                      "{ ?c a owl:Class } FILTER isIRI(?c) }")
    assert n == 896
    kept = scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {g('schemaorg')} "
                         "{ ?c a kgp:NamedClass } }")
    # every class has an English label and none is deprecated; only the top class Thing
    # (option top_class, as OntoLAMA leaves it out) is not a NamedClass
    assert kept == 895
    top = scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {g('schemaorg')} "
                        "{ <https://schema.org/Thing> kgp:excludedTop true } }")
    assert top == 1


@pytest.mark.parametrize(("local", "name"), [
    ("APIReference", "api reference"),
    ("AMRadioChannel", "am radio channel"),
    ("3DModel", "3d model"),
    ("LocalBusiness", "local business"),
    ("HVACBusiness", "hvac business"),
    ("Thing", "thing"),
])
def test_schemaorg_camel_case_names(asserted: tuple[ox.Store, dict], local: str,
                                    name: str) -> None:
    store, _ = asserted
    got = scalar(store, f"SELECT ?n WHERE {{ GRAPH {g('schemaorg')} "
                        f"{{ <https://schema.org/{local}> kgp:name ?n }} }}")
    assert got == name


# --- GO and DOID ------------------------------------------------------------------------------


def test_go_has_2758_labelled_classes(asserted: tuple[ox.Store, dict]) -> None:
    store, _ = asserted
    assert scalar(store, f"SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE {{ GRAPH {g('go')} "
                         "{ ?c a owl:Class } FILTER isIRI(?c) }") == 2758
    assert scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {g('go')} "
                         "{ ?c a kgp:NamedClass } }") == 2758


def test_doid_terms_and_top_class(asserted: tuple[ox.Store, dict]) -> None:
    store, reports = asserted
    doid = g("doid")
    assert scalar(store, f"SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE {{ GRAPH {doid} "
                         "{ ?c a owl:Class } }") == 13982
    live = scalar(store, f"SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE {{ GRAPH {doid} "
                         "{ ?c a owl:Class FILTER NOT EXISTS { ?c owl:deprecated true } } }")
    assert live == 11501
    # every live term but the top class "disease" is a probe concept
    assert scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {doid} "
                         "{ ?c a kgp:NamedClass } }") == 11500
    top = "<http://purl.obolibrary.org/obo/DOID_4>"
    assert scalar(store, f"ASK {{ GRAPH {doid} {{ {top} kgp:excludedTop true ; "
                         "rdfs:label \"disease\" } }")
    assert not scalar(store, f"ASK {{ GRAPH {doid} {{ {top} a kgp:NamedClass }} }}")
    # 15,995 is_a lines, all between terms
    assert scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {doid} "
                         "{ ?a rdfs:subClassOf ?b } FILTER isIRI(?b) }") == 15995
    assert not any("no label" in w for w in reports["doid"].warnings)


def test_doid_obo_mapping(asserted: tuple[ox.Store, dict]) -> None:
    store, _ = asserted
    angio = "<http://purl.obolibrary.org/obo/DOID_0001816>"
    assert scalar(store, f"ASK {{ GRAPH {g('doid')} {{ {angio} rdfs:label \"angiosarcoma\" ; "
                         "oboInOwl:hasExactSynonym \"hemangiosarcoma\" ; "
                         "rdfs:subClassOf <http://purl.obolibrary.org/obo/DOID_175> ; "
                         "kgp:name \"angiosarcoma\" } }")
    n_synonyms = scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {g('doid')} {{ ?c ?p ?s "
                               "VALUES ?p { oboInOwl:hasExactSynonym oboInOwl:hasRelatedSynonym "
                               "oboInOwl:hasNarrowSynonym oboInOwl:hasBroadSynonym } } }")
    # 21,802 synonym lines; 10 repeat a (term, text, scope) already there with other xrefs
    # (zcat | awk id+synonym | strip xrefs | sort | uniq -d), and RDF keeps one triple each
    assert n_synonyms == 21802 - 10


def test_fallback_when_reasoning_is_off(asserted: tuple[ox.Store, dict]) -> None:
    store, reports = asserted
    assert scalar(store, f"SELECT ?r WHERE {{ GRAPH {gi('go')} {{ ?x kgp:reasoner ?r }} }}"
                  ) == "asserted-closure"
    assert any("go" in w and "asserted" in w for w in reports["go"].warnings)


# --- Pizza with HermiT --------------------------------------------------------------------


def test_pizza_counts_and_reasoner(pizza_store: ox.Store,
                                   pizza: tuple[Path, SourceReport]) -> None:
    s = pizza_store
    assert scalar(s, f"SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE {{ GRAPH {g('pizza')} "
                     "{ ?c a owl:Class } FILTER isIRI(?c) }") == 99
    assert scalar(s, f"SELECT ?r WHERE {{ GRAPH {gi('pizza')} {{ ?x kgp:reasoner ?r }} }}"
                  ) == "HermiT"
    assert pizza[1].reasoning_s is not None and pizza[1].reasoning_s > 0
    assert any("1 classes have no label" in w for w in pizza[1].warnings)


def test_pizza_unsatisfiable_classes(pizza_store: ox.Store,
                                     pizza: tuple[Path, SourceReport]) -> None:
    rows = pizza_store.query(PREFIXES + f"SELECT ?c WHERE {{ GRAPH {gi('pizza')} "
                                        "{ ?c kgp:unsatisfiable true } }")
    assert {r["c"].value for r in rows} == {PIZZA + "IceCream", PIZZA + "CheeseyVegetableTopping"}
    assert any("2 unsatisfiable" in w for w in pizza[1].warnings)
    # never probe concepts, never in a subsumption
    assert not scalar(pizza_store, f"ASK {{ GRAPH {g('pizza')} {{ <{PIZZA}IceCream> a "
                                   "kgp:NamedClass } }")
    assert not scalar(pizza_store, f"ASK {{ GRAPH {gi('pizza')} {{ <{PIZZA}IceCream> "
                                   "rdfs:subClassOf ?x } }")
    # 99 classes - NamedPizza (no English label) - 2 unsatisfiable
    assert scalar(pizza_store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {g('pizza')} "
                               "{ ?c a kgp:NamedClass } }") == 96


@pytest.mark.parametrize("defined", ["CheeseyPizza", "VegetarianPizza"])
def test_pizza_entailment_not_asserted(pizza_store: ox.Store, defined: str) -> None:
    # the tutorial's point: Margherita (mozzarella + tomato) is classified under defined classes
    triple = f"<{PIZZA}Margherita> rdfs:subClassOf <{PIZZA}{defined}>"
    assert scalar(pizza_store, f"ASK {{ GRAPH {gi('pizza')} {{ {triple} }} }}")
    assert not scalar(pizza_store, f"ASK {{ GRAPH {g('pizza')} {{ {triple} }} }}")


def test_pizza_inferred_graph_is_a_clean_closure(pizza_store: ox.Store) -> None:
    inf = gi("pizza")
    assert not scalar(pizza_store, f"ASK {{ GRAPH {inf} {{ ?a ?p ?b }} "
                                   "FILTER(?a IN (owl:Thing, owl:Nothing) || "
                                   "?b IN (owl:Thing, owl:Nothing)) }")
    assert not scalar(pizza_store, f"ASK {{ GRAPH {inf} {{ ?a rdfs:subClassOf ?a }} }}")
    missing = scalar(pizza_store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {inf} {{ "
                                  "?a rdfs:subClassOf ?b . ?b rdfs:subClassOf ?c "
                                  "FILTER NOT EXISTS { ?a rdfs:subClassOf ?c } } "
                                  "FILTER(?a != ?c) }")
    assert missing == 0
    # asserted ones are all there (Pizza has no asserted cycle)
    assert not scalar(pizza_store, f"ASK {{ GRAPH {g('pizza')} {{ ?a rdfs:subClassOf ?b }} "
                                   f"FILTER(isIRI(?b)) FILTER NOT EXISTS {{ GRAPH {inf} "
                                   "{ ?a rdfs:subClassOf ?b } } FILTER NOT EXISTS { GRAPH "
                                   f"{inf} {{ ?a kgp:unsatisfiable true }} }} }}")


def test_reasoner_timeout_falls_back_to_asserted_closure() -> None:
    store = ox.Store()
    src = with_options("pizza", reasoner_timeout_s=0.001)
    t0 = time.perf_counter()
    report = load_source(store, src, src.resolve(DATA), DATA)
    assert time.perf_counter() - t0 < 10
    assert any("pizza" in w and "0.001" in w and "asserted" in w and "complex" in w
               for w in report.warnings)
    inf = gi("pizza")
    assert scalar(store, f"SELECT ?r WHERE {{ GRAPH {inf} {{ ?x kgp:reasoner ?r }} }}"
                  ) == "asserted-closure"
    # Margherita -> NamedPizza -> Pizza is asserted: its closure is there ...
    assert scalar(store, f"ASK {{ GRAPH {inf} {{ <{PIZZA}Margherita> rdfs:subClassOf "
                         f"<{PIZZA}Pizza> }} }}")
    # ... an entailment of a defined class is not
    assert not scalar(store, f"ASK {{ GRAPH {inf} {{ <{PIZZA}Margherita> rdfs:subClassOf "
                             f"<{PIZZA}CheeseyPizza> }} }}")


def test_missing_java_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import owlready2

    monkeypatch.setattr(owlready2, "JAVA_EXE", "/nonexistent/java")
    store = ox.Store()
    src = with_options("pizza")
    report = load_source(store, src, src.resolve(DATA), DATA)
    assert any("cannot start Java" in w for w in report.warnings)


def test_java_heap_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build starts HermiT with the heap of the source's ``java_memory_mb`` option, which
    wins over $KGPROBE_JAVA_MEMORY_MB; without the option, the variable's heap."""
    import owlready2

    commands: list[list[str]] = []

    def fake_java(command: list[str], timeout: float) -> str:
        commands.append(command)
        return f"SubClassOf( <{PIZZA}Margherita> <{PIZZA}NamedPizza> )\n"

    monkeypatch.setattr(reason, "run_java", fake_java)
    monkeypatch.setenv("KGPROBE_JAVA_MEMORY_MB", "900")
    for options in ({"java_memory_mb": 640}, {}):
        src = with_options("pizza", **options)
        load_source(ox.Store(), src, src.resolve(DATA), DATA)
    assert [[a for a in c if a.startswith("-Xmx")] for c in commands] == [["-Xmx640M"],
                                                                          ["-Xmx900M"]]
    cmd = commands[0]  # java, heap, JVM options, -cp <hermit dir>:<jar>, main, --classify, file
    assert cmd[0] == owlready2.JAVA_EXE
    jar = Path(cmd[cmd.index("-cp") + 1].split(os.pathsep)[-1])
    assert jar.name == "HermiT.jar" and jar.is_file()
    assert cmd[-3:-1] == ["org.semanticweb.HermiT.cli.CommandLine", "--classify"]
    assert cmd[-1].startswith("file:///") and cmd[-1].endswith("/pizza.nt")


# --- OBO details on the fixture -----------------------------------------------------------


def test_obo_cycle_becomes_equivalence(cycle: tuple[ox.Store, SourceReport]) -> None:
    store, report = cycle
    inf = gi("tst")
    assert scalar(store, f"ASK {{ GRAPH {inf} {{ <{TST}0000003> owl:equivalentClass "
                         f"<{TST}0000004> }} }}")
    assert not scalar(store, f"ASK {{ GRAPH {inf} {{ <{TST}0000003> rdfs:subClassOf "
                             f"<{TST}0000004> }} }}")
    assert any("equivalent" in w for w in report.warnings)
    # both members of the cycle are still below "small thing"
    assert scalar(store, f"ASK {{ GRAPH {inf} {{ <{TST}0000004> rdfs:subClassOf "
                         f"<{TST}0000002> }} }}")


def test_obo_logical_definition_is_reasoned(cycle: tuple[ox.Store, SourceReport]) -> None:
    store, _ = cycle
    # bouncy bit: thing and part_of some ball; ball <= small thing; so it is a
    # "part of a small thing" (= thing and part_of some small thing): not asserted
    triple = f"<{TST}0000006> rdfs:subClassOf <{TST}0000005>"
    assert scalar(store, f"ASK {{ GRAPH {gi('tst')} {{ {triple} }} }}")
    assert not scalar(store, f"ASK {{ GRAPH {g('tst')} {{ {triple} }} }}")


def test_obo_names_synonyms_obsolete_unlabelled(cycle: tuple[ox.Store, SourceReport]) -> None:
    store, report = cycle
    rows = store.query(PREFIXES + f"SELECT ?c WHERE {{ GRAPH {g('tst')} "
                                  "{ ?c a kgp:NamedClass } }")
    kept = {r["c"].value.removeprefix(TST) for r in rows}
    # 1 is the excluded top, 7 is obsolete, 8 has no name
    assert kept == {"0000002", "0000003", "0000004", "0000005", "0000006"}
    assert scalar(store, f"SELECT ?n WHERE {{ GRAPH {g('tst')} {{ <{TST}0000002> kgp:name ?n }} }}"
                  ) == "small thing"
    assert scalar(store, f"ASK {{ GRAPH {g('tst')} {{ <{TST}0000002> "
                         "oboInOwl:hasExactSynonym \"wee thing\" ; "
                         "oboInOwl:hasRelatedSynonym \"little thing\" ; "
                         "oboInOwl:hasNarrowSynonym \"tiny thing\" ; "
                         "oboInOwl:hasBroadSynonym \"object\" } }")
    assert scalar(store, f"ASK {{ GRAPH {g('tst')} {{ <{TST}0000001> "
                         "<http://purl.obolibrary.org/obo/IAO_0000115> 'The top \"thing\".' ; "
                         "kgp:excludedTop true } }")
    assert scalar(store, f"ASK {{ GRAPH {g('tst')} {{ <{TST}0000007> owl:deprecated true }} }}")
    assert any(w.startswith("1 classes have no label") for w in report.warnings)


# --- bad input ----------------------------------------------------------------------------


def test_obo_parse_error_names_file_and_line() -> None:
    path = FIXTURES / "bad_line.obo"
    src = test_source("bad", "kg.obo", path)
    with pytest.raises(SourceError, match=r"bad_line\.obo, line 7: .*download it again"):
        load_source(ox.Store(), src, [path], FIXTURES)


def test_obo_unterminated_quote(tmp_path: Path) -> None:
    path = tmp_path / "quote.obo"
    path.write_text('ontology: q\n\n[Term]\nid: Q:1\ndef: "never closed [Q:x]\n')
    src = test_source("q", "kg.obo", path)
    with pytest.raises(SourceError, match=r"quote\.obo, line 5: unterminated"):
        load_source(ox.Store(), src, [path], tmp_path)


def test_truncated_obo_gz(tmp_path: Path) -> None:
    data = (DATA / "doid" / "doid-2024-01-31.obo.gz").read_bytes()
    path = tmp_path / "doid.obo.gz"
    path.write_bytes(data[:50_000])
    src = test_source("doidcut", "kg.obo", path)
    with pytest.raises(SourceError, match=r"doid\.obo\.gz.*download it again"):
        load_source(ox.Store(), src, [path], tmp_path)


def test_truncated_owl_gz(tmp_path: Path) -> None:
    path = tmp_path / "pizza.owl.gz"
    path.write_bytes((DATA / "pizza" / "pizza.owl.gz").read_bytes()[:4000])
    src = test_source("pizzacut", "kg.owl", path)
    with pytest.raises(SourceError, match=r"pizza\.owl\.gz.*download it again"):
        load_source(ox.Store(), src, [path], tmp_path)


def test_garbled_owl(tmp_path: Path) -> None:
    text = gzip.decompress((DATA / "pizza" / "pizza.owl.gz").read_bytes())
    path = tmp_path / "garbled.owl.gz"
    path.write_bytes(gzip.compress(text[: len(text) // 2]))  # valid gzip, XML cut in half
    src = test_source("garbled", "kg.owl", path)
    with pytest.raises(SourceError, match=r"garbled\.owl\.gz.*download it again"):
        load_source(ox.Store(), src, [path], tmp_path)


def test_failed_build_keeps_previous_store(pizza: tuple[Path, SourceReport],
                                           tmp_path: Path) -> None:
    store_path, _ = pizza

    def counts() -> tuple[object, ...]:
        s = ox.Store.read_only(str(store_path))
        return tuple(scalar(s, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {x} {{ ?a ?b ?c }} }}")
                     for x in (g("pizza"), gi("pizza")))

    before = counts()
    broken = tmp_path / "data" / "pizza"
    broken.mkdir(parents=True)
    (broken / "pizza.owl.gz").write_bytes((DATA / "pizza" / "pizza.owl.gz").read_bytes()[:3000])
    with pytest.raises(SourceError, match=r"pizza\.owl\.gz.*download it again"):
        build(["pizza"], store_path=store_path, data_dir=tmp_path / "data", verify=False,
              progress=False)
    assert counts() == before
    assert before[0] > 1944  # the 1,944 source triples plus kgprobe's names and metadata


# --- the whole set, with HermiT -----------------------------------------------------------


@pytest.mark.slow
def test_all_five_ontologies_with_hermit(tmp_path: Path) -> None:
    names = ["schemaorg", "pizza", "foodon", "go", "doid"]
    t0 = time.perf_counter()
    reports = {r.name: r for r in build(names, store_path=tmp_path / "store", data_dir=DATA,
                                        progress=False)}
    elapsed = time.perf_counter() - t0
    assert elapsed < 180
    store = ox.Store.read_only(str(tmp_path / "store"))
    for name in names:
        assert scalar(store, f"SELECT ?r WHERE {{ GRAPH {gi(name)} {{ ?x kgp:reasoner ?r }} }}"
                      ) == "HermiT", name
    # READMEs: no unsatisfiable class in FoodOn and GO; FoodOn has 4 self-loops
    for name in ("foodon", "go", "doid", "schemaorg"):
        assert not any("unsatisfiable" in w for w in reports[name].warnings), name
    assert any(w.startswith("4 asserted subclass self-loops") for w in reports["foodon"].warnings)

    def closure(name: str) -> int:
        return int(scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ SELECT DISTINCT ?a ?b "
                                 f"WHERE {{ GRAPH {g(name)} {{ ?a rdfs:subClassOf+ ?b }} "
                                 "FILTER(isIRI(?a) && isIRI(?b) && ?a != ?b "
                                 "&& ?b != owl:Thing) } }"))

    def inferred(name: str) -> int:
        return int(scalar(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {gi(name)} "
                                 "{ ?a rdfs:subClassOf ?b } }"))

    # equivalence axioms (FoodOn 1,497, GO 994) entail subsumptions beyond the asserted ones
    assert inferred("foodon") > closure("foodon")
    assert inferred("go") > closure("go")
    # DOID has no equivalence axioms: HermiT's hierarchy is the asserted one, closed
    assert inferred("doid") == closure("doid")
