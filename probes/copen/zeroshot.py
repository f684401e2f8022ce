"""Zero-shot COPEN probing through the engine of ``probes.run``.

The loaded instances (:mod:`probes.copen.released`) are scored by the existing choice (CSJ,
CiC) and binary (CPJ) task modules with a ProbeSpec built by :func:`probes.copen.forms.probe_spec`,
so COPEN gets the engine's batching, prefix reuse, score cache, resumable chunked commits and run
records for free, and its ``scores`` rows are the same shape as every other probe's. Each
(task, part, context) setting is its own run (the run id covers the template and the scored
part); ``config.runtime.copen`` records the setting for the COPEN metrics and report.

>>> p = zero_shot_probe("cic", "concept", "masked", context=False)
>>> p.spec.name, p.spec.prompts, str(p.path)
('copen/cic', ['[ENTITY] is [DET] [V].'], 'copen:cic:concept:no-context')
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from probes.copen import task_name
from probes.copen.forms import PARTS, check_form, probe_spec
from probes.errors import ProbeError
from probes.run import RunOptions, RunReport, run_probe
from probes.spec import Probe


def zero_shot_probe(task: str, part: str, kind: str, context: bool = True) -> Probe:
    """An in-memory Probe (no file) for one zero-shot setting; its path names the setting."""
    spec = probe_spec(task, part, kind, context)
    where = f"copen:{task_name(task)}:{part}" + ("" if context else ":no-context")
    return Probe(path=Path(where), spec=spec, query="", variables=[], header_lines={})


def settings(tasks: Iterable[str], parts: Iterable[str] | None, kind: str,
             out_of_context: bool = False) -> list[tuple[str, str, bool]]:
    """(task, part, context) for every requested part the model kind can score.

    ``parts=None`` means every part; a part named for one task is skipped for the others, and
    parts a kind cannot score are skipped silently when ``parts`` is None (an explicit request
    is an error). ``out_of_context`` adds CiC without its sentence.

    >>> settings(["csj"], None, "causal")
    [('csj', 'candidate', True), ('csj', 'whole', True)]
    >>> settings(["cic"], ["concept"], "masked", out_of_context=True)
    [('cic', 'concept', True), ('cic', 'concept', False)]
    """
    out = []
    for task in (task_name(t) for t in tasks):
        wanted = list(PARTS[task]) if parts is None else [p for p in parts if p in PARTS[task]]
        for part in wanted:
            for context in ((True, False) if out_of_context and task == "cic" else (True,)):
                try:
                    check_form(task, part, kind, context)
                except ProbeError:
                    if parts is not None:
                        raise
                    continue
                out.append((task, part, context))
    if parts is not None and not out:
        known = "; ".join(f"{t} {'|'.join(p)}" for t, p in PARTS.items())
        raise ProbeError(f"none of the parts {', '.join(parts)} belongs to the tasks asked for; "
                         f"the parts are: {known}")
    return out


def run_zero_shot(con: duckdb.DuckDBPyConnection, scorer: Any, task: str, part: str,
                  context: bool = True, options: RunOptions | None = None,
                  results: str = "the results file") -> RunReport:
    """Score one zero-shot setting with ``scorer`` (instances must be loaded)."""
    form = check_form(task, part, scorer.kind, context)
    probe = zero_shot_probe(task, part, scorer.kind, context)
    opts = options or RunOptions()
    runtime = {**opts.runtime, "copen": form.describe()}
    opts = RunOptions(top_k=opts.top_k, splits=opts.splits, limit=opts.limit,
                      chunk_size=opts.chunk_size, use_cache=opts.use_cache,
                      progress=opts.progress, runtime=runtime)
    return run_probe(con, scorer, probe, opts, results)
