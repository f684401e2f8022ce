"""``--output-path`` / ``--log-samples`` and the Parquet export of scores and responses
(probes.app.outputs), driven through ``probes.app.run.main`` with the fake model of test_run. Every
expected number is worked out here from the fake model's formula, not read from the code."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from probes.app.run import main
from tests.test_run import ANIMALS, FakeScorer, choice_probe, fake_topk, fake_value, run, setup
from tests.test_stats import wilson_by_hand

DET = {"bird": "a", "tree": "a", "apple": "an", "animal": "an", "object": "an", "thing": "a"}


def expected_mean_scores() -> dict[str, dict[str, float]]:
    """target -> candidate -> mean over the two prompts of the fake log-probability."""
    out: dict[str, dict[str, float]] = {}
    for w, (g, cs) in ANIMALS.items():
        art = "An" if w in ("owl", "emu") else "A"
        out[w] = {c: (-fake_value(f"{w} is {DET[c]}| {c}.")
                      - fake_value(f"{art} {w} is a kind of| {c}")) / 2 for c in [g, *cs]}
    return out


def one_file(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def test_output_path_writes_results_json_samples_and_parquet(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    out = tmp_path / "out"
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--output-path", str(out),
               "--log-samples", "--model-args", "revision=main") == 0
    folder = out / "fake__model"  # the model name with / as __
    doc = json.loads(one_file(folder, "results_*.json").read_text())
    means = expected_mean_scores()
    right = [w for w, (g, _) in ANIMALS.items()
             if all(means[w][g] > s for c, s in means[w].items() if c != g)]
    ranks = [1 + sum(s >= means[w][g] for c, s in means[w].items() if c != g)
             for w, (g, _) in ANIMALS.items()]
    rows = {r["metric"]: r for r in doc["results"]["t/choice"]}
    assert rows["choice_accuracy"]["value"] == pytest.approx(len(right) / 3)
    assert rows["choice_accuracy"]["n"] == 3 and rows["choice_accuracy"]["split"] == "test"
    assert rows["choice_mrr"]["value"] == pytest.approx(sum(1 / r for r in ranks) / 3)
    assert "binary_accuracy" not in rows  # applies to binary runs only
    # per prompt: each prompt's scores alone (prompt 0 "W is a C.", prompt 1 "A W is a kind
    # of C"), the instance right when its gold scores above both others under that prompt
    def prompt_score(w: str, c: str, pid: int) -> float:
        art = "An" if w in ("owl", "emu") else "A"
        return -fake_value(f"{w} is {DET[c]}| {c}." if pid == 0
                           else f"{art} {w} is a kind of| {c}")

    acc = rows["choice_accuracy"]
    for pid in (0, 1):
        right_p = sum(all(prompt_score(w, g, pid) > prompt_score(w, c, pid) for c in cs)
                      for w, (g, cs) in ANIMALS.items())
        assert acc["per_prompt"][pid] == {"prompt_id": pid, "value": pytest.approx(right_p / 3),
                                          "n": 3}
    values = [p["value"] for p in acc["per_prompt"]]
    assert (acc["n_prompts"], acc["prompt_min"], acc["prompt_max"]) == (2, min(values),
                                                                        max(values))
    # the interval over the 3 instances: Wilson (a share of instances)
    assert acc["ci_method"] == "Wilson"
    assert (acc["ci_low"], acc["ci_high"]) == pytest.approx(wilson_by_hand(len(right), 3))
    assert doc["config"]["model"] == "fake/model"
    assert doc["config"]["model_args"] == {"revision": "main"}
    assert doc["config"]["apply_chat_template"] is False
    assert doc["runs"]["t/choice"]["status"] == "done"
    assert doc["runs"]["t/choice"]["config"]["task"] == "choice"
    assert set(doc["versions"]) >= {"python", "kgprobe", "torch", "duckdb"}
    # the environment by the hash of the lock file it was installed from (sha256 of the file)
    lock = (Path(__file__).resolve().parents[1] / "requirements.lock").read_bytes()
    assert doc["versions"]["requirements.lock"] == "sha256:" + hashlib.sha256(lock).hexdigest()

    lines = one_file(folder, "samples_t__choice_*.jsonl").read_text().splitlines()
    samples = {s["target"]: s for s in map(json.loads, lines)}
    assert set(samples) == set(ANIMALS)
    for w, (g, _) in ANIMALS.items():
        s = samples[w]
        assert s["gold"] == [g]
        assert len(s["scores"]) == 6  # 3 candidates x 2 prompts
        assert s["prediction"] == max(means[w], key=lambda c: means[w][c])
        owl0 = next(x for x in s["scores"] if x["prompt_id"] == 0 and x["candidate"] == g)
        assert owl0["prompt"] == f"{w} is {DET[g]} {g}."
        assert owl0["score"] == pytest.approx(-fake_value(f"{w} is {DET[g]}| {g}."))

    scores = pl.read_parquet(one_file(folder, "scores_*.parquet"))
    assert scores.height == 18
    assert {"run_id", "probe", "split", "instance_id", "prompt_id", "candidate", "label",
            "prompt", "score", "n_tokens"} <= set(scores.columns)
    assert not list(folder.glob("responses_*.parquet"))  # a choice run has no responses


def test_relatum_samples_and_responses_parquet(tmp_path: Path) -> None:
    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
             '# prompts: ["[DET] [W] is a kind of [V]."]\n'
             'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") ("cat" "animal") } }\n')
    qdir, results = setup(tmp_path, probe)
    out = tmp_path / "out"
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/rel", "--top-k", "3",
               "--output-path", str(out), "--log-samples") == 0
    folder = out / "fake__model"
    responses = pl.read_parquet(one_file(folder, "responses_*.parquet"))
    assert responses.height == 2 * 3  # 2 instances x top 3
    samples = {s["target"]: s for s in map(
        json.loads, one_file(folder, "samples_t__rel_*.jsonl").read_text().splitlines())}
    top = fake_topk("An owl is a kind of [MASK].", 3)
    assert samples["owl"]["responses"][0]["tokens"] == [w for w, _ in top]
    assert samples["owl"]["responses"][0]["template"] == "[DET] [W] is a kind of [V]."
    assert samples["owl"]["prediction"] == top[0][0]
    assert samples["owl"]["scores"] == []


def test_parquet_is_plain_parquet_for_any_reader(tmp_path: Path) -> None:
    # what datasets.load_dataset("parquet", ...) reads the file with: pyarrow's own reader
    # (datasets is no dependency: this checks the file, not a third reader of it)
    import pyarrow.parquet as pq

    qdir, results = setup(tmp_path, choice_probe())
    out = tmp_path / "out"
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--output-path", str(out)) == 0
    path = one_file(out / "fake__model", "scores_*.parquet")
    table = pq.read_table(path)
    assert table.num_rows == 18 and "score" in table.column_names
    assert str(table.schema.field("score").type) == "double"
    assert pq.ParquetFile(path).metadata.num_row_groups >= 1


def test_log_samples_needs_output_path(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--log-samples") == 2
    assert "--log-samples needs --output-path" in capsys.readouterr().err


def test_output_path_that_is_a_file_is_an_error(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    (tmp_path / "afile").write_text("x")
    assert main(["--model", "fake/model", "--results", str(results), "--queries", str(qdir),
                 "--only-extra", "--quiet", "-p", "t/choice", "--output-path",
                 str(tmp_path / "afile")], lambda name, **kw: FakeScorer()) == 2
    assert "is a file" in capsys.readouterr().err
