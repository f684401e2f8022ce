"""Zero-shot scores of marked COPEN prompts (:mod:`probes.copen.marked`) for every text part.

One call scores every part of every prompt: a part's score is its summed log-probability and
its token count (the metrics divide, so a candidate's score is the mean log-probability of its
part's tokens: the authors' ``computeSpanLoss``, ``-sum(loss) / count``); the ``all`` part is
the negative perplexity as the authors' ``parseResult`` computes it,

    all = -exp( (sum of the per-token losses + (-1) * #start/end tokens) / #tokens ),

where every token but the start and end tokens is scored on its own (the start and end tokens
count in the length with a loss of -1: the authors' arithmetic), stored with a token count of 1.

How a token is scored, per model kind (``data/processor_utils.py`` of THU-KEG/COPEN):

- **masked**: a part spanning tokens l..r-1 is scored by progressive masking: for i = l..r-1
  the tokens i..r-1 are masked and token i is predicted (``createMaskForMLM``);
  ``span="pll"`` masks one token at a time instead (the plain pseudo-log-likelihood). ``all``
  masks each token alone.
- **causal**: log P(token | every token before it, from BOS); one forward per prompt.
- **seq2seq**, cloze infilling: the part's tokens are replaced in the encoder input by one
  sentinel ``<extra_id_0>`` (T5) or one ``<mask>`` (BART). T5's decoder is scored on
  ``<extra_id_0> part`` (the part's tokens only); BART's decoder reconstructs the whole input
  and is scored on the part's positions. ``all`` infills each token alone.

>>> import math
>>> negative_perplexity([-1.0, -1.0], n_special=2, n_tokens=4)  # (1 + 1 - 2) / 4 = 0
-1.0
>>> round(negative_perplexity([-2.0], n_special=1, n_tokens=2), 6) == round(-math.exp(0.5), 6)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from probes.copen.marked import Marked
from probes.errors import ProbeError

SPAN_MODES = ("progressive", "pll")
ALL = "all"


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


def _masked_jobs(k: int, m: Marked, parts: Sequence[str], mask_id: int, span: str
                 ) -> list[_Job]:
    jobs = []
    for part in parts:
        where = m.span(part)
        if where is None:
            continue
        left, right = where
        for i in range(left, right):
            ids = list(m.ids)
            stop = right if span == "progressive" else i + 1
            for j in range(i, stop):
                ids[j] = mask_id
            jobs.append(_Job(k, part, tuple(ids), None, ((i, m.ids[i]),)))
    for i in m.scored_all():
        ids = list(m.ids)
        ids[i] = mask_id
        jobs.append(_Job(k, ALL, tuple(ids), None, ((i, m.ids[i]),)))
    return jobs


def _seq2seq_jobs(k: int, m: Marked, parts: Sequence[str], tokenizer: Any, start: int
                  ) -> list[_Job]:
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
    for part in parts:
        where = m.span(part)
        if where is not None:
            jobs.append(job(part, *where))
    jobs += [job(ALL, i, i + 1) for i in m.scored_all()]
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
                 span: str = "progressive", batch_rows: int = 32
                 ) -> list[dict[str, PartScore]]:
    """Every part (and ``all``) of every prompt; a part missing from a prompt is left out."""
    if span not in SPAN_MODES:
        raise ProbeError(f"COPEN: unknown span mode {span!r}; use progressive (the authors') "
                         "or pll (one token masked at a time)")
    kind, tok, model = scorer.kind, scorer.tokenizer, scorer.model
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    jobs: list[_Job] = []
    for k, m in enumerate(prompts):
        if kind == "masked":
            if tok.mask_token_id is None:
                raise ProbeError(f"COPEN: model {scorer.name!r} has no mask token")
            jobs += _masked_jobs(k, m, parts, int(tok.mask_token_id), span)
        elif kind == "causal":
            spans = [(p, m.span(p)) for p in parts]
            targets_all = tuple((i, m.ids[i]) for i in m.scored_all())
            jobs.append(_Job(k, ALL, m.ids, None, targets_all))
            jobs += [_Job(k, p, m.ids, None, tuple((i, m.ids[i]) for i in range(*w)))
                     for p, w in spans if w is not None]
        elif kind == "seq2seq":
            start = getattr(model.config, "decoder_start_token_id", None)
            jobs += _seq2seq_jobs(k, m, parts, tok, int(start if start is not None else pad))
        else:
            raise ProbeError(f"COPEN: unknown model kind {kind!r}")
    if kind == "causal":  # one forward per prompt: score every part from the ALL job's pass
        logps = _run_jobs(model, kind, [j for j in jobs if j.part == ALL], pad, scorer.device,
                          batch_rows)
        by_prompt = {}
        for j, lp in zip([j for j in jobs if j.part == ALL], logps, strict=True):
            by_prompt[j.prompt] = dict(zip([p for p, _ in j.targets], lp, strict=True))
        results = [by_prompt[j.prompt] if j.part == ALL else
                   {p: by_prompt[j.prompt][p] for p, _ in j.targets} for j in jobs]
        values = [list(r.values()) for r in results]
    else:
        values = _run_jobs(model, kind, jobs, pad, scorer.device, batch_rows)
    out: list[dict[str, list[float]]] = [{} for _ in prompts]
    for j, lp in zip(jobs, values, strict=True):
        out[j.prompt].setdefault(j.part, []).extend(lp)
    final: list[dict[str, PartScore]] = []
    for m, got in zip(prompts, out, strict=True):
        row = {p: PartScore(sum(v), len(v)) for p, v in got.items() if p != ALL}
        row[ALL] = PartScore(negative_perplexity(got.get(ALL, []), m.n_special, len(m.ids)), 1)
        final.append(row)
    return final
