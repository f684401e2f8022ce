"""Models larger than one device: accelerate's ``device_map`` with a small ``max_memory``.

Tiny causal (GPT-2), masked (BERT) and seq2seq (T5) models with small vocabularies (so that the
transformer blocks, not the embeddings, hold most weights) are loaded twice: whole
on the CPU, and through ``device_map="auto"`` with a ``max_memory`` far below their size, so
that accelerate keeps only some layers in memory and offloads the others to disk (weights read
back layer by layer during the forward pass). On a machine without GPUs this is the split a
large model gets across GPUs + CPU + disk. Every operation must give the same numbers both ways:
the whole model is the reference, scores equal to 1e-5.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from probes.backends import ModelError, load_scorer
from probes.engine.placement import Placement, parse_max_memory
from tests.test_run import ANIMALS, tiny_causal_model, tiny_masked_model
from tests.tolerance import approx_logprob

TOL = 1e-5
CAUSAL = [("owl is a kind of", " bird"), ("owl is a kind of", " tree."),
          ("owl is a kind of", " an apple, a thing"), ("an emu is", " a bird."),
          ("", "a cat is an animal.")]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """(A GPT-2, despite the name: the causal model.)"""
    return tiny_causal_model(tmp_path_factory.mktemp("models") / "gpt2")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_masked_model(tmp_path_factory.mktemp("models") / "bert")


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    words = sorted({w for t, (g, cs) in ANIMALS.items() for w in (t, g, *cs)}
                   | {"is", "a", "an", "kind", "of", "big", "in", "paris", "france", "dog"})
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -3.0)]
    vocab += [("▁" + w, -1.0) for w in words]
    vocab += [(c, -12.0) for c in sorted(set("".join(words)) | set(".,"))]
    tok = T5Tokenizer(vocab=vocab, extra_ids=4)
    torch.manual_seed(2)
    cfg = T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=3,
                   num_decoder_layers=3, num_heads=4, decoder_start_token_id=tok.pad_token_id,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   initializer_factor=4.0)
    folder = tmp_path_factory.mktemp("models") / "t5"
    T5ForConditionalGeneration(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.safetensors"))


def _split(folder: Path, tmp_path: Path, **kw: Any) -> Any:
    """The model with a ``max_memory`` below its size: accelerate keeps what fits in memory and
    offloads the rest to disk. The smallest budget (a fraction of the weights' size) that keeps
    at least one part in memory is used, so the model really is split between the two."""
    size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    for fraction in (0.5, 0.65, 0.8, 0.9):
        scorer = load_scorer(str(folder), device="cpu", dtype="float32", device_map="auto",
                             max_memory={"cpu": int(size * fraction)},
                             offload_folder=str(tmp_path / f"offload-{fraction}"), **kw)
        placed = set(scorer.describe()["device_map"].values())
        if placed == {"cpu", "disk"}:
            return scorer
    raise AssertionError(f"no budget split {folder.name} between memory and disk: {placed}")


def _close(a: list[Any], b: list[Any]) -> None:
    assert [s.n_tokens for s in a] == [s.n_tokens for s in b]
    assert [s.logprob for s in a] == approx_logprob([s.logprob for s in b])


@pytest.mark.parametrize("mode", ["packed", "cache"])
def test_causal_split_model_scores_like_the_whole_model(tiny_llama: Path, tmp_path: Path,
                                                        mode: str) -> None:
    whole = load_scorer(str(tiny_llama), device="cpu", dtype="float32", prefix_mode=mode)
    split = _split(tiny_llama, tmp_path, prefix_mode=mode)
    assert split.prefix_mode == mode  # the shared-prefix path survived the load-time check
    _close(split.loglik(CAUSAL), whole.loglik(CAUSAL))
    split.set_batch_size(2)  # several batches
    _close(split.loglik(CAUSAL), whole.loglik(CAUSAL))
    prompts = ["owl is a kind of", "an emu is a"]
    for got, want in zip(split.topk(prompts, 5), whole.topk(prompts, 5), strict=True):
        assert [w for w, _ in got] == [w for w, _ in want]
        assert [p for _, p in got] == pytest.approx([p for _, p in want], abs=TOL)


def test_masked_split_model_scores_like_the_whole_model(tiny_bert: Path,
                                                        tmp_path: Path) -> None:
    whole = load_scorer(str(tiny_bert), device="cpu", dtype="float32")
    split = _split(tiny_bert, tmp_path)
    texts = [("owl is a kind of animal.", (17, 23)), ("an emu is a bird.", (0, 17))]
    _close(split.pll(texts), whole.pll(texts))
    prompts = ["owl is a kind of [MASK].", "an [MASK] is a bird."]
    for got, want in zip(split.topk(prompts, 5), whole.topk(prompts, 5), strict=True):
        assert [w for w, _ in got] == [w for w, _ in want]
        assert [p for _, p in got] == pytest.approx([p for _, p in want], abs=TOL)


def test_seq2seq_split_model_scores_like_the_whole_model(tiny_t5: Path,
                                                         tmp_path: Path) -> None:
    whole = load_scorer(str(tiny_t5), device="cpu", dtype="float32")
    split = _split(tiny_t5, tmp_path)
    reqs = [("a dog is a kind of", "animal"), ("a dog is a kind of", "big animal"),
            ("paris is in", "france")]
    _close(split.loglik(reqs), whole.loglik(reqs))
    prompts = ["a dog is a kind of [MASK] .", "paris is in [MASK] ."]
    for got, want in zip(split.topk(prompts, 5), whole.topk(prompts, 5), strict=True):
        assert [w for w, _ in got] == [w for w, _ in want]


def test_max_memory_needs_a_device_map_and_a_known_device(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="need a device_map"):
        load_scorer(str(tiny_bert), device="cpu", max_memory={"cpu": 10})
    with pytest.raises(ModelError, match="unknown device map"):
        load_scorer(str(tiny_bert), device="cpu", device_map="everywhere")
    with pytest.raises(ModelError, match="not a size"):
        parse_max_memory("0=lots")
    assert parse_max_memory("0=70GiB, 1=70GiB ,cpu=2000") == {0: "70GiB", 1: "70GiB",
                                                               "cpu": 2000}
    assert Placement("auto").pretrained_kwargs("org/m")["offload_folder"].endswith("org-m")
