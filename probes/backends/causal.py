"""Causal LMs (GPT-2, OPT, Llama, Gemma, SmolLM2): continuation log-likelihood, next-token top-k.

Token boundary (the lm-evaluation-harness convention): trailing whitespace of the context moves
to the continuation; the whole string and the context are encoded separately and the
continuation's tokens are the whole string's tokens after the context's. An empty context is
the tokenizer's own leading special tokens (Gemma's ``<bos>``), else the BOS token, else EOS.

Speed: every request is a statement (its token ids, context and continuation, and the
positions it scores), and one call's statements run as one prefix tree
(:mod:`probes.backends.causal_statements`):

- default (``prefix_mode="packed"``): every distinct token prefix of the call runs once, in
  full rows under a tree attention mask with each token's depth as its position id, so a
  context shared by candidates runs once, candidates' common first tokens run once, and
  whole texts (an empty context) that differ only after some words run those words once.
  Every candidate's first token is scored from its context's last position, so one-token
  candidates cost nothing beyond the context; rows carry no padding;
- ``prefix_mode="cache"``: candidates that share a context (two or more, a context of two
  tokens or more) take its key/value cache (DynamicCache), encoded once in a batch, and run
  only their own tokens; the other requests run in the prefix tree;
- ``prefix_mode=None``: every request is a plain causal forward of its own (the reference);
- a request longer than a row (a sliding window shorter than the request) runs plainly too;
- the LM head runs only at the positions whose logits are needed, in chunks, with logsumexp +
  gather instead of a full log-softmax.

Whole statements (``boundary="whole"`` or ``"lm-pub-quiz"``, lm-pub-quiz 0.3.3's scoring):
``context + continuation`` is tokenised as one statement with BOS in front and the tokens from
the continuation's first character to the end are scored; the statements that share a token
prefix (BOS and the template text before the answer) run it once. See
:mod:`probes.backends.causal_statements`.

A self-check at load compares both fast paths with a plain full forward on a short input and
falls back (with a warning) to the plain path if they ever disagree.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch

from probes.backends import causal_generate
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
from probes.backends.causal_model import (
    accepts_positions,
    cache_argument,
    cache_supported,
    leading_special_ids,
    returned_cache,
    select_cache,
    sliding_window,
    split_causal,
    stack_rows,
)
from probes.backends.causal_statements import (
    Statement,
    encode_statements,
    score_statements,
)
from probes.backends.generation import GenerateSettings, Generation, with_system
from probes.backends.protocol import CAUSAL_LM
from probes.backends.registry import register
from probes.backends.scoring_options import BOUNDARIES
from probes.engine.errors import ModelError
from probes.engine.models import ModelSource
from probes.engine.wordvocab import WholeWordVocab

Ids = tuple[int, ...]
PREFIX_MODES = ("packed", "cache", None)


@register("causal")
class CausalScorer(Scorer):
    """Scorer for decoder-only language models."""

    capabilities = CAUSAL_LM
    operations = frozenset({"loglik", "topk", "features", "generate"})
    auto_model = "AutoModelForCausalLM"
    hidden_states = True  # every layer's states (probes.backends.hidden)

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        self._body, self._head = split_causal(model)
        self._lead = leading_special_ids(tokenizer)
        self._start = self._lead or [
            t for t in (tokenizer.bos_token_id, tokenizer.eos_token_id) if t is not None
        ][:1]
        self._window = sliding_window(model)
        self.prefix_mode: str | None = "packed"
        """How requests share their token prefixes: ``packed`` (one prefix tree per call, in rows
        under a tree attention mask), ``cache`` (a shared context's key/value cache copied to
        its candidates), or None (every request runs on its own)."""
        if not accepts_positions(model, self._body):
            self.prefix_mode = None
        self._cache_ok = cache_supported(model)
        self.boundary = "lm-eval"
        """How a request is tokenised and which tokens are scored (see ``BOUNDARIES``)."""
        self._cache_argument = cache_argument(model, self._body)

    @classmethod
    def no_head_error(cls, source: ModelSource, config: Any) -> ModelError:
        return ModelError(
            f"model {source.name!r} ({', '.join(config.architectures or [])}) has no LM "
            "head; causal scoring needs a *ForCausalLM checkpoint"
        )

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """``prefix_mode``: ``"packed"`` (default), ``"cache"`` or None (see the module);
        ``boundary``: ``"lm-eval"`` (default), ``"whole"`` or ``"lm-pub-quiz"``."""
        options = dict(options)
        prefix_mode = options.pop("prefix_mode", "packed")
        boundary = options.pop("boundary", "lm-eval")
        super().check_options(options)
        if prefix_mode not in PREFIX_MODES:
            raise ModelError(f"unknown prefix_mode {prefix_mode!r}; use packed, cache or None")
        if boundary not in BOUNDARIES:
            raise ModelError(f"unknown boundary {boundary!r}; use {', '.join(BOUNDARIES)}")
        return {"prefix_mode": prefix_mode, "boundary": boundary}

    def configure(self, settings: dict[str, Any], *, verify: bool) -> None:
        """Use the chosen prefix mode (when the model allows one) and token boundary, and
        check the fast paths."""
        self.boundary = settings.get("boundary", "lm-eval")
        if self.prefix_mode is not None:
            self.prefix_mode = settings["prefix_mode"]
        if verify:
            self.verify_fast_paths()

    def describe(self) -> dict[str, Any]:
        """Adds how shared contexts are handled, the token boundary and whether the LM head is
        applied separately."""
        return {**super().describe(), "prefix_mode": self.prefix_mode,
                "boundary": self.boundary, "split_head": self._head is not None}  # fmt: skip

    def cache_key_options(self) -> dict[str, Any]:
        """Adds the token-boundary convention and the empty-context prefix."""
        return {**super().cache_key_options(), "boundary": self.boundary,
                "start": list(self._start)}

    # --- loglik ------------------------------------------------------------------------------

    @torch.inference_mode()
    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Score]:
        """log P(continuation | context), summed over the continuation's tokens.

        Every request becomes a statement (its token ids and the positions it scores) and the
        statements run as one prefix tree (``causal_statements.score_statements``), so what
        requests share runs once; ``prefix_mode=None`` runs each on its own, and
        ``prefix_mode="cache"`` scores candidates that share a context from its key/value
        cache. With ``boundary`` ``whole``/``lm-pub-quiz`` the request is scored as
        lm-pub-quiz scores a statement (module docstring).
        """
        pairs: list[tuple[Ids, Ids]] = []
        if self.boundary != "lm-eval":
            statements = encode_statements(
                self.tokenizer, requests, quirk=self.boundary == "lm-pub-quiz")
            for index, st in enumerate(statements):
                self._check_length(len(st.ids), index, "".join(requests[index]))
        else:
            pairs = self.encode_pairs(requests)
            for index, (ctx, cont) in enumerate(pairs):
                self._check_length(len(ctx) + len(cont) - 1, index, "".join(requests[index]))
            statements = [Statement(ctx + cont, tuple(range(len(ctx), len(ctx) + len(cont))))
                          for ctx, cont in pairs]
        logprob = [0.0] * len(statements)
        rest = list(range(len(statements)))
        groups = self._cache_groups(pairs) if self.prefix_mode == "cache" else {}
        if groups:
            self._loglik_cached(groups, pairs, logprob)
            cached = {i for members in groups.values() for i in members}
            rest = [i for i in rest if i not in cached]
        scored = score_statements(self, [statements[i] for i in rest],
                                  share=self.prefix_mode is not None)
        for i, (value, _) in zip(rest, scored, strict=True):
            logprob[i] = value
        return [Score(logprob[i], len(st.scored)) for i, st in enumerate(statements)]

    def encode_pairs(self, requests: Sequence[tuple[str, str]]) -> list[tuple[Ids, Ids]]:
        """(context token ids, continuation token ids) per request, as the model will see them."""
        contexts: list[str] = []
        wholes: list[str] = []
        for context, continuation in requests:
            stripped = context.rstrip()
            continuation = context[len(stripped) :] + continuation
            contexts.append(stripped)
            wholes.append(stripped + continuation)
        encoded = self._encode_texts(contexts + wholes)
        pairs: list[tuple[Ids, Ids]] = []
        for context, whole in zip(contexts, wholes, strict=True):
            if context:
                ctx = self._lead + encoded[context]
                full = self._lead + encoded[whole]
            else:
                ctx = list(self._start)
                full = ctx + encoded[whole]
            if not ctx:  # no BOS/EOS at all: the first token can only condition the rest
                ctx, full = full[:1], full
            pairs.append((tuple(ctx), tuple(full[len(ctx) :])))
        return pairs

    def _encode_texts(self, texts: Sequence[str]) -> dict[str, list[int]]:
        unique = list(dict.fromkeys(texts))
        ids = self.tokenizer(unique, add_special_tokens=False)["input_ids"] if unique else []
        return dict(zip(unique, ids, strict=True))

    def _cache_groups(self, pairs: list[tuple[Ids, Ids]]) -> dict[Ids, list[int]]:
        """``prefix_mode="cache"``: the contexts whose candidates share their key/value cache
        (at least two candidates, a context of two tokens or more, all within a row)."""
        if not self._cache_ok:
            return {}
        groups: dict[Ids, list[int]] = {}
        for index, (ctx, cont) in enumerate(pairs):
            if cont:
                groups.setdefault(ctx, []).append(index)
        return {ctx: members for ctx, members in groups.items()
                if len(members) >= 2 and len(ctx) >= 2
                and len(ctx) + max(len(pairs[i][1]) for i in members) < self._row_limit(len(ctx))}

    def _row_limit(self, context_length: int) -> int:
        """Longest packed row: room for many candidates, within the model's (sliding) window."""
        limit = max(128, context_length + 64)
        if self._window is not None:
            limit = min(limit, self._window - 1)
        return min(limit, self.max_length)

    def _loglik_cached(
        self,
        groups: dict[Ids, list[int]],
        pairs: list[tuple[Ids, Ids]],
        logprob: list[float],
    ) -> None:
        keys = list(groups)

        def context_work(batch: list[int]) -> None:
            contexts = [keys[b] for b in batch]
            ids, mask = self._padded(contexts)
            states, cache = self._run(ids, mask, use_cache=True)
            lengths = self._long([len(c) for c in contexts])
            last = states[torch.arange(len(contexts), device=self.device), lengths - 1]
            candidates = [(j, i) for j, key in enumerate(contexts) for i in groups[key]]
            first_lp = self._first_tokens(
                last,
                self._long([j for j, _ in candidates]),
                self._long([pairs[i][1][0] for _, i in candidates]),
            )
            rest_lp = torch.zeros(len(candidates), dtype=torch.float64, device=self.device)
            multi = [c for c, (_, i) in enumerate(candidates) if len(pairs[i][1]) > 1]

            def continuation_work(sub: list[int]) -> None:
                chosen = [multi[s] for s in sub]
                rows = self._long([candidates[c][0] for c in chosen])
                inputs = [pairs[candidates[c][1]][1][:-1] for c in chosen]
                cont_ids, cont_mask = self._padded(inputs)
                width = cont_ids.shape[1]
                attention = torch.cat([mask.index_select(0, rows), cont_mask], dim=1)
                positions = lengths.index_select(0, rows)[:, None] + torch.arange(
                    width, device=self.device
                )
                sub_cache = select_cache(cache, rows, self.model.config)
                out, _ = self._run(cont_ids, attention, positions, sub_cache, use_cache=True)
                r, t, targets, segments = [], [], [], []
                for j, c in enumerate(chosen):
                    cont = pairs[candidates[c][1]][1]
                    for step in range(len(cont) - 1):
                        r.append(j)
                        t.append(step)
                        targets.append(cont[step + 1])
                        segments.append(j)
                lp = self._row_logprobs(
                    out[self._long(r), self._long(t)], self._long(targets), self._head
                )
                rest_lp[self._long(chosen)] = segment_sum(lp, self._long(segments), len(chosen))

            self.batcher("continuation", rows=self._rows * 4).run(
                [len(pairs[candidates[c][1]][1]) - 1 for c in multi], continuation_work
            )
            total = (first_lp.double() + rest_lp).tolist()
            for c, (_, i) in enumerate(candidates):
                logprob[i] = total[c]
            self._report(len(candidates))

        # not cut at length drops: each context batch feeds its candidates' continuation batches
        self.batcher("context", cut=False).run([len(k) for k in keys], context_work)

    def _first_tokens(
        self, last: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        """Log-probs of each candidate's first token from its context's last position; the
        head runs once per context, not once per candidate."""
        lp = torch.empty(rows.shape[0], dtype=torch.float32, device=self.device)
        step = max(1, self._logit_budget // max(1, self.model.config.get_text_config().vocab_size))
        for start in range(0, last.shape[0], step):
            chunk = last[start : start + step]
            logits = (self._head(chunk) if self._head is not None else chunk).float()
            inside = (rows >= start) & (rows < start + chunk.shape[0])
            local = rows[inside] - start
            picked = logits[local, targets[inside]]
            lp[inside] = picked - log_normalizer(logits)[local]
        return lp

    # --- generate ----------------------------------------------------------------------------

    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Generation]:
        """The answer after each prompt: batched, the prompt's key/value cache reused across
        the decode steps, cut at the stop strings (:mod:`probes.backends.causal_generate`)."""
        if settings.system:
            prompts = [with_system(p, settings.system) for p in prompts]
        return causal_generate.generate(self, prompts, settings)

    def generation_ids(self, prompt: str) -> list[int]:
        """The token ids a generation starts from: the tokenizer's leading special tokens and
        the prompt as written (its trailing whitespace kept, as lm-evaluation-harness's
        ``generate_until`` encodes it); an empty prompt is the start token."""
        if not prompt:
            if not self._start:
                raise PromptError(f"an empty prompt and model {self.name!r} has no BOS/EOS "
                                  "token to start from")
            return list(self._start)
        return self._lead + self.tokenizer(prompt, add_special_tokens=False)["input_ids"]

    # --- topk and features -------------------------------------------------------------------

    @torch.inference_mode()
    def topk(
        self, prompts: Sequence[str], k: int, vocab: WholeWordVocab | None = None,
        mix: Sequence[float] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Next-token distribution after each prompt (trailing whitespace dropped; a prompt may
        end in ``[MASK]`` and a final ``.``, ``!`` or ``?``, but other text after it is an
        error, never dropped: this scorer declares that prompts end at the slot), as top-k
        whole words (``mix``: see Scorer.topk)."""
        words = self._resolve_vocab(vocab)
        sequences = [self._prompt_ids(p) for p in prompts]
        for index, seq in enumerate(sequences):
            self._check_length(len(seq), index, prompts[index])
        sink = self._topk_collector(prompts, k, words, self._head, mix)

        def work(batch: list[int]) -> None:
            ids, mask = self._padded([sequences[b] for b in batch])
            states, _ = self._run(ids, mask)
            last = states[torch.arange(len(batch), device=self.device), mask.sum(1) - 1]
            sink.add(batch, last)
            self._report(len(batch))

        self.batcher("topk").run([len(s) for s in sequences], work)
        return sink.result()

    def _prompt_ids(self, prompt: str) -> list[int]:
        if prompt.count(MASK) > 1:
            raise PromptError(f"prompt {prompt!r} has more than one {MASK} slot")
        text, _, after = prompt.partition(MASK)
        if after.strip() not in ("", ".", "!", "?"):  # as probes.engine.render.causal_prompt
            raise PromptError(f"prompt {prompt!r} has text after its {MASK} slot; a causal LM "
                              "reads the slot as the next token, so the prompt must end there")
        text = text.rstrip()
        if not text:
            if not self._start:
                raise PromptError(
                    f"prompt {prompt!r} has no text before the slot and model {self.name!r} "
                    "has no BOS/EOS token to condition on"
                )
            return list(self._start)
        return self._lead + self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.inference_mode()
    def features(self, texts: Sequence[str], pooling: Pooling = "last") -> torch.Tensor:
        """Last-layer hidden states (after the final norm), pooled; ``last`` suits causal LMs."""
        sequences = [
            self._lead + ids if text else list(self._start)
            for text, ids in zip(texts, self._encoded_list(texts), strict=True)
        ]
        for index, seq in enumerate(sequences):
            self._check_length(len(seq), index, texts[index])
        special_ids = set(self.tokenizer.all_special_ids)
        out: list[torch.Tensor | None] = [None] * len(texts)

        def work(batch: list[int]) -> None:
            seqs = [sequences[b] for b in batch]
            ids, mask = self._padded(seqs)
            if self._body is not None:
                states = self._body(input_ids=ids, attention_mask=mask, use_cache=False)
                hidden = states.last_hidden_state
            else:
                full = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
                hidden = full.hidden_states[-1]
            special = torch.zeros_like(mask)
            for row, seq in enumerate(seqs):
                for col, token in enumerate(seq):
                    if token in special_ids:
                        special[row, col] = 1
            pooled = pool(hidden, mask, special, pooling).float().cpu()
            for j, b in enumerate(batch):
                out[b] = pooled[j]

        self.batcher("features").run([len(s) for s in sequences], work)
        return stack_rows(out, self.model)

    def _encoded_list(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        return list(self.tokenizer(list(texts), add_special_tokens=False)["input_ids"])

    # --- plumbing ----------------------------------------------------------------------------

    def _long(self, values: Sequence[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=self.device)

    def _run(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor | None = None,
        cache: Any = None,
        use_cache: bool = False,
    ) -> tuple[torch.Tensor, Any]:
        """Hidden states (or logits when the head cannot be split off) and the cache."""
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "use_cache": use_cache}
        if positions is not None:
            kwargs["position_ids"] = positions
        if cache is not None:
            kwargs[self._cache_argument] = cache
        if self._head is not None:
            out = self._body(**kwargs)
            return out.last_hidden_state, returned_cache(out)
        out = self.model(**kwargs)
        return out.logits, returned_cache(out)

    @torch.inference_mode()
    def verify_fast_paths(self) -> None:
        """Check the split head and the shared-context cache against plain full forwards."""
        text = "The quick brown fox jumps over the lazy dog near the river bank"
        requests = [
            (text[:19], text[19:31]),
            (text[:19], " sleeps."),
            (text[:19], ","),
            (text[:9], text[9:40]),
            ("", text[:25]),
            ("", text[:31]),
        ]
        reference = [self.reference_loglik(c, x) for c, x in requests]
        tolerance = [1e-3 if self.dtype == "float32" else 0.5 + 0.05 * abs(r) for r in reference]
        for attempt in ("as built", "no shared prefix", "no split head"):
            if attempt == "no shared prefix":
                self.prefix_mode = None
            elif attempt == "no split head":
                self._head = None
            got = [s.logprob for s in self.loglik(requests)]
            if all(
                abs(a - b) <= tol for a, b, tol in zip(got, reference, tolerance, strict=True)
            ):
                if attempt != "as built":
                    warnings.warn(
                        f"{self.name}: fast scoring path disagreed with a plain forward; "
                        f"using the slower path ({attempt})",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                return
        raise ModelError(
            f"model {self.name!r}: batched scores disagree with a plain forward "
            f"({got} vs {reference}); this architecture is not supported by the causal backend"
        )

    @torch.inference_mode()
    def reference_loglik(self, context: str, continuation: str) -> float:
        """The plain computation for one request: one unpadded full forward, log-softmax."""
        if self.boundary != "lm-eval":
            (st,) = encode_statements(
                self.tokenizer, [(context, continuation)], quirk=self.boundary == "lm-pub-quiz")
            if not st.scored:
                return 0.0
            logits = self.model(input_ids=torch.tensor([list(st.ids)], device=self.device),
                                use_cache=False).logits[0].float()
            logprobs = torch.log_softmax(logits, dim=-1)
            return float(sum(float(logprobs[p - 1, st.ids[p]]) for p in st.scored))
        ((ctx, cont),) = self.encode_pairs([(context, continuation)])
        if not cont:
            return 0.0
        ids = torch.tensor([list(ctx + cont)[:-1]], device=self.device)
        logits = self.model(input_ids=ids, use_cache=False).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        positions = torch.arange(len(ctx) - 1, len(ctx) + len(cont) - 1, device=self.device)
        targets = torch.tensor(cont, device=self.device)
        return float(logprobs[positions, targets].double().sum())
