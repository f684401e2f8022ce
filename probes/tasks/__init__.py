"""Task modules: a probe instance in, scoring requests out; scoring results in, result rows out.

One module per task kind (the probe header's ``task:``), registered in :data:`TASKS`. A task
module defines a subclass of :class:`Task` and exposes an instance of it as ``TASK``::

    class ChoiceTask(Task):
        name = "choice"
        params = frozenset({"score", "slot_det", "capitalize"})  # the params it accepts

        def check(self, spec, ctx): ...        # optional: reject a spec/backend early
        def items(self, inst, spec, ctx): ...  # -> list[Item], each with its Request(s)
        def rows(self, item, results): ...     # optional: results of item.requests -> Rows

The engine (probes.run) calls ``check(spec, ctx)`` once per probe (the default rejects
unknown ``params`` keys), ``items(inst, spec, ctx)`` once per instance, answers every request
from the cache or the model, and calls ``rows(item, results)`` with the results in the order
of ``item.requests`` once all of them are in. Errors are ProbeError; the engine adds the probe
file. ``rows`` must depend only on the item and the results (a resumed run rebuilds them).

Data types:

- ``Instance``: probe, split, instance_id, target, gold (list), candidates (list), fields (dict
  of every selected variable) -- one row of the ``instances`` table.
- ``TaskContext``: kind (masked | causal | seq2seq), slot_token (the ``[MASK]`` marker for
  masked and seq2seq backends, None for causal), top_k (``--top-k``).
- ``Item``: split, instance_id, prompt_id (index into the probe's templates), candidate,
  label (the class a candidate stands for), prompt (the text shown in ``scores.prompt``) and
  requests -- what becomes one ``scores`` row or one ranked list of ``responses`` rows.
- ``Request(op, args, options)``, the backend operations (probes.backends.base.Scorer):

  - ``("loglik", (context, continuation))``: log P(continuation | context); an empty context
    scores the whole text (causal, seq2seq);
  - ``("pll", (text, (start, end)))``: pseudo-log-likelihood of a character span (masked);
  - ``("topk", (prompt,), (("k", k), ("vocab", "lowercase" | "words")))``: the k most probable
    whole-word slot fillers with probabilities; a masked/seq2seq prompt holds ``[MASK]``, a
    causal prompt ends at the slot. With the option ``("mix", (w1, ..., wg))`` the request holds
    g prompts and gets one list: the top-k of the mixture of their distributions.

  ``op``, ``args`` and ``options`` all go into the cache key: requests that can give different
  results must differ there.
- ``Rows``: ``scores`` (ScoreRow: split, instance_id, prompt_id, candidate, label, prompt,
  score, n_tokens) and ``responses`` (ResponseRow: split, instance_id, prompt_id, rank, token,
  probability). The default ``rows`` sums the log-probabilities and token counts of an item's
  loglik/pll results into one ScoreRow, or ranks one topk result into ResponseRows.

Helpers for task modules: ``span_request`` (the request that scores one part of a filled
template for a model kind), ``param`` / ``check_params`` / ``check_score_part``.

>>> sorted(TASKS)
['binary', 'choice', 'records', 'relatum', 'subsumption']
>>> get_task("choice").name
'choice'
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from probes.errors import ProbeError
from probes.render import Rendered, text_span
from probes.spec import ProbeSpec

#: task name -> module that defines ``TASK``. Add a task here (and a module) to support it.
TASKS: dict[str, str] = {
    "choice": "probes.tasks.choice",
    "binary": "probes.tasks.binary",
    "relatum": "probes.tasks.relatum",
    "records": "probes.tasks.records",
    "subsumption": "probes.tasks.subsumption",
}


@dataclass(frozen=True)
class Instance:
    """One row of the ``instances`` table."""

    probe: str
    split: str
    instance_id: str
    target: str | None
    gold: list[str]
    candidates: list[str]
    fields: dict[str, Any]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Instance:
        f = row.get("fields")
        return cls(probe=row["probe"], split=row["split"], instance_id=row["instance_id"],
                   target=row.get("target"), gold=list(row.get("gold") or []),
                   candidates=list(row.get("candidates") or []),
                   fields=json.loads(f) if isinstance(f, str) else dict(f or {}))


@dataclass(frozen=True)
class TaskContext:
    """What a task may know about the model: its kind, its slot token, the default top-k."""

    kind: str                      # masked | causal | seq2seq
    slot_token: str | None = None  # the mask token (masked) or sentinel (seq2seq)
    top_k: int = 10


@dataclass(frozen=True)
class Request:
    """One backend call's worth of input; see the module docstring for ``op``/``args``."""

    op: str
    args: tuple[Any, ...]
    options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Item:
    """What becomes one ``scores`` row or one set of ``responses`` rows."""

    split: str
    instance_id: str
    prompt_id: int
    candidate: str
    label: str | None
    prompt: str
    requests: tuple[Request, ...] = field(default_factory=tuple)


class ScoreRow(NamedTuple):
    split: str
    instance_id: str
    prompt_id: int
    candidate: str
    label: str | None
    prompt: str
    score: float
    n_tokens: int


class ResponseRow(NamedTuple):
    split: str
    instance_id: str
    prompt_id: int
    rank: int
    token: str
    probability: float
    prompt: str | None = None  # the rendered text whose slot was ranked


@dataclass
class Rows:
    scores: list[ScoreRow] = field(default_factory=list)
    responses: list[ResponseRow] = field(default_factory=list)


class Task:
    """Base class of task modules; see the module docstring."""

    name: ClassVar[str] = ""
    params: ClassVar[frozenset[str]] = frozenset()

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        """Raise ProbeError when the probe cannot run as this task with this backend."""
        check_params(spec, self.params)

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        raise NotImplementedError

    def rows(self, item: Item, results: Sequence[Any]) -> Rows:
        """Default: loglik/pll results summed into one score row; one topk result ranked."""
        if len(item.requests) == 1 and item.requests[0].op == "topk":
            return Rows(responses=[
                ResponseRow(item.split, item.instance_id, item.prompt_id, rank, str(tok),
                            float(p), item.prompt)
                for rank, (tok, p) in enumerate(results[0], start=1)])
        return Rows(scores=[ScoreRow(
            item.split, item.instance_id, item.prompt_id, item.candidate, item.label, item.prompt,
            float(sum(r.logprob for r in results)), int(sum(r.n_tokens for r in results)))])


def get_task(name: str) -> Task:
    """The task object for a task name; an unknown name is a ProbeError with the known ones.

    >>> get_task("ranking")
    Traceback (most recent call last):
    ...
    probes.errors.ProbeError: task 'ranking' has no scoring module yet; tasks that can be ...
    """
    module = TASKS.get(name)
    if module is None:
        raise ProbeError(f"task {name!r} has no scoring module yet; tasks that can be scored: "
                         f"{', '.join(sorted(TASKS))}")
    return importlib.import_module(module).TASK


def check_params(spec: ProbeSpec, allowed: frozenset[str] | set[str]) -> None:
    """Reject params the task does not know (with a "did you mean").

    >>> from probes.spec import ProbeSpec
    >>> spec = ProbeSpec(name="x/y", task="choice", split="test", params={"scroe": "whole"})
    >>> check_params(spec, {"score"})
    Traceback (most recent call last):
    ...
    probes.errors.ProbeError: probe x/y: unknown params key 'scroe' for task choice (did you ...
    """
    for key in spec.params:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ProbeError(f"probe {spec.name}: unknown params key {key!r} for task "
                             f"{spec.task}{hint}; known: {', '.join(sorted(allowed)) or 'none'}")


SCORE_PARTS = ("whole", "continuation", "slot")


def span_request(rendered: Rendered, part: str, template: str, kind: str) -> Request:
    """The request that scores one part of a filled template (see probes.render.text_span).

    Causal and seq2seq LMs get ``loglik(text before the span, the span)``: whitespace before
    the span moves into the continuation, text after the span is not scored. Masked LMs get the
    pseudo-log-likelihood of the span in the whole text.

    >>> from probes.render import render
    >>> r = render("[W] is [DET] [V].", target="owl", slot="bird")
    >>> span_request(r, "continuation", "t", "causal").args
    ('owl is a', ' bird.')
    >>> span_request(r, "slot", "t", "masked").args
    ('owl is a bird.', (9, 13))
    >>> span_request(r, "whole", "t", "causal").args
    ('', 'owl is a bird.')
    """
    start, end = text_span(rendered, part, template)
    text = rendered.text
    if kind == "masked":
        return Request("pll", (text, (start, end)))
    context = text[:start]
    stripped = context.rstrip()
    return Request("loglik", (stripped, text[len(stripped):end]))


def param(spec: ProbeSpec, key: str, default: Any, choices: Sequence[Any] | None = None) -> Any:
    """A spec param with its default; ``choices`` restricts the value.

    >>> from probes.spec import ProbeSpec
    >>> param(ProbeSpec(name="x", task="choice", split="t"), "score", "continuation")
    'continuation'
    """
    value = spec.params.get(key, default)
    if choices is not None and value not in choices:
        raise ProbeError(f"probe {spec.name}: params {key}: {value!r} is not one of "
                         f"{', '.join(map(str, choices))}")
    return value


def check_score_part(spec: ProbeSpec, part: Any) -> str:
    """Validate a ``score`` param: whole, continuation, slot or a placeholder like ``[W]``."""
    if not isinstance(part, str) or not (
            part in SCORE_PARTS or (part.startswith("[") and part.endswith("]"))):
        raise ProbeError(f"probe {spec.name}: params score: {part!r} must be one of "
                         f"{', '.join(SCORE_PARTS)} or a placeholder such as [W]")
    return part
