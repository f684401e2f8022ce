"""Training shared by the trained probes: one loop (:mod:`probes.engine.train.loop`) used by
OntoLAMA's K-shot fine-tuning and COPEN's fine-tuning and linear probing."""

from probes.engine.train.loop import (
    LoopResult,
    LoopSettings,
    fit,
    linear_warmup_decay,
    param_groups,
    python_shuffle,
    torch_shuffle,
)

__all__ = ["LoopResult", "LoopSettings", "fit", "linear_warmup_decay", "param_groups",
           "python_shuffle", "torch_shuffle"]
