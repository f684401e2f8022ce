"""Score cache and resumable writes.

Each request's cache key is the SHA-256 of (model name, revision, operation, request text(s),
the scorer's ``cache_key_options()``, the operation's options such as ``k``). Before scoring, all
keys of a run are looked up in ``score_cache`` with one SQL join against a registered Arrow table;
only the misses are scored, in chunks, and each chunk is committed in ONE transaction together
with the ``scores``/``responses`` rows it completes. Inserts skip rows that already exist, so a
run killed at any point and started again finishes with the same rows, none twice.

>>> from probes.results import connect
>>> from probes.engine.tasks import Request
>>> con = connect(":memory:")
>>> req = Request("loglik", ("A dog is", " an animal"))
>>> key = request_key("gpt2", "abc", {"dtype": "float32"}, req)
>>> lookup(con, [key])
{}
>>> commit(con, cache_rows=[(key, "gpt2", req.op, CachedScore(-3.5, 2))])
>>> lookup(con, [key])[key]
CachedScore(logprob=-3.5, n_tokens=2)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import duckdb
import pyarrow as pa

from probes.backends.generation import Generation
from probes.engine.tasks import GenerationRow, Request, ResponseRow, ScoreRow
from probes.results import transaction
from probes.results.writers import (
    CacheRow,
    drop_cache,
    record_progress,
    write_cache,
    write_generations,
    write_responses,
    write_scores,
)

LIST_OPS = ("topk", "tokens")
"""Operations whose result is a list of (text, number) pairs: top-k answers (probability) and
per-token scores (log-probability, :mod:`probes.backends.tokens`)."""


class CachedScore(NamedTuple):
    """A loglik/pll result read back from the cache (same fields as the backends' Score)."""

    logprob: float
    n_tokens: int


def request_key(model: str, revision: str | None, scorer_options: dict[str, Any],
                req: Request) -> str:
    """The cache key of one request (64 hex digits).

    >>> r = Request("topk", ("A dog is a",), (("k", 10),))
    >>> request_key("m", "r", {}, r) == request_key("m", "r", {}, r)
    True
    >>> request_key("m", "r", {}, r) == request_key("m", "r2", {}, r)
    False

    The scorer's options are part of the key: a prompt scored inside a chat template
    (``--apply-chat-template`` adds ``chat_template`` to them, probes.engine.chat) never shares an
    entry with the same prompt scored plain.

    >>> request_key("m", "r", {"chat_template": "0a1b"}, r) == request_key("m", "r", {}, r)
    False
    """
    raw = json.dumps([model, revision, req.op, list(req.args), scorer_options,
                      [list(o) for o in req.options]],
                     sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _decode(op: str, score: float | None, n_tokens: int | None, payload: str | None) -> Any:
    data = json.loads(payload) if payload else None
    if op == "generate":
        return Generation.from_record(data or {"text": "", "n_tokens": 0, "finish": "length"})
    if op in LIST_OPS:
        return [(str(t), float(p)) for t, p in (data or [])]
    return CachedScore(float(score) if score is not None else float("nan"), int(n_tokens or 0))


ROUNDING = 1e-5
"""How far above 0 a cached log-probability may be (float rounding); see :func:`servable`."""


def servable(op: str, result: Any) -> bool:
    """Whether a cached result is a possible value of ``op``: a log-probability (``loglik``,
    ``pll``, each of ``tokens``) finite and not above 0, a top-k probability finite and in
    [0, 1]. An entry that is not (a NaN written before the server backend checked its answers,
    a file edited by hand) is never served (issue 45).

    >>> servable("loglik", CachedScore(-2.0, 1)), servable("loglik", CachedScore(float("nan"), 0))
    (True, False)
    >>> servable("topk", [("dog", 0.5)]), servable("topk", [("dog", 1.5)])
    (True, False)
    """
    if op in LIST_OPS:
        values = [p for _, p in result]
        if op == "topk":
            return all(math.isfinite(v) and -ROUNDING <= v <= 1 + ROUNDING for v in values)
        return all(math.isfinite(v) and v <= ROUNDING for v in values)
    if op in ("loglik", "pll"):
        return math.isfinite(result.logprob) and result.logprob <= ROUNDING
    return True


def lookup(con: duckdb.DuckDBPyConnection, keys: Sequence[str]) -> dict[str, Any]:
    """Cached results for ``keys`` (misses are absent), by one join against an Arrow table.
    An entry that is not :func:`servable` is a miss, and is removed when the file is writable
    (so the request is scored again and its new result cached)."""
    if not keys:
        return {}
    table = pa.table({"key": pa.array(list(dict.fromkeys(keys)), pa.string())})
    con.register("kgp_lookup_keys", table)
    try:
        rows = con.execute("""SELECT c.key, c.op, c.score, c.n_tokens, c.payload::VARCHAR
            FROM kgp_lookup_keys k JOIN score_cache c ON c.key = k.key""").fetchall()
    finally:
        con.unregister("kgp_lookup_keys")
    found = {key: (op, _decode(op, score, n, payload)) for key, op, score, n, payload in rows}
    bad = [key for key, (op, result) in found.items() if not servable(op, result)]
    if bad:
        with contextlib.suppress(duckdb.Error):  # a read-only file: not served all the same
            drop_cache(con, bad)
    dropped = set(bad)
    return {key: result for key, (_, result) in found.items() if key not in dropped}


def _encode(op: str, result: Any) -> tuple[float | None, int | None, str | None]:
    if op == "generate":
        return None, int(result.n_tokens), json.dumps(result.as_record(), ensure_ascii=False)
    if op in LIST_OPS:
        return None, None, json.dumps([[str(t), float(p)] for t, p in result],
                                      ensure_ascii=False)
    return float(result.logprob), int(result.n_tokens), None


def commit(con: duckdb.DuckDBPyConnection, *, run_id: str = "", probe: str = "",
           cache_rows: Sequence[tuple[str, str, str, Any]] = (),
           scores: Sequence[ScoreRow] = (), responses: Sequence[ResponseRow] = (),
           generations: Sequence[GenerationRow] = (), wall_s: float | None = None,
           replace: bool = False) -> None:
    """Write one chunk in ONE transaction: cache entries ``(key, model, op, result)``, score,
    response and generation rows of ``run_id``/``probe``, and, when given, the run's
    ``wall_s`` so far.

    A cache entry that exists is kept (its key fixes its content) unless ``replace``
    (``--no-cache``). A score or response row whose primary key exists is replaced when its
    values differ (e.g. an instance's fields changed on re-export) and skipped when they are the
    same (a resumed or repeated run). Nothing is ever duplicated.
    """
    with transaction(con):
        write_cache(con, [CacheRow(k, m, op, *_encode(op, r)) for k, m, op, r in cache_rows],
                    replace=replace)
        write_scores(con, [(run_id, probe, *r[:4], r.label, r.prompt, r.score, r.n_tokens,
                            r.n_chars, r.baseline) for r in scores], upsert=True)
        write_responses(con, [(run_id, probe, *r) for r in responses], upsert=True)
        write_generations(con, [(run_id, probe, *r) for r in generations], upsert=True)
        if wall_s is not None:
            record_progress(con, run_id, wall_s)
