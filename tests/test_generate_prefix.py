"""Prompts that share a token prefix run it once (probes.backends.causal_generate with
probes.backends.prefix_groups): the answers must be the strings of the plain path
(``prefix_mode=None``), of the plainest loop (tests/test_generate_backends.reference_tokens:
one prompt, no cache, no padding) and of transformers' own greedy ``generate``, for prompts
that share a prefix and prompts that do not, with and without a chat template, and with the
group split over several batches. Tiny random models keep it fast; each test first checks
that the shared path is taken at all (``sharing`` names the group)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from probes.backends import load_scorer
from probes.backends.causal_generate import sharing
from probes.backends.generation import GenerateSettings
from probes.backends.prefix_groups import MIN_SHARED_TOKENS, common_length, shared_prefixes
from probes.engine.chat import ChatTemplateScorer
from tests.test_backends import smol_tokenizer, tiny_llama  # noqa: F401  (module fixtures)
from tests.test_generate_backends import reference_tokens

SHOTS = ("Q: What is the capital of Portugal?\nA: Lisbon\n\n"
         "Q: What is the capital of Peru?\nA: Lima\n\n")
SHARED = [SHOTS + f"Q: What is the capital of {c}?\nA:" for c in ("France", "Italy", "Japan",
                                                                    "Kenya")]
ALONE = ["A dog is a kind of", "owl", "The opposite of hot is the word"]
PROMPTS = [SHARED[0], ALONE[0], SHARED[1], ALONE[1], SHARED[2], ALONE[2], SHARED[3]]


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:  # noqa: F811
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def gemma(tmp_path_factory: pytest.TempPathFactory, smol_tokenizer: Any) -> Any:  # noqa: F811
    """A tiny Gemma 3: a sliding-window layer and a full one (DynamicSlidingWindowLayer)."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    tok = smol_tokenizer
    torch.manual_seed(1)
    config = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
        sliding_window=96, initializer_range=0.2, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        layer_types=["sliding_attention", "full_attention"])
    path = tmp_path_factory.mktemp("models") / "tiny-gemma3"
    Gemma3ForCausalLM(config).eval().save_pretrained(path)
    tok.save_pretrained(path)
    return load_scorer(str(path), device="cpu", dtype="float32")


@pytest.fixture()
def plain() -> Iterator[Any]:
    """A function that generates with ``prefix_mode=None`` (no sharing), restoring the mode."""
    def run(scorer: Any, prompts: list[str], settings: GenerateSettings) -> list[Any]:
        model = getattr(scorer, "inner", scorer)  # a chat template's wrapper: the model in it
        mode = model.prefix_mode
        model.prefix_mode = None
        try:
            return list(scorer.generate(prompts, settings))
        finally:
            model.prefix_mode = mode
    yield run


def groups_of(scorer: Any, prompts: list[str], settings: GenerateSettings) -> list[list[int]]:
    seqs = [scorer.generation_ids(p) for p in prompts]
    return [members for _, members in sharing(scorer, seqs, settings)]


def transformers_text(scorer: Any, prompt: str, n: int) -> str:
    ids = torch.tensor([scorer.generation_ids(prompt)])
    with torch.inference_mode():
        out = scorer.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                    max_new_tokens=n, do_sample=False,
                                    pad_token_id=scorer._pad_id())
    return str(scorer.tokenizer.decode(out[0, ids.shape[1]:].tolist(),
                                       skip_special_tokens=True))


def test_grouping_by_hand() -> None:
    long = list(range(20))
    a, b, c = [*long, 100, 101], [*long, 200], [*long[:5], 300]
    # a and b share 20 tokens; c shares 5 with them: alone
    assert shared_prefixes([a, c, b], min_tokens=16) == [(20, [0, 2])]
    assert shared_prefixes([a, c, b], min_tokens=21) == []
    # a prompt that is the prefix itself keeps one token of its own
    assert shared_prefixes([long, a], min_tokens=16) == [(19, [0, 1])]
    # a member joins while the group then saves as many tokens as before: 3 members sharing
    # 20 save 40 prefix tokens, 4 sharing 17 save 51 (d joins); 2 sharing 20 save 20, 3
    # sharing 2 would save 4 (e stays alone)
    d = [*long[:17], 400]
    assert shared_prefixes([a, b, [*long, 300], d], min_tokens=2) == [(17, [0, 1, 2, 3])]
    e = [*long[:2], 500]
    assert shared_prefixes([a, b, e], min_tokens=2) == [(20, [0, 1])]
    assert common_length(a, b) == 20


def test_short_common_starts_are_not_shared(llama: Any) -> None:
    prompts = [f"Q: What is the capital of {c}?\nA:" for c in ("France", "Italy", "Spain")]
    seqs = [llama.generation_ids(p) for p in prompts]
    assert 0 < common_length(seqs[0], seqs[1]) < MIN_SHARED_TOKENS
    assert groups_of(llama, prompts, GenerateSettings()) == []


def test_shared_prefix_gives_the_plain_paths_strings(llama: Any, plain: Any) -> None:
    settings = GenerateSettings(max_new_tokens=10, stop=())
    assert groups_of(llama, PROMPTS, settings) == [[0, 2, 4, 6]]
    got = llama.generate(PROMPTS, settings)
    assert got == plain(llama, PROMPTS, settings)
    for prompt, g in zip(PROMPTS, got, strict=True):
        want = reference_tokens(llama.model, llama.tokenizer, prompt, 10)
        assert g.text == llama.tokenizer.decode(want, skip_special_tokens=True), prompt
        assert g.text == transformers_text(llama, prompt, 10), prompt
    # the shared prompts' answers differ among themselves: the suffixes are read
    assert len({g.text for g in got[0::2]}) > 1


def test_a_group_split_over_batches_gives_the_same_strings(llama: Any, plain: Any) -> None:
    settings = GenerateSettings(max_new_tokens=8, stop=())
    whole = llama.generate(PROMPTS, settings)
    try:
        for size in (1, 2, 3):
            llama.set_batch_size(size)
            assert llama.generate(PROMPTS, settings) == whole, size
    finally:
        llama.set_batch_size(None)
    one_by_one = [plain(llama, [p], settings)[0] for p in PROMPTS]
    assert one_by_one == whole


def test_under_a_chat_template_the_system_turn_is_shared(llama: Any, plain: Any) -> None:
    chat = ChatTemplateScorer(llama)
    prompts = ["hi", "The capital of France is", "owl", "A dog is a kind of"]
    settings = GenerateSettings(max_new_tokens=8)
    wrapped = [chat.wrap(p) for p in prompts]
    assert groups_of(llama, wrapped, settings) == [[0, 1, 2, 3]]
    got = chat.generate(prompts, settings)
    assert got == plain(chat, prompts, settings)
    for prompt, g in zip(wrapped, got, strict=True):
        assert g.text == transformers_text(llama, prompt, 8)


def test_sampling_and_stop_strings_on_the_shared_path(llama: Any, plain: Any) -> None:
    s = GenerateSettings(max_new_tokens=8, stop=(), do_sample=True, temperature=1.5, seed=3)
    a = llama.generate(PROMPTS, s)
    assert a == plain(llama, PROMPTS, s)
    assert a[0::2] == llama.generate(SHARED, s)  # other neighbours, the same draws
    free = llama.generate(SHARED[:2], GenerateSettings(max_new_tokens=12, stop=()))
    stop = free[0].text[3:5]
    assert stop.strip()
    cut = llama.generate(SHARED[:2], GenerateSettings(max_new_tokens=12, stop=(stop,)))
    assert cut[0].finish == "stop" and cut[0].text == free[0].text[:free[0].text.find(stop)]


def test_sliding_window_model_shares_within_its_window(gemma: Any, plain: Any) -> None:
    settings = GenerateSettings(max_new_tokens=10, stop=())
    assert gemma._window == 96
    assert groups_of(gemma, PROMPTS, settings) == [[0, 2, 4, 6]]
    got = gemma.generate(PROMPTS, settings)
    assert got == plain(gemma, PROMPTS, settings)
    for prompt, g in zip(PROMPTS, got, strict=True):
        assert g.text == transformers_text(gemma, prompt, 10), prompt
    # a group whose prompt and answer would not fit in the window runs the plain path
    assert groups_of(gemma, PROMPTS, GenerateSettings(max_new_tokens=60)) == []
