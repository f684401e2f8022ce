"""Masked and seq2seq backends: every scoring operation against a direct, unbatched transformers
computation written here (pseudo-log-likelihood one mask at a time, the first sentinel filler).

The tiny BERT, T5 and the SmolLM2 tokenizer are the fixtures of test_backends (see its docstring
for how they are built).
"""
# ruff: noqa: F811

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

from probes.backends import (
    ModelError,
    PromptError,
    Score,
    load_scorer,
)

# The tiny-model fixtures (module-scoped) are test_backends' own; imported here, pytest builds
# them once for this module too. Test parameters named after a fixture shadow the import, which
# is how pytest fixtures are used, hence the file-wide F811 exemption.
from tests.test_backends import (  # noqa: F401
    TOL,
    _minilm_dir,
    bert,
    smol_tokenizer,
    t5,
    tiny_bert,
    tiny_t5,
)
from tests.tolerance import logprob_close

# --- masked -----------------------------------------------------------------------------------


def pll_reference(model: Any, tok: Any, text: str, span: tuple[int, int]) -> tuple[float, int]:
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    total, count = 0.0, 0
    for pos, (a, b) in enumerate(enc["offset_mapping"]):
        if enc["special_tokens_mask"][pos] or not (a < span[1] and b > span[0] < span[1]):
            continue
        ids = torch.tensor([enc["input_ids"]])
        ids[0, pos] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, pos]
        total += float(torch.log_softmax(logits.double(), -1)[enc["input_ids"][pos]])
        count += 1
    return total, count


PLL_TEXT = "The xylophonist chased the cat across the garden."
PLL_REQUESTS = [
    (PLL_TEXT, (4, 15)),  # "xylophonist": several word pieces
    (PLL_TEXT, (16, 26)),  # "chased the"
    (PLL_TEXT, (5, 6)),  # one character inside a word: its piece only
    (PLL_TEXT, (0, len(PLL_TEXT))),  # the whole text
    ("Emus are birds.", (0, 15)),
    ("Emus are birds.", (3, 3)),  # an empty span
]


def test_masked_pll_matches_one_mask_at_a_time(bert: Any) -> None:
    scores = bert.pll(PLL_REQUESTS)
    for (text, span), score in zip(PLL_REQUESTS, scores, strict=True):
        expected, count = pll_reference(bert.model, bert.tokenizer, text, span)
        assert score.n_tokens == count
        assert logprob_close(score.logprob, expected), (text, span)
    assert scores[0].n_tokens > 1 and scores[-1] == Score(0.0, 0)


def test_masked_loglik_is_pll_of_the_continuation(bert: Any) -> None:
    (score,) = bert.loglik([("The dog chased the ", "cat.")])
    expected, count = pll_reference(bert.model, bert.tokenizer, "The dog chased the cat.", (19, 23))
    assert score.n_tokens == count == 2 and logprob_close(score.logprob, expected)


def test_masked_topk_matches_softmax(bert: Any) -> None:
    tok = bert.tokenizer
    whole = [
        i
        for t, i in sorted(tok.get_vocab().items(), key=lambda x: x[1])
        if not t.startswith("##") and t.isalpha() and i not in tok.all_special_ids
    ]
    prompts = ["The [MASK] chased the cat.", "Paris is the capital of [MASK].", "[MASK] fly."]
    results = bert.topk(prompts, 4)
    for prompt, got in zip(prompts, results, strict=True):
        enc = tok(prompt.replace("[MASK]", tok.mask_token), return_tensors="pt")
        pos = int((enc.input_ids[0] == tok.mask_token_id).nonzero())
        with torch.no_grad():
            logits = bert.model(**enc).logits[0, pos]
        probs = torch.softmax(logits.double(), -1)[whole]
        order = probs.argsort(descending=True)[:4].tolist()
        assert [w for w, _ in got] == tok.convert_ids_to_tokens([whole[i] for i in order])
        assert all(abs(p - float(probs[i])) <= TOL for (_, p), i in zip(got, order, strict=True))
    with pytest.raises(PromptError, match="exactly one"):
        bert.topk(["no slot here"], 3)


def test_masked_features_cls_and_mean(bert: Any) -> None:
    texts = ["A robin is a bird.", "Emus run fast across the plains."]
    got_cls, got_mean = bert.features(texts, "cls"), bert.features(texts, "mean")
    for row, text in enumerate(texts):
        enc = bert.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            hidden = bert.model.bert(**enc).last_hidden_state[0]
        assert torch.allclose(got_cls[row], hidden[0], atol=TOL)
        assert torch.allclose(got_mean[row], hidden[1:-1].mean(0), atol=TOL)


def test_encoder_without_mlm_head_says_what_is_missing() -> None:
    path = str(_minilm_dir())
    scorer = load_scorer(path)
    assert scorer.kind == "masked" and scorer.operations == {"features"}
    with pytest.raises(ModelError, match=r"without a masked-LM head.*ForMaskedLM") as info:
        scorer.topk(["A [MASK] is a bird."], 3)
    assert "BertModel" in str(info.value) and path in str(info.value)
    with pytest.raises(ModelError, match="masked-LM head"):
        load_scorer(path, require=("topk",))
    features = scorer.features(["a robin is a bird"], "mean")
    assert features.shape == (1, 384) and torch.isfinite(features).all()


# --- seq2seq ----------------------------------------------------------------------------------


def seq2seq_reference(model: Any, tok: Any, context: str, target: str) -> float:
    ids = torch.tensor([tok(context).input_ids])
    labels = tok(target).input_ids
    dec = torch.tensor([[model.config.decoder_start_token_id, *labels[:-1]]])
    with torch.no_grad():
        logits = model(input_ids=ids, decoder_input_ids=dec).logits[0]
    logprobs = torch.log_softmax(logits.double(), -1)
    return sum(float(logprobs[i, t]) for i, t in enumerate(labels))


def test_seq2seq_loglik_matches_unbatched_forward(t5: Any) -> None:
    requests = [
        ("a robin is a kind of <extra_id_0> .", "<extra_id_0> bird"),
        ("a robin is a kind of <extra_id_0> .", "<extra_id_0> small brown animal"),
        ("a robin is a kind of <extra_id_0> .", "<extra_id_0> , well"),
        ("the capital of france is paris", "yes"),
        ("dogs", "they bark loudly at night"),
    ]
    scores = t5.loglik(requests)
    for (context, target), score in zip(requests, scores, strict=True):
        expected = seq2seq_reference(t5.model, t5.tokenizer, context, target)
        assert logprob_close(score.logprob, expected), (context, target)
        assert score.n_tokens == len(t5.tokenizer(target).input_ids)


def test_seq2seq_candidates_of_one_context_share_the_decoder_start(t5: Any) -> None:
    """The shared-start path (decoder start step once per context, then each candidate's later
    tokens on a copy of its cache) gives every candidate the score of its own full forward:
    targets of 1 to 6 tokens (one-token targets are scored by the start step alone), three
    contexts, padded decoder batches."""
    assert t5.share_start and t5.describe()["share_start"] is True
    context = "a robin is a kind of <extra_id_0> ."
    candidates = ["", "bird", "small bird", "small brown bird", "very small brown bird",
                  "bird that sings at dawn", "animal"]  # fmt: skip
    requests = [(context, c) for c in candidates]
    requests += [("dogs bark", c) for c in candidates[1:4]] + [("cats", "purr loudly")]
    scores = t5.loglik(requests)
    assert [s.n_tokens for s in scores[:2]] == [1, 2]  # "" is "</s>" alone
    for (ctx, target), score in zip(requests, scores, strict=True):
        assert logprob_close(score.logprob, seq2seq_reference(t5.model, t5.tokenizer, ctx, target))


def test_seq2seq_shared_start_that_disagrees_falls_back(
    monkeypatch: pytest.MonkeyPatch, tiny_t5: Any
) -> None:
    """A shared-start path that gives wrong scores (here: each candidate is given the cache of
    the other context) is caught by the self-check at load; the scorer warns and scores every
    candidate with its own full decoder pass."""
    from probes.backends import seq2seq

    original = seq2seq.select_rows
    monkeypatch.setattr(seq2seq, "select_rows", lambda cache, rows: original(cache, 1 - rows))
    with pytest.warns(RuntimeWarning, match="shared decoder-start path disagreed"):
        scorer = load_scorer(str(tiny_t5), device="cpu", dtype="float32")
    assert scorer.share_start is False
    requests = [("dogs bark", "small brown bird"), ("cats", "purr loudly")]
    for (ctx, target), score in zip(requests, scorer.loglik(requests), strict=True):
        assert logprob_close(score.logprob,
                             seq2seq_reference(scorer.model, scorer.tokenizer, ctx, target))


def test_seq2seq_topk_is_the_first_sentinel_filler(t5: Any) -> None:
    tok = t5.tokenizer
    whole = [
        i
        for t, i in sorted(tok.get_vocab().items(), key=lambda x: x[1])
        if t.startswith("▁") and t[1:].isalpha()
    ]
    prompt = "a robin is a kind of [MASK] ."
    (got,) = t5.topk([prompt], 3)
    ids = torch.tensor([tok(prompt.replace("[MASK]", "<extra_id_0>")).input_ids])
    dec = torch.tensor([[0, tok.convert_tokens_to_ids("<extra_id_0>")]])
    with torch.no_grad():
        logits = t5.model(input_ids=ids, decoder_input_ids=dec).logits[0, -1]
    probs = torch.softmax(logits.double(), -1)[whole]
    order = probs.argsort(descending=True)[:3].tolist()
    assert [w for w, _ in got] == [tok.convert_ids_to_tokens(whole[i])[1:] for i in order]
    assert all(abs(p - float(probs[i])) <= TOL for (_, p), i in zip(got, order, strict=True))
    with pytest.raises(ModelError, match="does not support 'pll'"):
        t5.pll([("a b", (0, 1))])


def test_bart_style_topk_feeds_the_text_before_the_slot(
    tmp_path: Path, smol_tokenizer: Any
) -> None:
    """A mask-token seq2seq model (BART): the decoder reads <bos> + the text before the slot."""
    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration

    smol_tokenizer.save_pretrained(tmp_path / "tok")
    tok = AutoTokenizer.from_pretrained(tmp_path / "tok")
    tok.add_special_tokens({"mask_token": "<mask>"})
    torch.manual_seed(3)
    config = BartConfig(vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        pad_token_id=tok.pad_token_id, decoder_start_token_id=tok.eos_token_id,
                        init_std=0.5)  # fmt: skip
    BartForConditionalGeneration(config).save_pretrained(tmp_path / "bart")
    tok.save_pretrained(tmp_path / "bart")
    scorer = load_scorer(str(tmp_path / "bart"))
    prompts = ["A robin is a kind of [MASK].", "Emus [MASK] fast"]
    results = scorer.topk(prompts, 3)
    vocab = scorer.word_vocab()
    for prompt, got in zip(prompts, results, strict=True):
        before = prompt.split("[MASK]")[0].rstrip()
        enc = torch.tensor([tok(prompt.replace("[MASK]", "<mask>")).input_ids])
        dec = torch.tensor([[tok.eos_token_id, tok.bos_token_id, *tok(before).input_ids]])
        with torch.no_grad():
            logits = scorer.model(input_ids=enc, decoder_input_ids=dec).logits[0, -1]
        probs = torch.softmax(logits.double(), -1)[list(vocab.ids)]
        order = probs.argsort(descending=True)[:3].tolist()
        assert [w for w, _ in got] == [vocab.words[i] for i in order]
        assert all(abs(p - float(probs[i])) <= TOL for (_, p), i in zip(got, order, strict=True))
    # loglik on the same model: the shared decoder start (BART's </s>) against full forwards
    assert scorer.share_start
    requests = [("A robin is a kind of bird.", c) for c in (" bird", " small bird", "")]
    requests.append(("Emus run fast", " on long legs"))
    for (ctx, target), score in zip(requests, scorer.loglik(requests), strict=True):
        has_target = bool(tok(target).input_ids)
        expected = seq2seq_reference(scorer.model, tok, ctx, target) if has_target else 0.0
        assert logprob_close(score.logprob, expected), (ctx, target)
