"""Zero-shot scores of marked COPEN prompts (:mod:`probes.benchmarks.copen.marked`) for every text
part.

One call scores every part of every prompt: a part's score is its summed log-probability and
its token count (the metrics divide, so a candidate's score is the mean log-probability of its
part's tokens: the authors' ``computeSpanLoss``, ``-sum(loss) / count``); the ``all`` part is
the negative perplexity as the authors' ``parseResult`` computes it,

    all = -exp( (sum of the per-token losses + (-1) * #start/end tokens) / #tokens ),

where every token but the start and end tokens is scored on its own (the start and end tokens
count in the length with a loss of -1: the authors' arithmetic), stored with a token count of 1.

Two span modes (``span=``):

- ``token`` (the default; **what the authors' scripts execute**): the per-token losses are
  computed once over the whole sentence and every part (query, candidate, concept, answer)
  sums those of its tokens. THU-KEG/COPEN ``code/probing/task{1,2,3}/run.sh`` runs
  ``main.py --mask_position all --recompute`` once, which scores every token alone
  (``createMaskForMLMPerToken`` / ``createMaskForLMPerToken`` of ``data/processor_utils.py``;
  the probing data is only ever built with ``mask_position all``); the runs for the other parts
  (``--mask_position e1|e2|concept|answer``, no ``--recompute``) read those losses back and
  average them over the part's tokens (``computeSpanLoss`` of ``code/probing/metric.py``).
- ``progressive``: a span method the repository contains but its scripts never reach
  (``createMaskForMLM``; for CPJ it could not run, ``mask_left``/``mask_right`` stay -1): a
  masked LM's part l..r-1 is scored by masking tokens i..r-1 and predicting token i; a seq2seq
  LM's part is replaced by one sentinel / ``<mask>`` and its tokens decoded together.

How a token is scored in ``token`` mode, per model kind:

- **masked**: the token masked alone in the full sentence (the pseudo-log-likelihood);
- **causal**: log P(token | every token before it, from BOS); one forward per prompt (the
  same in both modes);
- **seq2seq**: the token replaced in the encoder input by ``<extra_id_0>`` (T5; the decoder
  reads ``<pad> <extra_id_0>`` and is scored on the token) or by ``<mask>`` (BART; the decoder
  reconstructs the whole input after ``</s>``, teacher-forced, and is scored at the token's
  position), as ``createMaskForLM`` does for one token.

A part the 120-token cut removed entirely (:data:`probes.benchmarks.copen.marked.MAX_TOKENS`) scores
0 with a count of 0 in ``token`` mode, as ``computeSpanLoss`` gives ``-0 / (0 + 1e-10)``.

>>> import math
>>> negative_perplexity([-1.0, -1.0], n_special=2, n_tokens=4)  # (1 + 1 - 2) / 4 = 0
-1.0
>>> round(negative_perplexity([-2.0], n_special=1, n_tokens=2), 6) == round(-math.exp(0.5), 6)
True
>>> span_mode("pll")
'token'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from probes.backends.protocol import capabilities, family
from probes.benchmarks.copen.marked import Marked
from probes.engine.errors import ProbeError

SPAN_MODES = ("token", "progressive")
"""``token``: the authors' executed method (default); ``progressive``: the unreached span path."""
SPAN_ALIASES = {"pll": "token"}
"""Former names: ``pll`` (one token masked at a time) is what ``token`` computes."""
ALL = "all"


def span_mode(name: str) -> str:
    """The span mode a name stands for (``pll`` is the former name of ``token``)."""
    mode = SPAN_ALIASES.get(name, name)
    if mode not in SPAN_MODES:
        raise ProbeError(f"COPEN: unknown span mode {name!r}; use token (each token scored "
                         "alone in the whole sentence, the authors' executed method) or "
                         "progressive (the span method their scripts never run)")
    return mode


@dataclass(frozen=True)
class PartScore:
    """Summed log-probability and token count of one part (``all``: the score and 1)."""

    score: float
    n_tokens: int


def negative_perplexity(logprobs: Sequence[float], n_special: int, n_tokens: int) -> float:
    """The authors' ``all`` score from the scored tokens' log-probabilities."""
    loss = -sum(logprobs) - n_special
    return -math.exp(loss / n_tokens)


@dataclass(frozen=True)
class _Job:
    """One forward pass's input and the (position, token) pairs it scores."""

    prompt: int
    part: str
    encoder: tuple[int, ...]
    decoder: tuple[int, ...] | None
    targets: tuple[tuple[int, int], ...]  # (position in the scored sequence, token id)
    at: int = -1  # an ``all`` job of one token (masked, seq2seq): the token's prompt position


def _masked_jobs(k: int, m: Marked, parts: Sequence[str], mask_id: int, span: str
                 ) -> list[_Job]:
    """``all``: each token masked alone; ``progressive`` adds the parts' span jobs."""
    jobs = []
    for part in parts if span == "progressive" else ():
        where = m.span(part)
        if where is None:
            continue
        left, right = where
        for i in range(left, right):
            ids = list(m.ids)
            for j in range(i, right):
                ids[j] = mask_id
            jobs.append(_Job(k, part, tuple(ids), None, ((i, m.ids[i]),)))
    for i in m.scored_all():
        ids = list(m.ids)
        ids[i] = mask_id
        jobs.append(_Job(k, ALL, tuple(ids), None, ((i, m.ids[i]),), at=i))
    return jobs


def _seq2seq_jobs(k: int, m: Marked, parts: Sequence[str], tokenizer: Any, start: int,
                  span: str) -> list[_Job]:
    """``all``: each token infilled alone; ``progressive`` adds one infilling job per part."""
    vocab = tokenizer.get_vocab()
    sentinel = vocab.get("<extra_id_0>")
    if sentinel is None and tokenizer.mask_token_id is None:
        raise ProbeError("COPEN seq2seq infilling needs a T5 sentinel <extra_id_0> or a BART "
                         "<mask> token; this tokenizer has neither")

    def job(part: str, left: int, right: int) -> _Job:
        ids = list(m.ids)
        if sentinel is not None:  # T5: <extra_id_0> in the input, target <extra_id_0> span
            enc = [*ids[:left], sentinel, *ids[right:]]
            dec = [start, sentinel, *ids[left:right - 1]]
            targets = tuple((1 + j, ids[left + j]) for j in range(right - left))
            return _Job(k, part, tuple(enc), tuple(dec), targets)
        enc = [*ids[:left], int(tokenizer.mask_token_id), *ids[right:]]  # BART
        dec = [start, *ids[:-1]]
        return _Job(k, part, tuple(enc), tuple(dec),
                    tuple((j, ids[j]) for j in range(left, right)))

    jobs = []
    for part in parts if span == "progressive" else ():
        where = m.span(part)
        if where is not None:
            jobs.append(job(part, *where))
    jobs += [replace(job(ALL, i, i + 1), at=i) for i in m.scored_all()]
    return jobs


def _pad(rows: Sequence[Sequence[int]], pad: int, device: torch.device
         ) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    att = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        att[i, :len(r)] = 1
    return ids.to(device), att.to(device)


@torch.inference_mode()
def _run_jobs(model: Any, kind: str, jobs: Sequence[_Job], pad: int, device: torch.device,
              batch_rows: int) -> list[list[float]]:
    """Log-probabilities of each job's targets (one list per job)."""
    out: list[list[float]] = [[] for _ in jobs]
    order = sorted(range(len(jobs)), key=lambda j: len(jobs[j].encoder))
    for s in range(0, len(order), batch_rows):
        batch = order[s:s + batch_rows]
        enc, att = _pad([jobs[j].encoder for j in batch], pad, device)
        if kind == "seq2seq":
            dec, dec_att = _pad([jobs[j].decoder or () for j in batch], pad, device)
            logits = model(input_ids=enc, attention_mask=att, decoder_input_ids=dec,
                           decoder_attention_mask=dec_att).logits
        else:
            logits = model(input_ids=enc, attention_mask=att).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        for row, j in enumerate(batch):
            for pos, tok in jobs[j].targets:
                src = pos - 1 if kind == "causal" else pos
                out[j].append(float(logp[row, src, tok]))
    return out


def score_marked(scorer: Any, prompts: Sequence[Marked], parts: Sequence[str],
                 span: str = "token", batch_rows: int = 32
                 ) -> list[dict[str, PartScore]]:
    """Every part (and ``all``) of every prompt. ``token`` mode: every part, a part with no
    token scoring 0 with a count of 0 (``computeSpanLoss``); ``progressive``: a part missing
    from a prompt is left out."""
    span = span_mode(span)
    kind, tok, model = family(capabilities(scorer)), scorer.tokenizer, scorer.model
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    jobs: list[_Job] = []
    for k, m in enumerate(prompts):
        if kind == "masked":
            if tok.mask_token_id is None:
                raise ProbeError(f"COPEN: model {scorer.name!r} has no mask token")
            jobs += _masked_jobs(k, m, parts, int(tok.mask_token_id), span)
        elif kind == "causal":
            targets_all = tuple((i, m.ids[i]) for i in m.scored_all())
            jobs.append(_Job(k, ALL, m.ids, None, targets_all))
        elif kind == "seq2seq":
            start = getattr(model.config, "decoder_start_token_id", None)
            jobs += _seq2seq_jobs(k, m, parts, tok, int(start if start is not None else pad),
                                  span)
        else:
            raise ProbeError(f"COPEN: unknown model kind {kind!r}")
    values = _run_jobs(model, kind, jobs, pad, scorer.device, batch_rows)
    per_token: list[dict[int, float]] = [{} for _ in prompts]  # position -> log-probability
    spans: list[dict[str, list[float]]] = [{} for _ in prompts]
    for j, lp in zip(jobs, values, strict=True):
        if j.part != ALL:
            spans[j.prompt].setdefault(j.part, []).extend(lp)
        elif kind == "causal":
            per_token[j.prompt].update(zip((p for p, _ in j.targets), lp, strict=True))
        else:  # masked, seq2seq: one token per job
            per_token[j.prompt][j.at] = lp[0]
    final: list[dict[str, PartScore]] = []
    for m, tokens, got in zip(prompts, per_token, spans, strict=True):
        row: dict[str, PartScore] = {}
        for part in parts:
            where = [i for i, mk in enumerate(m.markers) if mk == part]
            if kind == "causal" or span == "token":
                v = [tokens[i] for i in where]
                if v or span == "token":
                    row[part] = PartScore(sum(v), len(v))
            elif part in got:
                row[part] = PartScore(sum(got[part]), len(got[part]))
        row[ALL] = PartScore(negative_perplexity(list(tokens.values()), m.n_special, len(m.ids)),
                             1)
        final.append(row)
    return final
