"""Records: probe files that export data (pairs, taxonomies, norms) rather than prompts.

They are inputs for other probes and for metrics, so there is nothing to score.

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import CAUSAL_LM
>>> TASK.check(ProbeSpec(name="d/r", task="records", split="test"), TaskContext(CAUSAL_LM))
Traceback (most recent call last):
...
probes.results.ProbeError: probe d/r has task 'records': its instances are data for other ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probes.engine.errors import ProbeError
from probes.engine.tasks import Instance, Item, Task, TaskContext

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec


class RecordsTask(Task):
    name = "records"
    description = "nothing: the instances are data for other probes and metrics (export only)"

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        raise ProbeError(f"probe {spec.name} has task 'records': its instances are data for "
                         "other probes and metrics, not prompts, so there is nothing to score; "
                         "leave it out of --probe")

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        self.check(spec, ctx)
        return []


TASK = RecordsTask()
