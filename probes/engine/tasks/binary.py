"""Binary judgments (true/false, yes/no): the best-scoring label word or statement wins.

Two ways to write a binary probe:

1. Label words (``params.labels``): each template in ``prompts`` has a slot ``[V]``; every
   label word fills it and is scored like a choice candidate. ``labels`` maps each class to
   one word or a list of words, e.g. ``{"true": ["true", "correct"], "false": ["false"]}``
   (default ``{"true": "true", "false": "false"}``). Rows: ``candidate`` = the word,
   ``label`` = its class.
2. Statements (``params.statements``): each class has its own templates, e.g.
   ``{"true": ["[W] can [P]."], "false": ["[W] cannot [P]."]}``; every class needs the same
   number of templates, and template j of every class makes prompt j. ``prompts`` must then be
   empty. Rows: ``candidate`` = ``label`` = the class.

The instance's gold (its ``gold`` variable) must be one of the classes (compared case-
insensitively, so an RDF boolean exported as ``True`` matches ``true``); an instance without
gold (hidden test labels) is scored all the same. Other params: ``score`` (as in choice; default
``continuation`` for label words, ``whole`` for statements), ``slot_det``, ``capitalize``,
``pmi_context`` (as in choice; not with a ``whole`` scored part). The metric
(eval/metrics/binary_accuracy.sql) averages each candidate over prompts and takes the class of
the best candidate.

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import MASKED_LM
>>> spec = ProbeSpec(name="d/b", task="binary", split="test", prompts=["[W] The answer is [V]."],
...                  params={"labels": {"true": ["yes", "true"], "false": "no"}})
>>> inst = Instance("d/b", "test", "i1", "Owls fly.", ["true"], [], {})
>>> [(it.candidate, it.label) for it in TASK.items(inst, spec, TaskContext(MASKED_LM))]
[('yes', 'true'), ('true', 'true'), ('no', 'false')]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationInfo, field_validator

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
    known_det,
    score_part,
    scored_items,
)

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec

DEFAULT_LABELS = {"true": ["true"], "false": ["false"]}


def _mapping(key: str, value: Any) -> dict[str, list[str]]:
    """A ``{class: word or [words]}`` mapping with every value a list; ValueError otherwise."""
    if not isinstance(value, dict) or len(value) < 2:
        raise ValueError(f"params {key} must map two or more classes to a word/template or a "
                         "list of them, e.g. {true: [yes], false: [no]}")
    out: dict[str, list[str]] = {}
    for cls, words in value.items():
        words = [words] if isinstance(words, str) else words
        if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
            raise ValueError(f"params {key}.{cls} must be a non-empty string or list of strings "
                             f"(got {words!r}); quote words such as 'yes', 'no', 'true', 'false', "
                             "'on', 'off': YAML reads them as booleans")
        out[str(cls)] = list(words)
    return out


class BinaryParams(TaskParams):
    """The ``params`` of a binary probe."""

    labels: dict[str, list[str]] | None = Field(None, description=(
        "class -> label word(s) filling the slot `[V]` (default `{true: true, false: false}`)"))
    statements: dict[str, list[str]] | None = Field(None, description=(
        "class -> its own templates, instead of `prompts` and `labels`"))
    score: str | None = Field(None, description=(
        "the part scored, as in choice (default `continuation` for labels, `whole` for "
        "statements)"))
    slot_det: str = Field("a", description=(
        "`a` or `an`: the article of a `[DET]` that no word follows; a `[DET]` before the slot "
        "always takes the article of the word that fills it (\"an apron\", \"a hammer\")"))
    capitalize: bool = Field(False, description="upper-case the prompt's first character")
    pmi_context: str | None = Field(None, description=(
        "also score each answer after this neutral text, for PMI calibration: `\"\"` = "
        "unconditional (lm-evaluation-harness's acc_mutual_info), e.g. `Answer:` = "
        "domain-conditional (Holtzman et al. 2021); the `*_pmi` metrics rank by the difference"))

    @field_validator("labels", "statements", mode="before")
    @classmethod
    def _classes(cls, v: Any, info: ValidationInfo) -> Any:
        return None if v is None else _mapping(str(info.field_name), v)

    _slot_det = field_validator("slot_det")(known_det)

    @field_validator("score")
    @classmethod
    def _score(cls, v: str | None) -> str | None:
        return None if v is None else score_part(v)


class BinaryTask(Task):
    name = "binary"
    description = ("label words at the slot (`labels`) or one statement per class "
                   "(`statements`); the best-scoring class wins")
    Params = BinaryParams

    def _mode(self, spec: ProbeSpec) -> tuple[str, dict[str, list[str]]]:
        p: BinaryParams = self.typed_params(spec)
        if p.statements is not None:
            if "labels" in spec.params or spec.prompts:
                raise ProbeError(f"probe {spec.name}: params statements replaces prompts and "
                                 "labels; use either statements, or prompts with [V] and labels")
            return "statements", p.statements
        labels = p.labels if p.labels is not None else DEFAULT_LABELS
        seen: dict[str, str] = {}
        for cls, words in labels.items():
            for w in words:
                if w in seen and seen[w] != cls:
                    raise ProbeError(f"probe {spec.name}: label word {w!r} is listed for both "
                                     f"{seen[w]!r} and {cls!r}")
                seen[w] = cls
        return "labels", labels

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        mode, mapping = self._mode(spec)
        p: BinaryParams = self.typed_params(spec)
        check_pmi(spec, p.pmi_context, p.score or ("whole" if mode == "statements" else
                                                   "continuation"))
        if mode == "labels":
            if not spec.prompts:
                raise ProbeError(f"probe {spec.name}: a binary probe needs 'prompts:' with a "
                                 "slot [V] for the label words (or params statements)")
            for t in spec.prompts:
                if "V" not in placeholders(t):
                    raise ProbeError(f"probe {spec.name}: template {t!r} has no slot [V] for "
                                     "the label words")
        else:
            counts = {len(v) for v in mapping.values()}
            if len(counts) != 1:
                raise ProbeError(f"probe {spec.name}: every class in params statements needs "
                                 "the same number of templates (template j of each class makes "
                                 "prompt j)")

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        mode, mapping = self._mode(spec)
        classes = {c.lower() for c in mapping}
        for g in inst.gold:
            if g.lower() not in classes:
                raise ProbeError(f"probe {spec.name}: instance {inst.instance_id} has gold "
                                 f"{g!r}, which is not a class of params {mode} "
                                 f"({', '.join(mapping)}); make the classes match the gold "
                                 "values")
        p: BinaryParams = self.typed_params(spec)
        part = p.score or ("whole" if mode == "statements" else "continuation")
        if mode == "labels":  # every label word in the slot of every template
            fillings = [Filling(pid, template, w, w, cls)
                        for pid, template in enumerate(spec.prompts)
                        for cls, words in mapping.items() for w in words]
        else:  # template j of every class makes prompt j
            n = len(next(iter(mapping.values())))
            fillings = [Filling(pid, templates[pid], None, cls, cls)
                        for pid in range(n) for cls, templates in mapping.items()]
        return scored_items(inst, fillings, part, ctx, slot_det=p.slot_det,
                            capitalize=p.capitalize, pmi_context=p.pmi_context)

    def rows(self, item: Item, results: Sequence[Any]) -> Rows:
        return calibrated_rows(item, results)


TASK = BinaryTask()
