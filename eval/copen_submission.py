"""Test predictions in the format the COPEN leaderboard (CodaLab competition 8542) takes.

The released test files hide their labels, so test accuracy comes only from the leaderboard.
As the authors' ``get_submissions`` writes them (``code/finetuning/utils.py``), one JSON list
per task, items in the test file's order:

- ``csj_submissions.json``: ``{"id": <item id>, "prediction": <the predicted candidate's id>}``
- ``cpj_submissions.json``: ``{"id": ..., "prediction": 1 | 0}`` (true / false)
- ``cic_submissions.json``: ``{"id": ..., "prediction": <the candidate string as the file
  writes it>}``

The prediction is the best-scoring option of the chosen run: zero-shot with the part Table 8
uses for the model (:func:`eval.copen_table8.table8_part`; ``parts`` overrides per task), or a
linear-probing / fine-tuning run when the model has no zero-shot run. A tie goes to the
earliest candidate in the test file (CPJ: false), as the metrics break it
(``eval/copen/_views.sql``, ``copen_predictions``).

>>> best({"a": -2.0, "b": -1.0, "c": -1.0})
'b'
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import duckdb

from eval.copen_table8 import table8_part
from kg import options
from probes.results import ProbeError, connect

FILES = {"csj": "csj_submissions.json", "cpj": "cpj_submissions.json",
         "cic": "cic_submissions.json"}
PROBES = {task: f"copen/{task}" for task in FILES}
"""Task -> its probe name in the results file (as :data:`probes.benchmarks.copen.PROBES` writes
it)."""


def best(scores: dict[str, float], order: list[str] | None = None) -> str:
    """The best option; a tie goes to the first option of ``order`` (else of ``scores``), as
    the authors' code breaks ties (CSJ, CiC: the earliest candidate in the file; CPJ: false).

    >>> best({"b": -1.0, "a": -1.0, "c": -2.0}, ["c", "a", "b"])
    'a'
    """
    top = max(scores.values())
    ranked = [o for o in order or [] if o in scores] + [o for o in scores if o not in
                                                         (order or [])]
    return next(o for o in ranked if scores[o] == top)


def _pick_run(con: duckdb.DuckDBPyConnection, model: str, task: str,
              part: str | None) -> tuple[str, str]:
    rows = con.execute("""SELECT run_id, config::VARCHAR FROM runs
                          WHERE model = ? AND probe = ? AND status = 'done'
                          ORDER BY finished_at DESC""", [model, PROBES[task]]).fetchall()
    if not rows:
        raise ProbeError(f"no finished COPEN {task} run of model {model!r} in the results file; "
                         "run `python -m probes.benchmarks.copen zero-shot --model ...` first")
    zero = []
    for rid, cfg in rows:
        c = (json.loads(cfg).get("runtime") or {}).get("copen") or {}
        if c.get("method", "zero-shot") == "zero-shot" and c.get("context", True):
            zero.append((rid, c))
    if not zero:
        return rows[0][0], "trained run"
    want = part or table8_part(zero[0][1].get("model_type"), zero[0][1].get("kind", ""), task)
    for rid, c in zero:
        if c.get("part") == want:
            return rid, f"zero-shot, part {want}"
    raise ProbeError(f"model {model!r} has no zero-shot {task} run of part {want!r}; score "
                     "every part with `python -m probes.benchmarks.copen zero-shot`")


def predictions(con: duckdb.DuckDBPyConnection, model: str, task: str, split: str = "test",
                part: str | None = None) -> list[dict[str, Any]]:
    """The submission items of one task."""
    rid, _ = _pick_run(con, model, task, part)
    scores: dict[str, dict[str, float]] = {}
    for iid, cand, label, score in con.execute(
            """SELECT instance_id, candidate, coalesce(label, candidate),
                      avg(score / greatest(n_tokens, 1))
               FROM scores WHERE run_id = ? AND split = ? GROUP BY ALL ORDER BY ALL""",
            [rid, split]).fetchall():
        key = label if task == "cpj" else cand
        prev = scores.setdefault(iid, {}).get(key)
        scores[iid][key] = score if prev is None else max(prev, score)
    out = []
    for iid, fields_json, candidates in con.execute(
            """SELECT instance_id, fields::VARCHAR, candidates FROM instances
               WHERE probe = ? AND split = ?
               ORDER BY CAST(split_part(json_extract_string(fields, '$.source'), ':', 2) AS INT)
            """, [PROBES[task], split]).fetchall():
        fields = json.loads(fields_json)
        if iid not in scores:
            raise ProbeError(f"instance {fields.get('source')} of {task} {split} has no score "
                             f"in run {rid}; score the whole split first")
        choice = best(scores[iid], ["false", "true"] if task == "cpj" else list(candidates))
        if task == "csj":
            names = fields.get("candidate_names") or []
            ids = fields["candidate_ids"]
            pred: Any = ids[names.index(choice)] if choice in names else choice
        elif task == "cpj":
            pred = 1 if choice == "true" else 0
        else:
            pred = (fields.get("raw_candidates") or {}).get(choice, choice)
        out.append({"id": fields.get("id") or fields.get("source"), "prediction": pred})
    return out


def write_submission(con: duckdb.DuckDBPyConnection, model: str, out: Path, split: str = "test",
                     parts: dict[str, str] | None = None) -> list[tuple[Path, int]]:
    """Write the three submission files (tasks with instances of ``split``) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for task, name in FILES.items():
        have = con.execute("SELECT count(*) FROM instances WHERE probe = ? AND split = ?",
                           [PROBES[task], split]).fetchone()
        if not have or not have[0]:
            continue
        items = predictions(con, model, task, split, (parts or {}).get(task))
        path = out / name
        path.write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append((path, len(items)))
    if not written:
        raise ProbeError(f"no COPEN instances of split {split!r} in the results file; load the "
                         "released files first")
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe copen submission`` / ``python -m probes.benchmarks.copen
    submission``."""
    parser.description = "Write test predictions in the COPEN leaderboard format."
    parser.add_argument("--model", "-m", required=True, help="model name as stored in runs")
    parser.add_argument("--out", type=Path, required=True, help="folder for task{1,2,3}.json")
    parser.add_argument("--split", default="test", help="split to predict (default test)")
    parser.add_argument("--part", action="append", metavar="TASK=PART",
                        help="zero-shot part to use, e.g. csj=query (default: Table 8's)")
    options.add_results(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Write the files; print what was written."""
    con = connect(args.results, read_only=True)
    try:
        written = write_submission(con, args.model, args.out, split=args.split,
                                   parts=dict(p.split("=", 1) for p in args.part or []))
    finally:
        con.close()
    for path, n in written:
        print(f"wrote {n:,} predictions to {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.copen_submission", add_arguments, argv)


if __name__ == "__main__":
    raise SystemExit(main())
