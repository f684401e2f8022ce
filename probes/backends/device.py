"""Devices, dtypes and batching that survives running out of memory, for every backend.

>>> b = Batcher(rows=2, tokens=100)
>>> seen = []
>>> b.run([3, 9, 5, 1], seen.append)
>>> seen
[[1, 2], [0, 3]]
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence

import torch

from probes.engine.errors import ModelError


def is_oom(exc: BaseException) -> bool:
    """True for the out-of-memory errors of CUDA, MPS and the CPU allocator.

    >>> is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"))
    True
    >>> is_oom(ValueError("out of memory"))
    False
    """
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    if not isinstance(exc, RuntimeError):
        return False
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text


def free_memory() -> None:
    """Release cached device memory after an out-of-memory error."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class Batcher:
    """Cuts work items into length-sorted batches (longest first) under two limits: at most
    ``rows`` items and at most ``tokens`` padded tokens per batch. With ``cut`` (the default) a
    batch of at least 2 items ends where the length drops below 7/8 of its longest item, or
    drops at all once it is half full: the rest of its room would be padding, which costs as
    much as real tokens (short items of very different lengths, such as seq2seq targets,
    otherwise pad to the few longest). Without ``cut`` batches are filled to the limits (for
    outer work whose batch size matters more than its padding, e.g. encoder passes that feed
    many decoder rows). An out-of-memory error in a batch halves both
    limits (kept for later calls) and retries the batch; a single item that still does not fit
    raises :class:`ModelError`.

    >>> def sizes(rows, lengths, cut=True):
    ...     batches = []
    ...     Batcher(rows=rows, cut=cut).run(lengths, batches.append)
    ...     return [len(b) for b in batches]
    >>> sizes(8, [5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 3])  # half full: ends at each drop
    [5, 5, 1]
    >>> sizes(16, [8, 8, 6, 6, 6, 6, 5])  # 6 < 7/8 x 8 and 5 < 7/8 x 6
    [2, 4, 1]
    >>> sizes(16, [8, 8, 6, 6, 6, 6, 5], cut=False)
    [7]
    """

    def __init__(self, *, rows: int, tokens: int | None = None, label: str = "batch",
                 cut: bool = True) -> None:
        self.rows = max(1, int(rows))
        self.tokens = None if tokens is None else max(1, int(tokens))
        self.label = label
        self.cut = cut

    def run(self, lengths: Sequence[int], work: Callable[[list[int]], None]) -> None:
        """Call ``work(batch)`` for every batch; ``work`` must only write results at its end."""
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        pos = 0
        while pos < len(order):
            batch = self._take(order, pos, lengths)
            failed = False
            try:
                work(batch)
            except Exception as exc:
                if not is_oom(exc):
                    raise
                if len(batch) == 1:
                    raise ModelError(
                        f"out of memory on a single {self.label} of {lengths[batch[0]]} tokens; "
                        "use a smaller dtype (bfloat16), a bigger device, or shorter prompts"
                    ) from exc
                failed = True
            if failed:  # outside the except block, so the failed batch's tensors can be freed
                free_memory()
                self.rows = max(1, len(batch) // 2)
                if self.tokens is not None:
                    self.tokens = max(1, self.tokens // 2)
                continue
            pos += len(batch)

    def _take(self, order: list[int], pos: int, lengths: Sequence[int]) -> list[int]:
        longest = max(1, lengths[order[pos]])
        limit = self.rows
        if self.tokens is not None:
            limit = min(limit, max(1, self.tokens // longest))
        end = min(len(order), pos + limit)
        for k in range(pos + 2, end if self.cut else pos):
            length = lengths[order[k]]
            drop = length != lengths[order[k - 1]]
            if drop and (k - pos >= limit // 2 or 8 * length < 7 * longest):
                return order[pos:k]
        return order[pos:end]


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` picks CUDA when available, else the CPU.

    >>> str(resolve_device("cpu"))
    'cpu'
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """``None``: bfloat16 on a GPU that supports it (else float16), float32 elsewhere.

    >>> resolve_dtype("bf16", torch.device("cpu"))
    torch.bfloat16
    >>> resolve_dtype(None, torch.device("cpu"))
    torch.float32
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    try:
        return _DTYPES[str(dtype).lower()]
    except KeyError:
        raise ModelError(
            f"unknown dtype {dtype!r}; use one of float32, bfloat16, float16"
        ) from None


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``'bfloat16'``."""
    return str(dtype).removeprefix("torch.")
