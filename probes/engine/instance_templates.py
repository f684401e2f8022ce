"""Per-instance templates of a probe (header ``prompts_from`` / ``prompt_index``, see
probes.engine.spec) and the check of every template's placeholders against the instances' fields,
both applied by probes.engine.export when it shapes and checks a probe's instances."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from probes.engine.errors import ProbeFileError
from probes.engine.render import placeholders
from probes.engine.spec import Probe, ProbeSpec


def indexed_prompt_vars(spec: ProbeSpec) -> tuple[str, str] | tuple[()]:
    """``(template variable, index variable)`` of a header with ``prompts_from`` and
    ``prompt_index``, else ``()``."""
    if spec.prompts_from is None or spec.prompt_index is None:
        return ()
    return spec.prompts_from[1:], spec.prompt_index[1:]


def indexed_prompts(probe: Probe, inst: dict[str, Any], got: list[tuple[Any, Any]],
                     names: tuple[str, str]) -> None:
    """Set an instance's templates from its distinct (index, template) pairs: ordered by index,
    which must run 0, 1, ..., n-1 (two templates with the same text stay two prompts)."""
    template_var, index_var = names
    try:
        ordered = sorted(got, key=lambda p: int(p[0]))
    except (TypeError, ValueError):
        bad = next(str(i) for i, _ in got if not str(i).lstrip("-").isdigit())
        raise ProbeFileError(probe.path, probe.header_lines.get("prompt_index"),
                             f"prompt_index ?{index_var} holds {bad!r}, not an integer; bind "
                             "it to the template's position 0, 1, ...") from None
    indices = [int(i) for i, _ in ordered]
    if indices != list(range(len(indices))):
        raise ProbeFileError(probe.path, probe.header_lines.get("prompt_index"),
                             f"an instance's prompt_index values are {indices}; they must be "
                             f"0, 1, ..., n-1, one template each (instance fields: "
                             f"{_clip_fields(inst)})")
    inst[template_var] = [str(t) for _, t in ordered]
    inst[index_var] = indices


def _clip_fields(inst: dict[str, Any]) -> str:
    text = json.dumps({k: v for k, v in inst.items() if not isinstance(v, list)},
                      ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def check_templates(probe: Probe, df: pl.DataFrame) -> None:
    """Every ``[NAME]`` placeholder of the probe's prompts (the header's, or with
    ``prompts_from`` every distinct template the instances hold) must be a field of its
    instances."""
    spec = probe.spec
    if df.is_empty() or not (spec.prompts or spec.prompts_from):
        return
    fields = {k.lower() for k in json.loads(df["fields"][0])}
    templates = list(spec.prompts)
    if spec.prompts_from is not None:
        var = spec.prompts_from[1:]
        seen: dict[str, None] = {}
        for raw in df["fields"]:
            value = json.loads(raw).get(var)
            for t in value if isinstance(value, list) else [value]:
                if t is not None:
                    seen.setdefault(str(t))
        templates = list(seen)
    line = probe.header_lines.get("prompts_from" if spec.prompts_from else "prompts")
    for template in templates:
        for name in placeholders(template):
            if name not in ("W", "V", "DET") and name.lower() not in fields:
                known = ", ".join(f"[{k.upper()}]" for k in sorted(fields))
                raise ProbeFileError(probe.path, line,
                                     f"template {template!r} uses [{name}] but the query selects "
                                     f"no ?{name.lower()}; select it, or use [W], [V], [DET] or "
                                     f"a selected variable: {known}. Nothing was exported.")
