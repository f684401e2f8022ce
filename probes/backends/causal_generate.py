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
  (GenerateSettings.row_seed), after temperature and top-p.

The answer is the generated tokens decoded without special tokens and cut before the first
stop string (lm-evaluation-harness's ``generate_until``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from probes.backends.generation import GenerateSettings, Generation, cut_at_stop


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


def generate_batch(scorer: Any, sequences: Sequence[Sequence[int]], prompts: Sequence[str],
                   settings: GenerateSettings, eos: set[int]) -> list[Generation]:
    """Generate for one batch of prompt token ids (see the module); one result per row."""
    device, tokenizer = scorer.device, scorer.tokenizer
    n = len(sequences)
    width = max(len(s) for s in sequences)
    pad = scorer._pad_id()
    ids = torch.full((n, width), pad, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, width - len(seq):] = torch.as_tensor(list(seq), dtype=torch.long)
        mask[row, width - len(seq):] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    generators: list[torch.Generator | None] = [None] * n
    if settings.do_sample:
        generators = [torch.Generator(device=device).manual_seed(settings.row_seed(p))
                      for p in prompts]
    states, cache = scorer._run(ids, mask, positions, None, use_cache=True)
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
    """Every prompt's answer, in batches of the scorer's ``generate`` batcher."""
    sequences = [scorer.generation_ids(p) for p in prompts]
    for index, seq in enumerate(sequences):
        scorer._check_length(len(seq) + settings.max_new_tokens, index, prompts[index])
    eos = eos_ids(scorer.model, scorer.tokenizer)
    out: list[Generation | None] = [None] * len(prompts)

    def work(batch: list[int]) -> None:
        got = generate_batch(scorer, [sequences[b] for b in batch],
                             [prompts[b] for b in batch], settings, eos)
        for b, g in zip(batch, got, strict=True):
            out[b] = g
        scorer._report(len(batch))

    scorer.batcher("generate", cut=False).run(
        [len(s) + settings.max_new_tokens for s in sequences], work)
    return [g for g in out if g is not None]
