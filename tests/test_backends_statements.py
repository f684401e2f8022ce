"""lm-pub-quiz-style scoring in the backends: whole statements and the conditional score of
causal LMs (``boundary`` ``whole`` / ``lm-pub-quiz``, with the shared-prefix fast path) and the
PLL masking variants of masked LMs (``pll_metric``), each against a computation written here:
one unpadded forward per statement (causal) or per masked copy (masked), ``log_softmax`` over
the whole vocabulary, the scored tokens found from the tokenizer's character offsets.

Tokenizers: SmolLM2's byte-level BPE, which does not add BOS (lm-pub-quiz then puts the BOS
*text* before the statement), and the same tokenizer with a post-processor that adds BOS
itself, as Gemma's does; the all-MiniLM WordPiece tokenizer for the masked word ids.
"""
# ruff: noqa: F811

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

from probes.backends import ModelError, PromptError, load_scorer
from probes.backends.causal_statements import PrefixTree
from tests.test_backends import (  # noqa: F401
    _minilm_dir,
    bert,
    smol_tokenizer,
    tiny_bert,
    tiny_llama,
)
from tests.tolerance import logprob_close

# statement, the answer's character offset in it
STATEMENTS = [
    ("The capital of France is Paris.", 25),
    ("The capital of France is Lyon.", 25),
    ("The capital of France is Marseille.", 25),
    ("The capital of Germany is Berlin.", 26),
    ("Berlin is the capital of Germany.", 0),  # answer first: only BOS is shared
    ("Paris is the capital of France.", 0),
    ("The river Danube flows into the Black Sea, not the North Sea.", 32),  # answer mid-text
    ("The river Danube flows into the Caspian Sea, not the North Sea.", 32),
    ("Its official language is Occitan.", 25),
    ("Its official language is French.", 25),
]


@pytest.fixture(scope="module")
def bos_tiny_llama(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> Path:
    """The tiny Llama with a tokenizer that adds BOS itself (``add_bos_token`` saved in its
    config, as Gemma's tokenizer has it)."""
    from transformers import AutoTokenizer

    path = tmp_path_factory.mktemp("models") / "tiny-llama-bos"
    path.mkdir(exist_ok=True)
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    tok.add_bos_token = True
    for name in os.listdir(tiny_llama):
        if not name.startswith("token"):
            (path / name).write_bytes((tiny_llama / name).read_bytes())
    tok.save_pretrained(path)
    reloaded = AutoTokenizer.from_pretrained(path)
    assert reloaded("a")["input_ids"][0] == tok.bos_token_id  # it does add BOS
    plain = AutoTokenizer.from_pretrained(tiny_llama)
    assert plain("a")["input_ids"][0] != tok.bos_token_id  # and the other does not
    return path


@pytest.fixture
def no_forced_bos(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokenizers that ignore ``add_bos_token = True`` (GPT-2's fast tokenizer in transformers
    4): lm-pub-quiz then puts the BOS text before the statement, the branch with the quirk."""
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    monkeypatch.setattr(TokenizersBackend, "update_post_processor", lambda self: None)


def _scorer(path: Path, boundary: str, prefix_mode: str | None = "packed") -> Any:
    return load_scorer(str(path), device="cpu", dtype="float32", boundary=boundary,
                       prefix_mode=prefix_mode)


def _reference(model: Any, tok: Any, text: str, answer_char: int) -> tuple[float, int]:
    """Summed log-probability of the tokens of ``[BOS] + text`` from the first token that
    ends after ``answer_char`` (offsets of the statement tokenised without special tokens),
    and their number: one plain forward, log_softmax."""
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = [tok.bos_token_id, *enc["input_ids"]]
    first = next(k for k, (_, end) in enumerate(enc["offset_mapping"]) if end > answer_char)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    positions = range(first + 1, len(ids))
    return sum(float(lp[p - 1, ids[p]]) for p in positions), len(positions)


def _conditional(text: str, answer: int) -> tuple[str, str]:
    before = text[:answer].rstrip()
    return before, text[len(before):]


@pytest.mark.parametrize("prefix_mode", ["packed", None])
@pytest.mark.parametrize("boundary", ["whole", "lm-pub-quiz"])
def test_whole_statement_after_bos(tiny_llama: Path, boundary: str,
                                   prefix_mode: str | None) -> None:
    scorer = _scorer(tiny_llama, boundary, prefix_mode)
    scores = scorer.loglik([("", text) for text, _ in STATEMENTS])
    for (text, _), score in zip(STATEMENTS, scores, strict=True):
        expected, n = _reference(scorer.model, scorer.tokenizer, text, 0)
        assert score.n_tokens == n
        assert logprob_close(score.logprob, expected), (text, score.logprob, expected)


def test_shared_prefix_equals_one_by_one(tiny_llama: Path) -> None:
    """The fast path (shared prefixes, packed rows) against every statement on its own,
    for whole and conditional requests mixed in one call."""
    requests = [("", t) for t, _ in STATEMENTS] + [_conditional(t, a) for t, a in STATEMENTS]
    fast = _scorer(tiny_llama, "whole").loglik(requests)
    slow = _scorer(tiny_llama, "whole", None).loglik(requests)
    for a, b in zip(fast, slow, strict=True):
        assert a.n_tokens == b.n_tokens and logprob_close(a.logprob, b.logprob)


@pytest.fixture(scope="module")
def tiny_sliding(tmp_path_factory: pytest.TempPathFactory, smol_tokenizer: Any) -> Path:
    """A tiny Mistral whose sliding attention window (6 tokens) is shorter than most of the
    statements: a packed row's mask must not stand in for it."""
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(2)
    config = MistralConfig(
        vocab_size=len(smol_tokenizer), hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, sliding_window=6, initializer_range=0.2,
        bos_token_id=smol_tokenizer.bos_token_id, eos_token_id=smol_tokenizer.eos_token_id,
        pad_token_id=smol_tokenizer.pad_token_id, tie_word_embeddings=False)
    path = tmp_path_factory.mktemp("models") / "tiny-sliding"
    MistralForCausalLM(config).eval().save_pretrained(path)
    smol_tokenizer.save_pretrained(path)
    return path


def test_statements_longer_than_the_sliding_window_keep_it(tiny_sliding: Path) -> None:
    texts = [t for t, _ in STATEMENTS] + ["Paris.", "Lyon.", "Rome is big."]
    scorer = _scorer(tiny_sliding, "whole")
    assert scorer.prefix_mode == "packed"  # the load-time check kept the fast path on
    lengths = [len(scorer.tokenizer(t)["input_ids"]) + 1 for t in texts]
    assert min(lengths) <= 5 < 7 < max(lengths)  # some fit a row of 5, most are longer
    reference = [_reference(scorer.model, scorer.tokenizer, t, 0) for t in texts]
    # the window matters: a 4D mask (a packed row's) that lets the last token see the whole
    # statement gives it another log-probability
    ids = [scorer.tokenizer.bos_token_id, *scorer.tokenizer(texts[6])["input_ids"]]
    full = torch.zeros((1, 1, len(ids), len(ids))).masked_fill_(
        torch.ones(len(ids), len(ids), dtype=torch.bool).triu(1), torch.finfo(torch.float32).min)
    with torch.no_grad():
        windowed = scorer.model(input_ids=torch.tensor([ids])).logits[0, -2]
        unwindowed = scorer.model(input_ids=torch.tensor([ids]), attention_mask=full).logits[0, -2]
    assert not torch.allclose(windowed, unwindowed, rtol=1e-3, atol=1e-3)
    for score, (expected, n) in zip(scorer.loglik([("", t) for t in texts]), reference,
                                    strict=True):
        assert score.n_tokens == n and logprob_close(score.logprob, expected)


def test_conditional_from_the_answers_first_token(tiny_llama: Path, bos_tiny_llama: Path) -> None:
    for path in (tiny_llama, bos_tiny_llama):
        scorer = _scorer(path, "whole")
        scores = scorer.loglik([_conditional(t, a) for t, a in STATEMENTS])
        for (text, answer), score in zip(STATEMENTS, scores, strict=True):
            expected, n = _reference(scorer.model, scorer.tokenizer, text, answer)
            assert score.n_tokens == n
            assert logprob_close(score.logprob, expected), (path.name, text)


def test_conditional_bos_text_quirk(tiny_llama: Path, bos_tiny_llama: Path,
                                    no_forced_bos: None) -> None:
    """lm-pub-quiz 0.3.3 looks the answer up at its offset in the statement without the BOS
    text: with a tokenizer that does not add BOS, scoring starts len(bos_token) characters
    earlier (at the first token when the answer starts closer than that); with one that adds
    BOS itself nothing changes."""
    quirk = _scorer(tiny_llama, "lm-pub-quiz")
    shift = len(quirk.tokenizer.bos_token)
    assert shift > 5
    scores = quirk.loglik([_conditional(t, a) for t, a in STATEMENTS])
    for (text, answer), score in zip(STATEMENTS, scores, strict=True):
        expected, n = _reference(quirk.model, quirk.tokenizer, text, max(0, answer - shift))
        assert score.n_tokens == n
        assert logprob_close(score.logprob, expected), text
    right = _scorer(tiny_llama, "whole").loglik([_conditional(*STATEMENTS[0])])[0]
    assert scores[0].n_tokens > right.n_tokens  # "... France is Paris." against " Paris."
    (whole,) = _scorer(tiny_llama, "whole").loglik([("", STATEMENTS[0][0])])
    (bos_text,) = quirk.loglik([("", STATEMENTS[0][0])])
    assert bos_text == whole  # the BOS text tokenises to the BOS token
    with_bos = _scorer(bos_tiny_llama, "lm-pub-quiz").loglik(
        [_conditional(t, a) for t, a in STATEMENTS])
    plain = _scorer(bos_tiny_llama, "whole").loglik([_conditional(t, a) for t, a in STATEMENTS])
    assert with_bos == plain


def test_tokenizer_with_and_without_bos_agree_on_whole_statements(
        tiny_llama: Path, bos_tiny_llama: Path) -> None:
    requests = [("", t) for t, _ in STATEMENTS]
    a = _scorer(tiny_llama, "whole").loglik(requests)
    b = _scorer(bos_tiny_llama, "whole").loglik(requests)
    for x, y in zip(a, b, strict=True):
        assert x.n_tokens == y.n_tokens and logprob_close(x.logprob, y.logprob)


def test_boundary_enters_the_cache_key_and_bad_values_fail(tiny_llama: Path) -> None:
    keys = {b: _scorer(tiny_llama, b).cache_key_options()["boundary"]
            for b in ("lm-eval", "whole", "lm-pub-quiz")}
    assert keys == {"lm-eval": "lm-eval", "whole": "whole", "lm-pub-quiz": "lm-pub-quiz"}
    with pytest.raises(ModelError, match="unknown boundary 'wholes'"):
        _scorer(tiny_llama, "wholes")


def test_prefix_tree_runs_every_shared_prefix_once_and_packs_whole_prefixes() -> None:
    bos, the, capital, of, is_ = 0, 10, 11, 12, 13
    france = [(bos, the, capital, of, 20, is_, a, 99) for a in (30, 31, 32, 33)]
    spain = [(bos, the, capital, of, 21, is_, a, 99) for a in (30, 34, 35)]
    alone = [(bos, 40, 41)]
    seqs = france + spain + alone
    tree = PrefixTree.build(seqs, share=True)
    # counted by hand: BOS, the, capital, of (4); France, is (2) and 4 answers; Spain, is (2)
    # and 3 answers; 40 (1): the last token of a statement is never run
    assert len(tree.token) == 16
    for seq, path in zip(seqs, tree.paths, strict=True):
        assert [tree.token[v] for v in path] == list(seq[:-1])
        assert [tree.depth[v] for v in path] == list(range(len(seq) - 1))
    assert len(PrefixTree.build(seqs, share=False).token) == 4 * 7 + 3 * 7 + 2
    nested = PrefixTree.build([(0, 5, 6), (0, 5), (0, 5, 6), (0, 5, 6, 7)], share=True)
    assert nested.token == [0, 5, 6] and nested.paths == [[0, 1], [0], [0, 1], [0, 1, 2]]
    for limit in (7, 8, 11, 64):
        rows = tree.pack(limit)
        owners = [v for nodes, first in rows for v in nodes[first:]]
        assert sorted(owners) == list(range(16))  # every node computed exactly once
        for nodes, _ in rows:
            assert len(nodes) <= limit
            for c, v in enumerate(nodes):  # a node's whole prefix stands before it in its row
                assert set(tree.ancestors(v)) <= set(nodes[:c])
    assert len(tree.pack(64)) == 1
    # rows of 8, by hand: BOS..is + 2 French answers; BOS..is again + 2; BOS..of + Spain, is
    # + 2 answers; BOS..Spain, is + the last answer + the lone statement's 40
    assert [len(nodes) - first for nodes, first in tree.pack(8)] == [8, 2, 4, 2]


# --- masked: PLL variants ---------------------------------------------------------------------

PLL_TEXT = "The xylophonist chased the unbelievably cat."


def _pll_reference(model: Any, tok: Any, text: str, metric: str,
                   span: tuple[int, int], answer: tuple[int, int] | None = None) -> float:
    """Each scored token in its own copy; which tokens are masked, worked out from the word
    pieces ("##" continues a word) and the offsets."""
    enc = tok(text, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    tokens = tok.convert_ids_to_tokens(ids)
    scored = [p for p, (a, b) in enumerate(offsets)
              if b > a and a < span[1] and b > span[0]]
    word_of, word = [], -1
    for p, t in enumerate(tokens):
        if offsets[p] == (0, 0):
            word_of.append(None)
            continue
        if not t.startswith("##"):
            word += 1
        word_of.append(word)
    answer_tokens = ([p for p, (a, b) in enumerate(offsets) if b > a and a < answer[1]
                      and b > answer[0]] if answer else [])
    total = 0.0
    for i, p in enumerate(scored):
        if metric == "original":
            masked = [p]
        elif metric == "sentence_l2r":
            masked = list(range(p, len(ids)))
        elif metric == "answer_l2r+word_l2r" and p in answer_tokens:
            masked = [q for q in answer_tokens if q >= p]
        else:
            masked = [p]
            for q in scored[i + 1:]:
                if word_of[q] != word_of[p]:
                    break
                masked.append(q)
        x = torch.tensor([ids])
        x[0, masked] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=x).logits[0, p].double()
        total += float(torch.log_softmax(logits, -1)[ids[p]])
    return total


@pytest.mark.parametrize("metric", ["original", "within_word_l2r", "sentence_l2r",
                                    "answer_l2r+word_l2r"])
def test_pll_metrics(tiny_bert: Path, metric: str) -> None:
    scorer = load_scorer(str(tiny_bert), device="cpu", dtype="float32", pll_metric=metric)
    whole = (0, len(PLL_TEXT))
    answer = (4, 15)  # "xylophonist": several word pieces
    requests = [(PLL_TEXT, whole, answer), (PLL_TEXT, answer, answer),
                ("Emus are unbelievably fast birds.", (0, 33), (9, 21))]
    scores = scorer.pll(requests)
    for (text, span, ans), score in zip(requests, scores, strict=True):
        expected = _pll_reference(scorer.model, scorer.tokenizer, text, metric, span, ans)
        assert logprob_close(score.logprob, expected), (metric, text, span)
    assert scores[0].n_tokens == len(scorer.tokenizer(PLL_TEXT)["input_ids"]) - 2
    key = scorer.cache_key_options()
    assert key.get("pll_metric", "original") == metric


def test_within_word_differs_from_original_on_split_words(tiny_bert: Path) -> None:
    text = "The xylophonist chased the cat."
    assert len(load_scorer(str(tiny_bert), device="cpu")
               .tokenizer.tokenize("xylophonist")) > 1
    a = load_scorer(str(tiny_bert), device="cpu", pll_metric="original").pll([(text, (4, 15))])
    b = load_scorer(str(tiny_bert), device="cpu",
                    pll_metric="within_word_l2r").pll([(text, (4, 15))])
    assert a[0].n_tokens == b[0].n_tokens and a[0].logprob != b[0].logprob


def test_pll_metric_errors(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="unknown pll_metric 'within_word'"):
        load_scorer(str(tiny_bert), device="cpu", pll_metric="within_word")
    scorer = load_scorer(str(tiny_bert), device="cpu", pll_metric="answer_l2r+word_l2r")
    with pytest.raises(PromptError, match="has no answer span"):
        scorer.pll([("Emus are birds.", (0, 15))])
