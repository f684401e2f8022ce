"""What the causal backend needs to know about a decoder-only transformers model: how to
split off its LM head, which special tokens start a text, its sliding attention window, and
the attention masks and key/value caches of the shared-context fast paths."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch


def split_causal(model: Any) -> tuple[Any, Callable[[torch.Tensor], torch.Tensor] | None]:
    """(body, head): the transformer that returns final hidden states and a function from
    hidden states to logits (the LM head plus known post-processing), or (None, None)."""
    body = getattr(model, "base_model", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if body is None or body is model or head is None:
        return None, None
    config = model.config.get_text_config()
    softcap = getattr(config, "final_logit_softcapping", None)
    scale = getattr(config, "logit_scale", None)  # Cohere multiplies
    divide = getattr(config, "logits_scaling", None)  # Granite divides

    def project(hidden: torch.Tensor) -> torch.Tensor:
        logits = head(hidden)
        if isinstance(scale, (int, float)) and scale != 1:
            logits = logits * scale
        if isinstance(divide, (int, float)) and divide != 1:
            logits = logits / divide
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        return logits

    return body, project


def leading_special_ids(tokenizer: Any) -> list[int]:
    """The special tokens a tokenizer puts before the text (Gemma's ``<bos>``; none for GPT-2)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return list(full[:start])
    return []


def sliding_window(model: Any) -> int | None:
    config = model.config.get_text_config()
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if not window:
        return None
    if types is not None and not any("sliding" in str(t) for t in types):
        return None
    return int(window)


def accepts_positions(model: Any, body: Any) -> bool:
    """Both shared-context paths set position ids explicitly."""
    target = model if body is None else body
    return "position_ids" in inspect.signature(target.forward).parameters


def cache_argument(model: Any, body: Any) -> str:
    """The forward argument that takes a key/value cache: ``cache`` from transformers 5.x on
    (``past_key_values`` is deprecated there and removed in 5.40), else ``past_key_values``."""
    target = model if body is None else body
    return "cache" if "cache" in inspect.signature(target.forward).parameters else "past_key_values"


def returned_cache(out: Any) -> Any:
    """The key/value cache a forward returned (``cache`` or, before 5.x, ``past_key_values``)."""
    fields = {f.name for f in dataclasses.fields(out)} if dataclasses.is_dataclass(out) else set()
    return getattr(out, "cache" if "cache" in fields else "past_key_values", None)


def tree_mask(parents: Sequence[Sequence[int]], width: int, dtype: torch.dtype,
              device: torch.device | str = "cpu") -> torch.Tensor:
    """Additive [batch, 1, width, width] mask for rows that pack a token tree: column ``c``
    sees itself and its ancestors, following ``parents[row][c]`` (the parent's column, before
    ``c``; -1 for none); padding sees itself only. Made on the CPU, one row copy per column
    (a column sees what its parent sees, and itself), then moved to ``device``.

    >>> m = tree_mask([[-1, 0, 0, 2]], 4, torch.float32)[0, 0] == 0
    >>> m.int().tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1, 1]]
    """
    allowed = np.zeros((len(parents), width, width), dtype=bool)
    index = np.arange(width)
    allowed[:, index, index] = True
    for row, columns in enumerate(parents):
        seen = allowed[row]
        for c, p in enumerate(columns):
            if p >= 0:
                seen[c, :c] = seen[p, :c]
    keep = torch.from_numpy(allowed).to(device)
    mask = torch.zeros(keep.shape, dtype=dtype, device=device)
    return mask.masked_fill_(~keep, torch.finfo(dtype).min)[:, None]


def cache_supported(model: Any) -> bool:
    """The ``cache`` prefix mode needs a DynamicCache made of plain or sliding layers."""
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        cache = DynamicCache(config=model.config)
    except Exception:
        return False
    return all(type(layer).__name__ in CACHE_LAYERS for layer in cache.layers) and all(
        isinstance(layer, DynamicLayer) for layer in cache.layers
    )


CACHE_LAYERS = {"DynamicLayer", "DynamicSlidingWindowLayer"}


def select_cache(cache: Any, rows: torch.Tensor, config: Any) -> Any:
    """A new cache holding the given batch rows of ``cache`` (which stays unchanged)."""
    from transformers import DynamicCache

    data = [
        (layer.keys.index_select(0, rows.to(layer.keys.device)),
         layer.values.index_select(0, rows.to(layer.values.device)))
        for layer in cache.layers
    ]
    return DynamicCache(ddp_cache_data=data, config=config)


def stack_rows(rows: list[torch.Tensor | None], model: Any) -> torch.Tensor:
    if not rows:
        size = model.config.get_text_config().hidden_size
        return torch.zeros((0, size), dtype=torch.float32)
    return torch.stack([r for r in rows if r is not None])
