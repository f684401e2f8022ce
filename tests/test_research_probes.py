"""The researcher's probes of issue 24 (queries/research/) and HyperLex's own Spearman metric
(queries/research/metrics/), checked against scipy.stats.spearmanr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from eval.sqlfile import discover_metrics, run_metric
from probes.results import connect, transaction
from probes.results.writers import Run, ScoreRow, insert_run, write_scores
from probes.spec import load_probe

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
