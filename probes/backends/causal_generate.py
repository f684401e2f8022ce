"""Batched generation for decoder-only models: one prefill, then decode steps over the
key/value cache (probes.backends.causal's ``generate``).

- prompts are sorted by length and batched (rows and padded tokens bounded, halved on
  out-of-memory as every batch of the backend); each batch is left-padded, with position ids
  counted from each row's first real token (what transformers' ``generate`` derives from the
  attention mask), so a padded row computes what it computes alone;
- the prompt runs once (prefill) and fills the cache; each step then runs one token per row
  with the cache, and only the last position reaches the LM head;
- a row that is done (end-of-sequence token, a stop string in its decoded answer, or
  ``max_new_tokens``) leaves the batch at once: its cache rows are dropped, so the steps
  after it cost only the rows still generating;
- greedy picks the arg-max token; sampling draws from each row's own generator
  (GenerateSettings.row_seed), after temperature and top-p;
- prompts that share a long token prefix (a few-shot block, a chat template's system turn:
  at least ``prefix_groups.MIN_SHARED_TOKENS`` tokens, grouped by
  :func:`probes.backends.prefix_groups.shared_prefixes`) run it once: its key/value cache
  is computed alone (one row), copied to every row of each batch of the group, and the
  prefill runs only the rest of each prompt, left-padded after the prefix (the padding sits
  between prefix and suffix, masked; positions continue from the prefix's length). The
  decode steps are the same. Prompts in no group run as before, so prompts that share no
  long prefix cost nothing more than the sorting of their token ids. Off under
  ``prefix_mode=None`` (the reference), and for a group that does not fit in a sliding
  attention window.

The answer is the generated tokens decoded without special tokens and cut before the first
stop string (lm-evaluation-harness's ``generate_until``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from probes.backends.causal_model import select_cache
from probes.backends.generation import GenerateSettings, Generation, cut_at_stop
from probes.backends.prefix_groups import shared_prefixes


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """The tokens that end a generation: the tokenizer's EOS and the model's generation
    config's (an instruct model's end-of-turn token)."""
    ids: set[int] = set()
    config = getattr(model, "generation_config", None)
    for value in (getattr(config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids


def _pick(logits: torch.Tensor, settings: GenerateSettings,
          generators: list[torch.Generator | None]) -> torch.Tensor:
    """The next token of each row: arg-max, or a draw from the row's own generator."""
    if not settings.do_sample:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits.float() / settings.temperature, dim=-1)
    if settings.top_p < 1:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < settings.top_p
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter_(1, order, sorted_p)
    return torch.cat([torch.multinomial(probs[j], 1, generator=g)
                      for j, g in enumerate(generators)])


class _Rows:
    """The rows of one batch still generating: their index in the batch, tokens so far."""

    def __init__(self, batch: list[int]) -> None:
        self.batch = list(batch)
        self.tokens: list[list[int]] = [[] for _ in batch]


class Prefix:
    """A prefix shared by a group of prompts: its length and its key/value cache (one row),
    run once (:func:`run_prefix`) and copied to each batch of the group's rows."""

    def __init__(self, length: int, cache: Any) -> None:
        self.length, self.cache = length, cache


def run_prefix(scorer: Any, tokens: Sequence[int]) -> Prefix:
    """The key/value cache of ``tokens`` alone (one row, no padding, positions from 0)."""
    ids = torch.tensor([list(tokens)], dtype=torch.long, device=scorer.device)
    mask = torch.ones_like(ids)
    positions = torch.arange(len(tokens), device=scorer.device)[None]
    _, cache = scorer._run(ids, mask, positions, None, use_cache=True)
    return Prefix(len(tokens), cache)


def generate_batch(scorer: Any, sequences: Sequence[Sequence[int]], prompts: Sequence[str],
                   settings: GenerateSettings, eos: set[int], prefix: Prefix | None = None
                   ) -> list[Generation]:
    """Generate for one batch of prompt token ids (see the module); one result per row.
    With ``prefix`` every row starts with its tokens: the prefix's cache is copied to each
    row, and only the rest of each prompt (left-padded after the prefix) runs in the
    prefill."""
    device, tokenizer = scorer.device, scorer.tokenizer
    n = len(sequences)
    start = prefix.length if prefix is not None else 0
    width = max(len(s) for s in sequences) - start
    pad = scorer._pad_id()
    ids = torch.full((n, width), pad, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, width - len(seq) + start:] = torch.as_tensor(list(seq[start:]),
                                                              dtype=torch.long)
        mask[row, width - len(seq) + start:] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(1) - 1).clamp(min=0) + start
    generators: list[torch.Generator | None] = [None] * n
    if settings.do_sample:
        generators = [torch.Generator(device=device).manual_seed(settings.row_seed(p))
                      for p in prompts]
    cache = None
    if prefix is not None:
        cache = select_cache(prefix.cache, torch.zeros(n, dtype=torch.long, device=device),
                             scorer.model.config)
        mask = torch.cat([mask.new_ones((n, start)), mask], dim=1)
    states, cache = scorer._run(ids, mask, positions, cache, use_cache=True)
    logits = _project(scorer, states[:, -1])
    next_pos = positions[:, -1] + 1
    live = _Rows(list(range(n)))
    out: list[Generation | None] = [None] * n
    for step in range(settings.max_new_tokens):
        chosen = _pick(logits, settings, generators).tolist()
        keep: list[int] = []
        for j, token in enumerate(chosen):
            row = live.batch[j]
            if token in eos:
                out[row] = _finish(tokenizer, live.tokens[j], settings, "eos")
                continue
            live.tokens[j].append(int(token))
            text = tokenizer.decode(live.tokens[j], skip_special_tokens=True)
            if settings.stops and cut_at_stop(text, settings.stops)[1]:
                out[row] = _finish(tokenizer, live.tokens[j], settings, "stop", text)
            elif step == settings.max_new_tokens - 1:
                out[row] = _finish(tokenizer, live.tokens[j], settings, "length", text)
            else:
                keep.append(j)
        if not keep:
            break
        tokens = torch.tensor([chosen[j] for j in keep], dtype=torch.long, device=device)
        if len(keep) < len(live.batch):
            index = torch.tensor(keep, dtype=torch.long, device=device)
            cache.batch_select_indices(index)
            mask, next_pos = mask.index_select(0, index), next_pos.index_select(0, index)
            live.batch = [live.batch[j] for j in keep]
            live.tokens = [live.tokens[j] for j in keep]
            generators = [generators[j] for j in keep]
        mask = torch.cat([mask, mask.new_ones((len(keep), 1))], dim=1)
        states, cache = scorer._run(tokens[:, None], mask, next_pos[:, None], cache,
                                    use_cache=True)
        logits = _project(scorer, states[:, -1])
        next_pos = next_pos + 1
    return [g if g is not None else Generation("", 0, "length") for g in out]


def _project(scorer: Any, last: torch.Tensor) -> torch.Tensor:
    """Logits of the last positions (the split head, else the model returned logits)."""
    return scorer._head(last) if scorer._head is not None else last


def _finish(tokenizer: Any, tokens: list[int], settings: GenerateSettings, why: str,
            text: str | None = None) -> Generation:
    if text is None:
        text = tokenizer.decode(tokens, skip_special_tokens=True)
    cut, _ = cut_at_stop(text, settings.stops)
    n = len(tokens) + (1 if why == "eos" else 0)
    return Generation(cut, n, why)  # type: ignore[arg-type]


def generate(scorer: Any, prompts: Sequence[str], settings: GenerateSettings
             ) -> list[Generation]:
    """Every prompt's answer, in batches of the scorer's ``generate`` batcher; the prompts
    that share a long token prefix (:func:`sharing`) run it once per group."""
    sequences = [scorer.generation_ids(p) for p in prompts]
    for index, seq in enumerate(sequences):
        scorer._check_length(len(seq) + settings.max_new_tokens, index, prompts[index])
    eos = eos_ids(scorer.model, scorer.tokenizer)
    out: list[Generation | None] = [None] * len(prompts)

    def run(members: list[int], prefix: Prefix | None) -> None:
        def work(batch: list[int]) -> None:
            rows = [members[b] for b in batch]
            got = generate_batch(scorer, [sequences[r] for r in rows],
                                 [prompts[r] for r in rows], settings, eos, prefix)
            for r, g in zip(rows, got, strict=True):
                out[r] = g
            scorer._report(len(batch))

        scorer.batcher("generate", cut=False).run(
            [len(sequences[m]) + settings.max_new_tokens for m in members], work)

    grouped: set[int] = set()
    for length, members in sharing(scorer, sequences, settings):
        run(members, run_prefix(scorer, sequences[members[0]][:length]))
        grouped.update(members)
    run([i for i in range(len(prompts)) if i not in grouped], None)
    return [g for g in out if g is not None]


def sharing(scorer: Any, sequences: Sequence[Sequence[int]], settings: GenerateSettings
            ) -> list[tuple[int, list[int]]]:
    """The groups that run their shared prefix once (probes.backends.prefix_groups): none
    when the scorer runs every request on its own (``prefix_mode=None``, the reference), when
    its cache cannot be copied row by row, or, for a model with a sliding attention window,
    for a group whose longest prompt and answer do not fit in the window."""
    if scorer.prefix_mode is None or not scorer._cache_ok:
        return []
    groups = shared_prefixes(sequences)
    window = scorer._window
    if window is not None:
        groups = [(n, m) for n, m in groups
                  if max(len(sequences[i]) for i in m) + settings.max_new_tokens < window]
    return groups
