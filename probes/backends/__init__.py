"""Model backends behind one interface: masked, causal and seq2seq scorers.

>>> from probes.backends import load_scorer, Scorer, Score, WholeWordVocab
>>> sorted(KINDS)
['causal', 'masked', 'seq2seq']
"""

from probes.backends.base import MASK, PromptError, Score, Scorer
from probes.backends.registry import KINDS, backend, detect_kind, load_scorer, register
from probes.models import ModelError, PromptTooLongError
from probes.wordvocab import WholeWordVocab, shared_words

__all__ = [
    "KINDS",
    "MASK",
    "ModelError",
    "PromptError",
    "PromptTooLongError",
    "Score",
    "Scorer",
    "WholeWordVocab",
    "backend",
    "detect_kind",
    "load_scorer",
    "register",
    "shared_words",
]
