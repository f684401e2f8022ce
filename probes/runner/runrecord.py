"""The ``runs`` row of a run and the rows it owns: start, restart, stale rows, vocabularies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from probes import cache, parquet_sync
from probes.backends.protocol import description
from probes.results import transaction
from probes.results.upgrade import subsumption_prompts
from probes.results.writers import PromptRow, Run, start_run, write_prompts
from probes.runner.plan import Plan, RunOptions, run_identity, slot_token
from probes.runner.scoring import vocab_for
from probes.spec import Probe
from probes.tasks import Item, Request


def now_utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def item_table(items: Sequence[Item]) -> pa.Table:
    return pa.table({
        "split": pa.array([it.split for it in items], pa.string()),
        "instance_id": pa.array([it.instance_id for it in items], pa.string()),
        "prompt_id": pa.array([it.prompt_id for it in items], pa.int32()),
        "candidate": pa.array([it.candidate for it in items], pa.string()),
    })


def drop_stale(con: duckdb.DuckDBPyConnection, rid: str, items: Sequence[Item]) -> None:
    """Delete this run's rows for items that no longer exist (the probe was re-exported)."""
    con.register("kgp_items", item_table(items))
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


def export_stamp(con: duckdb.DuckDBPyConnection, probe: str) -> dict[str, Any]:
    """The export a run scores, for its ``runs.config``: the probe file's hash at export
    (``probe_exports.query_hash``; None for instances written without a probe file) and when
    its instances were exported (``parquet_sync.stamp``, the record of Parquet files too)."""
    now = parquet_sync.stamp(con, probe, Path("."))
    return {"query_hash": now["query_hash"], "exported_at": now["exported_at"]}


def begin_run(con: duckdb.DuckDBPyConnection, scorer: Any, probe: Probe, work: Plan,
               opts: RunOptions) -> tuple[str, float, bool]:
    """Insert or restart the run row; returns (run id, seconds spent by earlier unfinished
    attempts, whether the row existed)."""
    spec = probe.spec
    rid, identity = run_identity(scorer, probe, work, opts)
    describe = description(scorer)
    config = {**identity, "probe_file": str(probe.path), "runtime": opts.runtime,
              "backend": describe, "slot_token": slot_token(scorer),
              "export": export_stamp(con, spec.name)}
    prior = con.execute("SELECT status, wall_s FROM runs WHERE run_id = ?", [rid]).fetchone()
    base_wall = float(prior[1] or 0.0) if prior and prior[0] != "done" else 0.0
    run = Run(run_id=rid, model=scorer.name, revision=scorer.revision, backend=scorer.kind,
              task=spec.task, probe=spec.name, config=config,
              dtype=str(getattr(scorer, "dtype", None)),
              device=str(getattr(scorer, "device", None)),
              batch_size=getattr(scorer, "batch_size", None), started_at=now_utc(),
              wall_s=base_wall, status="running", requests=len(work.requests))
    with transaction(con):
        start_run(con, run)
        if spec.task == "subsumption":
            write_prompts(con, [PromptRow(rid, *r) for r in subsumption_prompts(
                spec.prompts, spec.params.get("label_words") or {})])
    return rid, base_wall, prior is not None


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
        vocab = vocab_for(scorer, name)
        vocab = scorer.word_vocab() if vocab is None else vocab
        table = pa.table({"model": [scorer.name] * len(vocab.words), "vocab": [name] * len(
            vocab.words), "word": list(vocab.words)})
        con.register("kgp_vocab", table)
        try:
            con.execute("INSERT OR IGNORE INTO model_vocab SELECT model, vocab, word "
                        "FROM kgp_vocab")
        finally:
            con.unregister("kgp_vocab")
