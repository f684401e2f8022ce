"""The data of the HTML report's instance browser: every prediction of the chosen runs, with
its instance and the instance's provenance, packed small.

The predictions are the rows of ``eval/html/predictions.sql`` (one per run, instance and
prompt: the candidates with their scores, the model's answer, the prompt text, right or wrong);
the instances come with their gold answers and their provenance (``instance_provenance``,
written by the export: the SPARQL bindings and the triples behind the instance, with the named
graph of each), their generated answers under the generate runs (``gens``,
eval.html_agreement) and, for a ParaRel run, their answer under every pattern (``pararel``,
eval.html_pararel). Everything is packed column-wise, with repeated strings (candidates, answers,
prompts) replaced by indices into one string table, then gzip-compressed and base64-encoded
(:func:`pack`); the page decompresses it with the browser's own ``DecompressionStream`` (no
library, no network). 10,000 instances x 3 prompts x 2 models fit in about 2 MB
(scripts/bench_html.py measures it).

>>> from probes.results import connect
>>> data = browser_data(connect(":memory:"), {})
>>> data["rows"]["run"], data["runs"]
([], [])
>>> import base64, gzip, json
>>> json.loads(gzip.decompress(base64.b64decode(pack({"a": [1]}))))
{'a': [1]}
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from eval.html_agreement import generation_data
from eval.html_pararel import pararel_data

PREDICTIONS = Path(__file__).with_name("html") / "predictions.sql"


class Strings:
    """A string table: each distinct string once, referred to by its index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, value: Any) -> int:
        """The index of ``value`` (None: -1).

        >>> s = Strings(); [s("a"), s("b"), s("a"), s(None)], s.items
        ([0, 1, 0, -1], ['a', 'b'])
        """
        if value is None:
            return -1
        text = str(value)
        at = self._index.get(text)
        if at is None:
            at = self._index[text] = len(self.items)
            self.items.append(text)
        return at


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                        [name]).fetchone()
    return bool(found and found[0])


def _score(v: float | None) -> float | None:
    """A score as shown (4 significant digits keep the ranks readable and the file small).

    >>> _score(-12.345678), _score(0.000123456), _score(None), _score(float("-inf"))
    (-12.35, 0.0001235, None, None)
    """
    return None if v is None or not math.isfinite(v) else float(f"{v:.4g}")


def _instances(con: duckdb.DuckDBPyConnection, wanted: set[tuple[str, str, str]],
               strings: Strings) -> tuple[dict[tuple[str, str, str], int], dict[str, list[Any]]]:
    provenance = _has_table(con, "instance_provenance")
    query = ("SELECT i.probe, i.split, i.instance_id, i.target, i.gold, "
             + ("p.bindings::VARCHAR, p.triples::VARCHAR FROM instances i LEFT JOIN "
                "instance_provenance p USING (probe, split, instance_id)" if provenance
                else "NULL, NULL FROM instances i")
             + " ORDER BY i.probe, i.split, i.instance_id")
    cols: dict[str, list[Any]] = {k: [] for k in ("probe", "split", "id", "target", "gold",
                                                  "bindings", "triples")}
    index: dict[tuple[str, str, str], int] = {}
    for probe, split, iid, target, gold, bindings, triples in con.execute(query).fetchall():
        if (probe, split, iid) not in wanted:
            continue
        index[(probe, split, iid)] = len(cols["id"])
        cols["probe"].append(strings(probe))
        cols["split"].append(strings(split))
        cols["id"].append(iid)
        cols["target"].append(strings(target))
        cols["gold"].append([strings(g) for g in gold or []])
        cols["bindings"].append(json.loads(bindings) if bindings else None)
        cols["triples"].append(json.loads(triples) if triples else None)
    return index, cols


def browser_data(con: duckdb.DuckDBPyConnection, runs: Mapping[str, dict[str, Any]]
                 ) -> dict[str, Any]:
    """The browser's data for ``runs`` (run id -> {model, label, probe, templates}): the runs,
    the predictions column-wise (``rows``), their instances (``instances``) and the string
    table (``strings``)."""
    strings = Strings()
    run_ids = list(runs)
    at = {r: i for i, r in enumerate(run_ids)}
    rows: dict[str, list[Any]] = {k: [] for k in ("run", "inst", "prompt", "right", "answer",
                                                  "text", "cands", "scores")}
    found = con.execute(PREDICTIONS.read_text(encoding="utf-8")).fetchall() if run_ids else []
    found = sorted((r for r in found if r[0] in at), key=lambda r: (r[1], r[2], r[3], r[0], r[4]))
    index, instances = _instances(con, {(r[1], r[2], r[3]) for r in found}, strings)
    for r in found:
        (run_id, probe, split, iid, prompt_id, cands, scores, _ranks, answer, text,
         right) = r
        key = (probe, split, iid)
        if key not in index:
            continue
        rows["run"].append(at[run_id])
        rows["inst"].append(index[key])
        rows["prompt"].append(prompt_id)
        rows["right"].append(1 if right else 0)
        rows["answer"].append(strings(answer))
        rows["text"].append(strings(text))
        rows["cands"].append([strings(c) for c in cands])
        rows["scores"].append([_score(s) for s in scores])
    return {"runs": [{"id": r, **runs[r]} for r in run_ids], "rows": rows,
            "instances": instances,
            "gens": generation_data(con, at, index, strings),
            "pararel": pararel_data(con, runs, at, index, strings),
            "strings": strings.items}


def pack(data: Any) -> str:
    """``data`` as compact JSON, gzip-compressed (level 9, no time stamp) and base64-encoded."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                     default=str).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
