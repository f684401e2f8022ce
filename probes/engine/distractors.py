"""Distractors drawn in Python from a pool the probe query selects (header ``distractors:``).

The SPARQL idiom of ``queries/examples/choice-distractors.rq`` draws the k distractors of each
target with the smallest ``MD5(CONCAT(target, "|", candidate, "|", seed))`` by a self-join, a
cost of (targets x pool)² string comparisons: 200 WordNet targets and a pool of 230 words took
minutes (issue 30 point 7). With the header option

    # distractors: {pool: "?word", n: 4, seed: 42}

the query selects the targets with their gold in some rows and the pool in others (a
``UNION`` branch that binds only ``?word``), and the export draws, per target, the ``n`` pool
words with the smallest ``md5("<target>|<word>|<seed>")`` among the words that are not one of
its gold answers: the same draw as the idiom, at (targets x pool) hashes. The candidates are
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
from typing import Any

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


def add_candidates(records: list[dict[str, Any]], pool: list[str], spec: Any) -> int:
    """Set each record's candidates (``spec.candidates``' variable) to its gold answers and
    its drawn distractors, sorted; returns how many records got fewer than ``n``."""
    opt: Distractors = spec.distractors
    target = spec.target[1:]
    short = 0
    for r in records:
        r.pop(opt.pool[1:], None)
        gold = [str(x) for g in spec.gold for x in _values(r.get(g[1:]))]
        drawn = draw(str(r.get(target)), gold, pool, opt.n, opt.seed)
        short += len(drawn) < opt.n
        r[spec.candidates[1:]] = sorted(set(gold) | set(drawn))
    return short


def _values(v: Any) -> list[Any]:
    if v is None:
        return []
    return list(v) if isinstance(v, list) else [v]
