"""Per-token scores of a continuation: each token of it with log P(token | everything before),
as minicons' ``token_score`` and lm-pub-quiz's ``reduction=None`` return them.

A scorer that has its own ``token_logprobs(requests)`` (the server backend: the server echoes
every token's log-probability) answers itself; a local causal scorer answers here with one
plain forward pass per request over the tokens its ``loglik`` scores (``encode_pairs``: the
same boundary convention), so the per-token values sum to its ``loglik``. Masked and seq2seq
models have no such scores (a clear error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from probes.engine.models import ModelError

TokenScores = list[tuple[str, float]]


def token_logprobs(scorer: Any, requests: Sequence[tuple[str, str]]) -> list[TokenScores]:
    """(token text, log-probability) for each continuation token of each (context,
    continuation) request."""
    own = getattr(scorer, "token_logprobs", None)
    if callable(own):
        return list(own(requests))
    encode = getattr(scorer, "encode_pairs", None)
    model = getattr(scorer, "model", None)
    if not callable(encode) or model is None:
        raise ModelError(f"model {getattr(scorer, 'name', scorer)!r} gives no per-token scores: "
                         "they need a causal LM (a local one or an inference server's); ask "
                         "for summed scores instead (per_token=False)")
    import torch

    out: list[TokenScores] = []
    with torch.inference_mode():
        for ctx, cont in encode(requests):
            if not cont:
                out.append([])
                continue
            ids = torch.tensor([list(ctx) + list(cont)], device=scorer.device)
            logits = model(input_ids=ids).logits[0].float()
            logp = torch.log_softmax(logits[len(ctx) - 1 : -1], dim=-1)
            picked = logp.gather(1, ids[0, len(ctx):, None]).squeeze(1).tolist()
            out.append([(scorer.tokenizer.decode([t]), float(v))
                        for t, v in zip(cont, picked, strict=True)])
    return out
