"""The ``generate`` operation's settings and results, shared by every backend (no torch here).

A ``generate`` request is one prompt; its :class:`GenerateSettings` travel as the request's
options, so every setting enters the cache key (probes.engine.cache.request_key) and the run
id, beside the scorer's own ``cache_key_options`` (the chat template's hash, when
``--apply-chat-template`` wraps the scorer).

- greedy by default (``do_sample=False``); with ``do_sample`` each prompt draws from its own
  generator seeded by ``seed`` and the prompt's text, so a sampled answer does not depend on
  which prompts shared its batch;
- ``max_new_tokens`` bounds the answer;
- ``stop``: strings that end the answer; the answer is cut before the first one that occurs
  (lm-evaluation-harness's ``until``: ``s.split(term)[0]`` for each term). None (the default)
  is a newline for a completion prompt and nothing under a chat template (the reply ends at
  the end-of-turn token); the end-of-sequence token always ends an answer;
- ``system``: a system prompt, a system turn under a chat template, else text put before the
  prompt with a blank line (as lm-evaluation-harness prepends ``system_instruction``).

>>> s = GenerateSettings(max_new_tokens=8)
>>> GenerateSettings.from_options(s.as_options()) == s
True
>>> cut_at_stop("Paris.\\nQ: next", ("\\n",))
('Paris.', True)
>>> cut_at_stop("Paris", ("\\n", "."))
('Paris', False)
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from probes.engine.errors import ModelError

Finish = Literal["stop", "eos", "length"]
GENERATE_VERSION = 1
"""Bumped when a change alters the text a backend generates for the same settings (part of
the request options, so of the cache key)."""


@dataclass(frozen=True)
class GenerateSettings:
    """How one ``generate`` request decodes (see the module)."""

    max_new_tokens: int = 32
    stop: tuple[str, ...] | None = None
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    system: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ModelError(f"max_new_tokens must be a whole number >= 1, not "
                             f"{self.max_new_tokens!r}")
        if self.do_sample and not self.temperature > 0:
            raise ModelError(f"sampling needs temperature > 0, not {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ModelError(f"top_p must be in (0, 1], not {self.top_p!r}")
        if self.stop is not None:
            object.__setattr__(self, "stop", tuple(str(s) for s in self.stop if s))

    @property
    def stops(self) -> tuple[str, ...]:
        """The stop strings in force: ``stop``, or a newline when it is None (a completion
        prompt; probes.engine.chat sets the chat default)."""
        return ("\n",) if self.stop is None else tuple(self.stop)

    def as_options(self) -> tuple[tuple[str, Any], ...]:
        """The settings as a request's options (sorted keys; the stop strings a tuple)."""
        return (("generate_version", GENERATE_VERSION),
                *sorted((k, v) for k, v in asdict(self).items()))

    @classmethod
    def from_options(cls, options: tuple[tuple[str, Any], ...] | dict[str, Any]
                     ) -> GenerateSettings:
        """The inverse of :meth:`as_options` (unknown keys are ignored)."""
        given = dict(options)
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in given.items() if k in names}
        if kept.get("stop") is not None:
            kept["stop"] = tuple(kept["stop"])
        return cls(**kept)

    def row_seed(self, prompt: str) -> int:
        """The seed of one prompt's generator: ``seed`` and the prompt's text."""
        digest = hashlib.sha256(f"{self.seed}\x00{prompt}".encode()).digest()
        return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


@dataclass(frozen=True, slots=True)
class Generation:
    """One generated answer: its text (cut at the first stop string), the tokens generated
    and why it ended: a stop string, the end-of-sequence token or ``max_new_tokens``."""

    text: str
    n_tokens: int
    finish: Finish

    def as_record(self) -> dict[str, Any]:
        return {"text": self.text, "n_tokens": self.n_tokens, "finish": self.finish}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Generation:
        return cls(str(record["text"]), int(record["n_tokens"]), record["finish"])


def cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` before the first stop string that occurs in it, and whether one did."""
    first = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:first], True) if first >= 0 else (text, False)


def with_system(prompt: str, system: str | None) -> str:
    """A plain (no chat template) prompt with its system text before it.

    >>> with_system("Q: 2+2?\\nA:", "Answer briefly.")
    'Answer briefly.\\n\\nQ: 2+2?\\nA:'
    """
    return prompt if not system else f"{system}\n\n{prompt}"


def cannot_generate(name: str, kind: str, why: str) -> ModelError:
    """The one-line error of a backend that cannot generate."""
    return ModelError(f"model {name!r} ({kind} LM) cannot generate text: {why}")
