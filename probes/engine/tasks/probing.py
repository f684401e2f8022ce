"""Probing: a linear probe per layer on the hidden states of labelled statements.

A probing probe file's instances each carry a text (a statement made from the store), a label
(its ``gold``: ``true``/``false`` or a class) and a split (train, dev, test: the query keeps
subjects apart). ``kgprobe layers`` (:mod:`probes.engine.layers`) reads every layer's states
once per text (:mod:`probes.backends.hidden`), fits a logistic regression per layer and
position with its regularisation chosen on dev, and the same probe on Hewitt and Liang's
control task (:mod:`probes.engine.probing`). There is nothing to score, so ``kgprobe run``
says where such a probe runs.

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import CAUSAL_LM
>>> spec = ProbeSpec(name="d/t", task="probing", split="?split", gold=["?label"],
...                  params={"text": "statement", "slot": "object"})
>>> TASK.typed_params(spec).control_by is None
True
>>> inst = Instance("d/t", "train", "i1", "owl", ["true"], [], {"statement": "Owls fly."})
>>> TASK.items(inst, spec, TaskContext(CAUSAL_LM))
Traceback (most recent call last):
...
probes.results.ProbeError: probe d/t: instance i1 has no ?object; select it in the query
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from probes.engine.errors import ProbeError
from probes.engine.tasks import Instance, Item, Task, TaskContext, TaskParams

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec

POSITION_NAMES = ("slot", "cls", "first", "last", "mean")


class ProbingParams(TaskParams):
    """The ``params`` of a probing probe."""

    text: str = Field("text", description="the selected variable (without ?) holding each "
                      "instance's statement")
    slot: str | None = Field(None, description="the variable holding the part of the "
                             "statement read at the `slot` position (its last occurrence)")
    control_by: str | None = Field(None, description="the variable whose value the control "
                                   "task's random label is a function of (default: slot, "
                                   "else the target)")
    positions: list[str] = Field(["last", "mean"], description="where states are read: "
                                 "slot, last, first, mean, cls")
    layers: list[int] | None = Field(None, description="layers to probe (0 = embeddings, "
                                     "-1 = last; default all)")

    @field_validator("text", "slot", "control_by")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return v.lstrip("?") if isinstance(v, str) else v

    @field_validator("positions")
    @classmethod
    def _positions(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in POSITION_NAMES]
        if bad or not v:
            raise ValueError(f"positions must be some of {', '.join(POSITION_NAMES)}, not {v}")
        return v


class ProbingTask(Task):
    name = "probing"
    description = ("nothing scored: `kgprobe layers` fits a linear probe per layer on the "
                   "statements' hidden states, beside a control task")
    Params = ProbingParams

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        params = self.typed_params(spec)
        if "slot" in params.positions and params.slot is None:
            raise ProbeError(f"probe {spec.name}: position 'slot' needs params slot (the "
                             "variable holding the statement's slot text)")

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        """No scoring items; checks that the instance has its text (and slot) at export."""
        params = self.typed_params(spec)
        self.check(spec, ctx)
        for name in (params.text, params.slot):
            if name is not None and inst.fields.get(name) in (None, []):
                raise ProbeError(f"probe {spec.name}: instance {inst.instance_id} has no "
                                 f"?{name}; select it in the query")
        return []


def not_scored(name: str) -> ProbeError:
    """What ``kgprobe run`` says of a probing probe."""
    return ProbeError(f"probe {name} has task 'probing': it fits linear probes on hidden "
                      "states rather than scoring prompts; run it with `kgprobe layers "
                      "--model M --probe NAME`")


TASK = ProbingTask()
