"""Multiple choice: each candidate fills the slot ``[V]`` and is scored by (pseudo-)likelihood.

Spec:

- ``prompts``: templates with a slot ``[V]`` (at least one), or ``prompts_from: ?var``: each
  instance's own templates, from the store (probes.engine.spec; BEAR's per-relation templates).
- ``candidates``: the variable holding the answer candidates; the gold answers are always
  scored too (candidates = gold answers, then the other candidates, without repeats).
- ``params``:
  ``score`` (which part of the filled template is scored: ``continuation`` = from the slot to
  the end (default), ``slot`` = the candidate only, ``whole`` = the whole text,
  ``conditional`` = lm-pub-quiz's conditional score (continuation for causal and seq2seq LMs,
  slot for masked LMs), or a placeholder such as ``[W]``); ``slot_det`` (``a`` or ``an``: a
  ``[DET]`` before the slot takes the candidate's own article, "an apron"; ``slot_det`` is
  only the article of a ``[DET]`` that no word follows) and ``capitalize`` (see
  probes.engine.render); ``pmi_context`` (PMI calibration: each candidate's scored text is also
  scored after this neutral text, ``""`` = unconditionally).

Each (prompt, candidate) gives one ``scores`` row: the summed log-probability (causal,
seq2seq) or pseudo-log-likelihood (masked) of the scored part, its tokens and characters
(``n_chars``, for acc_norm) and, with ``pmi_context``, the log-probability of the same text
after the neutral context (``baseline``); ``label`` is the candidate.
Which candidate wins is decided by the metrics (eval/metrics/choice_*.sql).

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import CAUSAL_LM
>>> spec = ProbeSpec(name="d/c", task="choice", split="test", prompts=["[W] is [DET] [V]."])
>>> inst = Instance("d/c", "test", "i1", "owl", ["bird"], ["fish", "bird"], {})
>>> [(it.candidate, it.requests[0].args) for it in TASK.items(inst, spec, TaskContext(CAUSAL_LM))]
[('bird', ('owl is a', ' bird.')), ('fish', ('owl is a', ' fish.'))]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from probes.engine.errors import ProbeError
from probes.engine.render import placeholders
from probes.engine.tasks import (
    Filling,
    Instance,
    Item,
    Rows,
    Task,
    TaskContext,
    TaskParams,
    calibrated_rows,
    check_pmi,
    instance_prompts,
    known_det,
    score_part,
    scored_items,
)

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec


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
        "`whole`, `conditional` (lm-pub-quiz's conditional score: `continuation` for causal and "
        "seq2seq LMs, `slot` for masked LMs) or a placeholder such as `[W]`"))
    slot_det: str = Field("a", description=(
        "`a` or `an`: the article of a `[DET]` that no word follows; a `[DET]` before the slot "
        "always takes the article of the word that fills it (\"an apron\", \"a hammer\")"))
    capitalize: bool = Field(False, description="upper-case the prompt's first character")
    pmi_context: str | None = Field(None, description=(
        "also score each answer after this neutral text, for PMI calibration: `\"\"` = "
        "unconditional (lm-evaluation-harness's acc_mutual_info), e.g. `Answer:` = "
        "domain-conditional (Holtzman et al. 2021); the `*_pmi` metrics rank by the difference"))

    _score = field_validator("score")(score_part)
    _slot_det = field_validator("slot_det")(known_det)


class ChoiceTask(Task):
    name = "choice"
    description = ("each candidate fills the slot `[V]` and is scored by log-likelihood (causal, "
                   "seq2seq) or pseudo-log-likelihood (masked)")
    Params = ChoiceParams

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        p: ChoiceParams = self.typed_params(spec)
        check_pmi(spec, p.pmi_context, p.score)
        if spec.prompts_from is not None:
            return  # the templates come with the instances: checked in items()
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
        templates = instance_prompts(spec, inst)
        if spec.prompts_from is not None:
            for t in templates:
                if "V" not in placeholders(t):
                    raise ProbeError(f"probe {spec.name}: instance {inst.instance_id}'s "
                                     f"template {t!r} (from {spec.prompts_from}) has no slot [V] "
                                     "for the candidates")
        fillings = (Filling(pid, template, cand, cand, cand)
                    for pid, template in enumerate(templates) for cand in cands)
        return scored_items(inst, fillings, p.score, ctx, slot_det=p.slot_det,
                            capitalize=p.capitalize, pmi_context=p.pmi_context)

    def rows(self, item: Item, results: Sequence[Any]) -> Rows:
        return calibrated_rows(item, results)


TASK = ChoiceTask()
