"""The instance browser's ParaRel view (issue 47 point 5): a fact of a ``pararel/*`` run opens
to its answer under every pattern (the pattern's text, the model's top candidate, right or
wrong, and whether it is the fact's majority answer) and the fact's consistency.

The answers and the consistency are those of eval/pararel/_views.sql (``pararel_answers``: the
best-scored candidate, a tie to the earlier candidate; ``pararel_facts``: the share of the
fact's graph edges whose two patterns agree, patterns failing the authors' a/an filter
skipped), run here, so the page shows what ``kgprobe pararel report`` counts. The majority
answer of a fact is the answer the model gives under most of its patterns (a tie: the one met
first in pattern order), :func:`majority`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from eval.sqlfile import metric_cursor, run_support

VIEWS = Path(__file__).with_name("pararel") / "_views.sql"


def majority(answers: Sequence[str]) -> str | None:
    """The most frequent answer, a tie to the one met first; None without answers.

    >>> majority(["Paris", "Rome", "Rome", "Paris"]), majority(["a", "b", "b"]), majority([])
    ('Paris', 'b', None)
    """
    if not answers:
        return None
    counts = Counter(answers)
    top = max(counts.values())
    return next(a for a in answers if counts[a] == top)


def pararel_data(con: duckdb.DuckDBPyConnection, runs: Mapping[str, Mapping[str, Any]],
                 run_at: Mapping[str, int], inst_at: Mapping[tuple[str, str, str], int],
                 strings: Any) -> dict[str, dict[str, Any]]:
    """Per ``"<run index>/<instance index>"`` of the browser's ParaRel runs: ``patterns`` (one
    ``[prompt id, pattern, answer, right, agrees with the majority, skipped by the a/an
    filter]`` per pattern, strings as indices into ``strings``), ``majority``,
    ``consistency`` (None without an edge that passes the filter) and ``pairs``."""
    wanted = sorted(r for r in run_at if str(runs[r].get("probe", "")).startswith("pararel/"))
    if not wanted or not inst_at:
        return {}
    with metric_cursor(con) as cur:
        run_support(cur, [VIEWS])
        answers = cur.execute(
            "SELECT run_id, probe, split, instance_id, prompt_id, pattern, pred, correct, skip "
            "FROM pararel_answers WHERE run_id IN (SELECT unnest(?)) ORDER BY ALL",
            [wanted]).fetchall()
        facts = {(r[0], r[1], r[2], r[3]): (r[4], r[5]) for r in cur.execute(
            "SELECT run_id, probe, split, instance_id, consistency, pairs FROM pararel_facts "
            "WHERE run_id IN (SELECT unnest(?))", [wanted]).fetchall()}
    by: dict[tuple[str, str, str, str], list[tuple[Any, ...]]] = {}
    for run_id, probe, split, iid, pid, pattern, pred, correct, skip in answers:
        by.setdefault((run_id, probe, split, iid), []).append((pid, pattern, pred, correct, skip))
    out: dict[str, dict[str, Any]] = {}
    for key, rows in by.items():
        inst = inst_at.get(key[1:])
        if inst is None:
            continue
        top = majority([str(r[2]) for r in rows])
        consistency, pairs = facts.get(key, (None, 0))
        out[f"{run_at[key[0]]}/{inst}"] = {
            "patterns": [[pid, strings(pattern), strings(pred), int(bool(correct)),
                          int(str(pred) == top), int(bool(skip))]
                         for pid, pattern, pred, correct, skip in rows],
            "majority": strings(top), "pairs": int(pairs or 0),
            "consistency": None if consistency is None else round(float(consistency), 4)}
    return out
