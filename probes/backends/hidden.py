"""Hidden states of every layer, in one forward pass per text, pooled at chosen positions.

A transformers scorer (masked, causal, seq2seq) declares ``hidden_states = True``; the server
backend declares ``False`` and :func:`check_hidden` turns that into one line (an inference
server's Completions API returns tokens and log-probabilities, never activations). What is run
is the model's body, never its LM head:

- causal: the decoder (``model.base_model``) on the text's tokens after the tokenizer's
  leading special tokens (Gemma's ``<bos>``; none for GPT-2 or SmolLM2), as
  :meth:`probes.backends.causal.CausalScorer.features` reads them;
- masked: the encoder on the tokenizer's full encoding ([CLS] ... [SEP]);
- seq2seq: the encoder of the encoder-decoder model on the text (its decoder reads no text).

Layer ``0`` is the embedding output, layer ``i`` the output of block ``i``; the last layer is
what ``output_hidden_states=True`` returns last (for Llama-style models after the final norm,
equal to ``last_hidden_state``). Positions (:data:`POSITIONS`): ``slot`` = the mean over the
tokens that overlap the request's character span (the statement's object), ``last`` / ``first``
= the last / first non-special token, ``mean`` = the mean over non-special tokens, ``cls`` =
position 0; all but ``slot`` are :func:`probes.backends.base.pool` on each layer, so the last
layer at ``last`` is exactly what ``features(pooling="last")`` returns.

Batches are sorted by length and bounded like every other operation (the scorer's batcher,
halved on out-of-memory); each finished batch goes to ``sink(indices, array)`` at once as a
float32 ``[batch, layers, positions, dim]`` CPU array, so nothing holds more than one batch.

>>> resolve_layers(None, 4), resolve_layers([-1, 0], 4)
((0, 1, 2, 3, 4), (0, 4))
>>> resolve_positions(["last", "slot"])
('last', 'slot')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from probes.backends.base import POOLINGS, pool
from probes.backends.protocol import capabilities, family
from probes.engine.errors import ModelError

POSITIONS: tuple[str, ...] = ("slot", *POOLINGS)
"""Where a text's states are read: its slot's tokens, or a pooling of the whole text."""

Sink = Callable[[list[int], np.ndarray], None]


@dataclass(frozen=True)
class HiddenRequest:
    """One text and, for the ``slot`` position, the character span [start, end) it reads."""

    text: str
    slot: tuple[int, int] | None = None


def check_hidden(scorer: Any) -> None:
    """Fail with one line when ``scorer`` cannot return hidden states (the server backend)."""
    if not getattr(scorer, "hidden_states", False):
        raise ModelError(
            f"model {getattr(scorer, 'name', '?')!r} ({getattr(scorer, 'kind', '?')} backend) "
            "cannot give hidden states: an inference server's Completions API returns tokens "
            "and log-probabilities, not activations; load the model with the transformers "
            "backend (a hub name or a local folder) to probe its layers")


def layer_count(scorer: Any) -> int:
    """How many hidden states a forward returns: the blocks plus the embedding output."""
    config = scorer.model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if family(capabilities(scorer)) == "seq2seq":
        blocks = getattr(text, "num_layers", None) or getattr(text, "encoder_layers", None)
    else:
        blocks = getattr(text, "num_hidden_layers", None) or getattr(text, "n_layer", None)
    if not isinstance(blocks, int):
        raise ModelError(f"cannot tell how many layers model {scorer.name!r} has")
    return blocks + 1


def resolve_layers(layers: Sequence[int] | None, last: int) -> tuple[int, ...]:
    """The chosen layers, sorted and distinct; None = all (0 .. ``last``); negative counts
    from the end (-1 = the last layer)."""
    if layers is None:
        return tuple(range(last + 1))
    out = set()
    for layer in layers:
        index = layer + last + 1 if layer < 0 else layer
        if not 0 <= index <= last:
            raise ModelError(f"layer {layer} does not exist: the model has layers 0 (the "
                             f"embeddings) to {last}; use a number in that range or -1")
        out.add(index)
    return tuple(sorted(out))


def resolve_positions(positions: Sequence[str] | None) -> tuple[str, ...]:
    """The chosen positions in the order given (default ``last``); unknown ones are an error."""
    chosen = tuple(dict.fromkeys(positions or ("last",)))
    for p in chosen:
        if p not in POSITIONS:
            raise ModelError(f"unknown position {p!r}; use one of {', '.join(POSITIONS)}")
    return chosen


class _Encoded:
    """Token ids, special-token flags and slot flags of every request."""

    def __init__(self, scorer: Any, requests: Sequence[HiddenRequest], kind: str,
                 want_slot: bool) -> None:
        tok = scorer.tokenizer
        texts = [r.text for r in requests]
        lead: list[int] = []
        if kind == "causal":
            from probes.backends.causal_model import leading_special_ids

            lead = leading_special_ids(tok)
        special_ids = set(tok.all_special_ids)
        enc = tok(texts, add_special_tokens=kind != "causal", return_offsets_mapping=want_slot,
                  return_special_tokens_mask=kind != "causal") if texts else {"input_ids": []}
        self.ids: list[list[int]] = []
        self.special: list[list[int]] = []
        self.slot: list[list[int]] = []
        for i, ids in enumerate(enc["input_ids"]):
            ids = lead + list(ids)
            self.ids.append(ids)
            # as each backend's features(): the tokenizer's special-tokens mask (masked,
            # seq2seq), the special ids (causal: no special tokens were added)
            self.special.append(list(enc["special_tokens_mask"][i]) if kind != "causal"
                                else [int(t in special_ids) for t in ids])
            if want_slot:
                span = requests[i].slot
                if span is None:
                    raise ModelError(f"request {i} ({texts[i][:60]!r}) has no slot span; the "
                                     "slot position needs each text's slot (start, end)")
                offsets = [(0, 0)] * len(lead) + [tuple(o) for o in enc["offset_mapping"][i]]
                flags = [int(e > s and s < span[1] and e > span[0] and not sp)
                         for (s, e), sp in zip(offsets, self.special[-1], strict=True)]
                if not any(flags):
                    raise ModelError(f"request {i} ({texts[i][:60]!r}): no token covers its "
                                     f"slot characters {span[0]}..{span[1]}")
                self.slot.append(flags)


def _forward(scorer: Any, kind: str, ids: torch.Tensor, mask: torch.Tensor,
             hidden: bool) -> tuple[torch.Tensor, ...]:
    """The body's states: every layer's (``hidden``) or only the last one (the baseline)."""
    model = scorer.model
    body = (model.get_encoder() if kind == "seq2seq"
            else getattr(model, "base_model", None) or model)
    kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
    if kind == "causal":
        kwargs["use_cache"] = False
    out = body(**kwargs, output_hidden_states=hidden)
    if hidden:
        return tuple(out.hidden_states)
    return (out.last_hidden_state,)


@torch.inference_mode()
def extract(scorer: Any, requests: Sequence[HiddenRequest], layers: Sequence[int],
            positions: Sequence[str], sink: Sink, *, hidden: bool = True) -> None:
    """Run every request once and give ``sink`` each batch's pooled states
    ``[batch, len(layers), len(positions), dim]`` (float32, CPU). ``hidden=False`` is the
    baseline of the benchmark: the same forwards without ``output_hidden_states``, the last
    layer only (``layers`` is then ignored)."""
    check_hidden(scorer)
    kind = family(capabilities(scorer))
    positions = resolve_positions(positions)
    enc = _Encoded(scorer, requests, kind, "slot" in positions)
    for index, ids in enumerate(enc.ids):
        scorer._check_length(len(ids), index, requests[index].text)
    chosen = list(layers) if hidden else [-1]

    def work(batch: list[int]) -> None:
        ids, mask = scorer._padded([enc.ids[b] for b in batch])
        special, _ = scorer._padded([enc.special[b] for b in batch], pad=1)
        states = _forward(scorer, kind, ids, mask, hidden)
        slot = (scorer._padded([enc.slot[b] for b in batch], pad=0)[0].to(states[0].dtype)
                if enc.slot else None)
        first = states[0]
        # one buffer on the states' device, filled in place (no stack of stacks), moved to the
        # CPU once
        pooled = first.new_empty((first.shape[0], len(chosen), len(positions), first.shape[-1]))
        for li, layer in enumerate(chosen):
            h = states[layer]
            for pi, p in enumerate(positions):
                if p == "slot":
                    assert slot is not None
                    w = slot.unsqueeze(-1)
                    pooled[:, li, pi] = (h * w).sum(dim=1) / w.sum(dim=1).clamp(min=1)
                else:
                    pooled[:, li, pi] = pool(h, mask, special, p)
        sink(batch, pooled.float().cpu().numpy())
        scorer._report(len(batch))

    scorer.batcher("hidden").run([len(i) for i in enc.ids], work)


def pooled_features(scorer: Any, texts: Sequence[str], pooling: str,
                    layer: int = -1) -> torch.Tensor:
    """``[len(texts), dim]`` float32: one layer's states (default the last) pooled at one
    position, in text order; the last layer equals the backend's ``features(texts, pooling)``
    (COPEN's linear probing reads its features here)."""
    rows: list[np.ndarray | None] = [None] * len(texts)
    last = layer_count(scorer) - 1
    (chosen,) = resolve_layers([layer], last)

    def keep(batch: list[int], states: np.ndarray) -> None:
        for j, b in enumerate(batch):
            rows[b] = states[j, 0, 0]

    extract(scorer, [HiddenRequest(t) for t in texts], [chosen], [pooling], keep)
    if not texts:
        return torch.zeros((0, 0), dtype=torch.float32)
    return torch.from_numpy(np.stack([r for r in rows if r is not None]))
