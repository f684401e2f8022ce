"""The task registry: every probe task by name, with its task object and params model.

One table that everything reads: probes.spec validates a header's ``task`` and ``params``
against it, probes.run finds the task's scoring code in it (``probes.tasks.get_task``), the
metric headers' ``-- tasks:`` are checked against :data:`TASK_NAMES`, and the README's task
table is :func:`markdown_table` (``python -m probes.tasks.registry`` prints it; a test keeps the
README in step).

To add a task: write a module under ``probes/tasks/`` with a :class:`probes.tasks.Task`
subclass (its ``name``, ``description`` and ``Params`` model) and list its ``TASK`` here.

>>> TASK_NAMES
('relatum', 'choice', 'binary', 'subsumption', 'records')
>>> TASKS["choice"].params.__name__
'ChoiceParams'
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from pydantic.fields import FieldInfo

from probes.tasks import Task, TaskParams
from probes.tasks.binary import TASK as BINARY
from probes.tasks.choice import TASK as CHOICE
from probes.tasks.records import TASK as RECORDS
from probes.tasks.relatum import TASK as RELATUM
from probes.tasks.subsumption import TASK as SUBSUMPTION


@dataclass(frozen=True)
class TaskEntry:
    """One registered task: its name, scoring object, params model and one-line description."""

    name: str
    task: Task
    params: type[TaskParams]
    description: str


def _entry(task: Task) -> TaskEntry:
    return TaskEntry(task.name, task, task.Params, task.description)


TASKS: dict[str, TaskEntry] = {
    t.name: _entry(t) for t in (RELATUM, CHOICE, BINARY, SUBSUMPTION, RECORDS)}
"""Task name -> entry, in the order error messages and the docs list them."""

TASK_NAMES: tuple[str, ...] = tuple(TASKS)
"""The task names, a plain tuple for readers that need nothing else (metric headers)."""


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
    for entry in TASKS.values():
        params = "; ".join(_param_doc(n, f) for n, f in entry.params.model_fields.items())
        lines.append(f"| `{entry.name}` | {entry.description} | {params} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
