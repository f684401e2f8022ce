"""The researcher's probes of issue 24 (queries/research/) and HyperLex's own Spearman metric
(queries/research/metrics/), checked against scipy.stats.spearmanr."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from scipy.stats import spearmanr

from eval.sqlfile import discover_metrics, run_metric
from kg.store import LocalStore
from kg.vocab import graph
from probes.engine.export import build_instances
from probes.engine.spec import load_probe
from probes.results import connect, transaction
from probes.results.writers import Run, ScoreRow, insert_run, write_scores

RESEARCH = Path(__file__).parents[1] / "queries" / "research"
METRICS = {m.name: m for m in discover_metrics([RESEARCH / "metrics"])}

# (human score, model scores over two prompts, baselines): ties in both columns
PAIRS = [(5.5, (-2.0, -4.0), -1.0), (1.0, (-6.0, -6.0), -7.0), (3.0, (-3.0, -3.0), -6.5),
         (3.0, (-1.0, -5.0), -2.0), (0.5, (-8.0, -2.0), -3.0), (4.0, (-2.5, -2.5), -9.0)]


@pytest.mark.parametrize("name", ["body-meronymy", "body-meronymy-inflected",
                                  "hyperlex-graded", "typicality"])
def test_the_research_probes_parse(name: str) -> None:
    probe = load_probe(RESEARCH / f"{name}.rq")
    assert probe.spec.name == f"research/{name}"
    assert len(probe.spec.prompts) == 2


def test_hyperlex_spearman_equals_scipy_with_ties(tmp_path: Path) -> None:
    con = connect(tmp_path / "r.duckdb")
    with transaction(con):
        insert_run(con, Run(run_id="r", model="m", probe="research/hyperlex-graded",
                            task="choice", status="done"))
        rows = []
        for i, (human, scores, base) in enumerate(PAIRS):
            con.execute("INSERT INTO instances (probe, split, instance_id, gold, candidates, "
                        "fields, exported_at) VALUES ('research/hyperlex-graded', 'test', ?, "
                        "['y'], ['y'], ?::JSON, now())", [f"i{i}", json.dumps({"score": human})])
            rows += [ScoreRow("r", "research/hyperlex-graded", "test", f"i{i}", p, "y", "y", "",
                              s, 1, 1, base) for p, s in enumerate(scores)]
        write_scores(con, rows)
    got = {}
    for name in ("hyperlex_spearman", "hyperlex_spearman_pmi"):
        cols, out = run_metric(con, METRICS[name])
        got[name] = (out[0][cols.index("value")], out[0][cols.index("n")])
    con.close()
    humans = [h for h, _, _ in PAIRS]
    means = [sum(s) / 2 for _, s, _ in PAIRS]
    pmi = [sum(s) / 2 - b for _, s, b in PAIRS]
    assert got["hyperlex_spearman"] == (pytest.approx(spearmanr(means, humans)[0]), 6)
    assert got["hyperlex_spearman_pmi"] == (pytest.approx(spearmanr(pmi, humans)[0]), 6)


KGP = "https://w3id.org/kgprobe/vocab#"
WN = "http://www.w3.org/2006/03/wn/wn20/schema/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _store(source: str, triples: list[tuple[str, str, object]]) -> LocalStore:
    g = graph(source)
    store = LocalStore.in_memory()
    store.oxigraph.extend([ox.Quad(ox.NamedNode(s), ox.NamedNode(p),
                                   o if isinstance(o, ox.Literal) else ox.NamedNode(str(o)), g)
                           for s, p, o in triples])
    return store


def test_typicality_pits_the_most_produced_exemplar_against_the_5_least() -> None:
    # fruit: 8 exemplars by rank; the last 5 ranks are 4..8, of which "ugli fruit" has a space
    fruit = ["apple", "orange", "pear", "plum", "fig", "ugli fruit", "quince", "lime"]
    triples: list[tuple[str, str, object]] = []
    for rank, word in enumerate(fruit, start=1):
        e = f"http://example.org/fruit-{rank}"
        triples += [(e, RDF_TYPE, KGP + "CategoryExemplar"),
                    (e, KGP + "category", ox.Literal("fruit")),
                    (e, KGP + "exemplar", ox.Literal(word)),
                    (e, KGP + "rank", ox.Literal(rank))]
    df = build_instances(load_probe(RESEARCH / "typicality.rq"), _store("norms", triples))
    assert df["target"].to_list() == ["fruit"]
    assert df["gold"].to_list() == [["apple"]]
    assert sorted(df["candidates"][0]) == ["apple", "fig", "lime", "plum", "quince"]


def test_body_meronymy_collects_the_parts_of_each_body_synset() -> None:
    triples: list[tuple[str, str, object]] = []

    def synset(name: str, lemmas: list[str], domain: str) -> str:
        s = f"http://example.org/synset-{name}"
        triples.append((s, KGP + "lexicalDomain", ox.Literal(domain)))
        for lemma in lemmas:
            iri = lemma.replace(" ", "_")
            sense, word = f"{s}-{iri}", f"http://example.org/word-{iri}"
            triples.extend([(s, WN + "containsWordSense", sense), (sense, WN + "word", word),
                            (word, WN + "lexicalForm", ox.Literal(lemma))])
        return s

    hand = synset("hand", ["hand", "manus"], "noun.body")
    wheel = synset("wheel", ["wheel"], "noun.artifact")
    for part, lemmas, whole in (("finger", ["finger"], hand), ("palm", ["palm", "thenar"], hand),
                                ("spoke", ["spoke"], wheel), ("ball", ["ball of the thumb"],
                                                              hand)):
        triples.append((synset(part, lemmas, "noun.body"), WN + "partMeronymOf", whole))
    df = build_instances(load_probe(RESEARCH / "body-meronymy.rq"), _store("wordnet", triples))
    got = {t: sorted(g) for t, g in zip(df["target"], df["gold"], strict=True)}
    # single-word lemmas only; the wheel is no body part
    assert got == {"hand": ["finger", "palm", "thenar"], "manus": ["finger", "palm", "thenar"]}
