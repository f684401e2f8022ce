"""Writing one COPEN run (zero-shot part or trained model) to the results file: its ``runs``
row and its ``scores`` rows, replacing an earlier run of the same id in one transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from probes.copen import TASK_OF

SCORE_COLUMNS = ["run_id", "probe", "split", "instance_id", "prompt_id", "candidate", "label",
                 "prompt", "score", "n_tokens"]


def replace_run(con: duckdb.DuckDBPyConnection, *, rid: str, model: str, revision: str | None,
                kind: str, probe: str, config: dict[str, Any], describe: dict[str, Any],
                batch_size: int | None, wall_s: float, rows: Sequence[tuple]) -> None:
    """Replace run ``rid``: one ``runs`` row (status done) and ``rows`` as its scores, each
    ``(run_id, probe, split, instance_id, prompt_id, candidate, label, prompt, score,
    n_tokens)``. Nothing is written if any step fails."""
    now = datetime.now(UTC).replace(tzinfo=None)
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM scores WHERE run_id = ?", [rid])
        con.execute("DELETE FROM runs WHERE run_id = ?", [rid])
        con.execute("""INSERT INTO runs (run_id, model, revision, backend, task, probe, config,
                       dtype, device, batch_size, started_at, finished_at, wall_s, status,
                       requests, cache_hits)
                       VALUES (?, ?, ?, ?, ?, ?, ?::JSON, ?, ?, ?, ?, ?, ?, 'done', ?, 0)""",
                    [rid, model, revision, kind, TASK_OF[probe], probe,
                     json.dumps(config, default=str), describe.get("dtype"),
                     describe.get("device"), batch_size, now, now, wall_s, len(rows)])
        if rows:
            table = pa.table([list(c) for c in zip(*rows, strict=True)], names=SCORE_COLUMNS)
            con.register("kgp_copen_rows", table)
            con.execute(f"""INSERT INTO scores ({", ".join(SCORE_COLUMNS)})
                            SELECT * FROM kgp_copen_rows""")
            con.unregister("kgp_copen_rows")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
