"""Zero-shot COPEN probing: every text part of every prompt, one run per (task, part, context).

For each loaded instance and each option (CSJ candidate, CPJ ``true``/``false``, CiC concept)
the prompt is built as a marked token sequence (:mod:`probes.benchmarks.copen.marked`) and every
part is
scored in one go (:mod:`probes.benchmarks.copen.tokenscore`). Each (task, part, context) becomes a
run in
the results file (``runs`` + ``scores`` rows, replaced when the same setting runs again), with
``config.runtime.copen = {method: zero-shot, task, part, context, tokenisation, span,
max_tokens, model_type, kind}`` (``kind``: the LM family its capabilities declare,
:func:`probes.backends.protocol.family`); the report picks per model the part of Table 8
(:func:`eval.copen_table8.table8_part`). ``span`` is ``token`` by default, the method the
authors' scripts execute (:mod:`probes.benchmarks.copen.tokenscore`); it is stored for masked and
seq2seq models (None for causal LMs, which score left to right in either mode).

>>> settings(["cic"], out_of_context=True)
[('cic', True), ('cic', False)]
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from probes.backends.protocol import capabilities, description, family
from probes.benchmarks.copen import PROBES, TASK_OF, task_name
from probes.benchmarks.copen.forms import PARTS
from probes.benchmarks.copen.marked import MAX_TOKENS, mark, pieces_for
from probes.benchmarks.copen.runs import replace_run
from probes.benchmarks.copen.tokenscore import score_marked, span_mode
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import load_instances
from probes.engine.runner.plan import run_id as make_run_id
from probes.engine.tasks import Instance
from probes.engine.tasks.choice import candidate_list

CPJ_LABELS = ("true", "false")


@dataclass
class ZeroShotReport:
    """One (task, context) pass: the runs written per part."""

    task: str
    context: bool
    instances: int
    prompts: int
    runs: dict[str, str]
    wall_s: float


def settings(tasks: Iterable[str], out_of_context: bool = False) -> list[tuple[str, bool]]:
    """(task, context) passes; ``out_of_context`` adds CiC without its sentence."""
    out = []
    for t in (task_name(x) for x in tasks):
        out.append((t, True))
        if out_of_context and t == "cic":
            out.append((t, False))
    return out


def options(task: str, inst: Instance) -> list[tuple[str, str]]:
    """(option, the class it stands for) of an instance."""
    if task_name(task) == "cpj":
        return [(c, c) for c in CPJ_LABELS]
    return [(c, c) for c in candidate_list(inst)]


def model_type(scorer: Any) -> str | None:
    config = getattr(getattr(scorer, "model", None), "config", None)
    return getattr(config, "model_type", None)


def write_part_run(con: duckdb.DuckDBPyConnection, *, model: str, revision: str | None,
                   kind: str, task: str, copen: dict[str, Any], rows: Sequence[tuple],
                   describe: dict[str, Any], wall_s: float) -> str:
    """One part's run: the ``runs`` row and its ``scores`` rows (an earlier run of the same
    setting is replaced in one transaction)."""
    probe = PROBES[task]
    rid = make_run_id(model, revision, probe, copen)
    config = {"task": TASK_OF[probe], "method": "zero-shot", "runtime": {"copen": copen},
              "backend": describe}
    replace_run(con, rid=rid, model=model, revision=revision, kind=kind,
                family=copen["kind"], probe=probe,
                config=config, describe=describe, batch_size=describe.get("batch_size"),
                wall_s=wall_s, rows=[(rid, probe, *r) for r in rows])
    return rid


def run_zero_shot(con: duckdb.DuckDBPyConnection, scorer: Any, task: str, context: bool = True,
                  *, splits: list[str] | None = None, limit: int | None = None,
                  tokenisation: str = "words", span: str = "token",
                  batch_rows: int = 32, results: str = "the results file",
                  max_tokens: int | None = MAX_TOKENS) -> ZeroShotReport:
    """Score every part of one task (with or without the CiC context) and write the runs."""
    task = task_name(task)
    span = span_mode(span)
    if not context and task != "cic":
        raise ProbeError(f"COPEN {task}: only CiC has a context to remove")
    t0 = time.perf_counter()
    instances = load_instances(con, PROBES[task], splits, limit, results)
    parts = [p for p in PARTS[task] if p != "all"]
    lm = family(capabilities(scorer))  # the paper's LM family, by what the scorer declares
    keys, prompts = [], []
    for inst in instances:
        for option, label in options(task, inst):
            pieces = pieces_for(task, inst.fields, option, context)
            m = mark(scorer.tokenizer, lm, task, pieces, tokenisation, max_tokens)
            keys.append((inst.split, inst.instance_id, option, label, m.text))
            prompts.append(m)
    scored = score_marked(scorer, prompts, parts, span=span, batch_rows=batch_rows)
    wall = time.perf_counter() - t0
    describe = description(scorer)
    runs: dict[str, str] = {}
    for part in PARTS[task]:
        rows = [(split, iid, 0, option, label, text, s[part].score, s[part].n_tokens)
                for (split, iid, option, label, text), s in zip(keys, scored, strict=True)
                if part in s]
        copen = {"method": "zero-shot", "task": task, "part": part, "context": context,
                 "tokenisation": tokenisation,
                 "span": None if lm == "causal" else span, "max_tokens": max_tokens,
                 "model_type": model_type(scorer), "kind": lm}
        runs[part] = write_part_run(con, model=scorer.name, revision=scorer.revision,
                                    kind=scorer.kind, task=task, copen=copen, rows=rows,
                                    describe=describe, wall_s=wall)
    return ZeroShotReport(task, context, len(instances), len(prompts), runs, wall)


def format_reports(reports: Sequence[ZeroShotReport]) -> str:
    lines = ["| task | context | instances | prompts | parts | s |", "|---|---|---:|---:|---|---:|"]
    lines += [f"| {r.task} | {'yes' if r.context else 'no'} | {r.instances:,} | {r.prompts:,} "
              f"| {', '.join(r.runs)} | {r.wall_s:.2f} |" for r in reports]
    return "\n".join(lines)
