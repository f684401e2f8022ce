"""Scoring one probe: plan, cache look-up, chunked scoring and commits, the run's report."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
from tqdm import tqdm

from probes import cache
from probes.backends.protocol import require
from probes.errors import ProbeError
from probes.models import PromptTooLongError
from probes.runner.plan import (
    DEFAULT_CHUNK,
    Plan,
    RunOptions,
    chunks,
    load_instances,
    plan,
    run_identity,
    slot_token,
)
from probes.runner.runrecord import (
    begin_run,
    drop_stale,
    now_utc,
    record_vocab,
    unchanged_and_cached,
)
from probes.runner.scoring import Resolver, culprit, scored_with_progress
from probes.spec import Probe
from probes.tasks import TaskContext, get_task


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
    """Score one probe with ``scorer`` and write its run into ``con``; returns what it did
    (``work``: the probe's plan when the caller made it already)."""
    opts = options or RunOptions()
    t0 = time.perf_counter()
    spec = probe.spec
    task = get_task(spec.task)
    ctx = TaskContext(kind=scorer.kind, slot_token=slot_token(scorer), top_k=opts.top_k)
    try:
        task.check(spec, ctx)
    except ProbeError as e:
        raise ProbeError(f"{probe.path}: {e}") from e
    if work is None:
        work = plan(task, probe, ctx, load_instances(con, spec.name, opts.splits, opts.limit,
                                                     results, opts.sample), scorer)
    # fail before any work when the model lacks a head
    require(scorer, sorted({r.op for r in work.requests.values()}))
    if opts.use_cache:
        rid = run_identity(scorer, probe, work, opts)[0]
        if unchanged_and_cached(con, rid, spec.name, work):
            # wall_s stays the scoring time of the invocation that scored (reports use it for
            # throughput); this invocation did no model work.
            con.execute("UPDATE runs SET started_at = ?, finished_at = ?, "
                        "cache_hits = ? WHERE run_id = ?",
                        [now_utc(), now_utc(), len(work.requests), rid])
            return RunReport(rid, spec.name, len(work.instances), len(work.items),
                             len(work.requests), len(work.requests), 0,
                             time.perf_counter() - t0)
    prior_wall = con.execute("SELECT wall_s FROM runs WHERE run_id = ? AND status = 'done'",
                             [run_identity(scorer, probe, work, opts)[0]]).fetchone()
    rid, base_wall, existed = begin_run(con, scorer, probe, work, opts)
    record_vocab(con, scorer, work.requests.values())

    def wall() -> float:
        return base_wall + time.perf_counter() - t0

    def progress_update() -> tuple[str, list[Any]]:
        return "UPDATE runs SET wall_s = ? WHERE run_id = ?", [wall(), rid]

    try:
        if existed:
            drop_stale(con, rid, work.items)
        resolver = Resolver(task, work)
        hits = cache.lookup(con, list(work.requests)) if opts.use_cache else {}
        rows = resolver.add(hits)
        cache.commit(con, run_id=rid, probe=spec.name, scores=rows.scores,
                     responses=rows.responses, run_update=progress_update())
        misses = [k for k in work.requests if k not in hits]
        bar = tqdm(total=len(misses), unit="prompt", desc=spec.name, disable=not opts.progress,
                   dynamic_ncols=True, smoothing=0.1)
        try:
            size = opts.chunk_size or DEFAULT_CHUNK[
                "cpu" if str(getattr(scorer, "device", "cpu")).startswith("cpu") else "gpu"]
            for chunk in chunks(misses, work.owner, max(1, size)):
                try:
                    scored = scored_with_progress(scorer, [work.requests[k] for k in chunk],
                                                   bar)
                except PromptTooLongError as e:
                    raise ProbeError(f"probe {spec.name!r} ({probe.path}), "
                                     f"{culprit(e, chunk, work)}: {e}") from e
                rows = resolver.add(dict(zip(chunk, scored, strict=True)))
                cache.commit(con, run_id=rid, probe=spec.name,
                             cache_rows=[(k, scorer.name, work.requests[k].op, r)
                                         for k, r in zip(chunk, scored, strict=True)],
                             scores=rows.scores, responses=rows.responses,
                             run_update=progress_update(), replace=not opts.use_cache)
        finally:
            bar.close()
        # Nothing scored (every request cached): keep the scoring time of the run that scored.
        final_wall = (float(prior_wall[0]) if not misses and prior_wall and prior_wall[0]
                      else wall())
        con.execute("""UPDATE runs SET status = 'done', finished_at = ?, wall_s = ?,
                       cache_hits = ? WHERE run_id = ?""", [now_utc(), final_wall, len(hits), rid])
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("UPDATE runs SET status = 'failed', finished_at = ?, wall_s = ? "
                        "WHERE run_id = ?", [now_utc(), wall(), rid])
        raise
    return RunReport(rid, spec.name, len(work.instances), len(work.items), len(work.requests),
                     len(hits), len(misses), time.perf_counter() - t0)


def format_reports(reports: Sequence[RunReport]) -> str:
    """A markdown table of what each probe's run did."""
    lines = ["| probe | run | instances | requests | cached | scored | seconds | prompts/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.probe} | {r.run_id} | {r.instances:,} | {r.requests:,} | "
              f"{r.cache_hits:,} | {r.scored:,} | {r.wall_s:.2f} | {r.rate:.1f} |"
              for r in reports]
    return "\n".join(lines)
