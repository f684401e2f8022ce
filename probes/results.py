"""The results file: a DuckDB database with instances, runs, scores, responses, human answers.

>>> con = connect(":memory:")
>>> sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
['human_responses', 'instances', 'model_vocab', 'responses', 'runs', 'score_cache', 'scores']
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from kg import config
from probes.errors import ResultsError

SCHEMA = Path(__file__).with_name("schema.sql")


def connect(path: str | Path | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and create if needed) the results file; a clear error when another process holds it."""
    path = str(path or config.results_path())
    if path != ":memory:":
        if read_only and not Path(path).exists():
            raise ResultsError(f"no results file at {path}: run `python -m probes.export` first "
                               "(or point --results / KGPROBE_RESULTS at the right file).")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(path, read_only=read_only)
    except duckdb.IOException as e:
        pid = re.search(r"PID (\d+)", str(e))
        who = f"process {pid.group(1)}" if pid else "another process"
        raise ResultsError(
            f"the results file {path} is locked by {who}; wait for it to finish or stop it, or "
            "write to another file with --results PATH. Nothing was written."
        ) from e
    except duckdb.Error as e:
        raise ResultsError(f"cannot open the results file {path}: {e}. If it is damaged, move it "
                           "away and re-export (python -m probes.export).") from e
    if not read_only:
        con.execute(SCHEMA.read_text(encoding="utf-8"))
    return con
