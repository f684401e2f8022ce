"""Score probe instances with a model: ``python -m probes.run --model NAME --probe PATTERN``.

For each chosen probe: read its instances from the results file (written by
``python -m probes.export``), turn them into scoring requests with the probe's task module
(probes.tasks), answer the requests from the score cache or the model, and write the ``runs``,
``scores`` and ``responses`` rows. Scores are committed chunk by chunk (probes.cache), so a run
that is killed resumes where it stopped when started again; a re-run with nothing new does no
model work.

The run id is derived from (model, revision, probe, configuration), so running the same thing
again continues (or re-uses) the same ``runs`` row.

>>> a = run_id("gpt2", "abc", "demo/x", {"prompts": ["[W] is [V]"]})
>>> a == run_id("gpt2", "abc", "demo/x", {"prompts": ["[W] is [V]"]}), len(a)
(True, 16)
>>> a == run_id("gpt2", "abc", "demo/x", {"prompts": ["[W] is a [V]"]})
False
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from tqdm import tqdm

from kg import config
from kg.errors import KgError
from probes import cache, chat, model_args, outputs, scale_cli
from probes.backends.protocol import description, progress_to, require
from probes.errors import ProbeError
from probes.models import PromptTooLongError
from probes.results import connect, diagnose, transaction
from probes.results.upgrade import subsumption_prompts
from probes.results.writers import PromptRow, Run, start_run, write_prompts
from probes.spec import Probe, discover
from probes.tasks import Instance, Item, Request, Rows, Task, TaskContext, get_task

DEFAULT_CHUNK = {"cpu": 256, "gpu": 2048}


@dataclass
class RunOptions:
    """Options of one run that are not the model's own (see ``--help``)."""

    top_k: int = 10
    splits: list[str] | None = None
    limit: int | None = None
    sample: int | None = None  # a seeded sample stratified by gold class (--sample)
    chunk_size: int | None = None  # None: DEFAULT_CHUNK by the scorer's device
    use_cache: bool = True
    progress: bool = True
    runtime: dict[str, Any] = field(default_factory=dict)  # stored in config, not in the run id


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


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def run_id(model: str, revision: str | None, probe: str, config: dict[str, Any]) -> str:
    """A stable 16-hex-digit id for (model, revision, probe, configuration)."""
    raw = json.dumps([model, revision, probe, config], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def slot_token(scorer: Any) -> str | None:
    """The slot marker of ``topk`` prompts for masked and seq2seq backends: ``scorer.mask_token``
    if the scorer names one, else ``probes.backends.base.MASK`` (``[MASK]``); None for causal
    LMs, whose prompts end at the slot."""
    if scorer.kind == "causal":
        return None
    tok = getattr(scorer, "mask_token", None)
    if tok is None:
        from probes.backends.base import MASK

        tok = MASK
    return tok


def load_instances(con: duckdb.DuckDBPyConnection, probe: str, splits: list[str] | None,
                   limit: int | None, results: str, sample: int | None = None
                   ) -> list[Instance]:
    """The probe's instances, ordered by split and instance id; the first ``limit`` per split,
    or a seeded sample of ``sample`` per split stratified by gold class: ``sample // c`` of
    each of the probe's ``c`` gold classes, the first by MD5(instance id + "42")."""
    sql = "SELECT * FROM instances WHERE probe = ?"
    params: list[Any] = [probe]
    if splits:
        sql += f" AND split IN ({', '.join('?' for _ in splits)})"
        params += splits
    if limit is not None:
        sql += " QUALIFY row_number() OVER (PARTITION BY split ORDER BY instance_id) <= ?"
        params.append(limit)
    elif sample is not None:
        classes = con.execute("SELECT count(DISTINCT gold[1]) FROM instances WHERE probe = ?",
                              [probe]).fetchone()
        sql += (" QUALIFY row_number() OVER (PARTITION BY split, gold[1] ORDER BY "
                "md5(instance_id || '42'), instance_id) <= ?")
        params.append(max(1, sample // max(1, classes[0] if classes else 1)))
    sql += " ORDER BY split, instance_id"
    cur = con.execute(sql, params)
    cols = [d[0] for d in cur.description]
    rows = [Instance.from_row(dict(zip(cols, r, strict=True))) for r in cur.fetchall()]
    if not rows:
        where = f" in split(s) {', '.join(splits)}" if splits else ""
        raise ProbeError(f"no instances of probe {probe!r}{where} in {results}: it was not "
                         f"exported or its query returned no rows; run `python -m probes.export "
                         f"-p {probe}` first (and check that its sources are built)")
    return rows


def _vocab(scorer: Any, name: str) -> Any:
    """The whole-word vocabulary a topk request names: ``words`` (the backend's default,
    None) or ``lowercase`` (lower-case whole words only)."""
    if name == "words":
        return None
    if name == "lowercase":
        return scorer.word_vocab(lowercase=True)
    raise ProbeError(f"unknown vocab {name!r}: use words or lowercase")


def _score(scorer: Any, reqs: Sequence[Request]) -> list[Any]:
    """Score requests of one chunk with as few backend calls as possible (one per op/options)."""
    out: list[Any] = [None] * len(reqs)
    groups: dict[tuple[str, tuple], list[int]] = {}
    for i, r in enumerate(reqs):
        groups.setdefault((r.op, r.options), []).append(i)
    for (op, options), idx in groups.items():
        if op == "loglik":
            res = scorer.loglik([reqs[i].args for i in idx])
        elif op == "pll":
            res = scorer.pll([reqs[i].args for i in idx])
        elif op == "topk":
            opts = dict(options)
            vocab = _vocab(scorer, opts.get("vocab", "words"))
            mix = opts.get("mix")
            if mix:  # each request holds one prompt per weight; one mixed list per request
                prompts = [p for i in idx for p in reqs[i].args]
                res = scorer.topk(prompts, opts["k"], vocab, mix=list(mix))
            else:
                prompts = [reqs[i].args[0] for i in idx]
                res = (scorer.topk(prompts, opts["k"], vocab) if vocab is not None
                       else scorer.topk(prompts, opts["k"]))
        else:
            raise ProbeError(f"unknown scoring operation {op!r} (a task module bug)")
        res = list(res)
        if len(res) != len(idx):
            raise ProbeError(f"backend {scorer.name} returned {len(res)} results for "
                             f"{len(idx)} {op} requests")
        for i, r in zip(idx, res, strict=True):
            out[i] = r
    return out


def chunks(keys: Sequence[str], owner: dict[str, int], size: int) -> list[list[str]]:
    """Cut ``keys`` into chunks of about ``size``, ending a chunk only where the owning instance
    changes (so a backend sees all candidates of an instance together and can share their
    context), unless one instance alone exceeds four chunks.

    >>> chunks(list("abcdef"), {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1, "f": 2}, 2)
    [['a', 'b'], ['c', 'd', 'e'], ['f']]
    """
    out: list[list[str]] = []
    cur: list[str] = []
    last = None
    for k in keys:
        inst = owner.get(k)
        if cur and ((len(cur) >= size and inst != last) or len(cur) >= 4 * size):
            out.append(cur)
            cur = []
        cur.append(k)
        last = inst
    if cur:
        out.append(cur)
    return out


def _item_table(items: Sequence[Item]) -> pa.Table:
    return pa.table({
        "split": pa.array([it.split for it in items], pa.string()),
        "instance_id": pa.array([it.instance_id for it in items], pa.string()),
        "prompt_id": pa.array([it.prompt_id for it in items], pa.int32()),
        "candidate": pa.array([it.candidate for it in items], pa.string()),
    })


def _drop_stale(con: duckdb.DuckDBPyConnection, rid: str, items: Sequence[Item]) -> None:
    """Delete this run's rows for items that no longer exist (the probe was re-exported)."""
    con.register("kgp_items", _item_table(items))
    try:
        with transaction(con):
            con.execute("""DELETE FROM scores s WHERE s.run_id = ? AND NOT EXISTS (
                           SELECT 1 FROM kgp_items i WHERE i.split = s.split AND
                           i.instance_id = s.instance_id AND i.prompt_id = s.prompt_id AND
                           i.candidate = s.candidate)""", [rid])
            con.execute("""DELETE FROM responses s WHERE s.run_id = ? AND NOT EXISTS (
                           SELECT 1 FROM kgp_items i WHERE i.split = s.split AND
                           i.instance_id = s.instance_id AND i.prompt_id = s.prompt_id)""", [rid])
    finally:
        con.unregister("kgp_items")


@dataclass
class Plan:
    """A probe's work: its items, the distinct requests by cache key, and who needs which."""

    instances: list[Instance]
    items: list[Item]
    requests: dict[str, Request]   # cache key -> request, in order of first use
    item_keys: list[list[str]]     # per item, the key of each of its requests, in order
    owner: dict[str, int]          # cache key -> index of the first instance that needs it


def plan(task: Task, probe: Probe, ctx: TaskContext, instances: list[Instance],
         scorer: Any) -> Plan:
    """Turn instances into items and keyed requests (errors name the probe file)."""
    items: list[Item] = []
    owner_of_item: list[int] = []
    for n, inst in enumerate(instances):
        try:
            got = task.items(inst, probe.spec, ctx)
        except ProbeError as e:
            raise ProbeError(f"{probe.path}: {e}") from e
        items += got
        owner_of_item += [n] * len(got)
    scorer_opts = dict(scorer.cache_key_options())
    requests: dict[str, Request] = {}
    owner: dict[str, int] = {}
    item_keys: list[list[str]] = []
    for it, n in zip(items, owner_of_item, strict=True):
        keys = [cache.request_key(scorer.name, scorer.revision, scorer_opts, r)
                for r in it.requests]
        for k, r in zip(keys, it.requests, strict=True):
            if k not in requests:
                requests[k] = r
                owner[k] = n
        item_keys.append(keys)
    return Plan(instances, items, requests, item_keys, owner)


def run_identity(scorer: Any, probe: Probe, work: Plan,
                 opts: RunOptions) -> tuple[str, dict[str, Any]]:
    """The run id and what it hashes: model, revision, probe, templates, params, request
    options, splits, limit and the scorer's cache options."""
    spec = probe.spec
    identity = {
        "task": spec.task, "prompts": spec.prompts, "params": spec.hashed_params,
        "request_options": sorted({json.dumps(r.options) for r in work.requests.values()}),
        "splits": sorted(opts.splits) if opts.splits else None, "limit": opts.limit,
        **({"sample": opts.sample} if opts.sample is not None else {}),
        "scorer": dict(scorer.cache_key_options()),
    }
    return run_id(scorer.name, scorer.revision, spec.name, identity), identity


def unchanged_and_cached(con: duckdb.DuckDBPyConnection, rid: str, probe: str,
                         work: Plan) -> bool:
    """True when run ``rid`` finished (status done) after the probe's instances were last
    exported and every request is in the cache: its rows are complete and current, so a
    re-run has nothing to score and nothing to write."""
    row = con.execute("SELECT status, finished_at FROM runs WHERE run_id = ?", [rid]).fetchall()
    if not row or row[0][0] != "done" or row[0][1] is None:
        return False
    newer = con.execute("SELECT count(*) FROM instances WHERE probe = ? AND exported_at > ?",
                        [probe, row[0][1]]).fetchall()[0][0]
    return newer == 0 and len(cache.present(con, list(work.requests))) == len(work.requests)


def _start_run(con: duckdb.DuckDBPyConnection, scorer: Any, probe: Probe, work: Plan,
               opts: RunOptions) -> tuple[str, float, bool]:
    """Insert or restart the run row; returns (run id, seconds spent by earlier unfinished
    attempts, whether the row existed)."""
    spec = probe.spec
    rid, identity = run_identity(scorer, probe, work, opts)
    describe = description(scorer)
    config = {**identity, "probe_file": str(probe.path), "runtime": opts.runtime,
              "backend": describe, "slot_token": slot_token(scorer)}
    prior = con.execute("SELECT status, wall_s FROM runs WHERE run_id = ?", [rid]).fetchone()
    base_wall = float(prior[1] or 0.0) if prior and prior[0] != "done" else 0.0
    run = Run(run_id=rid, model=scorer.name, revision=scorer.revision, backend=scorer.kind,
              task=spec.task, probe=spec.name, config=config,
              dtype=str(getattr(scorer, "dtype", None)),
              device=str(getattr(scorer, "device", None)),
              batch_size=getattr(scorer, "batch_size", None), started_at=_now(),
              wall_s=base_wall, status="running", requests=len(work.requests))
    with transaction(con):
        start_run(con, run)
        if spec.task == "subsumption":
            write_prompts(con, [PromptRow(rid, *r) for r in subsumption_prompts(
                spec.prompts, spec.params.get("label_words") or {})])
    return rid, base_wall, prior is not None


class _Resolver:
    """Collects results by key and yields the rows of items whose requests are all answered."""

    def __init__(self, task: Task, work: Plan) -> None:
        self.task, self.work = task, work
        self.results: dict[str, Any] = {}
        self.waiting: dict[str, list[int]] = {}
        self.pending: list[int] = []
        for i, keys in enumerate(work.item_keys):
            unique = set(keys)
            self.pending.append(len(unique))
            for k in unique:
                self.waiting.setdefault(k, []).append(i)

    def add(self, results: dict[str, Any]) -> Rows:
        self.results.update(results)
        rows = Rows()
        for k in results:
            for i in self.waiting.get(k, ()):
                self.pending[i] -= 1
                if self.pending[i] == 0:
                    got = self.task.rows(self.work.items[i],
                                         [self.results[c] for c in self.work.item_keys[i]])
                    rows.scores += got.scores
                    rows.responses += got.responses
        return rows


def _scored_with_progress(scorer: Any, reqs: list[Request], bar: tqdm) -> list[Any]:
    """Score a chunk, moving the bar per backend batch when the scorer reports progress."""
    done = 0

    def step(n: int) -> None:
        nonlocal done
        n = min(n, len(reqs) - done)
        if n > 0:
            done += n
            bar.update(n)

    with progress_to(scorer, step):
        out = _score(scorer, reqs)
    bar.update(len(reqs) - done)
    return out


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
                        [_now(), _now(), len(work.requests), rid])
            return RunReport(rid, spec.name, len(work.instances), len(work.items),
                             len(work.requests), len(work.requests), 0,
                             time.perf_counter() - t0)
    prior_wall = con.execute("SELECT wall_s FROM runs WHERE run_id = ? AND status = 'done'",
                             [run_identity(scorer, probe, work, opts)[0]]).fetchone()
    rid, base_wall, existed = _start_run(con, scorer, probe, work, opts)
    record_vocab(con, scorer, work.requests.values())

    def wall() -> float:
        return base_wall + time.perf_counter() - t0

    def progress_update() -> tuple[str, list[Any]]:
        return "UPDATE runs SET wall_s = ? WHERE run_id = ?", [wall(), rid]

    try:
        if existed:
            _drop_stale(con, rid, work.items)
        resolver = _Resolver(task, work)
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
                    scored = _scored_with_progress(scorer, [work.requests[k] for k in chunk],
                                                   bar)
                except PromptTooLongError as e:
                    raise ProbeError(f"probe {spec.name!r} ({probe.path}), "
                                     f"{_culprit(e, chunk, work)}: {e}") from e
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
                       cache_hits = ? WHERE run_id = ?""", [_now(), final_wall, len(hits), rid])
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("UPDATE runs SET status = 'failed', finished_at = ?, wall_s = ? "
                        "WHERE run_id = ?", [_now(), wall(), rid])
        raise
    return RunReport(rid, spec.name, len(work.instances), len(work.items), len(work.requests),
                     len(hits), len(misses), time.perf_counter() - t0)


def _culprit(error: Exception, chunk: Sequence[str], work: Plan) -> str:
    """The instance whose request a backend refused (found by the prompt text the error
    quotes), as ``instance <id> (target ...)``; ``an instance`` when it cannot be told."""
    m = re.search(r"prompt #\d+ \((['\"])(.*)\1\) has", str(error))
    snippet = m.group(2).removesuffix("...")[:60] if m else ""
    for key in chunk:
        text = "".join(str(a) for a in work.requests[key].args)
        if snippet and snippet in text:
            inst = work.instances[work.owner[key]]
            return f"instance {inst.instance_id} (target {inst.target!r}, split {inst.split})"
    return "an instance"


def record_vocab(con: duckdb.DuckDBPyConnection, scorer: Any,
                 requests: Iterable[Request]) -> None:
    """Write the whole-word vocabularies that ``topk`` requests use into ``model_vocab`` (once
    per model and vocabulary), so metrics can limit answers to the words every compared model
    can produce."""
    names = {dict(r.options).get("vocab", "words") for r in requests if r.op == "topk"}
    for name in sorted(names):
        if con.execute("SELECT count(*) FROM model_vocab WHERE model = ? AND vocab = ?",
                       [scorer.name, name]).fetchall()[0][0]:
            continue
        vocab = scorer.word_vocab(lowercase=name == "lowercase")
        table = pa.table({"model": [scorer.name] * len(vocab.words), "vocab": [name] * len(
            vocab.words), "word": list(vocab.words)})
        con.register("kgp_vocab", table)
        try:
            con.execute("INSERT OR IGNORE INTO model_vocab SELECT model, vocab, word "
                        "FROM kgp_vocab")
        finally:
            con.unregister("kgp_vocab")


def select_probes(con: duckdb.DuckDBPyConnection, patterns: list[str], queries: list[Path],
                  include_default: bool, results: str) -> list[Probe]:
    """The probe files matching ``patterns`` (their headers hold the prompts and params).

    Every matching probe must have instances in the results file. Probes of task ``records``
    (data, nothing to score) are left out when a glob pattern matched them.
    """
    probes = discover(queries, patterns, include_default=include_default)
    probes = [p for p in probes if p.spec.task != "records" or p.spec.name in patterns]
    if not probes:
        raise ProbeError(f"{' '.join(patterns)} matches only 'records' probes: they hold data, "
                         "not prompts, so there is nothing to score")
    exported = {r[0]: r[1] for r in con.execute(
        """SELECT DISTINCT i.probe, e.query_hash FROM instances i
           LEFT JOIN probe_exports e USING (probe)""").fetchall()}
    missing = [p.spec.name for p in probes if p.spec.name not in exported]
    if missing:
        raise ProbeError(f"no instances of {', '.join(missing)} in {results} (not exported, or "
                         f"the query returned no rows): run `python -m probes.export "
                         f"{' '.join('-p ' + m for m in missing)}` first and check that it "
                         "reports rows")
    changed = [p for p in probes if exported[p.spec.name] is not None
               and exported[p.spec.name] != p.instances_hash]
    if changed:
        raise ProbeError(f"{', '.join(str(p.path) for p in changed)} changed since its instances "
                         f"were exported to {results}, so a run would score the old instances; "
                         f"re-export first: python -m probes.export "
                         f"{' '.join('-p ' + p.spec.name for p in changed)}. Nothing was run.")
    return probes


def format_reports(reports: Sequence[RunReport]) -> str:
    """A markdown table of what each probe's run did."""
    lines = ["| probe | run | instances | requests | cached | scored | seconds | prompts/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.probe} | {r.run_id} | {r.instances:,} | {r.requests:,} | "
              f"{r.cache_hits:,} | {r.scored:,} | {r.wall_s:.2f} | {r.rate:.1f} |"
              for r in reports]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m probes.run",
        description="Score exported probe instances with a language model and write runs, "
        "scores and top-k responses into the results DuckDB file. Scores are cached by (model, "
        "revision, prompt, scoring options): a re-run with nothing new does no model work, and "
        "a run that was killed resumes where it stopped.")
    p.add_argument("--model", "-m",
                   help="model: a Hugging Face hub name, a local folder, a GGUF file, or an "
                   "offline alias (smollm2-135m, gemma3-270m; see probes.models); or --models")
    p.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="probe name or glob pattern (e.g. 'starter/*'); repeatable; required "
                   "unless --list. The probes must have been exported with `python -m "
                   "probes.export`")
    p.add_argument("--list", action="store_true",
                   help="list the probes found (as `python -m probes.export --list`) and exit")
    p.add_argument("--results", type=Path, default=None,
                   help="results DuckDB file (default: $KGPROBE_RESULTS or "
                   ".kgprobe/results.duckdb)")
    p.add_argument("--queries", "-q", action="append", type=Path, default=[], metavar="DIR",
                   help="extra folder of probe files (*.rq) besides queries/; repeatable")
    p.add_argument("--only-extra", action="store_true",
                   help="do not read the default queries/ folder, only --queries folders")
    p.add_argument("--device", default=None,
                   help="torch device: cpu, cuda, cuda:1, mps (default: the backend's choice, "
                   "a GPU when there is one)")
    p.add_argument("--dtype", default=None,
                   help="weights/compute dtype: float32, bfloat16, float16 (default: the "
                   "backend's choice, float32 on CPU)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="requests per forward pass (default: found automatically by the "
                   "backend, backing off on out-of-memory)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for torch (torch.set_num_threads; default: torch's)")
    p.add_argument("--top-k", type=int, default=10,
                   help="answers kept per prompt for relatum prediction, unless the probe's "
                   "params set top_k (default: 10)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="only the first N instances (by instance id) of each probe and split, "
                   "for smoke runs; a limited run is a run of its own")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="a seeded sample of N instances per probe and split, stratified by "
                   "gold class (N / classes of each); a sampled run is a run of its own")
    p.add_argument("--split", action="append", default=None, metavar="NAME",
                   help="only instances of this split; repeatable (default: all splits)")
    p.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help=f"requests scored between two commits (default: {DEFAULT_CHUNK['cpu']} "
                   f"on a CPU, {DEFAULT_CHUNK['gpu']} on a GPU); a "
                   "killed run loses about one chunk of work (chunks end between instances)")
    p.add_argument("--no-cache", action="store_true",
                   help="ignore cached scores: score every request again, overwriting its "
                   "cache entry and this run's rows")
    p.add_argument("--allow-pickle", action="store_true",
                   help="allow loading pickle weights (pytorch_model.bin) when a model has no "
                   "safetensors; pickle can run code when loaded, so only for sources you trust")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--model-args", metavar="KEY=VALUE,...",
                   help="model loading options in one string, as in lm-evaluation-harness: "
                   "revision, dtype, trust_remote_code, allow_pickle, device_map (e.g. "
                   "revision=main,dtype=bfloat16); dtype, allow_pickle and device_map may also "
                   "be given as their own flags, but not both ways with different values")
    p.add_argument("--apply-chat-template", action="store_true",
                   help="causal instruct models: wrap every prompt in the tokenizer's chat "
                   "template as a user turn before scoring (a run of its own, cached apart)")
    p.add_argument("--output-path", type=Path, default=None, metavar="DIR",
                   help="also write DIR/<model>/results_<time>.json (metrics per probe, the "
                   "run config, versions) and the runs' scores/responses as Parquet")
    p.add_argument("--log-samples", action="store_true",
                   help="with --output-path: also write samples_<probe>_<time>.jsonl, one line "
                   "per instance (prompts, gold, scores, prediction)")
    scale_cli.add_arguments(p)  # --models, --device-map, --max-memory, --shard (docs/scale.md)
    return p


def check_device(device: str | None) -> None:
    """A clear error for a ``--device`` torch does not know or this machine lacks."""
    if device is None:
        return
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as e:
        raise ProbeError(f"--device {device!r} is not a torch device; use cpu, cuda, cuda:N "
                         "or mps") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ProbeError(f"--device {device}: this machine has no CUDA GPU that torch can use; "
                         "run with --device cpu (or leave --device out)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ProbeError(f"--device {device}: there are only {torch.cuda.device_count()} CUDA "
                         "device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ProbeError(f"--device {device}: MPS is not available here; use --device cpu")


ScorerFactory = Callable[..., Any]


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


def _default_factory(name: str, **kwargs: Any) -> Any:
    from probes.backends.registry import load_scorer

    return load_scorer(name, **kwargs)


def main(argv: list[str] | None = None, scorer_factory: ScorerFactory | None = None) -> int:
    """The command line. ``scorer_factory(name, device=, dtype=, batch_size=, threads=)`` replaces
    ``probes.backends.registry.load_scorer`` (tests pass a fake scorer)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:  # python -m probes.run merge --shards N (probes.shard)
        from probes.shard import merge_main

        return merge_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:  # the same list as probes.export --list
        from probes.export import format_probe_list, list_probes

        try:
            print(format_probe_list(list_probes(args.queries, args.probe, not args.only_extra)))
        except ProbeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if not args.probe:
        parser.error("the following arguments are required: --probe/-p")
    try:  # --model-args folded into --dtype/--allow-pickle/--device-map; the rest for loading
        model_kwargs = model_args.apply_to_args(args)
        if args.log_samples and args.output_path is None:
            raise ProbeError("--log-samples needs --output-path DIR (where the samples go)")
    except ProbeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    factory = scorer_factory or _default_factory
    routed = scale_cli.route(args, argv, main, factory)  # a model list, a shard or a rank
    if routed is not None:
        return routed
    results = str(args.results) if args.results else None
    con = None
    try:
        if args.limit is not None and args.sample is not None:
            raise ProbeError("--limit and --sample exclude each other: use one")
        for flag, value in (("--limit", args.limit), ("--sample", args.sample),
                            ("--top-k", args.top_k),
                            ("--chunk-size", args.chunk_size), ("--threads", args.threads),
                            ("--batch-size", args.batch_size)):
            if value is not None and value < 1:
                raise ProbeError(f"{flag} must be a positive number (got {value})")
        con = connect(args.results)
        where = results or str(config.results_path())
        probes = select_probes(con, args.probe, args.queries, not args.only_extra, where)
        opts = RunOptions(top_k=args.top_k, splits=args.split, limit=args.limit,
                          sample=args.sample,
                          chunk_size=args.chunk_size, use_cache=not args.no_cache,
                          progress=not args.quiet,
                          runtime={"threads": args.threads, "batch_size": args.batch_size,
                                   "chunk_size": args.chunk_size, "device": args.device,
                                   "dtype": args.dtype, "model_args": args.model_args_parsed,
                                   "apply_chat_template": args.apply_chat_template})
        scorer, plans = None, None
        if opts.use_cache:  # nothing new to score: no need to load the model
            stand_in = chat.matching_stand_in(
                recorded_scorer(con, args.model, args.device, args.dtype),
                args.apply_chat_template)
            plans = (fully_cached(con, stand_in, probes, opts, where)
                     if stand_in is not None else None)
            scorer = stand_in if plans is not None else None
        if scorer is None:
            check_device(args.device)
            extra = {"allow_pickle": True} if args.allow_pickle else {}
            scorer = factory(args.model, device=args.device, dtype=args.dtype,
                             batch_size=args.batch_size, threads=args.threads, **extra,
                             **model_kwargs, **scale_cli.load_options(args))
            scorer = chat.with_chat_template(scorer, args.apply_chat_template)
        t0 = time.perf_counter()
        reports = [run_probe(con, scorer, p, opts, where, (plans or {}).get(p.spec.name))
                   for p in probes]
        if args.output_path is not None:
            written = outputs.write_outputs(
                con, args.output_path, [r.run_id for r in reports],
                {"model": args.model, **opts.runtime, "probes": [r.probe for r in reports],
                 "splits": opts.splits, "limit": opts.limit, "sample": opts.sample,
                 "top_k": opts.top_k, "results": where}, log_samples=args.log_samples)
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except duckdb.Error as e:  # the file went bad under us: never report success
        where_ = Path(results or config.results_path())
        print(f"error: {diagnose(where_, e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the chunks scored so far are saved; run the same command again "
              "to resume", file=sys.stderr)
        return 130
    finally:
        if con is not None:
            con.close()
    print(format_reports(reports))
    print(f"\n{len(reports)} probe(s) in {time.perf_counter() - t0:.2f} s")
    if args.output_path is not None:
        print("wrote " + ", ".join(str(w) for w in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

