"""Python functions that the metric files call as DuckDB scalar functions.

:func:`eval.sqlfile.run_metric` registers them on the connection before it runs a metric (see
:func:`register`). In the plain DuckDB CLI they do not exist: a metric that uses one (e.g.
``eval/semrel/semrel_prototypicality.sql`` through ``list_edit_distance``) runs only from
Python (``python -m eval.report --metrics eval/semrel``) or after registering them yourself.

>>> import duckdb
>>> con = duckdb.connect()
>>> register(con); register(con)        # idempotent
>>> con.execute("SELECT list_edit_distance(['a', 'b', 'c'], ['a', 'x', 'c'])").fetchone()
(2,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb

from eval import answers
from eval.intervals import instance_interval


def list_edit_distance(a: Sequence[str] | None, b: Sequence[str] | None) -> int | None:
    """Edit distance between two word sequences: insertion and deletion cost 1, substitution 2
    (so it equals ``len(a) + len(b) - 2 * LCS(a, b)``); ``None`` when either is ``None``.

    >>> list_edit_distance(["a", "b"], ["b", "a"]), list_edit_distance([], ["a", "b"])
    (2, 2)
    >>> list_edit_distance(["dog", "cat", "pet"], ["cat", "dog", "pet"])
    2
    >>> list_edit_distance(["x"], ["y"]), list_edit_distance(["x", "y"], ["x", "y"])
    (2, 0)
    """
    if a is None or b is None:
        return None
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (0 if x == y else 2))
        prev = cur
    return prev[-1]


def instance_ci(values: Sequence[float] | None) -> list[float] | None:
    """The 95 % interval over instances of the mean of one value per instance
    (:func:`eval.intervals.instance_interval`: Wilson where each is 0 or 1, else the percentile
    bootstrap over instances) as ``[low, high]``; None for no values.

    >>> [round(v, 4) for v in instance_ci([1.0, 1.0])]  # Wilson: 2 / (2 + 1.96^2) to 1
    [0.3424, 1.0]
    >>> instance_ci([0.5, 0.5]), instance_ci([])
    ([0.5, 0.5], None)
    """
    ci, _ = instance_interval(values or [])
    return None if ci is None else [ci[0], ci[1]]


def instance_ci_method(values: Sequence[float] | None) -> str | None:
    """The method :func:`instance_ci` used on ``values`` (``Wilson`` or ``cluster
    bootstrap``); None for no values."""
    return instance_interval(values or [])[1]


#: name -> (function, parameter types, return type)
FUNCTIONS: dict[str, tuple[Callable[..., object], list[str], str]] = {
    "list_edit_distance": (list_edit_distance, ["VARCHAR[]", "VARCHAR[]"], "INTEGER"),
    # generated answers (eval.answers, docs/generate.md)
    "answer_normalize": (answers.normalize_answer, ["VARCHAR"], "VARCHAR"),
    "answer_contains": (answers.contains_answer, ["VARCHAR", "VARCHAR"], "BOOLEAN"),
    "answer_f1": (answers.token_f1, ["VARCHAR", "VARCHAR"], "DOUBLE"),
    "answer_not_attempted": (answers.not_attempted, ["VARCHAR", "VARCHAR[]"], "BOOLEAN"),
    # the interval over instances of a mean of per-instance values (eval.intervals)
    "instance_ci": (instance_ci, ["DOUBLE[]"], "DOUBLE[]"),
    "instance_ci_method": (instance_ci_method, ["DOUBLE[]"], "VARCHAR"),
}


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register :data:`FUNCTIONS` on ``con`` (skipping those it already has)."""
    have = {r[0] for r in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name IN "
        f"({', '.join('?' for _ in FUNCTIONS)})", list(FUNCTIONS)).fetchall()}
    for name, (fn, params, ret) in FUNCTIONS.items():
        if name not in have:
            con.create_function(name, fn, [duckdb.type(p) for p in params], duckdb.type(ret))
