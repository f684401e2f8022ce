"""``generate`` in the backends, against references written here.

The reference of a causal LM is the plainest greedy loop: one prompt at a time, no padding,
no key/value cache, a full forward over the prompt and the tokens so far at every step, the
arg-max of the last position. The backend's batched, left-padded, cached loop must give the
same tokens, and so must transformers' own ``generate`` (greedy) on the same model. Tiny
models with random weights (tests/test_backends.py builds them) keep it fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from probes.backends import ModelError, load_scorer
from probes.backends.generation import GenerateSettings, Generation, cut_at_stop
from probes.engine.chat import ChatTemplateScorer
from tests.test_backends import (  # noqa: F401  (module fixtures)
    smol_tokenizer,
    tiny_bert,
    tiny_llama,
    tiny_t5,
)

PROMPTS = ["The capital of France is", "A dog is a kind of",
           "Q: What is the largest planet?\nA:", "owl", "The opposite of hot is the word"]


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:  # noqa: F811
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


def reference_tokens(model: Any, tok: Any, prompt: str, n: int) -> list[int]:
    """Greedy, one prompt, no cache, no padding: a full forward per step."""
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    out: list[int] = []
    eos = {tok.eos_token_id, model.generation_config.eos_token_id}
    with torch.inference_mode():
        for _ in range(n):
            logits = model(input_ids=torch.tensor([ids + out]), use_cache=False).logits
            token = int(logits[0, -1].argmax())
            if token in eos:
                break
            out.append(token)
    return out


def test_batched_cached_greedy_equals_the_plain_loop(llama: Any) -> None:
    settings = GenerateSettings(max_new_tokens=12, stop=())
    got = llama.generate(PROMPTS, settings)
    for prompt, g in zip(PROMPTS, got, strict=True):
        want = reference_tokens(llama.model, llama.tokenizer, prompt, 12)
        assert g.text == llama.tokenizer.decode(want, skip_special_tokens=True), prompt
        assert (g.n_tokens, g.finish) == (12, "length") or g.finish == "eos"
    one_by_one = [llama.generate([p], settings)[0] for p in PROMPTS]
    assert one_by_one == got


def test_greedy_equals_transformers_generate(llama: Any) -> None:
    tok = llama.tokenizer
    got = llama.generate(PROMPTS, GenerateSettings(max_new_tokens=10, stop=()))
    for prompt, g in zip(PROMPTS, got, strict=True):
        ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
        out = llama.model.generate(**ids, max_new_tokens=10, do_sample=False,
                                   pad_token_id=tok.pad_token_id)
        assert g.text == tok.decode(out[0, ids.input_ids.shape[1]:], skip_special_tokens=True)


def test_stop_strings_cut_the_answer_before_them(llama: Any) -> None:
    free = llama.generate(PROMPTS[:2], GenerateSettings(max_new_tokens=12, stop=()))
    # a stop string taken from the middle of each free answer: the answer ends before it
    for prompt, g in zip(PROMPTS[:2], free, strict=True):
        stop = g.text[3:5]
        assert stop.strip(), g
        (cut,) = llama.generate([prompt], GenerateSettings(max_new_tokens=12, stop=(stop,)))
        assert cut.finish == "stop"
        assert cut.text == g.text[:g.text.find(stop)]
        assert cut.n_tokens < 12


def test_max_new_tokens_bounds_the_answer(llama: Any) -> None:
    got = llama.generate(PROMPTS, GenerateSettings(max_new_tokens=3, stop=()))
    assert all(g.n_tokens <= 3 for g in got)
    assert any(g.finish == "length" for g in got)


def test_seeded_sampling_is_reproducible_and_independent_of_the_batch(llama: Any) -> None:
    s = GenerateSettings(max_new_tokens=8, stop=(), do_sample=True, temperature=1.5, seed=7)
    a = llama.generate(PROMPTS, s)
    assert a == llama.generate(PROMPTS, s)
    assert a[1:3] == llama.generate(PROMPTS[1:3], s)  # other batch neighbours, same answers
    other = llama.generate(PROMPTS, GenerateSettings(max_new_tokens=8, stop=(), do_sample=True,
                                                     temperature=1.5, seed=8))
    assert other != a
    greedy = llama.generate(PROMPTS, GenerateSettings(max_new_tokens=8, stop=()))
    assert greedy != a


def test_system_prompt_is_text_before_a_plain_prompt(llama: Any) -> None:
    s = GenerateSettings(max_new_tokens=6, stop=(), system="Answer in one word.")
    (got,) = llama.generate([PROMPTS[0]], s)
    (want,) = llama.generate(["Answer in one word.\n\n" + PROMPTS[0]],
                             GenerateSettings(max_new_tokens=6, stop=()))
    assert got == want


def test_chat_template_wraps_system_and_user_turns(llama: Any) -> None:
    chat = ChatTemplateScorer(llama)
    s = GenerateSettings(max_new_tokens=6, system="Be brief.")
    (got,) = chat.generate([PROMPTS[0]], s)
    tok = llama.tokenizer
    text = tok.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPTS[0]}],
        tokenize=False, add_generation_prompt=True)
    assert "Be brief." in text and text.endswith("assistant\n")
    (plain,) = llama.generate([text], GenerateSettings(max_new_tokens=6, stop=()))
    assert got == plain  # under the template the default stop is the end of turn only
    assert chat.cache_key_options()["chat_template"] != llama.cache_key_options().get(
        "chat_template")


def test_seq2seq_generates_what_a_plain_generate_does(tiny_t5: Path) -> None:  # noqa: F811
    t5 = load_scorer(str(tiny_t5), device="cpu", dtype="float32")
    prompts = ["the cat sat on the", "a dog is a kind of animal"]
    got = t5.generate(prompts, GenerateSettings(max_new_tokens=6, stop=()))
    for prompt, g in zip(prompts, got, strict=True):
        ids = t5.tokenizer(prompt, return_tensors="pt")
        out = t5.model.generate(**ids, max_new_tokens=6, do_sample=False)[0].tolist()[1:]
        eos = t5.tokenizer.eos_token_id
        if eos in out:
            out = out[:out.index(eos)]
        assert g.text == t5.tokenizer.decode(out, skip_special_tokens=True)
        assert isinstance(g, Generation) and g.n_tokens <= 6


def test_masked_lm_says_in_one_line_why_it_cannot_generate(tiny_bert: Path) -> None:  # noqa: F811
    bert = load_scorer(str(tiny_bert), device="cpu", dtype="float32")
    assert not bert.capabilities.generate
    with pytest.raises(ModelError) as e:
        bert.require("generate")
    assert "cannot generate text" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ModelError, match="masked LM fills marked slots"):
        bert.generate(["a"], GenerateSettings())


def test_cut_at_stop_is_lm_eval_split_for_each_term() -> None:
    text = "Paris.\nLondon, and Rome"
    for stops in [("\n",), (",", "\n"), ("\n", ","), ("Rome",), ("x",)]:
        want = text
        for term in stops:  # lm-eval: s = s.split(term)[0] for each term of until
            want = want.split(term)[0]
        assert cut_at_stop(text, stops)[0] == want


def test_bad_settings_are_one_clear_line() -> None:
    with pytest.raises(ModelError, match="max_new_tokens must be"):
        GenerateSettings(max_new_tokens=0)
    with pytest.raises(ModelError, match="top_p must be"):
        GenerateSettings(top_p=0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m", "gemma3-270m"])
def test_real_models_generate_what_transformers_generates(name: str) -> None:
    scorer = load_scorer(name, device="cpu", dtype="float32")
    tok = scorer.tokenizer
    prompts = ["The capital of France is", "Q: What is the largest planet?\nA:",
               "A dog is a kind of"]
    got = scorer.generate(prompts, GenerateSettings(max_new_tokens=8, stop=()))
    for prompt, g in zip(prompts, got, strict=True):
        ids = torch.tensor([scorer.generation_ids(prompt)])
        out = scorer.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                    max_new_tokens=8, do_sample=False,
                                    pad_token_id=scorer._pad_id())
        assert g.text == tok.decode(out[0, ids.shape[1]:].tolist(), skip_special_tokens=True)
