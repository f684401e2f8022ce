"""What the probing engine needs of a scorer, as typed protocols.

:class:`ScoringModel` is the core every scorer has (the backends' :class:`Scorer`, a stand-in
that replays cached scores, a test double): its name, revision and kind, what enters the cache
key, and the operations. Three capabilities are optional, each a protocol of its own, and used
only through the functions here (never by probing attributes):

- :class:`Describes`: ``describe()`` -> a dict for the run record (:func:`description`);
- :class:`ChecksOperations`: ``require(*ops)`` fails before any work when the model cannot do
  an operation, e.g. a masked encoder without its head (:func:`require`);
- :class:`ReportsProgress`: a ``progress`` callback called with the number of requests each
  batch finished (:func:`progress_to`).

>>> class Fake:
...     name, revision, kind = "fake", "r1", "causal"
...     def cache_key_options(self): return {}
...     def loglik(self, requests): return []
...     def describe(self): return {"model": self.name}
>>> fake = Fake()
>>> isinstance(fake, ScoringModel), description(fake), isinstance(fake, ReportsProgress)
(True, {'model': 'fake'}, False)
>>> require(fake, ["loglik"])  # no require(): nothing to check
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ScoringModel(Protocol):
    """The core of a scorer. ``loglik``, ``pll`` and ``topk`` are the operations of
    :class:`probes.backends.base.Scorer`; a scorer offers those its model can do."""

    name: str
    revision: str
    kind: str

    def cache_key_options(self) -> dict[str, Any]:
        """What, besides model, revision and prompt, changes the numbers it returns."""
        ...


@runtime_checkable
class Describes(Protocol):
    """A scorer that describes itself for the run record."""

    def describe(self) -> dict[str, Any]:
        ...


@runtime_checkable
class ChecksOperations(Protocol):
    """A scorer that can say up front that it cannot do an operation."""

    def require(self, *operations: str) -> None:
        ...


@runtime_checkable
class ReportsProgress(Protocol):
    """A scorer that reports finished requests per batch to ``progress``."""

    progress: Callable[[int], None] | None


def description(scorer: ScoringModel) -> dict[str, Any]:
    """``scorer.describe()``, or an empty dict for a scorer that does not describe itself."""
    return scorer.describe() if isinstance(scorer, Describes) else {}


def require(scorer: ScoringModel, operations: Iterable[str]) -> None:
    """Fail before any work when ``scorer`` cannot do one of ``operations`` (a ModelError from
    the scorer); a scorer without ``require`` is trusted."""
    if isinstance(scorer, ChecksOperations):
        scorer.require(*operations)


@contextlib.contextmanager
def progress_to(scorer: ScoringModel, callback: Callable[[int], None]) -> Iterator[bool]:
    """Send ``scorer``'s per-batch progress to ``callback`` while the block runs, then restore
    its own; yields whether the scorer reports progress at all.

    >>> class Counting:
    ...     progress = None
    >>> seen = []
    >>> c = Counting()
    >>> with progress_to(c, seen.append) as reports:
    ...     c.progress(3)
    >>> reports, seen, c.progress
    (True, [3], None)
    """
    if not isinstance(scorer, ReportsProgress):
        yield False
        return
    old = scorer.progress
    scorer.progress = callback
    try:
        yield True
    finally:
        scorer.progress = old

