"""The results file: a DuckDB database with instances, runs, scores, responses, human answers.

>>> con = connect(":memory:")
>>> tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
>>> sorted(r[0] for r in tables)  # doctest: +NORMALIZE_WHITESPACE
['human_responses', 'instances', 'model_vocab', 'probe_exports', 'responses', 'runs',
 'score_cache', 'scores']
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import duckdb

from kg import config
from probes.errors import ResultsError

SCHEMA = Path(__file__).with_name("schema.sql")


def diagnose(path: Path, error: Exception | None = None) -> str:
    """What is wrong with the results file at ``path``: one sentence naming the fix."""
    if path.is_dir():
        return (f"the results path {path} is a folder, not a file; point --results (or "
                "KGPROBE_RESULTS) at a file such as results.duckdb")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        return f"{parent} is a file, so it cannot hold the results file {path.name}"
    if not parent.exists():
        return (f"the folder {parent} of the results file does not exist and cannot be "
                "created; create it or choose another --results path")
    if path.exists():
        with contextlib.suppress(OSError), path.open("rb") as fh:
            head = fh.read(16)
            if len(head) < 12 or head[8:12] != b"DUCK":
                return (f"{path} is not a DuckDB file (it starts with {head[:8]!r}); point "
                        "--results at a kgprobe results file, or move this file away")
        if not os.access(path, os.W_OK):
            return (f"the results file {path} is read-only; make it writable (chmod u+w) or "
                    "write to another file with --results PATH")
    elif not os.access(parent, os.W_OK):
        return (f"the folder {parent} is read-only, so the results file cannot be created "
                "there; choose another --results path")
    detail = str(error).splitlines()[0] if error else "unknown error"
    if error is not None and re.search(r"Could not set lock|Conflicting lock|lock on file",
                                       str(error), re.IGNORECASE):
        pid = re.search(r"PID (\d+)", str(error))
        who = f"process {pid.group(1)}" if pid else "another process"
        return (f"the results file {path} is locked by {who}; wait for it to finish or stop "
                "it, or write to another file with --results PATH")
    return (f"the results file {path} is damaged ({detail}); move it away and re-export "
            "(python -m probes.export) and re-run, or restore a copy")


def connect(path: str | Path | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and create if needed) the results file. A file that cannot be used gives a
    ResultsError saying what is wrong (a folder, read-only, not DuckDB, damaged, locked)."""
    path = str(path or config.results_path())
    if path != ":memory:":
        if read_only and not Path(path).exists():
            raise ResultsError(f"no results file at {path}: run `python -m probes.export` first "
                               "(or point --results / KGPROBE_RESULTS at the right file).")
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ResultsError(f"{diagnose(Path(path), e)}. Nothing was written.") from e
    try:
        con = duckdb.connect(path, read_only=read_only)
        if not read_only:
            con.execute(SCHEMA.read_text(encoding="utf-8"))
            # Read every table once, so a damaged file fails here, not after a run reports.
            for table in ("instances", "runs", "score_cache"):
                con.execute(f"SELECT count(*) FROM {table}").fetchall()
    except duckdb.Error as e:
        if path == ":memory:":
            raise
        raise ResultsError(f"{diagnose(Path(path), e)}. Nothing was written.") from e
    return con
