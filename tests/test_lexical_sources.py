"""The four lexical sources (copen, hyperlex, norms, responses): facts of the data, and errors.

Every count below comes from the data READMEs (../shared/data/*/README.md) or the task brief,
and is checked by SPARQL over a store built by ``kg.build.build``. Error tests copy the files
they need into a temporary data folder laid out like the real one and break them there.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from kg import config
from kg.build import build
from kg.errors import SourceError
from kg.manifest import load_manifest
from kg.store import LocalStore
from kg.vocab import PREFIXES, data_ns, graph
from tests.data import require

SOURCES = ["copen", "hyperlex", "norms", "responses"]
PREFIX = "".join(f"PREFIX {k}: <{v}>\n" for k, v in PREFIXES.items())
DATA = config.data_dir()
MANIFEST = load_manifest()


def _rel_paths(source: str) -> list[str]:
    return [f.path for f in MANIFEST[source].files]


@pytest.fixture(autouse=True)
def _sources() -> None:
    for source in SOURCES:
        for rel in _rel_paths(source):
            require(DATA / rel, f"a file of source {source!r}")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LocalStore:
    path = tmp_path_factory.mktemp("lexical") / "store"
    build(SOURCES, store_path=path, data_dir=DATA, progress=False)
    return LocalStore.open(path)


def q(store: LocalStore, source: str, body: str) -> list[dict]:
    """Run ``SELECT ... WHERE { GRAPH <source graph> { body } }``-style queries conveniently."""
    return store.query(PREFIX + body.replace("GRAPH_G", f"GRAPH <{graph(source).value}>"))


def one(store: LocalStore, source: str, body: str) -> object:
    rows = q(store, source, body)
    assert len(rows) == 1, rows
    return next(iter(rows[0].values()))


# --------------------------------------------------------------------------------------- copen

TOP_CONCEPTS = {  # README: the 23 concepts whose parent is Root
    "Activity", "AnatomicalStructure", "Award", "Biomolecule", "ChemicalSubstance", "Colour",
    "Currency", "Device", "Disease", "EthnicGroup", "Event", "Food", "Holiday", "Language",
    "MeanOfTransportation", "Name", "Organisation", "Person", "Place", "Species", "SportsSeason",
    "TimePeriod", "Work",
}


def test_copen_concepts(store: LocalStore) -> None:
    n = one(store, "copen", """SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { GRAPH_G {
        ?c a kgp:CopenConcept, skos:Concept ; skos:inScheme ?s . ?s a skos:ConceptScheme } }""")
    assert n == 446


def test_copen_top_concepts(store: LocalStore) -> None:
    rows = q(store, "copen", """SELECT ?label WHERE { GRAPH_G {
        ?c skos:topConceptOf ?s ; rdfs:label ?label ; kgp:depth 0 .
        FILTER NOT EXISTS { ?c skos:broader ?p } } }""")
    assert {r["label"] for r in rows} == TOP_CONCEPTS
    assert len(rows) == 23


def test_copen_depth_counts(store: LocalStore) -> None:
    rows = q(store, "copen", """SELECT ?d (COUNT(?c) AS ?n) WHERE { GRAPH_G {
        ?c a kgp:CopenConcept ; kgp:depth ?d } } GROUP BY ?d""")
    assert {r["d"]: r["n"] for r in rows} == {0: 23, 1: 113, 2: 190, 3: 88, 4: 29, 5: 2, 6: 1}


def test_copen_tree_is_consistent(store: LocalStore) -> None:
    # every non-top concept has exactly one parent, one level up
    bad = q(store, "copen", """SELECT ?c WHERE { GRAPH_G {
        ?c a kgp:CopenConcept ; kgp:depth ?d .
        OPTIONAL { ?c skos:broader ?p . ?p kgp:depth ?pd }
        FILTER (IF(?d = 0, BOUND(?p), !BOUND(?pd) || ?pd != ?d - 1)) } }""")
    assert bad == []
    multi = q(store, "copen", """SELECT ?c WHERE { GRAPH_G { ?c skos:broader ?p } }
        GROUP BY ?c HAVING (COUNT(?p) > 1)""")
    assert multi == []


def test_copen_wikidata_mapping(store: LocalStore) -> None:
    assert one(store, "copen", """SELECT (COUNT(*) AS ?n) WHERE { GRAPH_G {
        ?c skos:exactMatch ?q . FILTER STRSTARTS(STR(?q), STR(wd:Q)) } }""") == 414
    assert one(store, "copen", """SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { GRAPH_G {
        ?c skos:exactMatch ?q } }""") == 402
    assert one(store, "copen", """SELECT (COUNT(*) AS ?n) WHERE { { SELECT ?c WHERE {
        GRAPH_G { ?c skos:exactMatch ?q } } GROUP BY ?c HAVING (COUNT(?q) = 2) } }""") == 12
    unmapped = {r["l"] for r in q(store, "copen", """SELECT ?l WHERE { GRAPH_G {
        ?c a kgp:CopenConcept ; rdfs:label ?l FILTER NOT EXISTS { ?c skos:exactMatch ?q } } }""")}
    assert len(unmapped) == 44
    assert {"CurlingLeague", "BaseballSeason", "Tenure"} <= unmapped


def test_copen_labels(store: LocalStore) -> None:
    rows = q(store, "copen", """SELECT ?l ?pl WHERE { GRAPH_G {
        ?c rdfs:label ?l ; skos:prefLabel ?pl FILTER (?l IN ("SoccerPlayer",
        "MeanOfTransportation")) } }""")
    assert {r["l"]: r["pl"] for r in rows} == {
        "SoccerPlayer": "soccer player", "MeanOfTransportation": "mean of transportation"}
    # the IRI is the name in the file
    iri = data_ns("copen")["SoccerPlayer"].value
    assert one(store, "copen", f"SELECT ?l WHERE {{ GRAPH_G {{ <{iri}> rdfs:label ?l }} }}") \
        == "SoccerPlayer"


# ------------------------------------------------------------------------------------ hyperlex

HYPERLEX_TYPES = {  # README: TYPE counts in hyperlex-all
    "hyp-1": 384, "hyp-2": 290, "hyp-3": 289, "hyp-4": 242, "r-hyp-1": 98, "r-hyp-2": 73,
    "r-hyp-3": 75, "r-hyp-4": 50, "cohyp": 292, "mero": 241, "syn": 194, "ant": 98, "no-rel": 290,
}


def test_hyperlex_pairs_and_pos(store: LocalStore) -> None:
    assert one(store, "hyperlex", """SELECT (COUNT(DISTINCT ?p) AS ?n) WHERE { GRAPH_G {
        ?p a kgp:WordPair ; kgp:word1 ?a ; kgp:word2 ?b } }""") == 2616
    rows = q(store, "hyperlex", """SELECT ?pos (COUNT(?p) AS ?n) WHERE { GRAPH_G {
        ?p a kgp:WordPair ; kgp:pos ?pos } } GROUP BY ?pos""")
    assert {r["pos"]: r["n"] for r in rows} == {"N": 2163, "V": 453}


def test_hyperlex_types(store: LocalStore) -> None:
    rows = q(store, "hyperlex", """SELECT ?t (COUNT(?p) AS ?n) WHERE { GRAPH_G {
        ?p kgp:relationType ?t } } GROUP BY ?t""")
    assert {r["t"]: r["n"] for r in rows} == HYPERLEX_TYPES


def test_hyperlex_splits(store: LocalStore) -> None:
    rows = q(store, "hyperlex", """SELECT ?s (COUNT(?p) AS ?n) WHERE { GRAPH_G {
        ?p a kgp:WordPair ; kgp:split ?s } } GROUP BY ?s""")
    assert {r["s"]: r["n"] for r in rows} == {"train": 1831, "dev": 130, "test": 655}


def test_hyperlex_scores(store: LocalStore) -> None:
    row = q(store, "hyperlex", """SELECT (MIN(?s) AS ?lo) (MAX(?s) AS ?hi) (MIN(?t) AS ?lo10)
        (MAX(?t) AS ?hi10) (COUNT(?p) AS ?n) WHERE { GRAPH_G {
        ?p kgp:score ?s ; kgp:score10 ?t FILTER (DATATYPE(?s) = xsd:double) } }""")[0]
    assert row["n"] == 2616
    assert 0 <= row["lo"] < row["hi"] <= 6 and 0 <= row["lo10"] < row["hi10"] <= 10
    # the two scales are the same ratings (0-6 rescaled to 0-10, rounded to 2 decimals)
    assert one(store, "hyperlex", """SELECT (COUNT(?p) AS ?n) WHERE { GRAPH_G {
        ?p kgp:score ?s ; kgp:score10 ?t FILTER (ABS(?t - ?s * 10 / 6) > 0.01) } }""") == 0


def test_hyperlex_pair_iri_is_line_number(store: LocalStore) -> None:
    lines = (DATA / "hyperlex/hyperlex-all.txt").read_text(encoding="utf-8").splitlines()
    for lineno in (2, len(lines)):  # the first and the last pair
        w1, w2, pos, typ = lines[lineno - 1].split()[:4]
        iri = data_ns("hyperlex")[f"pair-{lineno}"].value
        row = q(store, "hyperlex", f"""SELECT ?a ?b ?pos ?t WHERE {{ GRAPH_G {{
            <{iri}> kgp:word1 ?a ; kgp:word2 ?b ; kgp:pos ?pos ; kgp:relationType ?t }} }}""")
        assert row == [{"a": w1, "b": w2, "pos": pos, "t": typ}]


# --------------------------------------------------------------------------------------- norms


def test_norms_rows_and_categories(store: LocalStore) -> None:
    assert one(store, "norms", """SELECT (COUNT(DISTINCT ?e) AS ?n) WHERE { GRAPH_G {
        ?e a kgp:CategoryExemplar ; kgp:exemplar ?w ; kgp:productionFrequency ?f ;
           kgp:rank ?r ; kgp:categoryNumber ?k } }""") == 5231
    rows = q(store, "norms", """SELECT ?c (COUNT(?e) AS ?n) WHERE { GRAPH_G {
        ?e kgp:inCategory ?c . ?c rdfs:label ?l } } GROUP BY ?c""")
    assert len(rows) == 56
    sizes = [r["n"] for r in rows]
    assert (min(sizes), max(sizes)) == (35, 280)


def test_norms_category_names_match(store: LocalStore) -> None:
    # each exemplar's category name and number agree with its category resource
    assert one(store, "norms", """SELECT (COUNT(?e) AS ?n) WHERE { GRAPH_G {
        ?e kgp:inCategory ?c ; kgp:category ?name ; kgp:categoryNumber ?k .
        ?c rdfs:label ?l ; kgp:categoryNumber ?ck FILTER (?l != ?name || ?k != ?ck) } }""") == 0


def test_norms_empty_cells_are_absent(store: LocalStore) -> None:
    assert one(store, "norms", """SELECT (COUNT(*) AS ?n) WHERE { GRAPH_G {
        ?s ?p ?o FILTER (isLiteral(?o) && STR(?o) = "") } }""") == 0
    # README: `frequency` and `rfreq` are empty for 3,149 rows
    for prop in ("kgp:kuceraFrancisFrequency", "kgp:ratedFrequency"):
        assert one(store, "norms", f"""SELECT (COUNT(?e) AS ?n) WHERE {{ GRAPH_G {{
            ?e a kgp:CategoryExemplar FILTER NOT EXISTS {{ ?e {prop} ?x }} }} }}""") == 3149


def test_norms_first_row(store: LocalStore) -> None:
    path = DATA / "battig-montague-1969/battig_montague_1969.tsv"
    header, first = path.read_text(encoding="utf-8").splitlines()[:2]
    row = dict(zip(header.split("\t"), first.split("\t"), strict=True))
    iri = data_ns("norms")[f"exemplar-{row['catnum']}-1"].value
    got = q(store, "norms", f"""SELECT ?w ?c ?f ?r WHERE {{ GRAPH_G {{
        <{iri}> kgp:exemplar ?w ; kgp:category ?c ; kgp:productionFrequency ?f ;
                kgp:rank ?r }} }}""")
    assert got == [{"w": row["word"], "c": row["catname"], "f": int(row["freq"]),
                    "r": int(row["rank"])}]


# ----------------------------------------------------------------------------------- responses


@pytest.fixture(scope="module")
def raw_responses() -> dict:
    with gzip.open(DATA / "cao-probe-responses/human_responses.json.gz", "rt") as fh:
        return json.load(fh)


def test_responses_targets_and_probes(store: LocalStore) -> None:
    assert one(store, "responses", """SELECT (COUNT(DISTINCT ?w) AS ?n) WHERE { GRAPH_G {
        ?p a kgp:HumanProbe ; kgp:targetWord ?w } }""") == 1309
    assert one(store, "responses", """SELECT (COUNT(DISTINCT ?p) AS ?n) WHERE { GRAPH_G {
        ?p a kgp:HumanProbe ; kgp:prompt ?t ; kgp:relation ?r ; kgp:relationCode ?c } }"""
               ) == 11971


def test_responses_four_annotators_per_probe(store: LocalStore) -> None:
    rows = q(store, "responses", """SELECT ?k (COUNT(?p) AS ?n) WHERE { { SELECT ?p
        (COUNT(DISTINCT ?ann) AS ?k) WHERE { GRAPH_G { ?p a kgp:HumanProbe .
        OPTIONAL { ?a kgp:answerOf ?p ; kgp:annotator ?ann } } } GROUP BY ?p } } GROUP BY ?k""")
    assert rows == [{"k": 4, "n": 11971}]


def test_responses_targets_per_relation(store: LocalStore) -> None:
    rows = q(store, "responses", """SELECT ?r ?c (COUNT(DISTINCT ?w) AS ?n)
        (COUNT(DISTINCT ?t) AS ?prompts) WHERE { GRAPH_G {
        ?p kgp:relation ?r ; kgp:relationCode ?c ; kgp:targetWord ?w ; kgp:prompt ?t } }
        GROUP BY ?r ?c""")
    got = {(r["r"], r["c"]): (r["n"], r["prompts"]) for r in rows}
    assert got == {  # README: target words and prompts per relation; codes from the paper
        ("hyp", "HYP"): (718, 7), ("rhyp", "HPO"): (319, 7), ("syn", "SYN"): (218, 7),
        ("holo", "HOL"): (195, 7), ("mero", "MER"): (146, 6), ("ant", "ANT"): (105, 9),
    }


def test_responses_answers_match_file(store: LocalStore, raw_responses: dict) -> None:
    expected = Counter()
    for rels in raw_responses.values():
        for prompts in rels.values():
            for lists in prompts.values():
                for ann, answers in enumerate(lists, start=1):
                    expected[ann] += len(answers)
    rows = q(store, "responses", """SELECT ?ann (COUNT(?a) AS ?n) WHERE { GRAPH_G {
        ?a kgp:answerOf ?p ; kgp:annotator ?ann ; kgp:position ?i ; kgp:responseText ?t ;
           kgp:normalisedText ?nt } } GROUP BY ?ann""")
    assert {r["ann"]: r["n"] for r in rows} == dict(expected)


def test_responses_one_probe_in_detail(store: LocalStore, raw_responses: dict) -> None:
    target, rel = "belief", "ant"
    prompt = "the word [W] has a sense that negates the sense of the word [V]"
    lists = raw_responses[target][rel][prompt]
    h = hashlib.md5(f"{target}|{rel}|{prompt}".encode()).hexdigest()[:16]
    probe = data_ns("responses")[f"probe-{h}"].value
    rows = q(store, "responses", f"""SELECT ?w ?r ?t ?ann ?i ?text WHERE {{ GRAPH_G {{
        <{probe}> kgp:targetWord ?w ; kgp:relation ?r ; kgp:prompt ?t .
        ?a kgp:answerOf <{probe}> ; kgp:annotator ?ann ; kgp:position ?i ;
           kgp:responseText ?text }} }}""")
    assert {(r["w"], r["r"], r["t"]) for r in rows} == {(target, rel, prompt)}
    got = {(r["ann"], r["i"]): r["text"] for r in rows}
    assert got == {(ann, i): text for ann, answers in enumerate(lists, start=1)
                   for i, text in enumerate(answers)}
    assert got[(1, 0)] == "disblief"  # typos are kept as written


def test_responses_normalised_text(store: LocalStore) -> None:
    # the file has no upper case or padding, so the normalised text equals the raw text
    assert one(store, "responses", """SELECT (COUNT(?a) AS ?n) WHERE { GRAPH_G {
        ?a kgp:responseText ?t ; kgp:normalisedText ?nt FILTER (?nt != LCASE(?t)) } }""") == 0


# ------------------------------------------------------------------------------ broken inputs


def make_data(tmp_path: Path, source: str) -> Path:
    """A data folder holding a copy of one source's files, laid out like the real one."""
    root = tmp_path / "data"
    for rel in _rel_paths(source):
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / rel, dest)
    return root


def edit_lines(path: Path, fn) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(fn(lines)) + "\n", encoding="utf-8")


def build_broken(tmp_path: Path, source: str, data: Path) -> list:
    """Build one source from a (broken) data folder into a fresh store under ``tmp_path``."""
    return build([source], store_path=tmp_path / "store", data_dir=data, verify=False,
                 progress=False)


def line_of(path: Path, start: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if line.startswith(start))


def test_copen_cycle(tmp_path: Path) -> None:
    data = make_data(tmp_path, "copen")
    father = data / "copen/schema/father.txt"
    # Sport's parent is Activity; make Activity a child of Sport
    edit_lines(father, lambda ls: [("Activity\t\tSport" if x == "Activity\t\tRoot" else x)
                                   for x in ls])
    with pytest.raises(SourceError, match=r"father\.txt:\d+: the taxonomy has a cycle") as e:
        build_broken(tmp_path, "copen", data)
    assert "Activity" in str(e.value) and "Sport" in str(e.value)
    assert not (tmp_path / "store").exists()  # a failed build leaves no store behind


def test_copen_single_tab(tmp_path: Path) -> None:
    data = make_data(tmp_path, "copen")
    father = data / "copen/schema/father.txt"
    n = line_of(father, "SoccerPlayer\t\t")
    edit_lines(father, lambda ls: [x.replace("\t\t", "\t") if i == n else x
                                   for i, x in enumerate(ls, start=1)])
    with pytest.raises(SourceError, match=rf"father\.txt:{n}: expected two fields"):
        build_broken(tmp_path, "copen", data)


def test_copen_parent_not_a_concept(tmp_path: Path) -> None:
    data = make_data(tmp_path, "copen")
    father = data / "copen/schema/father.txt"
    edit_lines(father, lambda ls: [*ls, "Widget\t\tGadget"])
    n = line_of(father, "Widget")
    with pytest.raises(SourceError, match=rf"father\.txt:{n}: parent 'Gadget'"):
        build_broken(tmp_path, "copen", data)


def test_copen_mapping_unknown_concept(tmp_path: Path) -> None:
    data = make_data(tmp_path, "copen")
    mapping = data / "copen/schema/mapping.txt"
    edit_lines(mapping, lambda ls: [*ls[:10], "Q42\t\tNoSuchConcept", *ls[10:]])
    with pytest.raises(SourceError, match=r"mapping\.txt:11: Q42 maps to 'NoSuchConcept'"):
        build_broken(tmp_path, "copen", data)


def test_hyperlex_bad_pos(tmp_path: Path) -> None:
    data = make_data(tmp_path, "hyperlex")
    path = data / "hyperlex/hyperlex-all.txt"
    edit_lines(path, lambda ls: [ls[0], ls[1], ls[2].replace(" V ", " X ", 1), *ls[3:]])
    with pytest.raises(SourceError, match=r"hyperlex-all\.txt:3: POS must be N or V"):
        build_broken(tmp_path, "hyperlex", data)


def test_hyperlex_split_pair_not_in_all(tmp_path: Path) -> None:
    data = make_data(tmp_path, "hyperlex")
    path = data / "hyperlex/splits/random/hyperlex_dev_all_random.txt"
    edit_lines(path, lambda ls: [*ls, "zzzz yyyy N hyp-1 3.00 5.00 1.00 3 3"])
    n = len(path.read_text(encoding="utf-8").splitlines())
    with pytest.raises(SourceError, match=rf"hyperlex_dev_all_random\.txt:{n}: .* not in"):
        build_broken(tmp_path, "hyperlex", data)


def test_norms_bad_integer(tmp_path: Path) -> None:
    data = make_data(tmp_path, "norms")
    path = data / "battig-montague-1969/battig_montague_1969.tsv"

    def break_freq(ls: list[str]) -> list[str]:
        cells = ls[4].split("\t")
        cells[5] = "many"
        return [*ls[:4], "\t".join(cells), *ls[5:]]

    edit_lines(path, break_freq)
    with pytest.raises(SourceError, match=r"battig_montague_1969\.tsv:5: column 'freq'"):
        build_broken(tmp_path, "norms", data)


def _write_responses(data: Path, content: object) -> None:
    path = data / "cao-probe-responses/human_responses.json.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(content, fh)


def test_responses_empty_lists_warn(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write_responses(data, {"dog": {"hyp": {"[DET] [W] is a kind of [V]": [
        ["animal", "Pet "], [], ["mammal"], []]}}})
    (report,) = build(["responses"], store_path=tmp_path / "store", data_dir=data,
                      verify=False, progress=False)
    assert any("2 annotator answer lists are empty" in w for w in report.warnings)
    rows = LocalStore.open(tmp_path / "store").query(PREFIX + """SELECT ?ann ?i ?t ?nt WHERE {
        GRAPH ?g { ?a kgp:answerOf ?p ; kgp:annotator ?ann ; kgp:position ?i ;
                      kgp:responseText ?t ; kgp:normalisedText ?nt } } ORDER BY ?ann ?i""")
    assert rows == [{"ann": 1, "i": 0, "t": "animal", "nt": "animal"},
                    {"ann": 1, "i": 1, "t": "Pet ", "nt": "pet"},
                    {"ann": 3, "i": 0, "t": "mammal", "nt": "mammal"}]


def test_responses_wrong_annotator_count(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write_responses(data, {"dog": {"hyp": {"[DET] [W] is a kind of [V]": [["animal"]]}}})
    with pytest.raises(SourceError, match=r"human_responses\.json\.gz: at .*'dog'.*4 annotator"):
        build_broken(tmp_path, "responses", data)
