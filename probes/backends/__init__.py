"""Model backends behind one interface: masked, causal and seq2seq scorers.

The names below load on first use, so that importing a light submodule (the scorer protocols
of :mod:`probes.backends.protocol`) does not import torch.

Others may import: the names below and the submodules :mod:`~probes.backends.protocol`,
:mod:`~probes.backends.registry`, :mod:`~probes.backends.base`, :mod:`~probes.backends.device`
and :mod:`~probes.backends.scoring_options`, from the engine, the benchmarks and the app; a
backend module itself only through the registry. ``eval`` imports nothing of it.

>>> from probes.backends import KINDS, Score, Scorer, WholeWordVocab, load_scorer
>>> sorted(KINDS)
['causal', 'masked', 'seq2seq']
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "KINDS": "probes.backends.registry",
    "MASK": "probes.backends.base",
    "ModelError": "probes.engine.errors",
    "PromptError": "probes.backends.base",
    "PromptTooLongError": "probes.engine.models",
    "Score": "probes.backends.base",
    "Scorer": "probes.backends.base",
    "ScoringModel": "probes.backends.protocol",
    "WholeWordVocab": "probes.engine.wordvocab",
    "backend": "probes.backends.registry",
    "detect_kind": "probes.backends.registry",
    "kinds": "probes.backends.registry",
    "load_scorer": "probes.backends.registry",
    "register": "probes.backends.registry",
    "shared_words": "probes.engine.wordvocab",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'probes.backends' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
