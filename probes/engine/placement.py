"""Placing a model larger than one device: accelerate's ``device_map``, ``max_memory`` and
offloading to CPU or disk (used by :func:`probes.engine.models.load_model`; see docs/scale.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kg.config import model_cache
from probes.engine.errors import ModelError

MEMORY_KEYS = ("cpu", "disk", "mps")


@dataclass(frozen=True)
class Placement:
    """How accelerate places a model that does not fit one device: ``device_map`` (``auto``,
    ``balanced``, ``balanced_low_0``, ``sequential``), the memory each device may use
    (``max_memory``: GPU index, ``cpu`` or ``disk`` -> bytes or a size such as ``"70GiB"``) and
    the folder for weights offloaded to disk (default: ``offload/<model>`` in the model cache).

    >>> Placement("auto", parse_max_memory("0=70GiB,cpu=200GiB")).max_memory
    {0: '70GiB', 'cpu': '200GiB'}
    """

    device_map: str | None = None
    max_memory: dict[int | str, int | str] | None = None
    offload_folder: str | None = None

    def pretrained_kwargs(self, name: str) -> dict[str, Any]:
        """``from_pretrained`` keyword arguments for this placement."""
        if self.device_map not in DEVICE_MAPS:
            raise ModelError(
                f"unknown device map {self.device_map!r}; use one of {', '.join(DEVICE_MAPS)}"
            )
        folder = self.offload_folder or str(
            model_cache() / "offload" / re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
        )
        kwargs: dict[str, Any] = {"device_map": self.device_map, "offload_folder": folder}
        if self.max_memory:
            kwargs["max_memory"] = dict(self.max_memory)
        return kwargs

    def describe(self) -> dict[str, Any]:
        return {"device_map": self.device_map, "max_memory": self.max_memory,
                "offload_folder": self.offload_folder}  # fmt: skip


DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def parse_max_memory(text: str | None) -> dict[int | str, int | str] | None:
    """``"0=70GiB,1=70GiB,cpu=200GiB"`` -> ``{0: "70GiB", 1: "70GiB", "cpu": "200GiB"}``; a
    plain number is bytes.

    >>> parse_max_memory("cpu=1000000,disk=10GB")
    {'cpu': 1000000, 'disk': '10GB'}
    >>> parse_max_memory("gpu=3GB")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    probes.engine.errors.ModelError: --max-memory: 'gpu' is not a device; use a GPU index (0, 1, ...
    """
    if not text:
        return None
    out: dict[int | str, int | str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or not value:
            raise ModelError(f"--max-memory: {part!r} is not DEVICE=SIZE, as in 0=70GiB,cpu=200GiB")
        if not (key.isdigit() or key in MEMORY_KEYS):
            raise ModelError(f"--max-memory: {key!r} is not a device; use a GPU index (0, 1, "
                             "...), cpu or disk, as in 0=70GiB,cpu=200GiB")
        if not re.fullmatch(r"\d+(\.\d+)?\s*([KMGT]i?B)?", value, flags=re.IGNORECASE):
            raise ModelError(f"--max-memory: {value!r} is not a size (bytes, or 500MB, 70GiB)")
        out[int(key) if key.isdigit() else key] = int(value) if value.isdigit() else value
    return out


def follow_device(model: Any, device: Any) -> Any:
    """Bring the outputs of a dispatched model's body, encoder and LM head back to ``device``
    (where the scorers build their index tensors), whatever device the last layer ran on."""
    import torch
    from accelerate.utils import send_to_device

    target = torch.device(device)

    def to_target(module: Any, inputs: Any, output: Any) -> Any:
        return send_to_device(output, target)

    parts = [getattr(model, "base_model", None)]
    if hasattr(model, "get_output_embeddings"):
        parts.append(model.get_output_embeddings())
    if getattr(model.config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        parts.append(model.get_encoder())
    for part in parts:
        if isinstance(part, torch.nn.Module) and part is not model:
            part.register_forward_hook(to_target)
    return model
