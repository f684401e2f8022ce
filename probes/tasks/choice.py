"""Multiple choice: each candidate fills the slot ``[V]`` and is scored by (pseudo-)likelihood.

Spec:

- ``prompts``: templates with a slot ``[V]`` (at least one).
- ``candidates``: the variable holding the answer candidates; the gold answers are always
  scored too (candidates = gold answers, then the other candidates, without repeats).
- ``params``:
  ``score`` (which part of the filled template is scored: ``continuation`` = from the slot to
  the end (default), ``slot`` = the candidate only, ``whole`` = the whole text, or a placeholder
  such as ``[W]``); ``slot_det`` and ``capitalize`` (see probes.render).

Each (prompt, candidate) gives one ``scores`` row: the summed log-probability (causal,
seq2seq) or pseudo-log-likelihood (masked) of the scored part; ``label`` is the candidate.
Which candidate wins is decided by the metrics (eval/metrics/choice_*.sql).

>>> from probes.spec import ProbeSpec
>>> spec = ProbeSpec(name="d/c", task="choice", split="test", prompts=["[W] is [DET] [V]."])
>>> inst = Instance("d/c", "test", "i1", "owl", ["bird"], ["fish", "bird"], {})
>>> [(it.candidate, it.requests[0].args) for it in TASK.items(inst, spec, TaskContext("causal"))]
[('bird', ('owl is a', ' bird.')), ('fish', ('owl is a', ' fish.'))]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from probes.errors import ProbeError
from probes.render import placeholders, render
from probes.tasks import Instance, Item, Task, TaskContext, TaskParams, score_part, span_request

if TYPE_CHECKING:
    from probes.spec import ProbeSpec


def candidate_list(inst: Instance) -> list[str]:
    """Gold answers first, then the other candidates, each once.

    >>> candidate_list(Instance("p", "s", "i", None, ["b"], ["a", "b", "c", "a"], {}))
    ['b', 'a', 'c']
    """
    return list(dict.fromkeys([*inst.gold, *inst.candidates]))


class ChoiceParams(TaskParams):
    """The ``params`` of a choice probe."""

    score: str = Field("continuation", description=(
        "the part scored: `continuation` (from the slot to the end), `slot` (the candidate), "
        "`whole` or a placeholder such as `[W]`"))
    slot_det: str = Field("a", description="the article written for a `[DET]` before the slot")
    capitalize: bool = Field(False, description="upper-case the prompt's first character")

    _score = field_validator("score")(score_part)


class ChoiceTask(Task):
    name = "choice"
    description = ("each candidate fills the slot `[V]` and is scored by log-likelihood (causal, "
                   "seq2seq) or pseudo-log-likelihood (masked)")
    Params = ChoiceParams

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        self.typed_params(spec)
        if not spec.prompts:
            raise ProbeError(f"probe {spec.name}: a choice probe needs 'prompts:' templates "
                             "with a slot [V] for the candidates")
        for t in spec.prompts:
            if "V" not in placeholders(t):
                raise ProbeError(f"probe {spec.name}: template {t!r} has no slot [V] for the "
                                 "candidates")

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        cands = candidate_list(inst)
        if not cands:
            raise ProbeError(f"probe {spec.name}: instance {inst.instance_id} has no candidates "
                             "and no gold answer; name the candidates' variable in "
                             "'candidates: ?var'")
        p: ChoiceParams = self.typed_params(spec)
        part = p.score
        out = []
        for pid, template in enumerate(spec.prompts):
            for cand in cands:
                r = render(template, inst.fields, target=inst.target, slot=cand,
                           slot_det=p.slot_det, capitalize=p.capitalize)
                out.append(Item(inst.split, inst.instance_id, pid, cand, cand, r.text,
                                (span_request(r, part, template, ctx.kind),)))
        return out


TASK = ChoiceTask()
