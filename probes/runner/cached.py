"""Runs that need no model: a recorded stand-in scorer and the check that all is cached."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from probes import cache
from probes.errors import ProbeError
from probes.runner.plan import Plan, RunOptions, load_instances, plan
from probes.spec import Probe
from probes.tasks import TaskContext, get_task


@dataclass
class RecordedScorer:
    """A stand-in for a model whose every request is already in the cache: its name, revision,
    kind, dtype, device, slot token and cache options as a finished run recorded them. A re-run
    with nothing new then does no model work at all, not even loading the weights; on the first
    cache miss the real model is loaded instead (see :func:`fully_cached`)."""

    name: str
    revision: str
    kind: str
    dtype: str
    device: str
    mask_token: str | None
    options: dict[str, Any]
    described: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None

    def cache_key_options(self) -> dict[str, Any]:
        return dict(self.options)

    def describe(self) -> dict[str, Any]:
        return {**self.described, "loaded": False}


def recorded_scorer(con: duckdb.DuckDBPyConnection, model: str, device: str | None,
                    dtype: str | None) -> RecordedScorer | None:
    """The stand-in for ``model`` from its latest finished run with the same revision, device
    and dtype, or None (no such run, a hub model whose revision is only known once loaded)."""
    try:
        from probes.backends.base import dtype_name, resolve_device, resolve_dtype
        from probes.models import resolve

        revision = resolve(model).revision
        want_device = resolve_device(device)
        want_dtype = dtype_name(resolve_dtype(dtype, want_device))
    except Exception:  # any doubt: load the model the normal way
        return None
    if revision is None:
        return None
    row = con.execute("""SELECT backend, config FROM runs WHERE model = ? AND revision = ?
                         AND device = ? AND dtype = ? AND status = 'done'
                         AND json_exists(config, '$.slot_token')
                         ORDER BY finished_at DESC LIMIT 1""",
                      [model, revision, str(want_device), want_dtype]).fetchall()
    if not row:
        return None
    config = json.loads(row[0][1])
    return RecordedScorer(model, revision, row[0][0], want_dtype, str(want_device),
                          config.get("slot_token"), config.get("scorer") or {},
                          config.get("backend") or {})


def fully_cached(con: duckdb.DuckDBPyConnection, scorer: Any, probes: Sequence[Probe],
                 opts: RunOptions, results: str) -> dict[str, Plan] | None:
    """The probes' plans when every request of every probe is in the cache under ``scorer``'s
    identity (and the vocabularies of topk requests are recorded), so no model is needed;
    else None."""
    ctx = TaskContext(kind=scorer.kind, slot_token=scorer.mask_token, top_k=opts.top_k)
    plans: dict[str, Plan] = {}
    for probe in probes:
        task = get_task(probe.spec.task)
        try:
            task.check(probe.spec, ctx)
            work = plan(task, probe, ctx, load_instances(con, probe.spec.name, opts.splits,
                                                         opts.limit, results, opts.sample),
                        scorer)
        except ProbeError:
            return None
        if len(cache.present(con, list(work.requests))) < len(work.requests):
            return None
        for name in {dict(r.options).get("vocab", "words") for r in work.requests.values()
                     if r.op == "topk"}:
            if not con.execute("SELECT count(*) FROM model_vocab WHERE model = ? AND vocab = ?",
                               [scorer.name, name]).fetchall()[0][0]:
                return None
        plans[probe.spec.name] = work
    return plans
