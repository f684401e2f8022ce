"""Task modules: a probe instance in, scoring requests out; scoring results in, result rows out.

One module per task kind (the probe header's ``task:``), listed in the task registry
(:mod:`probes.engine.tasks.registry`). A task module defines a subclass of :class:`Task` with a
pydantic model of the ``params`` it accepts, and exposes an instance of it as ``TASK``::

    class ChoiceParams(TaskParams):
        score: str = "continuation"
        slot_det: str = "a"
        capitalize: bool = False

    class ChoiceTask(Task):
        name = "choice"
        description = "each candidate in the filled template, by (pseudo-)log-likelihood"
        Params = ChoiceParams

        def check(self, spec, ctx): ...        # optional: reject a spec/backend early
        def items(self, inst, spec, ctx): ...  # -> list[Item], each with its Request(s)
        def rows(self, item, results): ...     # optional: results of item.requests -> Rows

A probe header's ``params`` are validated against the task's model when the probe file is
read (probes.engine.spec: unknown keys get a "did you mean", wrong types an error on the ``params``
line); ``Task.typed_params(spec)`` gives them typed, defaults filled in. ``spec.params`` keeps
the mapping as written (it enters run ids and the exported instances' hash).

The engine (probes.engine.run) calls ``check(spec, ctx)`` once per probe (the default validates
``params``), ``items(inst, spec, ctx)`` once per instance, answers every request
from the cache or the model, and calls ``rows(item, results)`` with the results in the order
of ``item.requests`` once all of them are in. Errors are ProbeError; the engine adds the probe
file. ``rows`` must depend only on the item and the results (a resumed run rebuilds them).

Data types:

- ``Instance``: probe, split, instance_id, target, gold (list), candidates (list), fields (dict
  of every selected variable) -- one row of the ``instances`` table.
- ``TaskContext``: caps (the scorer's declared
  :class:`~probes.backends.protocol.Capabilities`: how a slot is scored, whether prompts end
  at the slot, the slot token, whether it returns top-k) and top_k (``--top-k``). A task asks
  these, never the backend's name, so a backend registered under a new name gets what it
  declares.
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
    g prompts and gets one list: the top-k of the mixture of their distributions;
  - ``("generate", (prompt,), GenerateSettings.as_options())``: the text the model generates
    after the prompt (probes.backends.generation), a ``Generation``.

  ``op``, ``args`` and ``options`` all go into the cache key: requests that can give different
  results must differ there.
- ``Rows``: ``scores`` (ScoreRow: split, instance_id, prompt_id, candidate, label, prompt,
  score, n_tokens, n_chars, baseline) and ``responses`` (ResponseRow: split, instance_id,
  prompt_id, rank, token, probability) and ``generations`` (GenerationRow: split,
  instance_id, prompt_id, prompt, generation, n_tokens, finish, answers). The default
  ``rows`` sums the log-probabilities, token and character counts of an item's loglik/pll
  results into one ScoreRow, or ranks one topk result into ResponseRows.

Helpers for task modules: ``scored_items`` (the one items loop of the tasks that score
filled templates, choice and binary: each ``Filling`` rendered and requested),
``span_request`` (the request that scores one part of a filled template for a model kind),
``with_pmi`` / ``neutral_request`` / ``calibrated_rows`` (PMI
calibration: the same text after a neutral context, into ``baseline``), ``score_part``,
``known_det`` and ``one_of`` (validators for params models),
``check_params`` and ``params_problem`` (what ``typed_params`` and probes.engine.spec report).

>>> get_task("choice").name
'choice'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from kg.header import did_you_mean
from probes.backends.protocol import Capabilities
from probes.engine.errors import ProbeError
from probes.engine.render import Rendered, render, text_span

if TYPE_CHECKING:  # probes.engine.spec reads the task registry: no import back at run time
    from probes.engine.spec import ProbeSpec


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
    """What a task may know about the model: its capabilities and the default top-k.

    >>> from probes.backends.protocol import CAUSAL_LM, MASKED_LM
    >>> TaskContext(CAUSAL_LM).ends_at_slot, TaskContext(MASKED_LM, 5).slot_token
    (True, '[MASK]')
    """

    caps: Capabilities
    top_k: int = 10

    @property
    def slot_scoring(self) -> str:
        """``pll`` or ``loglik``: how a filled slot is scored."""
        return self.caps.slot_scoring

    @property
    def ends_at_slot(self) -> bool:
        """Whether a topk prompt must end at the slot (no marker, nothing after it)."""
        return self.caps.ends_at_slot

    @property
    def slot_token(self) -> str | None:
        """The marker a topk prompt holds at the slot, or None."""
        return self.caps.slot_token


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
    n_chars: int | None = None     # characters of the scored text (leading space left out)
    baseline: float | None = None  # its log-probability after the neutral context (PMI)


class ResponseRow(NamedTuple):
    split: str
    instance_id: str
    prompt_id: int
    rank: int
    token: str
    probability: float
    prompt: str | None = None  # the rendered text whose slot was ranked


class GenerationRow(NamedTuple):
    split: str
    instance_id: str
    prompt_id: int
    prompt: str
    generation: str
    n_tokens: int
    finish: str
    answers: list[str]


@dataclass
class Rows:
    scores: list[ScoreRow] = field(default_factory=list)
    responses: list[ResponseRow] = field(default_factory=list)
    generations: list[GenerationRow] = field(default_factory=list)


class TaskParams(BaseModel):
    """Base of a task's ``params`` model: unknown keys are errors, values are read-only.

    A field's ``description`` is what the README's task table says about it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class Task:
    """Base class of task modules; see the module docstring."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type[TaskParams]] = TaskParams

    @classmethod
    def param_names(cls) -> frozenset[str]:
        """The ``params`` keys the task accepts."""
        return frozenset(cls.Params.model_fields)

    def typed_params(self, spec: ProbeSpec) -> Any:
        """``spec.params`` validated against the task's model (defaults filled in); a wrong key
        or value is a ProbeError naming the probe."""
        check_params(spec, self.param_names())
        problem = params_problem(self.Params, spec.params)
        if problem is not None:
            raise ProbeError(f"probe {spec.name}: {problem[1]}")
        return self.Params.model_validate(spec.params)

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        """Raise ProbeError when the probe cannot run as this task with this backend."""
        self.typed_params(spec)

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        raise NotImplementedError

    def rows(self, item: Item, results: Sequence[Any]) -> Rows:
        """Default: loglik/pll results summed into one score row (with the characters of the
        scored texts); one topk result ranked."""
        if len(item.requests) == 1 and item.requests[0].op == "topk":
            return Rows(responses=[
                ResponseRow(item.split, item.instance_id, item.prompt_id, rank, str(tok),
                            float(p), item.prompt)
                for rank, (tok, p) in enumerate(results[0], start=1)])
        return Rows(scores=[ScoreRow(
            item.split, item.instance_id, item.prompt_id, item.candidate, item.label, item.prompt,
            float(sum(r.logprob for r in results)), int(sum(r.n_tokens for r in results)),
            sum(len(scored_text(q)) for q in item.requests))])


def get_task(name: str) -> Task:
    """The task object for a task name (see probes.engine.tasks.registry); an unknown name is a
    ProbeError with the known ones.

    >>> get_task("ranking")
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: task 'ranking' has no scoring module yet; tasks that can be ...
    """
    from probes.engine.tasks.registry import TASK_ENTRIES  # the registry imports every task module

    entry = TASK_ENTRIES.get(name)
    if entry is None:
        raise ProbeError(f"task {name!r} has no scoring module yet; tasks that can be scored: "
                         f"{', '.join(sorted(TASK_ENTRIES))}")
    return entry.task


def check_params(spec: ProbeSpec, allowed: frozenset[str] | set[str]) -> None:
    """Reject params the task does not know (with a "did you mean").

    >>> from probes.engine.spec import ProbeSpec
    >>> spec = ProbeSpec(name="x/y", task="choice", split="test", params={"score": "whole"})
    >>> check_params(spec, {"scroe"})
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: probe x/y: unknown params key 'score' for task choice (did you ...
    """
    for key in spec.params:
        if key not in allowed:
            raise ProbeError(f"probe {spec.name}: unknown params key {key!r} for task "
                             f"{spec.task}{did_you_mean(str(key), sorted(allowed))}; known: "
                             f"{', '.join(sorted(allowed)) or 'none'}")


def params_problem(model: type[TaskParams], params: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first key of ``params`` that ``model`` rejects and why (``params <key>: ...``), or
    None when they are valid.

    >>> from probes.engine.tasks.choice import ChoiceParams
    >>> params_problem(ChoiceParams, {"scroe": "whole"})[1]  # doctest: +ELLIPSIS
    "unknown params key 'scroe' (did you mean 'score'?); known: capitalize, pmi_context, ..."
    >>> params_problem(ChoiceParams, {"capitalize": "often"})[1]
    'params capitalize: Input should be a valid boolean, unable to interpret input'
    >>> params_problem(ChoiceParams, {"score": "slot"}) is None
    True
    """
    known = sorted(model.model_fields)
    for key in params:
        if key not in known:
            return str(key), (f"unknown params key {key!r}{did_you_mean(str(key), known)}; "
                              f"known: {', '.join(known) or 'none'}")
    try:
        model.model_validate(dict(params))
    except ValidationError as e:
        err = e.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        where = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        return key, msg if msg.startswith("params ") else f"params {where}: {msg}"
    return None


SCORE_PARTS = ("whole", "continuation", "slot", "conditional")
"""The parts of a filled template a scored task may score (besides a placeholder such as
``[W]``); the one definition (subsumption takes its own subset from it)."""


def instance_prompts(spec: ProbeSpec, inst: Instance) -> list[str]:
    """An instance's templates: the header's ``prompts``, or with ``prompts_from: ?var`` the
    values of that variable in the instance (in query order; prompt ``i`` = the ``i``-th).

    >>> from probes.engine.spec import ProbeSpec
    >>> spec = ProbeSpec(name="d/c", task="choice", split="test", prompts_from="?template")
    >>> instance_prompts(spec, Instance("d/c", "test", "i", "x", [], [], {"template": ["a [V]"]}))
    ['a [V]']
    >>> instance_prompts(spec, Instance("d/c", "test", "i9", "x", [], [], {}))
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: probe d/c: instance i9 has no templates in ?template ...
    """
    if spec.prompts_from is None:
        return list(spec.prompts)
    var = spec.prompts_from[1:]
    value = inst.fields.get(var)
    values = value if isinstance(value, list) else ([] if value is None else [value])
    out = [str(v) for v in values if v is not None]
    if not out:
        raise ProbeError(f"probe {spec.name}: instance {inst.instance_id} has no templates in "
                         f"?{var} (prompts_from); bind ?{var} for every instance in the query")
    return out


def span_request(rendered: Rendered, part: str, template: str, scoring: str) -> Request:
    """The request that scores one part of a filled template (see probes.engine.render.text_span)
    for a scorer whose ``slot_scoring`` (its Capabilities) is ``scoring``.

    ``loglik`` (causal and seq2seq LMs) gets ``loglik(text before the span, the span)``:
    whitespace before the span moves into the continuation, text after the span is not scored.
    ``pll`` (masked LMs) gets the pseudo-log-likelihood of the span in the whole text.

    >>> from probes.engine.render import render
    >>> r = render("[W] is [DET] [V].", target="owl", slot="bird")
    >>> span_request(r, "continuation", "t", "loglik").args
    ('owl is a', ' bird.')
    >>> span_request(r, "slot", "t", "pll").args
    ('owl is a bird.', (9, 13))
    >>> span_request(r, "whole", "t", "loglik").args
    ('', 'owl is a bird.')

    ``"conditional"`` is lm-pub-quiz's ``conditional_score``: a causal (or seq2seq) LM scores
    from the slot to the end (``continuation``), a masked LM the slot's tokens only (``slot``).

    >>> [span_request(r, "conditional", "t", k).args for k in ("loglik", "pll")]
    [('owl is a', ' bird.'), ('owl is a bird.', (9, 13))]
    """
    if part == "conditional":  # lm-pub-quiz's conditional_score
        part = "slot" if scoring == "pll" else "continuation"
    start, end = text_span(rendered, part, template)
    text = rendered.text
    if scoring == "pll":
        return Request("pll", (text, (start, end)))
    context = text[:start]
    stripped = context.rstrip()
    return Request("loglik", (stripped, text[len(stripped):end]))


def scored_text(request: Request) -> str:
    """The text a loglik or pll request scores, without its leading whitespace (as
    lm-evaluation-harness counts a continuation's characters for ``acc_norm``).

    >>> scored_text(Request("loglik", ("owl is a", " bird.")))
    'bird.'
    >>> scored_text(Request("pll", ("owl is a bird.", (9, 13))))
    'bird'
    """
    if request.op == "pll":
        text, (start, end) = request.args
        return str(text[start:end]).lstrip()
    return str(request.args[1]).lstrip()


def neutral_request(request: Request, context: str) -> Request:
    """The request that scores the same text as ``request`` after the neutral ``context``
    (PMI calibration, Holtzman et al. 2021): ``""`` scores it unconditionally (a causal LM
    sees only its start token, as lm-evaluation-harness's ``acc_mutual_info``), a text such as
    ``"Answer:"`` conditions it on the domain only.

    >>> neutral_request(Request("loglik", ("owl is a", " bird.")), "").args
    ('', 'bird.')
    >>> neutral_request(Request("loglik", ("owl is a", " bird.")), "Answer: ").args
    ('Answer:', ' bird.')
    >>> neutral_request(Request("pll", ("owl is a bird.", (9, 13))), "Answer:").args
    ('Answer: bird', (8, 12))
    """
    text = scored_text(request)
    context = context.rstrip()
    if request.op == "pll":
        full = f"{context} {text}" if context else text
        return Request("pll", (full, (len(full) - len(text), len(full))), request.options)
    return Request("loglik", (context, f" {text}" if context else text), request.options)


def with_pmi(request: Request, context: str | None) -> tuple[Request, ...]:
    """An item's requests: ``request``, and its :func:`neutral_request` when the probe sets
    ``pmi_context`` (``context`` not None)."""
    return (request,) if context is None else (request, neutral_request(request, context))


class Filling(NamedTuple):
    """One text a scored task scores: template ``prompt_id``'s ``template`` with ``slot`` in its
    ``[V]`` (None: a template without a slot, a binary statement), the rows' ``candidate``
    and ``label``."""

    prompt_id: int
    template: str
    slot: str | None
    candidate: str
    label: str


def scored_items(inst: Instance, fillings: Iterable[Filling], part: str, ctx: TaskContext, *,
                 slot_det: str, capitalize: bool, pmi_context: str | None) -> list[Item]:
    """The one items loop of the tasks that score filled templates (choice, binary): each
    filling rendered for ``inst``, its ``part`` requested as ``ctx``'s scorer scores a slot
    (:func:`span_request`), with the PMI baseline request when ``pmi_context`` is set."""
    out = []
    for f in fillings:
        r = render(f.template, inst.fields, target=inst.target, slot=f.slot, slot_det=slot_det,
                   capitalize=capitalize)
        req = span_request(r, part, f.template, ctx.slot_scoring)
        out.append(Item(inst.split, inst.instance_id, f.prompt_id, f.candidate, f.label, r.text,
                        with_pmi(req, pmi_context)))
    return out


def calibrated_rows(item: Item, results: Sequence[Any]) -> Rows:
    """One score row of a choice/binary item whose second request, when it has one, is the
    :func:`neutral_request` of the first: its log-probability goes to ``baseline``."""
    first = results[0]
    return Rows(scores=[ScoreRow(
        item.split, item.instance_id, item.prompt_id, item.candidate, item.label, item.prompt,
        float(first.logprob), int(first.n_tokens), len(scored_text(item.requests[0])),
        float(results[1].logprob) if len(results) > 1 else None)])


def check_pmi(spec: ProbeSpec, context: str | None, part: str) -> None:
    """PMI needs a scored part that follows a context: not ``score: whole``."""
    if context is not None and part == "whole":
        raise ProbeError(f"probe {spec.name}: params pmi_context needs a scored part after a "
                         "context (score: continuation, slot or a placeholder), not the whole "
                         "text, whose unconditional log-probability is its score")


def score_part(part: Any) -> str:
    """Validate a ``score`` param: whole, continuation, slot or a placeholder like ``[W]``
    (a field validator of task params models).

    >>> score_part("[W]")
    '[W]'
    >>> score_part("all")
    Traceback (most recent call last):
    ...
    ValueError: 'all' must be one of whole, continuation, slot, conditional or a placeholder ...
    """
    if not isinstance(part, str) or not (
            part in SCORE_PARTS or (part.startswith("[") and part.endswith("]"))):
        raise ValueError(f"{part!r} must be one of {', '.join(SCORE_PARTS)} or a placeholder "
                         "such as [W]")
    return part


def known_det(value: Any) -> str:
    """Validate the ``slot_det`` of a choice or binary probe: ``a`` or ``an`` (a field validator).
    A ``[DET]`` before a known slot takes the article of the word that fills it ("an apron");
    ``slot_det`` is the article of a ``[DET]`` that no word follows.

    >>> known_det("an")
    'an'
    >>> known_det("auto")
    Traceback (most recent call last):
    ...
    ValueError: 'auto' is not a slot_det value: use a or an (a [DET] before the slot always ...
    """
    if value not in ("a", "an"):
        raise ValueError(f"{value!r} is not a slot_det value: use a or an (a [DET] before the "
                         "slot always takes the article of the word that fills it, by the "
                         "vowel-sound rule: 'an apron')")
    return str(value)


def one_of(value: Any, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices``, else a ValueError that lists them.

    >>> one_of("x", ("a", "b"))
    Traceback (most recent call last):
    ...
    ValueError: 'x' is not one of a, b
    """
    if value not in choices:
        raise ValueError(f"{value!r} is not one of {', '.join(map(str, choices))}")
    return value
