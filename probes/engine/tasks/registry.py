"""The task registry: every probe task by name, with its task object and params model.

One table that everything in probes reads: probes.engine.spec validates a header's ``task`` and
``params`` against it, probes.engine.run finds the task's scoring code in it
(``probes.engine.tasks.get_task``), and the README's task table is :func:`markdown_table` (``python
-m probes.engine.tasks.registry`` prints it; a test keeps the README in step).

The task *names* have one definition, :data:`probes.results.TASKS`: they are values of the
results file's ``runs.task`` column, and eval (which may import only the results contract
from probes) checks a metric header's ``-- tasks:`` against them. The registry is keyed by
those names, in their order, and refuses to import when a task module's name and the names
of the contract disagree.

To add a task: add its name to ``probes.results.TASKS``, write a module under
``probes/engine/tasks/`` with a :class:`probes.engine.tasks.Task` subclass (its ``name``,
``description`` and ``Params`` model) and list its ``TASK`` here.

>>> tuple(TASK_ENTRIES) == results.TASKS
True
>>> TASK_ENTRIES["choice"].params.__name__
'ChoiceParams'
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from pydantic.fields import FieldInfo

from probes import results
from probes.engine.tasks import Task, TaskParams
from probes.engine.tasks.binary import TASK as BINARY
from probes.engine.tasks.choice import TASK as CHOICE
from probes.engine.tasks.generate import TASK as GENERATE
from probes.engine.tasks.probing import TASK as PROBING
from probes.engine.tasks.records import TASK as RECORDS
from probes.engine.tasks.relatum import TASK as RELATUM
from probes.engine.tasks.subsumption import TASK as SUBSUMPTION


@dataclass(frozen=True)
class TaskEntry:
    """One registered task: its name, scoring object, params model and one-line description."""

    name: str
    task: Task
    params: type[TaskParams]
    description: str


def _entry(task: Task) -> TaskEntry:
    return TaskEntry(task.name, task, task.Params, task.description)


def _by_contract(tasks: tuple[Task, ...], names: tuple[str, ...]) -> dict[str, TaskEntry]:
    """The registry: one entry per name of ``names`` (the contract's task names), in their
    order; an error when a task has no name there or a name has no task.

    >>> _by_contract((RECORDS,), ("records", "ranking"))
    Traceback (most recent call last):
    ...
    RuntimeError: task names of probes/engine/tasks and probes.results.TASKS differ: ...
    """
    by_name = {t.name: t for t in tasks}
    if sorted(by_name) != sorted(names) or len(by_name) != len(tasks):
        raise RuntimeError("task names of probes/engine/tasks and probes.results.TASKS differ: "
                           f"{sorted(t.name for t in tasks)} vs {sorted(names)}; add the "
                           "task's name to probes.results.TASKS and its TASK to the registry")
    return {name: _entry(by_name[name]) for name in names}


TASK_ENTRIES: dict[str, TaskEntry] = _by_contract(
    (RELATUM, CHOICE, BINARY, SUBSUMPTION, RECORDS, GENERATE, PROBING), results.TASKS)
"""Task name -> its entry, in the order of probes.results.TASKS (error messages and docs). The
names themselves are ``probes.results.TASKS``, and only there."""


def _type_name(annotation: Any) -> str:
    """A short readable name of a params field's type: ``str``, ``bool``, ``int``, ``mapping``.

    >>> _type_name(dict[str, list[str]] | None)
    'mapping'
    >>> from pydantic import StrictInt
    >>> _type_name(StrictInt | None)
    'int'
    """
    if typing.get_origin(annotation) is typing.Annotated:  # StrictInt and the like
        return _type_name(typing.get_args(annotation)[0])
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args and typing.get_origin(annotation) is not dict:
        return " or ".join(dict.fromkeys(_type_name(a) for a in args))
    origin = typing.get_origin(annotation) or annotation
    if origin is dict:
        return "mapping"
    return getattr(origin, "__name__", str(origin))


def _param_doc(name: str, info: FieldInfo) -> str:
    default = "" if info.default is None else f", default `{info.default}`"
    return f"`{name}` ({_type_name(info.annotation)}{default}): {info.description or ''}".rstrip()


def markdown_table() -> str:
    """The README's task table: each task, what it scores and its params with types,
    defaults and meaning (all read from the registry)."""
    lines = ["| task | what is scored | params |", "|---|---|---|"]
    for entry in TASK_ENTRIES.values():
        params = "; ".join(_param_doc(n, f) for n, f in entry.params.model_fields.items())
        lines.append(f"| `{entry.name}` | {entry.description} | {params} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
