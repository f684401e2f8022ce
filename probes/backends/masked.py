"""Masked LMs (BERT, RoBERTa, ALBERT, DistilBERT, ELECTRA generators ...): PLL and mask-slot top-k.

- ``pll``: for each token overlapping the character span, one copy of the text with that token
  masked (and, by the ``pll_metric`` option, more tokens; see
  :data:`probes.backends.scoring_options.PLL_METRICS`); all copies
  of all requests are length-sorted and batched; the MLM head and the log-softmax run only at
  the masked positions (hidden states are gathered first).
- ``loglik(context, continuation)`` is the PLL of the continuation's span in the whole text.
- ``topk``: the prompt holds exactly one ``[MASK]`` (replaced by the tokenizer's mask token;
  a prompt that already holds the tokenizer's own mask token once is taken as it is).
- ``features``: last-layer states of the encoder, pooled.

An encoder without an MLM head (e.g. all-MiniLM-L6-v2, ``BertModel``) loads with ``features``
only; the other operations raise a ModelError naming the head that is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Self

import torch

from probes.backends.base import (
    MASK,
    Pooling,
    PromptError,
    Score,
    Scorer,
    pool,
)
from probes.backends.generation import cannot_generate
from probes.backends.protocol import MASKED_LM
from probes.backends.registry import register
from probes.backends.scoring_options import PLL_METRICS
from probes.engine.errors import ModelError
from probes.engine.wordvocab import WholeWordVocab


@register("masked")
class MaskedScorer(Scorer):
    """Scorer for bidirectional encoders with (or, for features only, without) an MLM head."""

    capabilities = MASKED_LM
    auto_model = "AutoModelForMaskedLM"
    headless_auto_model = "AutoModel"  # an encoder without MLM head: features only
    hidden_states = True  # every layer's states (probes.backends.hidden)

    def __init__(self, model: Any, tokenizer: Any, *, has_head: bool = True, **kwargs: Any):
        super().__init__(model, tokenizer, **kwargs)
        self.has_head = has_head
        if has_head:
            self.operations = frozenset({"loglik", "pll", "topk", "features"})
            self._body, self._head = split_masked(model)
        else:
            self.operations = frozenset({"features"})
            self.capabilities = replace(MASKED_LM, topk=False)
            self._body, self._head = model, None
        if has_head and tokenizer.mask_token_id is None:
            raise ModelError(f"the tokenizer of {self.name!r} has no mask token")
        if has_head and not getattr(tokenizer, "is_fast", False):
            raise ModelError(
                f"model {self.name!r} has only a slow (Python) tokenizer; span scoring needs "
                "character offsets from a fast tokenizer (tokenizer.json)"
            )

    @classmethod
    def create(cls, model: Any, tokenizer: Any, *, has_head: bool, **kwargs: Any) -> Self:
        return cls(model, tokenizer, has_head=has_head, **kwargs)

    pll_metric = "original"
    """Which tokens each copy masks (:data:`PLL_METRICS`); the ``pll_metric`` load option."""

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """``pll_metric``: one of :data:`PLL_METRICS` (default ``original``)."""
        options = dict(options)
        metric = options.pop("pll_metric", "original")
        super().check_options(options)
        if metric not in PLL_METRICS:
            raise ModelError(f"unknown pll_metric {metric!r}; use one of {', '.join(PLL_METRICS)}")
        return {"pll_metric": metric}

    def configure(self, settings: dict[str, Any], *, verify: bool) -> None:
        """Use the chosen PLL masking; check the split-off MLM head against the model's output."""
        self.pll_metric = settings.get("pll_metric", "original")
        if verify and self.has_head:
            self.verify_head()

    def describe(self) -> dict[str, Any]:
        """Adds the PLL masking."""
        return {**super().describe(), "pll_metric": self.pll_metric}

    def cache_key_options(self) -> dict[str, Any]:
        """Adds the PLL convention (one masked copy per token overlapping the span) and, unless it
        is ``original`` (so scores cached before the option existed stay valid), the masking."""
        key = {**super().cache_key_options(), "pll": "token-overlap", "has_head": self.has_head}
        if self.pll_metric != "original":
            key["pll_metric"] = self.pll_metric
        return key

    def _unsupported(self, op: str) -> ModelError:
        if not self.has_head and op != "features":
            arch = ", ".join(getattr(self.model.config, "architectures", None) or [])
            return ModelError(
                f"model {self.name!r} ({arch or type(self.model).__name__}) is an encoder "
                f"without a masked-LM head, so it cannot do {op!r} (fill-mask / "
                "pseudo-log-likelihood); use a *ForMaskedLM checkpoint such as "
                "bert-base-uncased, or use this model for features() only"
            )
        if op == "generate":
            return cannot_generate(
                self.name, self.kind, "a masked LM fills marked slots from both sides and has "
                "no next-token distribution to decode from; use a causal or seq2seq model, or "
                "score the probe's candidates (formats: [choice])")
        return super()._unsupported(op)

    # --- pll and loglik ----------------------------------------------------------------------

    @torch.inference_mode()
    def pll(self, requests: Sequence[tuple[Any, ...]]) -> list[Score]:
        """Pseudo-log-likelihood of the characters [start, end) of each text, ``(text, (start,
        end))`` or ``(text, (start, end), (answer_start, answer_end))``: every token that
        overlaps the span gets its own copy of the text, with that token masked (and more, by
        ``pll_metric``), and is scored at its position (an empty span scores 0 over 0 tokens)."""
        self.require("pll")
        texts = [str(r[0]) for r in requests]
        need_words = self.pll_metric in ("within_word_l2r", "answer_l2r+word_l2r")
        encoded = self._encode(texts, offsets=True, words=need_words)
        copies: list[tuple[int, int]] = []  # (request, position)
        masked_of: list[tuple[int, ...]] = []  # the positions each copy masks
        targets_of: list[list[int]] = []
        for index, (request, enc) in enumerate(zip(requests, encoded, strict=True)):
            text, (start, end) = request[0], request[1]
            if not 0 <= start <= end <= len(text):
                raise PromptError(
                    f"span ({start}, {end}) is outside text #{index} of length {len(text)}"
                )
            self._check_length(len(enc["input_ids"]), index, text)
            positions = overlapping(enc, start, end)
            answer = self._answer_positions(request, enc, index)
            targets_of.append(positions)
            for i, p in enumerate(positions):
                copies.append((index, p))
                masked_of.append(masked_positions(
                    self.pll_metric, positions, i, enc.get("word_ids"),
                    len(enc["input_ids"]), answer))
        sums = torch.zeros(len(requests), dtype=torch.float64, device=self.device)
        mask_id = int(self.tokenizer.mask_token_id)
        remaining = [len(t) for t in targets_of]
        self._report(sum(1 for t in targets_of if not t))

        def work(batch: list[int]) -> None:
            chosen = [copies[b] for b in batch]
            ids, attention = self._padded([encoded[r]["input_ids"] for r, _ in chosen])
            rows = torch.arange(len(chosen), device=self.device)
            positions = torch.tensor([p for _, p in chosen], device=self.device)
            targets = ids[rows, positions].clone()
            mask_rows = [j for j, b in enumerate(batch) for _ in masked_of[b]]
            mask_cols = [q for b in batch for q in masked_of[b]]
            ids[torch.tensor(mask_rows, device=self.device),
                torch.tensor(mask_cols, device=self.device)] = mask_id
            hidden = self._hidden(ids, attention)
            lp = self._row_logprobs(hidden[rows, positions], targets, self._head)
            owners = torch.tensor([r for r, _ in chosen], device=self.device)
            sums.index_add_(0, owners, lp.double())
            done = 0
            for r, _ in chosen:
                remaining[r] -= 1
                done += remaining[r] == 0
            self._report(done)

        self.batcher("pll").run([len(encoded[r]["input_ids"]) for r, _ in copies], work)
        totals = sums.tolist()
        return [Score(totals[i], len(targets_of[i])) for i in range(len(requests))]

    def _answer_positions(
        self, request: tuple[Any, ...], enc: dict[str, list[Any]], index: int
    ) -> list[int] | None:
        """The answer's tokens for ``answer_l2r+word_l2r`` (from the request's third element)."""
        if self.pll_metric != "answer_l2r+word_l2r":
            return None
        if len(request) < 3 or request[2] is None:
            raise PromptError(
                f"pll request #{index} has no answer span; pll_metric='answer_l2r+word_l2r' "
                "needs (text, span, (answer_start, answer_end)) requests"
            )
        a, b = request[2]
        found = overlapping(enc, a, b)
        return list(range(found[0], found[-1] + 1)) if found else []

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Score]:
        """For a masked LM: the PLL of the continuation's span in ``context + continuation``."""
        self.require("loglik")
        return self.pll(
            [(ctx + cont, (len(ctx), len(ctx) + len(cont))) for ctx, cont in requests]
        )

    # --- topk and features -------------------------------------------------------------------

    @torch.inference_mode()
    def topk(
        self, prompts: Sequence[str], k: int, vocab: WholeWordVocab | None = None,
        mix: Sequence[float] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Distribution at the single ``[MASK]`` of each prompt, as top-k whole words (``mix``:
        see Scorer.topk)."""
        self.require("topk")
        words = self._resolve_vocab(vocab)
        mask_token = self.tokenizer.mask_token
        texts = []
        for index, prompt in enumerate(prompts):
            if prompt.count(MASK) == 1 or (
                MASK not in prompt and prompt.count(mask_token) == 1
            ):
                texts.append(prompt.replace(MASK, mask_token))
                continue
            raise PromptError(
                f"prompt #{index} ({prompt!r}) must contain exactly one {MASK} slot"
            )
        encoded = self._encode(texts)
        mask_id = int(self.tokenizer.mask_token_id)
        slots = []
        for index, enc in enumerate(encoded):
            self._check_length(len(enc["input_ids"]), index, prompts[index])
            found = [p for p, t in enumerate(enc["input_ids"]) if t == mask_id]
            if len(found) != 1:
                raise PromptError(
                    f"prompt #{index} ({prompts[index]!r}) tokenises to {len(found)} mask tokens"
                )
            slots.append(found[0])
        sink = self._topk_collector(prompts, k, words, self._head, mix)

        def work(batch: list[int]) -> None:
            ids, attention = self._padded([encoded[b]["input_ids"] for b in batch])
            hidden = self._hidden(ids, attention)
            rows = torch.arange(len(batch), device=self.device)
            at = hidden[rows, torch.tensor([slots[b] for b in batch], device=self.device)]
            sink.add(batch, at)
            self._report(len(batch))

        self.batcher("topk").run([len(e["input_ids"]) for e in encoded], work)
        return sink.result()

    @torch.inference_mode()
    def features(self, texts: Sequence[str], pooling: Pooling = "cls") -> torch.Tensor:
        """Last-layer encoder states, pooled (``cls`` by default)."""
        encoded = self._encode(texts)
        for index, enc in enumerate(encoded):
            self._check_length(len(enc["input_ids"]), index, texts[index])
        out: list[torch.Tensor | None] = [None] * len(texts)

        def work(batch: list[int]) -> None:
            ids, attention = self._padded([encoded[b]["input_ids"] for b in batch])
            special, _ = self._padded([encoded[b]["special_tokens_mask"] for b in batch], pad=1)
            hidden = self._body_states(ids, attention)
            pooled = pool(hidden, attention, special, pooling).float().cpu()
            for j, b in enumerate(batch):
                out[b] = pooled[j]

        self.batcher("features").run([len(e["input_ids"]) for e in encoded], work)
        if not texts:
            return torch.zeros((0, self.model.config.hidden_size), dtype=torch.float32)
        return torch.stack([o for o in out if o is not None])

    # --- plumbing ----------------------------------------------------------------------------

    def _encode(
        self, texts: Sequence[str], offsets: bool = False, words: bool = False
    ) -> list[dict[str, list[Any]]]:
        """Token ids, special-tokens mask and, if asked, character offsets and word ids."""
        if not texts:
            return []
        batch = self.tokenizer(
            list(texts),
            return_offsets_mapping=offsets,
            return_special_tokens_mask=True,
            return_token_type_ids=False,
            return_attention_mask=False,
        )
        keys = [k for k in ("input_ids", "offset_mapping", "special_tokens_mask") if k in batch]
        out = [{k: batch[k][i] for k in keys} for i in range(len(texts))]
        if words:
            for i, item in enumerate(out):
                item["word_ids"] = batch.word_ids(i)
        return out

    def _body_states(self, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        body = self._body if self._body is not None else self.model
        if self._body is None:
            out = self.model(input_ids=ids, attention_mask=attention, output_hidden_states=True)
            return out.hidden_states[-1]
        return body(input_ids=ids, attention_mask=attention).last_hidden_state

    def _hidden(self, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """Hidden states for the split head, or full logits when the head cannot be split."""
        if self._head is None:
            return self.model(input_ids=ids, attention_mask=attention).logits
        return self._body(input_ids=ids, attention_mask=attention).last_hidden_state

    @torch.inference_mode()
    def verify_head(self) -> None:
        """Check the split MLM head against the model's own logits; fall back if they differ."""
        if self._head is None:
            return
        ids = self.tokenizer("Paris is the capital of France.", return_tensors="pt")
        ids = {k: v.to(self.device) for k, v in ids.items() if k in ("input_ids", "attention_mask")}
        full = self.model(**ids).logits[0].float()
        split = self._head(self._body(**ids).last_hidden_state)[0].float()
        tolerance = 1e-3 if self.dtype == "float32" else 0.25
        if (full - split).abs().max().item() > tolerance:
            self._body, self._head = None, None


def split_masked(model: Any) -> tuple[Any, Callable[[torch.Tensor], torch.Tensor] | None]:
    """(encoder, MLM head function) for the common masked-LM classes, else (None, None) and
    the scorer uses the model's own logits (gathered at the masked positions)."""
    body = getattr(model, "base_model", None)
    if body is None or body is model:
        return None, None
    if hasattr(model, "vocab_projector"):  # DistilBERT
        return body, lambda h: model.vocab_projector(
            model.vocab_layer_norm(model.activation(model.vocab_transform(h)))
        )
    if hasattr(model, "generator_predictions"):  # ELECTRA generator
        return body, lambda h: model.generator_lm_head(model.generator_predictions(h))
    for name in ("cls", "lm_head", "predictions"):  # BERT / RoBERTa, XLM-R, MPNet / ALBERT
        head = getattr(model, name, None)
        if isinstance(head, torch.nn.Module):
            return body, head
    return None, None


def overlapping(enc: dict[str, list[Any]], start: int, end: int) -> list[int]:
    """The positions of the non-special tokens that overlap the characters [start, end).

    >>> enc = {"offset_mapping": [(0, 0), (0, 3), (4, 6), (6, 8), (0, 0)],
    ...        "special_tokens_mask": [1, 0, 0, 0, 1]}
    >>> overlapping(enc, 4, 8), overlapping(enc, 5, 5)
    ([2, 3], [])
    """
    return [
        p
        for p, ((a, b), special) in enumerate(
            zip(enc["offset_mapping"], enc["special_tokens_mask"], strict=True)
        )
        if not special and b > a and a < end and b > start and start < end
    ]


def masked_positions(
    metric: str,
    scored: Sequence[int],
    i: int,
    word_ids: Sequence[int | None] | None,
    length: int,
    answer: Sequence[int] | None,
) -> tuple[int, ...]:
    """The positions masked in the copy that scores ``scored[i]``, as lm-pub-quiz 0.3.3's
    ``create_masked_batch`` masks them (see :data:`PLL_METRICS`).

    >>> words = [None, 0, 0, 0, 1, None]  # [CLS] xy ##lo ##phone is [SEP]
    >>> masked_positions("original", [1, 2, 3, 4], 0, words, 6, None)
    (1,)
    >>> masked_positions("within_word_l2r", [1, 2, 3, 4], 1, words, 6, None)
    (2, 3)
    >>> masked_positions("sentence_l2r", [1, 2, 3, 4], 2, words, 6, None)
    (3, 4, 5)
    >>> masked_positions("answer_l2r+word_l2r", [1, 2, 3, 4], 0, words, 6, [1, 2])
    (1, 2)
    >>> masked_positions("answer_l2r+word_l2r", [1, 2, 3, 4], 2, words, 6, [1, 2])
    (3,)
    """
    position = scored[i]
    if metric == "original":
        return (position,)
    if metric == "sentence_l2r":
        return tuple(range(position, length))
    if metric == "answer_l2r+word_l2r" and answer is not None and position in answer:
        return tuple(a for a in answer if a >= position)
    if word_ids is None:
        raise ModelError(f"pll_metric {metric!r} needs word ids from a fast tokenizer")
    word = word_ids[position]
    out = [position]
    if word is not None:
        for right in scored[i + 1 :]:
            if word_ids[right] != word:
                break  # lm-pub-quiz: a word is not nested in another, so stop at the first
            out.append(right)
    return tuple(out)
