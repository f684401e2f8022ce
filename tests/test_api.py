"""The notebook API (probes.app.api) with the fake model of test_run, and docs/api.md run as a
doctest with a real model (slow)."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from kg.store import LocalStore
from probes.app import api
from probes.engine.errors import ProbeError
from tests.test_outputs import expected_mean_scores
from tests.test_run import ANIMALS, FakeScorer, choice_probe, fake_value
from tests.test_stats import wilson_by_hand

ROOT = Path(__file__).parents[1]


def probe_folder(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "queries"
    folder.mkdir()
    (folder / "choice.rq").write_text(choice_probe())
    (folder / "other.rq").write_text(choice_probe(name="t/other"))
    return folder, tmp_path / "results.duckdb"


def test_lists_are_dataframes_with_descriptions(tmp_path: Path) -> None:
    folder, _ = probe_folder(tmp_path)
    found = api.list_probes([folder], include_default=False)
    assert found.select("name", "task").rows() == [("t/choice", "choice"), ("t/other", "choice")]
    tasks = dict(api.list_tasks().rows())
    assert set(tasks) == {"binary", "choice", "generate", "probing", "records", "relatum",
                          "subsumption"}
    assert all(tasks.values())
    metrics = api.list_metrics()
    acc = metrics.filter(pl.col("metric") == "choice_accuracy").row(0, named=True)
    assert acc["tasks"] == ["choice"] and acc["grain"] == ["run_id", "probe", "split"]
    text = api.listing(queries=[folder], include_default=False)
    for line in ("probes:", "  t/choice", "tasks:", "  relatum", "metrics:",
                 "  choice_accuracy", "model args", "  trust_remote_code"):
        assert line in text
    with pytest.raises(ProbeError, match="cannot list 'models'"):
        api.listing("models")


def test_load_probe_by_name_file_and_ambiguous_glob(tmp_path: Path) -> None:
    folder, _ = probe_folder(tmp_path)
    assert api.load_probe("t/choice", [folder], include_default=False).spec.name == "t/choice"
    assert api.load_probe(folder / "other.rq").spec.name == "t/other"
    with pytest.raises(ProbeError, match="matches 2 probes"):
        api.load_probe("t/*", [folder], include_default=False)


def test_export_score_metrics_query_with_a_fake_model(tmp_path: Path) -> None:
    folder, results = probe_folder(tmp_path)
    probe = api.load_probe(folder / "choice.rq")
    inst = api.export(probe, LocalStore.in_memory(), results)
    assert sorted(inst["target"]) == sorted(ANIMALS)
    assert inst.filter(pl.col("target") == "owl")["gold"].to_list() == [["bird"]]
    scores = api.score(probe, FakeScorer(), results)
    assert scores.height == 18 and scores["model"].unique().to_list() == ["fake/model"]
    owl = scores.join(inst.select("instance_id", "target"), on="instance_id").filter(
        (pl.col("target") == "owl") & (pl.col("candidate") == "bird")
        & (pl.col("prompt_id") == 0))
    assert owl["score"].to_list() == [pytest.approx(-fake_value("owl is a| bird."))]
    means = expected_mean_scores()
    right = sum(all(means[w][g] > s for c, s in means[w].items() if c != g)
                for w, (g, _) in ANIMALS.items())
    got = api.metrics(results, "choice_accuracy", model="fake/*")
    assert got.select("metric", "model", "probe", "split", "n").rows() == [
        ("choice_accuracy", "fake/model", "t/choice", "test", 3)]
    assert got["value"].to_list() == [pytest.approx(right / 3)]
    # beside the mean: its Wilson interval over the 3 instances and the two prompts' values
    # (tests/test_outputs.py works them out from the fake model)
    assert (got["ci_low"][0], got["ci_high"][0]) == pytest.approx(wilson_by_hand(right, 3))
    per = got.select("per_prompt").explode("per_prompt").unnest("per_prompt")
    assert per["prompt_id"].to_list() == [0, 1] and per["n"].to_list() == [3, 3]
    assert got["n_prompts"].to_list() == [2]
    assert api.metrics(results, "choice_accuracy", probe="nothing/*").height == 0
    with pytest.raises(ProbeError, match="unknown metric"):
        api.metrics(results, "accuracy")
    assert api.query(results, "SELECT count(*) AS n FROM scores").item() == 18
    assert api.runs(results).select("probe", "status").rows() == [("t/choice", "done")]
    paths = api.save_outputs(results, scores["run_id"].unique().to_list(), tmp_path / "out")
    assert [p.name for p in paths] == ["scores.parquet"]
    assert pl.read_parquet(paths[0]).height == 18


def test_score_before_export_is_a_clear_error(tmp_path: Path) -> None:
    folder, results = probe_folder(tmp_path)
    api.export(api.load_probe(folder / "other.rq"), LocalStore.in_memory(), results)
    with pytest.raises(ProbeError, match=r"probes\.engine\.export -p t/choice"):
        api.score(api.load_probe(folder / "choice.rq"), FakeScorer(), results)


def test_load_scorer_checks_model_args_before_loading(monkeypatch: Any) -> None:
    import probes.backends.registry as registry

    seen: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(registry, "load_scorer",
                        lambda name, **kw: seen.append((name, kw)) or FakeScorer())
    with pytest.raises(ProbeError, match="disagree"):
        api.load_scorer("m", "dtype=float16", dtype="float32")
    assert seen == []
    api.load_scorer("m", "revision=main,allow_pickle=true", threads=1)
    assert seen == [("m", {"threads": 1, "revision": "main", "allow_pickle": True})]


def test_importing_the_api_does_not_import_torch() -> None:
    code = "import sys, probes.app.api; print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_docs_api_examples_run() -> None:
    """docs/api.md, run as a doctest (loads smollm2-135m, scores a 5-instance sample)."""
    failed, tried = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                                     optionflags=doctest.ELLIPSIS)
    assert tried > 20 and failed == 0
