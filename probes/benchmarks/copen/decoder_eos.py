"""BART's sentence feature: the decoder's last hidden state at the final ``</s>`` (Appendix A.2,
"the last token for ... BART"), as ``BartForSequenceClassification`` takes it: the encoder reads
the text, the decoder reads the same tokens shifted right, and the state at the position of the
text's last end-of-sequence token is the feature. Right padding does not change it (the decoder
is causal and the padding comes after the ``</s>``).

Used by linear probing (frozen, :func:`decoder_eos_features`) and fine-tuning
(:func:`decoder_eos_states` on the trainable model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from probes.engine.errors import ProbeError


def decoder_eos_states(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                       eos_token_id: int) -> torch.Tensor:
    """``[batch, hidden]``: the decoder's last-layer state at each row's last ``</s>``.

    ``model``: a BART-style encoder-decoder (``BartModel``) or a model holding one as ``.model``
    (``BartForConditionalGeneration``); the decoder input is built from ``input_ids`` by the
    model itself (shifted right).
    """
    body = model.model if hasattr(model, "model") and hasattr(model.model, "decoder") else model
    hidden = body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    eos = input_ids.eq(eos_token_id)
    if not bool(eos.any(dim=1).all()):
        raise ProbeError("a text has no </s> token after tokenisation; the BART feature is the "
                         "decoder's state at the final </s>")
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    last = torch.where(eos, positions, torch.full_like(positions, -1)).amax(dim=1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def encode(tokenizer: Any, texts: Sequence[str], device: torch.device,
           max_length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``(input_ids, attention_mask)`` of the texts with the tokenizer's specials."""
    enc = tokenizer(list(texts), padding=True, truncation=max_length is not None,
                    max_length=max_length, return_tensors="pt")
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


@torch.inference_mode()
def decoder_eos_features(model: Any, tokenizer: Any, texts: Sequence[str], batch: int = 32
                         ) -> torch.Tensor:
    """Frozen BART features of ``texts`` (float32 on the CPU), ``batch`` texts per forward."""
    if tokenizer.eos_token_id is None:
        raise ProbeError("the tokenizer has no </s> token; decoder_eos pooling is for BART")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = []
    for start in range(0, len(texts), batch):
        ids, att = encode(tokenizer, texts[start:start + batch], device)
        out.append(decoder_eos_states(model, ids, att, tokenizer.eos_token_id).float().cpu())
    model.train(was_training)
    if not out:
        return torch.zeros((0, model.config.d_model), dtype=torch.float32)
    return torch.cat(out)
