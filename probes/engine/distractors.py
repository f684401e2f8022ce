"""Distractors drawn at export from a pool the probe query selects (header ``distractors:``).

The SPARQL idiom of ``queries/examples/choice-distractors.rq`` draws the k distractors of each
target with the smallest ``MD5(CONCAT(target, "|", candidate, "|", seed))`` by a self-join, a
cost of (targets x pool)² string comparisons: 200 WordNet targets and a pool of 230 words took
minutes (issue 30 point 7). With the header option

    # distractors: {pool: "?word", n: 4, seed: 42}

the query selects the targets with their gold in some rows and the pool in others (a
``UNION`` branch that binds only ``?word``), and the export draws, per target, the ``n`` pool
words with the smallest ``md5("<target>|<word>|<seed>")`` among the words that are not one of
its gold answers: the same draw as the idiom, at (targets x pool) hashes, computed and ranked
in one DuckDB query (:func:`draw_many`; 100 targets x 117,798 WordNet nouns, 11.8 M hashes:
3.3 CPU s, where :func:`draw` in Python takes 0.57 CPU s per target). The candidates are
the gold answers and the drawn words, sorted (the idiom's ``ORDER BY ?candidate``). The seed is
part of the header, so the export's probe-file hash and every run's record keep it.

>>> pool = ["bird", "fish", "tool", "tree", "fruit"]
>>> draw("robin", ["bird"], pool, 2, 42) == sorted(
...     [w for w in pool if w != "bird"],
...     key=lambda w: (hashlib.md5(f"robin|{w}|42".encode()).hexdigest(), w))[:2]
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator


class Distractors(BaseModel):
    """The ``distractors:`` header option: the pool variable, how many to draw, the seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool: str
    n: int = Field(ge=1, le=1000)
    seed: int = 42

    @field_validator("pool")
    @classmethod
    def _var(cls, v: str) -> str:
        name = v[1:] if v.startswith("?") else v
        if not name.isidentifier():
            raise ValueError(f"pool {v!r} must be a variable such as ?word")
        return f"?{name}"


def draw(target: str, gold: list[str], pool: list[str], n: int, seed: int) -> list[str]:
    """The ``n`` words of ``pool`` not in ``gold`` with the smallest
    ``md5("<target>|<word>|<seed>")`` (hex; ties by the word), in that order."""
    excluded = set(gold)
    keyed = sorted((hashlib.md5(f"{target}|{w}|{seed}".encode()).hexdigest(), w)
                   for w in set(pool) if w not in excluded)
    return [w for _, w in keyed[:n]]


def split_pool(rows: list[dict[str, Any]], pool_var: str) -> tuple[list[dict[str, Any]],
                                                                   list[str]]:
    """The query's rows without the pool's rows, and the pool (distinct, sorted): a row that
    binds the pool variable is a pool row."""
    name = pool_var[1:]
    pool = sorted({str(r[name]) for r in rows if r.get(name) is not None})
    return [r for r in rows if r.get(name) is None], pool


PAIRS_PER_QUERY = 4_000_000
"""Targets x pool words hashed per DuckDB query of :func:`draw_many` (a progress tick each)."""


def draw_many(targets: list[tuple[str, list[str]]], pool: list[str], n: int, seed: int,
              tick: Callable[[int], None] | None = None) -> list[list[str]]:
    """:func:`draw` for each (target, gold) of ``targets``, in one DuckDB query: the targets x
    pool hashes are computed and ranked in DuckDB's vectorised engine on every core (the same
    ``md5`` of the same UTF-8 text, the same order: hash, then word), keeping per target the
    ``n`` plus (most gold answers of a target) smallest, from which each target's own gold is
    then dropped. ``tick(done)`` hears of the distinct targets drawn for so far.

    >>> pool = ["bird", "fish", "tool", "tree", "fruit"]
    >>> draw_many([("robin", ["bird"]), ("oak", [])], pool, 2, 42) == [
    ...     draw("robin", ["bird"], pool, 2, 42), draw("oak", [], pool, 2, 42)]
    True
    """
    if not targets:
        return []
    words = sorted(set(pool))
    if not words:
        return [[] for _ in targets]
    distinct = list(dict.fromkeys(t for t, _ in targets))
    keep = n + max(len(set(g)) for _, g in targets)
    batch = max(1, PAIRS_PER_QUERY // len(words))
    got: list[tuple[int, list[str]]] = []
    con = duckdb.connect()
    try:
        con.register("pool", pa.table({"word": words}))
        for start in range(0, len(distinct), batch):
            part = distinct[start:start + batch]
            con.register("targets", pa.table({"i": range(start, start + len(part)),
                                              "target": part}))
            got += con.execute(
                "SELECT i, min_by(word, md5(target || '|' || word || '|' || $seed) || word, "
                "$keep) FROM targets, pool GROUP BY i", {"seed": str(seed), "keep": keep}
            ).fetchall()
            if tick is not None:
                tick(start + len(part))
    finally:
        con.close()
    ranked = {distinct[i]: list(ws) for i, ws in got}
    out = []
    for target, gold in targets:
        excluded = set(gold)
        out.append([w for w in ranked[target] if w not in excluded][:n])
    return out


def add_candidates(records: list[dict[str, Any]], pool: list[str], spec: Any,
                   tick: Callable[[int], None] | None = None) -> int:
    """Set each record's candidates (``spec.candidates``' variable) to its gold answers and
    its drawn distractors (:func:`draw_many`), sorted; returns how many records got fewer than
    ``n``. ``tick(done)`` hears how many distinct targets are drawn for."""
    opt: Distractors = spec.distractors
    target = spec.target[1:]
    golds = []
    for r in records:
        r.pop(opt.pool[1:], None)
        golds.append([str(x) for g in spec.gold for x in _values(r.get(g[1:]))])
    drawn_all = draw_many([(str(r.get(target)), gold) for r, gold in zip(records, golds,
                                                                         strict=True)],
                          pool, opt.n, opt.seed, tick)
    short = 0
    for r, gold, drawn in zip(records, golds, drawn_all, strict=True):
        short += len(drawn) < opt.n
        r[spec.candidates[1:]] = sorted(set(gold) | set(drawn))
    return short


def _values(v: Any) -> list[Any]:
    if v is None:
        return []
    return list(v) if isinstance(v, list) else [v]
