"""Look at a probe before scoring it: its query's first rows, its rendered prompts, and the
checks that catch template and parameter mistakes at export time, before any model loads.

- :func:`check_task` runs the probe's task module on its first instances for each model kind
  (causal, masked) without a model: a misspelled ``params`` key, a ``[NAME]`` placeholder the
  query does not select or a template the task cannot use for any kind is an error naming the
  file and line; a template only some kinds can use (``[V]`` not at the end: no causal LM can
  predict it) is a warning.
- :func:`preview_prompts` renders the prompts of the first instances as a model of one kind
  would see them (``kgprobe export --preview N``).
- :func:`format_rows` prints query rows as a markdown table (``kgprobe query FILE``).

>>> import polars as pl
>>> from probes.engine.spec import parse_probe
>>> probe = parse_probe('''# name: demo/hyp
... # task: relatum
... # split: test
... # target: ?w
... # prompts: ["[DET] [W] is a kind of [V]."]
... SELECT ?w WHERE { VALUES ?w { "owl" } }
... ''', "demo.rq")
>>> df = pl.DataFrame({"split": ["test"], "instance_id": ["1"], "target": ["owl"],
...                    "gold": [[]], "candidates": [[]], "fields": ['{"w": "owl"}']})
>>> check_task(probe, df)
[]
>>> preview_prompts(probe, df, 1, "causal")
['test 1  owl  -> An owl is a kind of']
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from probes.backends.protocol import FAMILY_CAPABILITIES, Capabilities
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.spec import Probe

PROFILES: dict[str, Capabilities] = FAMILY_CAPABILITIES
"""The capabilities of each built-in backend, by the name a user gives ``--kind``
(``probes.backends.protocol.FAMILY_CAPABILITIES``, the families' one home)."""
CHECKED = ("causal", "masked")
"""The profiles a probe is checked for at export: prompts that end at the slot, prompts that
mark it (seq2seq's prompts are masked ones, scored by continuation log-likelihood)."""


def _instances(probe: Probe, df: pl.DataFrame, n: int) -> list[Any]:
    from probes.engine.tasks import Instance

    return [Instance.from_row({**row, "probe": probe.spec.name})
            for row in df.head(n).iter_rows(named=True)]


def _items(probe: Probe, df: pl.DataFrame, n: int, kind: str) -> list[Any]:
    """The task's items for the first ``n`` instances, as a model of ``kind`` gets them."""
    from probes.engine.tasks import TaskContext, get_task

    task = get_task(probe.spec.task)
    ctx = TaskContext(PROFILES[kind])
    task.check(probe.spec, ctx)
    return [item for inst in _instances(probe, df, n) for item in task.items(inst, probe.spec, ctx)]


def _line(probe: Probe, message: str) -> int | None:
    """The header line an error is about: params for a params key, else prompts."""
    field = "params" if "params" in message else "prompts"
    return probe.header_lines.get(field) or probe.header_lines.get("task")


def check_task(probe: Probe, df: pl.DataFrame, sample: int = 3) -> list[str]:
    """Run the probe's task on its first ``sample`` instances for each of :data:`CHECKED`.

    Raises ProbeFileError (file and line) when no kind can run the probe; returns warnings
    (one per kind that cannot) otherwise. ``records`` probes and probes without instances
    pass unchecked."""
    if probe.spec.task == "records" or df.is_empty():
        return []
    failures: dict[str, str] = {}
    for kind in CHECKED:
        try:
            _items(probe, df, sample, kind)
        except ProbeError as e:
            failures[kind] = str(e)
    if len(failures) == len(CHECKED):
        message = failures["masked"]
        raise ProbeFileError(probe.path, _line(probe, message),
                             f"{message}. Nothing was exported; fix the probe header there")
    return [f"warning: {probe.path}:{_line(probe, m)}: {kind} models cannot run this probe: {m}"
            for kind, m in failures.items()]


def preview_prompts(probe: Probe, df: pl.DataFrame, n: int, kind: str = "causal") -> list[str]:
    """One line per rendered prompt of the first ``n`` instances: split, instance id, target,
    the candidate (choice/binary) and the text a ``kind`` model is given."""
    if probe.spec.task == "records":
        return [f"{r['split']} {r['instance_id']}  {_cut(r['fields'], 160)}"
                for r in df.head(n).iter_rows(named=True)]
    targets = dict(zip(df["instance_id"], df["target"], strict=True))
    lines = []
    for item in _items(probe, df, n, kind):
        shown = item.prompt
        if not shown and item.requests:
            shown = " | ".join(str(a) for a in item.requests[0].args if isinstance(a, str))
        cand = f" [{item.candidate}]" if item.candidate else ""
        forms = getattr(item, "answers", None)  # generate: the prompt quoted, the forms
        if forms:
            shown = f"{shown!r}  accepts: {' | '.join(forms)}"
        lines.append(f"{item.split} {item.instance_id}  {targets.get(item.instance_id)}{cand}"
                     f"  -> {shown}")
    return lines


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_rows(rows: list[dict[str, Any]], limit: int, width: int = 40) -> str:
    """The first ``limit`` query rows as a markdown table (cells cut to ``width`` characters).

    >>> print(format_rows([{"w": "owl", "v": ["bird", "raptor"]}, {"w": "cat", "v": None}], 1))
    | w | v |
    |---|---|
    | owl | ["bird", "raptor"] |
    """
    if not rows:
        return "(no rows)"
    cols = list(rows[0])

    def cell(v: Any) -> str:
        text = "" if v is None else v if isinstance(v, str) else json.dumps(v, default=str)
        return _cut(str(text).replace("|", "\\|").replace("\n", " "), width)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in cols) + " |" for r in rows[:limit]]
    return "\n".join(lines)
