"""Writing one COPEN run (zero-shot part or trained model) to the results file: its ``runs``
row and its ``scores`` rows, replacing an earlier run of the same id in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from probes.benchmarks.copen import TASK_OF
from probes.results import transaction
from probes.results.writers import Run, delete_run, insert_run, write_scores


def replace_run(con: duckdb.DuckDBPyConnection, *, rid: str, model: str, revision: str | None,
                kind: str, family: str, probe: str, config: dict[str, Any],
                describe: dict[str, Any], batch_size: int | None, wall_s: float,
                rows: Sequence[tuple]) -> None:
    """Replace run ``rid``: one ``runs`` row (status done; ``kind`` the backend's registered
    name, ``family`` the LM family it was scored as) and ``rows`` as its scores, each
    ``(run_id, probe, split, instance_id, prompt_id, candidate, label, prompt, score,
    n_tokens)``. Nothing is written if any step fails."""
    now = datetime.now(UTC).replace(tzinfo=None)
    copen = (config.get("runtime") or {}).get("copen") or {}
    run = Run(run_id=rid, model=model, revision=revision, backend=kind, task=TASK_OF[probe],
              probe=probe, config=config, dtype=describe.get("dtype"),
              device=describe.get("device"), batch_size=batch_size,
              started_at=now - timedelta(seconds=wall_s), finished_at=now, wall_s=wall_s,
              status="done", requests=len(rows), cache_hits=0,
              method=config.get("method"), part=copen.get("part"),
              context=copen.get("context"), seed=copen.get("seed"), family=family)
    with transaction(con):
        delete_run(con, rid, ("scores", "runs"))
        insert_run(con, run)
        write_scores(con, rows)
