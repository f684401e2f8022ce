"""Typed writers of the results file: runs, prompts, scores, responses and the score cache.

Every module that writes a run goes through these functions (inside
:func:`probes.results.transaction` where several writes must land together), so the columns
of ``schema.sql`` are named in one place; the rows every run shares (instances, exports,
human answers, vocabularies) have theirs in :mod:`probes.results.shared`.
``tests/test_architecture.py`` fails on an ``INSERT``/``UPDATE``/``DELETE`` of a result table
anywhere outside ``probes/results``.

>>> from probes.results import connect, transaction
>>> con = connect(":memory:")
>>> run = Run(run_id="r1", model="m", probe="p", task="choice", status="done", k=4)
>>> with transaction(con):
...     insert_run(con, run)
...     write_scores(con, [ScoreRow("r1", "p", "test", "i1", 0, "a", "a", "x a", -1.5, 2)])
>>> con.execute("SELECT model, k, status FROM runs").fetchall()
[('m', 4, 'done')]
>>> con.execute("SELECT candidate, score FROM scores").fetchall()
[('a', -1.5)]
>>> delete_run(con, "r1")
>>> con.execute("SELECT count(*) FROM scores").fetchone()[0]
0
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import duckdb
import pyarrow as pa


@dataclass(frozen=True)
class Run:
    """One ``runs`` row (see schema.sql for what each column means)."""

    run_id: str
    model: str
    probe: str
    task: str | None
    status: str = "running"
    revision: str | None = None
    backend: str | None = None
    config: dict[str, Any] | None = None
    dtype: str | None = None
    device: str | None = None
    batch_size: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wall_s: float | None = None
    requests: int | None = None
    cache_hits: int | None = None
    method: str | None = None
    part: str | None = None
    context: bool | None = None
    k: int | None = None
    seed: int | None = None
    scoring: str | None = None
    family: str | None = None


RUN_COLUMNS = tuple(f.name for f in fields(Run))


class ScoreRow(NamedTuple):
    """One ``scores`` row."""

    run_id: str
    probe: str
    split: str
    instance_id: str
    prompt_id: int
    candidate: str
    label: str | None
    prompt: str | None
    score: float | None
    n_tokens: int | None
    n_chars: int | None = None     # characters of the scored text (NULL: not recorded)
    baseline: float | None = None  # its log-probability after the neutral context (PMI)


class ResponseRow(NamedTuple):
    """One ``responses`` row: the token at ``rank`` (1 = most probable) of a ranked list."""

    run_id: str
    probe: str
    split: str
    instance_id: str
    prompt_id: int
    rank: int
    token: str
    probability: float | None
    prompt: str | None = None  # the rendered text whose slot was ranked (None: humans)


class PromptRow(NamedTuple):
    """One ``prompts`` row: what a run's ``prompt_id`` stands for."""

    run_id: str
    prompt_id: int
    template: str | None
    text: str | None
    label_set: str | None
    label_words: dict[str, list[str]] | None


SCORE_SCHEMA = pa.schema([("run_id", pa.string()), ("probe", pa.string()),
                          ("split", pa.string()), ("instance_id", pa.string()),
                          ("prompt_id", pa.int32()), ("candidate", pa.string()),
                          ("label", pa.string()), ("prompt", pa.string()),
                          ("score", pa.float64()), ("n_tokens", pa.int32()),
                          ("n_chars", pa.int32()), ("baseline", pa.float64())])
RESPONSE_SCHEMA = pa.schema([("run_id", pa.string()), ("probe", pa.string()),
                             ("split", pa.string()), ("instance_id", pa.string()),
                             ("prompt_id", pa.int32()), ("rank", pa.int32()),
                             ("token", pa.string()), ("probability", pa.float64()),
                             ("prompt", pa.string())])


def _run_values(run: Run) -> list[Any]:
    values = list(astuple(run))
    i = RUN_COLUMNS.index("config")
    values[i] = None if run.config is None else json.dumps(run.config, default=str)
    return values


def insert_run(con: duckdb.DuckDBPyConnection, run: Run) -> None:
    """Insert a ``runs`` row (the run id must be new: see :func:`delete_run`)."""
    marks = ", ".join("?::JSON" if c == "config" else "?" for c in RUN_COLUMNS)
    con.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({marks})",
                _run_values(run))


# Columns a restarted probes.engine.run run keeps from its earlier row (its identity and history).
_KEPT_ON_RESTART = ("run_id", "model", "revision", "backend", "task", "probe", "cache_hits")


def start_run(con: duckdb.DuckDBPyConnection, run: Run) -> None:
    """Insert a run row, or restart the existing row of the same id: every column but the
    run's identity (model, revision, backend, task, probe) and ``cache_hits`` takes the new
    value."""
    marks = ", ".join("?::JSON" if c == "config" else "?" for c in RUN_COLUMNS)
    update = ", ".join(f"{c} = excluded.{c}" for c in RUN_COLUMNS if c not in _KEPT_ON_RESTART)
    con.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({marks}) "
                f"ON CONFLICT (run_id) DO UPDATE SET {update}", _run_values(run))


def delete_run(con: duckdb.DuckDBPyConnection, run_id: str,
               tables: Sequence[str] = ("scores", "responses", "generations", "prompts",
                                        "runs")) -> None:
    """Delete run ``run_id``'s rows from ``tables``."""
    for table in tables:
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])


def arrow_table(schema: pa.Schema, rows: Iterable[Sequence[Any]]) -> pa.Table:
    """Rows (tuples in the schema's column order) as an Arrow table of that schema."""
    cols: list[Sequence[Any]] = list(zip(*rows, strict=True)) or [[] for _ in schema]
    return pa.table([pa.array(list(c), f.type) for c, f in zip(cols, schema, strict=True)],
                    schema=schema)


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, upsert: bool) -> None:
    cols = rows.column_names
    con.register("kgp_new_rows", rows)
    try:
        if upsert:
            same = " AND ".join(f"t.{c} IS NOT DISTINCT FROM n.{c}" for c in cols)
            con.execute(f"""INSERT OR REPLACE INTO {table} ({', '.join(cols)})
                            SELECT * FROM kgp_new_rows n WHERE NOT EXISTS (
                                SELECT 1 FROM {table} t WHERE {same})""")
        else:
            con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT * FROM kgp_new_rows")
    finally:
        con.unregister("kgp_new_rows")


def write_scores(con: duckdb.DuckDBPyConnection, rows: Sequence[ScoreRow] | Sequence[tuple],
                 upsert: bool = False) -> None:
    """Insert ``scores`` rows (tuples in :class:`ScoreRow` order). With ``upsert`` a row whose
    key exists is replaced when its values differ and skipped when they are the same (a
    resumed or repeated run); without, a duplicate key is an error. A row without the last
    fields, ``n_chars`` and ``baseline``, gets None."""
    if rows:
        full = [tuple(ScoreRow(*r)) for r in rows]
        _insert(con, "scores", arrow_table(SCORE_SCHEMA, full), upsert)


def write_responses(con: duckdb.DuckDBPyConnection,
                    rows: Sequence[ResponseRow] | Sequence[tuple], upsert: bool = False) -> None:
    """Insert ``responses`` rows (tuples in :class:`ResponseRow` order; ``upsert`` as in
    :func:`write_scores`; a row without its last field, ``prompt``, gets None)."""
    if rows:
        full = [tuple(ResponseRow(*r)) for r in rows]
        _insert(con, "responses", arrow_table(RESPONSE_SCHEMA, full), upsert)


def write_prompts(con: duckdb.DuckDBPyConnection, rows: Sequence[PromptRow]) -> None:
    """Insert or replace ``prompts`` rows."""
    if rows:
        con.executemany("""INSERT OR REPLACE INTO prompts (run_id, prompt_id, template, text,
                           label_set, label_words) VALUES (?, ?, ?, ?, ?, ?::JSON)""",
                        [(*r[:5], None if r.label_words is None
                          else json.dumps(r.label_words, sort_keys=True)) for r in rows])


# --- one invocation's times ---------------------------------------------------------------------

def record_progress(con: duckdb.DuckDBPyConnection, run_id: str, wall_s: float) -> None:
    """Set a running run's ``wall_s``: the seconds its current invocation has taken so far."""
    con.execute("UPDATE runs SET wall_s = ? WHERE run_id = ?", [wall_s, run_id])


def finish_run(con: duckdb.DuckDBPyConnection, run_id: str, *, status: str,
               started_at: datetime, wall_s: float, cache_hits: int | None = None) -> None:
    """End the invocation that started the run row at ``started_at`` and took ``wall_s``
    seconds: ``status`` (done or failed), the three times of that one invocation
    (``finished_at = started_at + wall_s``) and, when given, how many requests it found
    cached.

    >>> from probes.results import connect
    >>> con = connect(":memory:")
    >>> start = datetime(2024, 1, 2, 3, 4, 5)
    >>> insert_run(con, Run(run_id="r", model="m", probe="p", task="choice", started_at=start))
    >>> finish_run(con, "r", status="done", started_at=start, wall_s=1.5, cache_hits=3)
    >>> con.execute("SELECT status, finished_at, wall_s, cache_hits FROM runs").fetchall()
    [('done', datetime.datetime(2024, 1, 2, 3, 4, 6, 500000), 1.5, 3)]
    """
    finished = started_at + timedelta(seconds=wall_s)
    if cache_hits is None:
        con.execute("UPDATE runs SET status = ?, started_at = ?, finished_at = ?, wall_s = ? "
                    "WHERE run_id = ?", [status, started_at, finished, wall_s, run_id])
    else:
        con.execute("UPDATE runs SET status = ?, started_at = ?, finished_at = ?, wall_s = ?, "
                    "cache_hits = ? WHERE run_id = ?",
                    [status, started_at, finished, wall_s, cache_hits, run_id])


# --- rows of a re-exported probe that no longer exist ---------------------------------------------

class ItemKey(NamedTuple):
    """What a ``scores`` row of a run is keyed by besides the run and probe (``responses``
    rows: all but ``candidate``)."""

    split: str
    instance_id: str
    prompt_id: int
    candidate: str


def drop_stale(con: duckdb.DuckDBPyConnection, run_id: str, keep: Sequence[ItemKey]) -> None:
    """Delete run ``run_id``'s ``scores``, ``responses`` and ``generations`` rows whose item is
    not in ``keep``
    (the probe was re-exported and lost instances)."""
    con.register("kgp_items", arrow_table(ITEM_SCHEMA, keep))
    try:
        con.execute("""DELETE FROM scores s WHERE s.run_id = ? AND NOT EXISTS (
                       SELECT 1 FROM kgp_items i WHERE i.split = s.split AND
                       i.instance_id = s.instance_id AND i.prompt_id = s.prompt_id AND
                       i.candidate = s.candidate)""", [run_id])
        con.execute("""DELETE FROM responses s WHERE s.run_id = ? AND NOT EXISTS (
                       SELECT 1 FROM kgp_items i WHERE i.split = s.split AND
                       i.instance_id = s.instance_id AND i.prompt_id = s.prompt_id)""", [run_id])
        con.execute("""DELETE FROM generations s WHERE s.run_id = ? AND NOT EXISTS (
                       SELECT 1 FROM kgp_items i WHERE i.split = s.split AND
                       i.instance_id = s.instance_id AND i.prompt_id = s.prompt_id)""", [run_id])
    finally:
        con.unregister("kgp_items")


ITEM_SCHEMA = pa.schema([("split", pa.string()), ("instance_id", pa.string()),
                         ("prompt_id", pa.int32()), ("candidate", pa.string())])


# --- the score cache ----------------------------------------------------------------------------

class CacheRow(NamedTuple):
    """One ``score_cache`` row: a request's key, who answered it and the encoded answer."""

    key: str
    model: str
    op: str
    score: float | None
    n_tokens: int | None
    payload: str | None  # JSON text: top-k lists


CACHE_SCHEMA = pa.schema([("key", pa.string()), ("model", pa.string()), ("op", pa.string()),
                          ("score", pa.float64()), ("n_tokens", pa.int32()),
                          ("payload", pa.string())])


def drop_cache(con: duckdb.DuckDBPyConnection, keys: Sequence[str]) -> None:
    """Remove the ``score_cache`` entries of ``keys`` (entries that may not be served: a
    value that is not a possible result, probes.engine.cache.servable)."""
    if keys:
        con.execute("DELETE FROM score_cache WHERE list_contains(?, key)", [list(keys)])


def write_cache(con: duckdb.DuckDBPyConnection, rows: Sequence[CacheRow],
                replace: bool = False) -> None:
    """Insert ``score_cache`` rows; an existing key is kept (its key fixes its content) unless
    ``replace`` (a ``--no-cache`` run scored it again)."""
    if not rows:
        return
    conflict = "OR REPLACE" if replace else "OR IGNORE"
    con.register("kgp_cache_rows", arrow_table(CACHE_SCHEMA, rows))
    try:
        con.execute(f"""INSERT {conflict} INTO score_cache (key, score, n_tokens, payload, model,
                        op) SELECT key, score, n_tokens, payload::JSON, model, op
                        FROM kgp_cache_rows""")
    finally:
        con.unregister("kgp_cache_rows")


# --- generated answers ----------------------------------------------------------------------

class GenerationRow(NamedTuple):
    """One ``generations`` row: a generated answer and the forms that count as right."""

    run_id: str
    probe: str
    split: str
    instance_id: str
    prompt_id: int
    prompt: str | None
    generation: str
    n_tokens: int | None
    finish: str | None
    answers: list[str]


GENERATION_SCHEMA = pa.schema([("run_id", pa.string()), ("probe", pa.string()),
                               ("split", pa.string()), ("instance_id", pa.string()),
                               ("prompt_id", pa.int32()), ("prompt", pa.string()),
                               ("generation", pa.string()), ("n_tokens", pa.int32()),
                               ("finish", pa.string()), ("answers", pa.list_(pa.string()))])


def write_generations(con: duckdb.DuckDBPyConnection,
                      rows: Sequence[GenerationRow] | Sequence[tuple],
                      upsert: bool = False) -> None:
    """Insert ``generations`` rows (tuples in :class:`GenerationRow` order; ``upsert`` as in
    :func:`write_scores`).

    >>> from probes.results import connect
    >>> con = connect(":memory:")
    >>> row = GenerationRow("r", "p", "test", "i", 0, "Q", " Paris", 2, "stop", ["Paris"])
    >>> write_generations(con, [row]); write_generations(con, [row], upsert=True)
    >>> con.execute("SELECT generation, answers FROM generations").fetchall()
    [(' Paris', ['Paris'])]
    """
    if rows:
        full = [tuple(GenerationRow(*r)) for r in rows]
        _insert(con, "generations", arrow_table(GENERATION_SCHEMA, full), upsert)


# --- hidden states and layer probes ---------------------------------------------------------

class HiddenShardRow(NamedTuple):
    """One ``hidden_shards`` row: a shard file of one extraction."""

    key: str
    shard: int
    path: str
    n_rows: int
    layers: list[int]
    positions: list[str]
    dim: int
    dtype: str
    model: str | None
    written_at: datetime | None


HIDDEN_SHARD_SCHEMA = pa.schema([
    ("key", pa.string()), ("shard", pa.int32()), ("path", pa.string()), ("n_rows", pa.int32()),
    ("layers", pa.list_(pa.int32())), ("positions", pa.list_(pa.string())), ("dim", pa.int32()),
    ("dtype", pa.string()), ("model", pa.string()), ("written_at", pa.timestamp("us"))])
HIDDEN_ITEM_SCHEMA = pa.schema([("key", pa.string()), ("item", pa.string()),
                                ("shard", pa.int32()), ("row", pa.int32())])


def write_hidden_shard(con: duckdb.DuckDBPyConnection, shard: HiddenShardRow,
                       items: Sequence[str]) -> None:
    """Record a shard file (written before) and its items, row ``i`` = ``items[i]`` (call it
    inside :func:`probes.results.transaction`, so both land together); an item already recorded
    under the key is an error (the caller skips done items)."""
    _insert(con, "hidden_shards", arrow_table(HIDDEN_SHARD_SCHEMA, [tuple(shard)]), False)
    rows = [(shard.key, item, shard.shard, i) for i, item in enumerate(items)]
    _insert(con, "hidden_items", arrow_table(HIDDEN_ITEM_SCHEMA, rows), False)


class LayerProbeRow(NamedTuple):
    """One ``layer_probes`` row."""

    run_id: str
    probe: str
    layer: int
    position: str
    control: bool
    c: float
    dev_accuracy: float
    train_accuracy: float
    n_train: int
    n_dev: int


class LayerPredictionRow(NamedTuple):
    """One ``layer_predictions`` row."""

    run_id: str
    probe: str
    split: str
    instance_id: str
    layer: int
    position: str
    control: bool
    gold: str
    predicted: str


LAYER_PROBE_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("probe", pa.string()), ("layer", pa.int32()),
    ("position", pa.string()), ("control", pa.bool_()), ("c", pa.float64()),
    ("dev_accuracy", pa.float64()), ("train_accuracy", pa.float64()), ("n_train", pa.int32()),
    ("n_dev", pa.int32())])
LAYER_PREDICTION_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("probe", pa.string()), ("split", pa.string()),
    ("instance_id", pa.string()), ("layer", pa.int32()), ("position", pa.string()),
    ("control", pa.bool_()), ("gold", pa.string()), ("predicted", pa.string())])


def write_layer_probes(con: duckdb.DuckDBPyConnection, probes: Sequence[LayerProbeRow],
                       predictions: Sequence[LayerPredictionRow]) -> None:
    """Replace the layer-probe rows and test predictions of the runs in ``probes``."""
    for run_id in dict.fromkeys(p.run_id for p in probes):
        for table in ("layer_probes", "layer_predictions"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    if probes:
        _insert(con, "layer_probes", arrow_table(LAYER_PROBE_SCHEMA, probes), False)
    if predictions:
        _insert(con, "layer_predictions", arrow_table(LAYER_PREDICTION_SCHEMA, predictions),
                False)
