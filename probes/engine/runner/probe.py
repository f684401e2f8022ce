"""Scoring one probe: plan, cache look-up, chunked scoring and commits, the run's report."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
from tqdm import tqdm

from probes.engine import cache
from probes.engine.errors import ProbeError
from probes.engine.models import PromptTooLongError
from probes.engine.progress import Heartbeat, Quiet
from probes.engine.runner.caching import CachingScorer, caching
from probes.engine.runner.plan import (
    DEFAULT_CHUNK,
    ORDER_WINDOW_CHUNKS,
    Plan,
    RunOptions,
    chunks,
    load_instances,
    plan,
    run_identity,
    sharing_order,
    task_context,
)
from probes.engine.runner.runrecord import (
    begin_run,
    drop_stale,
    now_utc,
    record_vocab,
    rows_current,
)
from probes.engine.runner.scoring import Resolver, culprit
from probes.engine.spec import Probe
from probes.engine.tasks import get_task
from probes.results.writers import finish_run


@dataclass
class RunReport:
    """What one probe's run did."""

    run_id: str
    probe: str
    instances: int
    items: int
    requests: int
    cache_hits: int
    scored: int
    wall_s: float

    @property
    def rate(self) -> float:
        return self.scored / self.wall_s if self.wall_s > 0 else 0.0


def run_probe(con: duckdb.DuckDBPyConnection, scorer: Any, probe: Probe,
              options: RunOptions | None = None, results: str = "the results file",
              work: Plan | None = None) -> RunReport:
    """Score one probe with ``scorer`` (a model, or a :class:`CachingScorer` around one) and
    write its run into ``con``; returns what it did (``work``: the probe's plan when the caller
    made it already). The ``runs`` row's ``started_at``, ``finished_at`` and ``wall_s`` describe
    this invocation (docs/results.md)."""
    opts = options or RunOptions()
    t0, started = time.perf_counter(), now_utc()
    spec = probe.spec
    task = get_task(spec.task)
    model = caching(con, scorer, opts.use_cache)
    ctx = task_context(model, opts.top_k)
    try:
        task.check(spec, ctx)
    except ProbeError as e:
        raise ProbeError(f"{probe.path}: {e}") from e
    if work is None:
        work = plan(task, probe, ctx, load_instances(con, spec.name, opts.splits, opts.limit,
                                                     results, opts.sample), model)
    # fail before any work when the model lacks a head
    model.require(*sorted({r.op for r in work.requests.values()}))
    hits = model.cached(list(work.requests))
    # a finished run, newer than the export, every request cached: its rows are as they would
    # be written again, so this invocation only records itself in the runs row
    current = len(hits) == len(work.requests) and rows_current(
        con, run_identity(model, probe, work, opts)[0], spec.name)
    rid, existed = begin_run(con, model, probe, work, opts, started)

    def wall() -> float:
        return time.perf_counter() - t0

    misses = [k for k in work.requests if k not in hits]
    try:
        record_vocab(con, model, work.requests.values())
        if not current:
            if existed:
                drop_stale(con, rid, work.items)
            resolver = Resolver(task, work)
            rows = resolver.add(hits)
            cache.commit(con, run_id=rid, probe=spec.name, scores=rows.scores,
                         responses=rows.responses, generations=rows.generations, wall_s=wall())
            _score_misses(con, model, probe, work, resolver, misses, rid, opts, wall)
        finish_run(con, rid, status="done", started_at=started, wall_s=wall(),
                   cache_hits=len(hits))
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            finish_run(con, rid, status="failed", started_at=started, wall_s=wall())
        raise
    return RunReport(rid, spec.name, len(work.instances), len(work.items), len(work.requests),
                     len(hits), len(misses), time.perf_counter() - t0)


def _score_misses(con: duckdb.DuckDBPyConnection, model: CachingScorer, probe: Probe,
                  work: Plan, resolver: Resolver, misses: list[str], rid: str,
                  opts: RunOptions, wall: Callable[[], float]) -> None:
    """Forward the requests the cache lacks to the model, in chunks; each chunk's cache
    entries, completed rows and the run's time so far land in one transaction."""
    spec = probe.spec
    bar = tqdm(total=len(misses), unit="prompt", desc=spec.name, disable=not opts.progress,
               dynamic_ncols=True, smoothing=0.1)
    # without the bar (--quiet), a line now and then: a long run is never silent (issue 46: the
    # main job's profile scored for 17 minutes under load with no output)
    beat = (Quiet() if opts.progress
            else Heartbeat("run", spec.name, after=QUIET_AFTER_S, every=QUIET_EVERY_S))
    ticks = _Ticks(bar, beat)
    try:
        with beat:
            beat.step("scoring", total=len(misses), unit="prompts")
            _score_chunks(con, model, probe, work, resolver, misses, rid, opts, wall, ticks)
            beat.result = f"{ticks.done:,} prompts scored"
    finally:
        bar.close()


def _score_chunks(con: duckdb.DuckDBPyConnection, model: CachingScorer, probe: Probe,
                  work: Plan, resolver: Resolver, misses: list[str], rid: str,
                  opts: RunOptions, wall: Callable[[], float], ticks: _Ticks) -> None:
    spec = probe.spec
    size = opts.chunk_size or DEFAULT_CHUNK[
        "cpu" if str(getattr(model.identity, "device", "cpu")).startswith("cpu") else "gpu"]
    ordered = sharing_order(misses, work.requests, work.owner,
                            ORDER_WINDOW_CHUNKS * max(1, size))
    for chunk in chunks(ordered, work.owner, max(1, size)):
        try:
            scored = model.score([work.requests[k] for k in chunk], ticks)  # type: ignore[arg-type]
        except PromptTooLongError as e:
            raise ProbeError(f"probe {spec.name!r} ({probe.path}), "
                             f"{culprit(e, chunk, work)}: {e}") from e
        rows = resolver.add(dict(zip(chunk, scored, strict=True)))
        cache.commit(con, run_id=rid, probe=spec.name,
                     cache_rows=[(k, model.name, work.requests[k].op, r)
                                 for k, r in zip(chunk, scored, strict=True)],
                     scores=rows.scores, responses=rows.responses,
                     generations=rows.generations, wall_s=wall(),
                     replace=not opts.use_cache)


#: Under --quiet: the first progress line after this many seconds, then one every QUIET_EVERY_S.
QUIET_AFTER_S = 30.0
QUIET_EVERY_S = 60.0


class _Ticks:
    """The bar the scorer moves (``update``), also counted for the heartbeat's lines."""

    def __init__(self, bar: tqdm, beat: Heartbeat) -> None:
        self.bar, self.beat, self.done = bar, beat, 0

    def update(self, n: int = 1) -> None:
        self.done += n
        self.beat.tick(self.done)
        self.bar.update(n)


def format_reports(reports: Sequence[RunReport]) -> str:
    """A markdown table of what each probe's run did."""
    lines = ["| probe | run | instances | requests | cached | scored | seconds | prompts/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.probe} | {r.run_id} | {r.instances:,} | {r.requests:,} | "
              f"{r.cache_hits:,} | {r.scored:,} | {r.wall_s:.2f} | {r.rate:.1f} |"
              for r in reports]
    return "\n".join(lines)
