"""Encoder-decoder LMs (T5, BART): target log-likelihood, first-sentinel / mask-slot top-k.

- ``loglik(context, continuation)``: the encoder reads the context, the decoder is scored on
  the continuation's tokens as the tokenizer makes them (T5 appends ``</s>``, BART wraps in
  ``<s> ... </s>``: the usual target convention). Work shared by the candidates of one
  context is done once per context: the encoder pass; the decoder's first step (every target
  starts from the same decoder start token, so its states, the cross-attention keys/values of
  every layer, and the distribution of the first target token are the same for all
  candidates), kept as a key/value cache. The candidates then run only their tokens after the
  first, on a copy of their context's cache rows. A self-check at load compares this path with
  a plain forward and falls back (with a warning) to one full decoder pass per candidate.
- ``topk``: T5 (a tokenizer with ``<extra_id_0>``): ``[MASK]`` becomes the first sentinel and
  the distribution is the decoder's after ``<pad> <extra_id_0>``, the first token of the
  filler. BART-style (a mask token): ``[MASK]`` becomes ``<mask>`` and the decoder, fed the
  text before the slot, gives the next token.
- ``features``: encoder states, pooled.
- ``generate``: the encoder reads the prompt, the decoder generates (transformers'
  ``generate``, greedy unless sampling is asked for, seeded by ``seed`` per batch) up to
  ``max_new_tokens``; the answer is cut before the first stop string.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch

from probes.backends.base import (
    MASK,
    Pooling,
    PromptError,
    Score,
    Scorer,
    log_normalizer,
    pool,
    segment_sum,
)
from probes.backends.causal_model import cache_argument, returned_cache
from probes.backends.generation import (
    Finish,
    GenerateSettings,
    Generation,
    cut_at_stop,
    with_system,
)
from probes.backends.protocol import SEQ2SEQ_LM
from probes.backends.registry import register
from probes.engine.errors import ModelError
from probes.engine.models import ModelSource
from probes.engine.wordvocab import WholeWordVocab

SENTINEL = "<extra_id_0>"


@register("seq2seq")
class Seq2SeqScorer(Scorer):
    """Scorer for encoder-decoder models with an LM head."""

    capabilities = SEQ2SEQ_LM
    operations = frozenset({"loglik", "topk", "features", "generate"})
    auto_model = "AutoModelForSeq2SeqLM"
    hidden_states = True  # every layer's states (probes.backends.hidden)

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        start = getattr(model.config, "decoder_start_token_id", None)
        if start is None:
            start = self._pad_id()
        self._start = int(start)
        vocab = tokenizer.get_vocab()
        self._sentinel = vocab.get(SENTINEL)
        self.share_start = True
        """Run the decoder's first step once per context and reuse its key/value cache (see the
        module); False: one full decoder pass per candidate."""
        self._cache_argument = cache_argument(model, None)

    def configure(self, settings: dict[str, Any], *, verify: bool) -> None:
        """Check the shared-start path against a plain forward (``verify``)."""
        if verify:
            self.verify_fast_path()

    def describe(self) -> dict[str, Any]:
        """Adds whether the decoder's first step is shared by a context's candidates."""
        return {**super().describe(), "share_start": self.share_start}

    @classmethod
    def no_head_error(cls, source: ModelSource, config: Any) -> ModelError:
        return ModelError(
            f"model {source.name!r} ({', '.join(config.architectures or [])}) is an "
            "encoder without a decoder and LM head; seq2seq scoring needs a "
            "*ForConditionalGeneration checkpoint (e.g. T5ForConditionalGeneration)"
        )

    def cache_key_options(self) -> dict[str, Any]:
        """Adds the target convention (tokenizer special tokens included) and the slot style."""
        return {
            **super().cache_key_options(),
            "target": "tokenizer-specials",
            "slot": "sentinel" if self._sentinel is not None else "mask",
        }

    # --- generate ----------------------------------------------------------------------------

    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Generation]:
        """The decoder's answer to each prompt (see the module)."""
        texts = [with_system(p, settings.system) for p in prompts]
        encoded = self._ids(texts)
        for index, ids in enumerate(encoded):
            self._check_length(len(ids), index, texts[index])
        out: list[Generation | None] = [None] * len(texts)
        eos = self.tokenizer.eos_token_id

        def work(batch: list[int]) -> None:
            ids, mask = self._padded([encoded[b] for b in batch])
            if settings.do_sample:
                torch.manual_seed(settings.seed)
            sampling = ({"do_sample": True, "temperature": settings.temperature,
                         "top_p": settings.top_p} if settings.do_sample
                        else {"do_sample": False, "num_beams": 1})
            generated = self.model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=settings.max_new_tokens,
                pad_token_id=self._pad_id(), **sampling)
            for b, row in zip(batch, generated.tolist(), strict=True):
                tokens = row[1:]  # after the decoder start token
                ended = eos is not None and eos in tokens
                if ended:
                    tokens = tokens[: tokens.index(eos)]
                text, stopped = cut_at_stop(
                    self.tokenizer.decode(tokens, skip_special_tokens=True), settings.stops)
                why: Finish = "stop" if stopped else "eos" if ended else "length"
                out[b] = Generation(text, len(tokens) + int(ended), why)
            self._report(len(batch))

        self.batcher("generate", cut=False).run(
            [len(e) + settings.max_new_tokens for e in encoded], work)
        return [g for g in out if g is not None]

    # --- loglik ------------------------------------------------------------------------------

    @torch.inference_mode()
    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Score]:
        """log P(target = continuation | encoder input = context), summed over target tokens."""
        contexts = list(dict.fromkeys(ctx for ctx, _ in requests))
        ctx_ids = dict(zip(contexts, self._ids(contexts), strict=True))
        targets = self._ids([cont for _, cont in requests])
        for index, (ctx, _) in enumerate(requests):
            self._check_length(len(ctx_ids[ctx]), index, ctx)
            self._check_length(len(targets[index]), index, requests[index][1])
        members: dict[str, list[int]] = {}
        for index, (ctx, _) in enumerate(requests):
            if targets[index]:
                members.setdefault(ctx, []).append(index)
        logprob = [0.0] * len(requests)
        keys = list(members)

        def encoder_work(batch: list[int]) -> None:
            chosen = [keys[b] for b in batch]
            ids, attention = self._padded([ctx_ids[c] for c in chosen])
            states = self.model.get_encoder()(input_ids=ids, attention_mask=attention)
            hidden = states.last_hidden_state
            candidates = [(j, targets[i]) for j, c in enumerate(chosen) for i in members[c]]
            score = self._score_shared if self.share_start else self._score_plain
            lps = score(hidden, attention, candidates).tolist()
            owners = [i for c in chosen for i in members[c]]
            for c, i in enumerate(owners):
                logprob[i] = lps[c]
            self._report(len(owners))

        # encoder batches are not cut at length drops: each context feeds ~all its candidates'
        # decoder rows, and more candidates per encoder batch make fuller decoder batches
        self.batcher("encoder", cut=False).run([len(ctx_ids[k]) for k in keys], encoder_work)
        return [Score(logprob[i], len(targets[i])) for i in range(len(requests))]

    def _score_plain(
        self, hidden: torch.Tensor, attention: torch.Tensor,
        candidates: list[tuple[int, list[int]]],
    ) -> torch.Tensor:
        """Summed log-probs of (encoder row, target) pairs: one full
        decoder pass per candidate, ``[start, *target[:-1]]``."""
        lp_out = torch.zeros(len(candidates), dtype=torch.float64, device=self.device)

        def decoder_work(sub: list[int]) -> None:
            picked = [candidates[s] for s in sub]
            rows = _long([j for j, _ in picked], self.device)
            tgt = [t for _, t in picked]
            dec_ids, dec_mask = self._padded([[self._start, *t[:-1]] for t in tgt])
            logits = self._decode(hidden.index_select(0, rows), attention[rows], dec_ids,
                                  dec_mask)
            where = _long(sub, self.device)
            lp_out[where] = self._summed_logprobs(logits, tgt)

        self.batcher("decoder", rows=self._rows * 2).run(
            [len(t) for _, t in candidates], decoder_work
        )
        return lp_out

    def _summed_logprobs(self, logits: torch.Tensor, targets: list[list[int]]) -> torch.Tensor:
        """Per decoder row ``j``, the summed log-probabilities of ``targets[j]``, its token at
        step ``i`` read from ``logits[j, i]``."""
        r, t, goal, seg = [], [], [], []
        for j, target in enumerate(targets):
            for step, token in enumerate(target):
                r.append(j)
                t.append(step)
                goal.append(token)
                seg.append(j)
        lp = self._row_logprobs(logits[_long(r, self.device), _long(t, self.device)],
                                _long(goal, self.device), None)
        return segment_sum(lp, _long(seg, self.device), len(targets))

    def _score_shared(
        self, hidden: torch.Tensor, attention: torch.Tensor,
        candidates: list[tuple[int, list[int]]],
    ) -> torch.Tensor:
        """As :meth:`_score_plain`, but the decoder start step runs once per encoder row (it is
        the same for all the row's candidates): it scores every first target token and leaves
        the self- and cross-attention cache; each candidate then runs ``target[1:-1]`` on its
        row's cache."""
        from transformers.modeling_outputs import BaseModelOutput

        n = hidden.shape[0]
        start = torch.full((n, 1), self._start, dtype=torch.long, device=self.device)
        out = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
                         attention_mask=attention, decoder_input_ids=start, use_cache=True)
        cache = returned_cache(out)
        owner = _long([j for j, _ in candidates], self.device)
        logits = out.logits[:, 0].float()
        picked = logits[owner, _long([t[0] for _, t in candidates], self.device)]
        lp_out = (picked - log_normalizer(logits)[owner]).double()
        multi = [c for c, (_, t) in enumerate(candidates) if len(t) > 1]

        def decoder_work(sub: list[int]) -> None:
            chosen = [multi[s] for s in sub]
            rows = _long([candidates[c][0] for c in chosen], self.device)
            tgt = [candidates[c][1] for c in chosen]
            dec_ids, dec_mask = self._padded([t[:-1] for t in tgt])
            dec_mask = torch.cat([torch.ones_like(dec_mask[:, :1]), dec_mask], dim=1)
            logits = self.model(
                encoder_outputs=BaseModelOutput(last_hidden_state=hidden.index_select(0, rows)),
                attention_mask=attention.index_select(0, rows),
                decoder_input_ids=dec_ids,
                decoder_attention_mask=dec_mask,
                use_cache=True,
                **{self._cache_argument: select_rows(cache, rows)},
            ).logits
            where = _long(chosen, self.device)
            lp_out[where] += self._summed_logprobs(logits, [t[1:] for t in tgt])

        self.batcher("decoder", rows=self._rows * 2).run(
            [len(candidates[c][1]) - 1 for c in multi], decoder_work
        )
        return lp_out

    @torch.inference_mode()
    def verify_fast_path(self) -> None:
        """Compare the shared-start path with plain forwards; fall back to one full decoder
        pass per candidate (with a warning) if they disagree or the model has no cache."""
        context = "The quick brown fox jumps over the lazy dog."
        requests = [(context, "a fox"), (context, "the lazy dog near the river"), (context, "dog"),
                    ("Near the river bank", "a dog")]  # fmt: skip
        reference = [self.reference_loglik(c, x) for c, x in requests]
        try:
            got = [s.logprob for s in self.loglik(requests)]
        except (TypeError, ValueError, AttributeError, RuntimeError, IndexError):
            got = None
        tolerance = [1e-3 if self.dtype == "float32" else 0.5 + 0.05 * abs(r) for r in reference]
        if got is not None and all(
            abs(a - b) <= tol for a, b, tol in zip(got, reference, tolerance, strict=True)
        ):
            return
        self.share_start = False
        warnings.warn(f"{self.name}: the shared decoder-start path disagreed with a plain "
                      "forward; scoring each candidate with a full decoder pass",
                      RuntimeWarning, stacklevel=2)

    def _decode(
        self,
        hidden: torch.Tensor,
        attention: torch.Tensor,
        dec_ids: torch.Tensor,
        dec_mask: torch.Tensor,
    ) -> torch.Tensor:
        from transformers.modeling_outputs import BaseModelOutput

        out = self.model(
            encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
            attention_mask=attention,
            decoder_input_ids=dec_ids,
            decoder_attention_mask=dec_mask,
            use_cache=False,
        )
        return out.logits

    @torch.inference_mode()
    def reference_loglik(self, context: str, continuation: str) -> float:
        """The plain computation: one unpadded forward with ``labels``, log-softmax, sum."""
        ids = torch.tensor([self._ids([context])[0]], device=self.device)
        target = self._ids([continuation])[0]
        if not target:
            return 0.0
        dec = torch.tensor([[self._start, *target[:-1]]], device=self.device)
        logits = self.model(input_ids=ids, decoder_input_ids=dec, use_cache=False).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        return float(logprobs[torch.arange(len(target)), torch.tensor(target)].double().sum())

    # --- topk and features -------------------------------------------------------------------

    @torch.inference_mode()
    def topk(
        self, prompts: Sequence[str], k: int, vocab: WholeWordVocab | None = None,
        mix: Sequence[float] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """The first token of the slot's filler, as top-k whole words (``mix``: see
        Scorer.topk)."""
        words = self._resolve_vocab(vocab)
        encoder_inputs, decoder_inputs = [], []
        for index, prompt in enumerate(prompts):
            enc, dec = self._slot_inputs(index, prompt)
            self._check_length(len(enc), index, prompt)
            encoder_inputs.append(enc)
            decoder_inputs.append(dec)
        sink = self._topk_collector(prompts, k, words, None, mix)

        def work(batch: list[int]) -> None:
            ids, attention = self._padded([encoder_inputs[b] for b in batch])
            dec_ids, dec_mask = self._padded([decoder_inputs[b] for b in batch])
            hidden = self.model.get_encoder()(input_ids=ids, attention_mask=attention)
            logits = self._decode(hidden.last_hidden_state, attention, dec_ids, dec_mask)
            rows = torch.arange(len(batch), device=self.device)
            last = logits[rows, dec_mask.sum(1) - 1]
            sink.add(batch, last)
            self._report(len(batch))

        self.batcher("topk").run([len(e) for e in encoder_inputs], work)
        return sink.result()

    def _slot_inputs(self, index: int, prompt: str) -> tuple[list[int], list[int]]:
        markers = prompt.count(MASK)
        if markers > 1 or (markers == 0 and SENTINEL not in prompt):
            raise PromptError(
                f"prompt #{index} ({prompt!r}) must contain exactly one {MASK} slot"
            )
        if self._sentinel is not None:
            text = prompt.replace(MASK, SENTINEL)
            return self._ids([text])[0], [self._start, int(self._sentinel)]
        mask = self.tokenizer.mask_token
        if mask is None:
            raise ModelError(
                f"model {self.name!r} has neither T5 sentinels nor a mask token, so it has no "
                "slot to fill; use loglik over candidate texts instead"
            )
        before = prompt.split(MASK, 1)[0].rstrip()
        prefix = self.tokenizer(before)["input_ids"]
        while prefix and prefix[-1] in self.tokenizer.all_special_ids:
            prefix = prefix[:-1]
        if self.tokenizer.bos_token_id is not None and (
            not prefix or prefix[0] != self.tokenizer.bos_token_id
        ):
            prefix = [self.tokenizer.bos_token_id, *prefix]
        return self._ids([prompt.replace(MASK, mask)])[0], [self._start, *prefix]

    @torch.inference_mode()
    def features(self, texts: Sequence[str], pooling: Pooling = "mean") -> torch.Tensor:
        """Encoder last-layer states, pooled (``mean`` by default)."""
        batch_all = self.tokenizer(list(texts), return_special_tokens_mask=True) if texts else None
        if batch_all is None:
            return torch.zeros((0, self.model.config.d_model), dtype=torch.float32)
        ids_all, special_all = batch_all["input_ids"], batch_all["special_tokens_mask"]
        out: list[torch.Tensor | None] = [None] * len(texts)

        def work(batch: list[int]) -> None:
            ids, attention = self._padded([ids_all[b] for b in batch])
            special, _ = self._padded([special_all[b] for b in batch], pad=1)
            hidden = self.model.get_encoder()(input_ids=ids, attention_mask=attention)
            pooled = pool(hidden.last_hidden_state, attention, special, pooling).float().cpu()
            for j, b in enumerate(batch):
                out[b] = pooled[j]

        self.batcher("features").run([len(i) for i in ids_all], work)
        return torch.stack([o for o in out if o is not None])

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        return [list(x) for x in self.tokenizer(list(texts))["input_ids"]]


def select_rows(cache: Any, rows: torch.Tensor) -> Any:
    """A new encoder-decoder cache holding the given batch rows of ``cache`` (self- and
    cross-attention; the cross-attention part counts as already computed)."""
    from transformers import DynamicCache, EncoderDecoderCache

    def pick(part: Any) -> Any:
        return DynamicCache([(layer.keys.index_select(0, rows), layer.values.index_select(0, rows))
                             for layer in part.layers])

    return EncoderDecoderCache(pick(cache.self_attention_cache), pick(cache.cross_attention_cache))


def _long(values: Sequence[int], device: torch.device) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=device)
