"""Probes against a SPARQL endpoint that holds the sources (docs/scale.md, "The store side").

``oxigraph serve --union-default-graph`` on 127.0.0.1 serves the tiny store (tests/conftest.py).
The whole pipeline — ``probes.engine.export --endpoint URL`` then ``probes.engine.run`` (plain and
sharded) —
must give the same instances and scores as the embedded store, with the probe's ``graphs:``
header checked against the endpoint's named graphs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.vocab import graph
from probes.app.run import main
from probes.engine.export import main as export_main
from tests.test_run import FakeScorer, query

PROBE = f"""# name: t/kinds
# task: relatum
# split: test
# target: ?w
# gold: ?g
# group_by: ?w
# prompts: ["[DET] [W] is a kind of [V]."]
# graphs: [animals]
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?w ?g WHERE {{
  GRAPH {graph("animals")} {{ ?c rdfs:subClassOf ?p . ?c rdfs:label ?w . ?p rdfs:label ?g
    FILTER(LANG(?w) = "") }}
}} ORDER BY ?w ?g
"""


def pipeline(tmp_path: Path, name: str, source: list[str], *run_args: str) -> Path:
    """probes.engine.export from ``source`` (--endpoint URL or --store DIR), then
    probes.engine.run."""
    qdir = tmp_path / "queries"
    qdir.mkdir(exist_ok=True)
    (qdir / "kinds.rq").write_text(PROBE)
    results = tmp_path / f"{name}.duckdb"
    common = ["--queries", str(qdir), "--only-extra", "--results", str(results), "--quiet"]
    assert export_main([*source, *common, "--no-parquet"]) == 0
    argv = [*common, "--model", "fake/model", "-p", "t/kinds", *run_args]
    assert main(argv, lambda name, **kw: FakeScorer(kind="masked")) == 0
    return results


def test_probes_over_an_endpoint_score_like_the_embedded_store(
        tiny_endpoint: str, tiny_store_path: Path, tmp_path: Path) -> None:
    local = pipeline(tmp_path, "local", ["--store", str(tiny_store_path)])
    remote = pipeline(tmp_path, "remote", ["--endpoint", tiny_endpoint])
    sql = "SELECT instance_id, prompt_id, rank, token, probability FROM responses ORDER BY ALL"
    got, want = query(remote, sql), query(local, sql)
    assert got == want and len(want) == 5 * 10  # dog, cat, mammal, sparrow, bird x top-10
    gold = "SELECT target, gold FROM instances ORDER BY target"
    assert query(remote, gold) == query(local, gold) == [
        ("bird", ["animal"]), ("cat", ["mammal"]), ("dog", ["mammal", "pet"]),
        ("mammal", ["animal"]), ("sparrow", ["bird"])]
    # a sharded run over the endpoint's export merges to the same rows
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    for i in range(2):
        pipeline(sharded, "remote", ["--endpoint", tiny_endpoint], "--shard", f"{i}/2")
    assert main(["merge", "--shards", "2", "--results", str(sharded / "remote.duckdb")]) == 0
    assert query(sharded / "remote.duckdb", sql) == want


def test_missing_graph_on_the_endpoint_is_a_clear_error(tiny_endpoint: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    qdir = tmp_path / "queries"
    qdir.mkdir()
    (qdir / "kinds.rq").write_text(PROBE.replace("[animals]", "[wordnet]"))
    code = export_main(["--endpoint", tiny_endpoint, "--queries", str(qdir), "--only-extra",
                        "--results", str(tmp_path / "r.duckdb"), "--no-parquet", "--quiet"])
    assert code == 2
    assert "wordnet" in capsys.readouterr().err
