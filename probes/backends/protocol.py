"""What the probing engine needs of a scorer, as typed protocols.

:class:`ScoringModel` is the core every scorer has (the backends' :class:`Scorer`, a stand-in
that replays cached scores, a test double): its name, revision and kind, what enters the cache
key, the operations and its :class:`Capabilities`: what a task needs to know to build
requests for it (how a filled slot is scored, whether prompts must end at the slot, the slot's
marker, whether it returns top-k). Tasks and the engine ask these, never the backend's
registered name (``kind``), so a backend registered under a new name is treated as what it
declares (lm-evaluation-harness's tasks likewise never see the model class); read them with
:func:`capabilities`. Three more behaviours are optional, each a protocol of its own, and used
only through the functions here (never by probing attributes):

- :class:`Describes`: ``describe()`` -> a dict for the run record (:func:`description`);
- :class:`ChecksOperations`: ``require(*ops)`` fails before any work when the model cannot do
  an operation, e.g. a masked encoder without its head (:func:`require`);
- :class:`ReportsProgress`: a ``progress`` callback called with the number of requests each
  batch finished (:func:`progress_to`).

>>> class Fake:
...     name, revision, kind, capabilities = "fake", "r1", "my-lm", CAUSAL_LM
...     def cache_key_options(self): return {}
...     def loglik(self, requests): return []
...     def describe(self): return {"model": self.name}
>>> fake = Fake()
>>> isinstance(fake, ScoringModel), description(fake), isinstance(fake, ReportsProgress)
(True, {'model': 'fake'}, False)
>>> require(fake, ["loglik"])  # no require(): nothing to check
>>> capabilities(fake).ends_at_slot, capabilities(fake).slot_token
(True, None)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from probes.engine.errors import ProbeError

SLOT = "[MASK]"
"""The slot marker of ``topk`` prompts for a scorer that reads a slot inside the prompt."""


@dataclass(frozen=True)
class Capabilities:
    """What a scorer declares about itself for the tasks that build its requests.

    - ``slot_scoring``: how a filled slot (a candidate in a template) is scored: ``"pll"``, the
      pseudo-log-likelihood of its span in the whole text (masked LMs, Salazar et al. 2020), or
      ``"loglik"``, the log-likelihood of the text from the slot on, given the text before it
      (causal and encoder-decoder LMs);
    - ``ends_at_slot``: ``topk`` reads the distribution of the token after the prompt, so a
      prompt must end at the slot (a template's ``[V]`` ends it; nothing follows);
    - ``slot_token``: the marker ``topk`` prompts hold at the slot, or None (none: ends at the
      slot, or a model without a mask token);
    - ``topk``: whether the scorer can return the top-k fillers of a slot at all;
    - ``generate``: whether it can generate text after a prompt (causal and encoder-decoder
      LMs, a server; not a masked LM), the operation of the ``generate`` task.

    >>> from dataclasses import replace
    >>> replace(MASKED_LM, slot_token=None).reads_slot
    False
    >>> CAUSAL_LM.reads_slot, MASKED_LM.reads_slot
    (True, True)
    """

    slot_scoring: Literal["pll", "loglik"]
    ends_at_slot: bool
    slot_token: str | None
    topk: bool = True
    generate: bool = False

    def __post_init__(self) -> None:
        if self.slot_scoring not in ("pll", "loglik"):
            raise ProbeError(f"slot_scoring must be 'pll' or 'loglik', not {self.slot_scoring!r}")
        if self.ends_at_slot and self.slot_token is not None:
            raise ProbeError("a scorer whose prompts end at the slot has no slot token")

    @property
    def reads_slot(self) -> bool:
        """Whether ``topk`` can find the slot: the prompt ends there, or it holds a marker."""
        return self.ends_at_slot or self.slot_token is not None

    def as_record(self) -> dict[str, Any]:
        """The fields as a dict, for the run record (``runs.config.capabilities``)."""
        return {"slot_scoring": self.slot_scoring, "ends_at_slot": self.ends_at_slot,
                "slot_token": self.slot_token, "topk": self.topk, "generate": self.generate}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Capabilities:
        """The inverse of :meth:`as_record`; a record from before ``generate`` was declared
        says it by family (the log-likelihood scorers, causal, seq2seq and server, generate).

        >>> Capabilities.from_record({"slot_scoring": "loglik", "ends_at_slot": True}).generate
        True
        """
        return cls(record["slot_scoring"], bool(record["ends_at_slot"]), record.get("slot_token"),
                   bool(record.get("topk", True)),
                   bool(record.get("generate", record["slot_scoring"] == "loglik")))


MASKED_LM = Capabilities(slot_scoring="pll", ends_at_slot=False, slot_token=SLOT)
"""A bidirectional encoder with an MLM head: PLL, the slot marked inside the prompt."""
CAUSAL_LM = Capabilities(slot_scoring="loglik", ends_at_slot=True, slot_token=None,
                         generate=True)
"""A decoder-only LM: continuation log-likelihood, prompts end at the slot."""
SEQ2SEQ_LM = Capabilities(slot_scoring="loglik", ends_at_slot=False, slot_token=SLOT,
                          generate=True)
"""An encoder-decoder LM: continuation log-likelihood, the slot marked (a T5 sentinel or BART's
mask token replaces the marker) inside the prompt."""


FAMILY_CAPABILITIES: dict[str, Capabilities] = {"masked": MASKED_LM, "causal": CAUSAL_LM,
                                                "seq2seq": SEQ2SEQ_LM}
"""The capabilities of each language-model family, by its name: the one home of the family
names (``kgprobe export --kind`` offers them and ``probes.engine.preview.PROFILES`` renders
prompts for them)."""
FAMILIES: tuple[str, ...] = tuple(FAMILY_CAPABILITIES)
"""The language-model families (:func:`family`), in one place: the built-in backends are one
per family and named after it (``probes.backends.KINDS``), a model list's ``kind`` is one of
them, and so are ``kgprobe export --kind``'s choices."""


def family(caps: Capabilities) -> str:
    """The language-model family the capabilities describe, as the papers name them (COPEN's
    Table 8 and frames, the linear probes' pooling): ``masked`` (PLL), ``causal`` (prompts end
    at the slot) or ``seq2seq`` (log-likelihood, slot marked). Derived from what a scorer
    declares, never from the name its backend is registered under.

    >>> family(MASKED_LM), family(CAUSAL_LM), family(SEQ2SEQ_LM)
    ('masked', 'causal', 'seq2seq')
    """
    if caps.slot_scoring == "pll":
        return "masked"
    return "causal" if caps.ends_at_slot else "seq2seq"


@runtime_checkable
class ScoringModel(Protocol):
    """The core of a scorer. ``loglik``, ``pll`` and ``topk`` are the operations of
    :class:`probes.backends.base.Scorer`; a scorer offers those its model can do.
    ``kind`` is the name its backend is registered under: a label for the run record, never
    a switch; what tasks need is in ``capabilities``."""

    name: str
    revision: str
    kind: str
    capabilities: Capabilities

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


def capabilities(scorer: Any) -> Capabilities:
    """The scorer's declared :class:`Capabilities`; a scorer that declares none is an error
    naming it (its kind is not guessed from its name)."""
    caps = getattr(scorer, "capabilities", None)
    if not isinstance(caps, Capabilities):
        raise ProbeError(f"the scorer of model {getattr(scorer, 'name', '?')!r} (backend "
                         f"{getattr(scorer, 'kind', '?')!r}) declares no capabilities; set its "
                         "class attribute capabilities (probes.backends.protocol.Capabilities, "
                         "e.g. MASKED_LM, CAUSAL_LM or SEQ2SEQ_LM)")
    return caps


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

