"""Per-class splits by exact counts and the class balance of every split (issue 11, point 1
and 2), on a small ontology written by the test, and the shortcut-baseline metric.

The ontology (no data files, no reasoner: the asserted closure is the inferred graph)::

    Food > Bread, Cake, Pie, Fruit;  each of those > three kinds (e.g. Bread > Bread1..3);
    Stone > Stone1..3;  Tool > Tool1..3

Entailed subsumptions between probe classes, counted by hand: 4 (kinds of food ⊑ Food) +
12 × 2 (each food kind ⊑ its parent and Food) + 3 + 3 = 34 positives.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import duckdb
import polars as pl
import pytest

from eval.sqlfile import discover_metrics, run_metric
from kg.build import load_source
from kg.manifest import Source, SourceFile
from kg.store import LocalStore
from probes.benchmarks import ontolama
from probes.benchmarks.ontolama.complex import Sample
from probes.benchmarks.ontolama.verbalise import And, Named, Some
from probes.engine.errors import ProbeFileError
from probes.engine.spec import Probe, parse_probe
from probes.results import connect

T = "http://example.org/s#"
ROOT = Path(__file__).resolve().parents[1]
METRICS = {m.name: m for m in discover_metrics([ROOT / "eval" / "ontolama"])}
PARENTS = {"Food": None, "Stone": None, "Tool": None,
           **{k: "Food" for k in ("Bread", "Cake", "Pie", "Fruit")}}
for _p in ("Bread", "Cake", "Pie", "Fruit", "Stone", "Tool"):
    PARENTS.update({f"{_p}{i}": _p for i in (1, 2, 3)})
POSITIVES = 4 + 12 * 2 + 3 + 3


def _owl() -> str:
    classes = []
    for name, parent in PARENTS.items():
        sub = f'<rdfs:subClassOf rdf:resource="{T}{parent}"/>' if parent else ""
        classes.append(f'<owl:Class rdf:about="{T}{name}"><rdfs:label>{name.lower()}'
                       f"</rdfs:label>{sub}</owl:Class>")
    return f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
         xmlns:owl="http://www.w3.org/2002/07/owl#" xml:base="http://example.org/s">
  <owl:Ontology rdf:about="http://example.org/s"/>
  {"".join(classes)}
</rdf:RDF>"""


def small_probe(splits: str) -> Probe:
    text = (ROOT / "queries" / "ontolama" / "pizza-atomic.rq").read_text(encoding="utf-8")
    text = text.replace("graph/pizza", "graph/small").replace("ontolama/pizza-", "t/small-")
    text = text.replace("graphs: [pizza]", "graphs: [small]")
    text = text.replace("ontology: pizza", "ontology: small")
    text = text.replace("splits: {train: 0.8, dev: 0.1, test: 0.1}", f"splits: {splits}")
    # beside the shared query its header names (query: atomic.sparql)
    return parse_probe(text, ROOT / "queries" / "ontolama" / "small-atomic.rq")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LocalStore:
    tmp = tmp_path_factory.mktemp("small")
    (tmp / "small.owl").write_text(_owl(), encoding="utf-8")
    src = Source(name="small", title="small", loader="kg.owl", root="data", format="test",
                 license="test", url="https://example.org/small",
                 files=(SourceFile("small.owl"),), options={"reason": False})
    s = LocalStore.in_memory()
    load_source(s.oxigraph, src, [tmp / "small.owl"], tmp)
    return s


def per_split(df: pl.DataFrame) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for split, gold in zip(df["split"].to_list(), df["gold"].to_list(), strict=True):
        out.setdefault(split, Counter())[gold[0]] += 1
    return out


@pytest.mark.parametrize(("splits", "expected"), [
    # 34 per class: floor(0.8 * 34) = 27, floor(0.1 * 34) = 3, the rest 4
    ("{train: 0.8, dev: 0.1, test: 0.1}", {"train": 27, "dev": 3, "test": 4}),
    # floor(0.2 * 34) = 6, floor(0.1 * 34) = 3, the rest 25 (the paper's 2:1:7)
    ("{train: 0.2, dev: 0.1, test: 0.7}", {"train": 6, "dev": 3, "test": 25}),
])
def test_exact_per_class_split_counts(store: LocalStore, splits: str,
                                      expected: dict[str, int]) -> None:
    df, counts = ontolama.atomic_instances(small_probe(splits), store)
    assert counts["positive"] == POSITIVES
    assert counts["soft"] + counts["hard"] == POSITIVES  # as many negatives, half of each kind
    assert abs(counts["soft"] - counts["hard"]) <= 1
    got = per_split(df)
    assert got == {s: Counter({"1": n, "0": n}) for s, n in expected.items()}
    fields = [json.loads(f) for f in df["fields"]]
    assert [f["split"] for f in fields] == df["split"].to_list()  # the field agrees


def test_split_is_seeded(store: LocalStore) -> None:
    probe = small_probe("{train: 0.8, dev: 0.1, test: 0.1}")
    df, _ = ontolama.atomic_instances(probe, store)
    again, _ = ontolama.atomic_instances(probe, store)
    assert df.sort("instance_id")["split"].to_list() == again.sort("instance_id")["split"].to_list()
    other = ontolama.split_per_class(df, (Fraction(8, 10), Fraction(1, 10), Fraction(1, 10)), 7)
    assert per_split(other) == per_split(df)  # same counts ...
    assert (other.sort("instance_id")["split"].to_list()
            != df.sort("instance_id")["split"].to_list())  # ... other members


def test_paper_sizes() -> None:
    """Schema.org: 2,021 positives at 2:1:7 give the paper's 808/404/2,830; DOID's 56,563 at
    8:1:1 its 90,500/11,312/11,314 (Table 2)."""
    two, eight = ((Fraction(2, 10), Fraction(1, 10), Fraction(7, 10)),
                  (Fraction(8, 10), Fraction(1, 10), Fraction(1, 10)))
    assert tuple(2 * n for n in ontolama.split_counts(2021, two)) == (808, 404, 2830)
    assert tuple(2 * n for n in ontolama.split_counts(56563, eight)) == (90500, 11312, 11314)


def _sample(anchor: str, label: int, complex_first: bool) -> Sample:
    named, expr = Named(anchor), And((Named("X"), Some("p", Named(anchor + "-y"))))
    sub, sup = (expr, named) if complex_first else (named, expr)
    return Sample(anchor, expr, sub, sup, label, "test")


def test_complex_balance_removes_the_side_shortcut(tmp_path: Path) -> None:
    """Positives put the complex concept first 3 times in 4 (as superclasses outnumber
    subclasses in real ontologies); negatives come 50/50 from the corruption step and are 2
    more than the positives. After balance_complex: as many of each class in every split, and
    in every split as many negatives as positives with the complex concept first, so the rule
    "complex first => subsumption" scores exactly 50 %."""
    samples = [_sample(f"a{i}", 1, i % 4 != 0) for i in range(40)]
    samples += [_sample(f"b{i}", 0, i % 2 == 0) for i in range(42)]
    out = ontolama.balance_complex(samples, (Fraction(2, 10), Fraction(1, 10),
                                             Fraction(7, 10)), 42)
    counts = Counter((s.split, s.label) for s in out)
    assert counts == {("train", 1): 8, ("train", 0): 8, ("dev", 1): 4, ("dev", 0): 4,
                      ("test", 1): 28, ("test", 0): 28}
    for split in ("train", "dev", "test"):
        first = Counter(s.label for s in out if s.split == split
                        and ontolama.complex_on_premise(s))
        assert first[1] == first[0]
    # the same through the instances table and the SQL metric
    names = {"X": "x", "p": "has y"} | {f"{s.anchor}-y": "y" for s in out} | {
        s.anchor: s.anchor for s in out}
    from probes.benchmarks.ontolama.verbalise import PosLexicon, Verbaliser

    df = ontolama.sample_instances("ontolama/t-complex", out,
                                   Verbaliser(names, {"p": "has y"}, PosLexicon.small()))
    con = connect(tmp_path / "r.duckdb")
    con.register("df", df.to_arrow())
    con.execute("INSERT INTO instances SELECT probe, split, instance_id, target, gold, "
                "candidates, fields::JSON, now() FROM df")
    rows = _metric(con, "ontolama_shortcuts")
    # fitted on train (balanced: a tie, answered "0"), the majority class and the side of the
    # complex concept score 50 % on every split
    assert {(r["split"], r["rule"]): r["value"] for r in rows
            if r["rule"] in ("majority", "complex_side")} == {
        (s, b): 0.5 for s in ("train", "dev", "test") for b in ("majority", "complex_side")}


def _metric(con: duckdb.DuckDBPyConnection, name: str) -> list[dict]:
    cols, rows = run_metric(con, METRICS[name])
    return [dict(zip(cols, r, strict=True)) for r in rows]


def _sc_rows(df: pl.DataFrame, tmp_path: Path) -> list[dict]:
    con = connect(tmp_path / "sc.duckdb")
    con.register("df", df.to_arrow())
    con.execute("INSERT INTO instances SELECT probe, split, instance_id, target, gold, "
                "candidates, fields::JSON, now() FROM df")
    return _metric(con, "ontolama_shortcuts")


def test_controlled_atomic_split(store: LocalStore, tmp_path: Path) -> None:
    """control: super_class (issue 23): no super-class in two splits, every split exactly
    balanced, and so the super-class lookup fitted on train never finds a test super-class:
    it answers the train majority (a tie: "0") everywhere, exactly 50 % on a balanced split."""
    probe = ontolama.controlled(small_probe("{train: 0.6, dev: 0.2, test: 0.2}"))
    assert probe.spec.name == "t/small-atomic-controlled"
    assert ontolama.control(probe) == "super_class"
    df, _ = ontolama.atomic_instances(probe, store)
    fields = [json.loads(f) for f in df["fields"]]
    where: dict[str, set[str]] = {}
    for f, split in zip(fields, df["split"].to_list(), strict=True):
        where.setdefault(f["super_class"], set()).add(split)
        assert f["split"] == split
    assert all(len(s) == 1 for s in where.values())
    got = per_split(df)
    assert all(c["1"] == c["0"] > 0 for c in got.values()) and set(got) == {"train", "dev",
                                                                              "test"}
    df = df.with_columns(pl.lit("ontolama/small-atomic-controlled").alias("probe"))
    lookup = {r["split"]: r["value"] for r in _sc_rows(df, tmp_path)
              if r["rule"] == "lookup_super"}
    assert lookup["dev"] == lookup["test"] == 0.5


def test_control_of_the_wrong_kind_is_an_error() -> None:
    text = (ROOT / "queries" / "ontolama" / "pizza-atomic.rq").read_text(encoding="utf-8")
    probe = parse_probe(text.replace("kind: atomic,", "kind: atomic, control: complex_concept,"),
                        ROOT / "queries" / "ontolama" / "x.rq")
    with pytest.raises(ProbeFileError, match="use control: super_class"):
        ontolama.control(probe)


def test_controlled_complex_split() -> None:
    """control: complex_concept: 10 complex concepts, each with 3 positives (the complex
    concept first in 2) and 3 negatives; whole concepts go to one split, each split is cut to
    its smaller class, and the complex-first rule stays at 50 % in each split."""
    samples = []
    for k in range(10):
        expr = And((Named("X"), Some("p", Named(f"c{k}"))))
        for j in range(3):
            named = Named(f"a{k}-{j}")
            samples.append(Sample(f"a{k}", expr, *((expr, named) if j else (named, expr)), 1,
                                  "test"))
            samples.append(Sample(f"a{k}", expr, named, expr, 0, "test"))
    out = ontolama.balance_complex(samples, (Fraction(6, 10), Fraction(2, 10),
                                             Fraction(2, 10)), 42, "complex_concept")
    where: dict[str, set[str]] = {}
    for s in out:
        where.setdefault(ontolama.complex_concept(s), set()).add(s.split)
    assert all(len(v) == 1 for v in where.values())
    # every concept holds 3 + 3, so no split is cut: 30 of each class in all
    counts = Counter((s.split, s.label) for s in out)
    assert sum(counts.values()) == 60
    for split in ("train", "dev", "test"):
        assert counts[(split, 1)] == counts[(split, 0)] > 0
        first = Counter(s.label for s in out if s.split == split
                        and ontolama.complex_on_premise(s))
        assert first[1] == first[0]
