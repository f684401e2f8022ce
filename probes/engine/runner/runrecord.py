"""The record a run keeps in the results file: its ``runs`` row (start, restart), the rows of
items that no longer exist, the vocabularies its ``topk`` requests use. The SQL is the
contract's (:mod:`probes.results.writers`, :mod:`probes.results.shared`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from probes.backends.protocol import capabilities, description, family
from probes.engine import parquet_sync
from probes.engine.runner.plan import Plan, RunOptions, run_identity
from probes.engine.runner.scoring import vocab_for
from probes.engine.spec import Probe
from probes.engine.tasks import Item, Request
from probes.results import transaction, writers
from probes.results.shared import write_model_vocab
from probes.results.upgrade import subsumption_prompts
from probes.results.writers import ItemKey, PromptRow, Run, start_run, write_prompts


def now_utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def drop_stale(con: duckdb.DuckDBPyConnection, rid: str, items: Sequence[Item]) -> None:
    """Delete this run's rows for items that no longer exist (the probe was re-exported)."""
    with transaction(con):
        writers.drop_stale(con, rid, [ItemKey(it.split, it.instance_id, it.prompt_id,
                                              it.candidate) for it in items])


def rows_current(con: duckdb.DuckDBPyConnection, rid: str, probe: str) -> bool:
    """True when run ``rid`` finished (status done) after its probe's instances were last
    exported: its rows were all written from the instances as they are now."""
    row = con.execute("SELECT status, finished_at FROM runs WHERE run_id = ?", [rid]).fetchall()
    if not row or row[0][0] != "done" or row[0][1] is None:
        return False
    newer = con.execute("SELECT count(*) FROM instances WHERE probe = ? AND exported_at > ?",
                        [probe, row[0][1]]).fetchall()[0][0]
    return newer == 0


def export_stamp(con: duckdb.DuckDBPyConnection, probe: str) -> dict[str, Any]:
    """The export a run scores, for its ``runs.config``: the probe file's hash at export
    (``probe_exports.query_hash``; None for instances written without a probe file) and when
    its instances were exported (``parquet_sync.stamp``, the record of Parquet files too)."""
    now = parquet_sync.stamp(con, probe, Path("."))
    return {"query_hash": now["query_hash"], "exported_at": now["exported_at"]}


def begin_run(con: duckdb.DuckDBPyConnection, scorer: Any, probe: Probe, work: Plan,
              opts: RunOptions, started_at: datetime) -> tuple[str, bool]:
    """Insert or restart the run row for the invocation that started at ``started_at`` (its
    ``wall_s`` 0 and no ``finished_at`` until it ends); returns (run id, whether the row
    existed)."""
    spec = probe.spec
    rid, identity = run_identity(scorer, probe, work, opts)
    describe = description(scorer)
    config = {**identity, "probe_file": str(probe.path), "runtime": opts.runtime,
              "backend": describe, "slot_token": capabilities(scorer).slot_token,
              "capabilities": capabilities(scorer).as_record(),
              "export": export_stamp(con, spec.name)}
    prior = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [rid]).fetchone()
    run = Run(run_id=rid, model=scorer.name, revision=scorer.revision, backend=scorer.kind,
              family=family(capabilities(scorer)),
              task=spec.task, probe=spec.name, config=config,
              dtype=str(getattr(scorer, "dtype", None)),
              device=str(getattr(scorer, "device", None)),
              batch_size=getattr(scorer, "batch_size", None), started_at=started_at,
              wall_s=0.0, status="running", requests=len(work.requests))
    with transaction(con):
        start_run(con, run)
        if spec.task == "subsumption":
            write_prompts(con, [PromptRow(rid, *r) for r in subsumption_prompts(
                spec.prompts, spec.params.get("label_words") or {})])
    return rid, bool(prior and prior[0])


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
        with transaction(con):
            write_model_vocab(con, scorer.name, name, list(vocab.words))
