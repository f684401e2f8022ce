"""The results contract: the one module that owns the results file (a DuckDB database).

It holds the schema (``schema.sql``: instances, runs, prompts, scores, responses, human
answers, the score cache, the instances' provenance), :func:`connect` (which creates a file
or upgrades an older one, and hands out a connection on which a write to these tables from
code outside this package raises: :mod:`probes.results.guard`),
:func:`transaction`, the typed writers of :mod:`probes.results.writers`, and the names that
``eval`` needs (:data:`TASKS`, the errors), so that ``eval`` imports this package and nothing
else from ``probes``. It imports no other ``probes`` module and no torch. The contract (tables,
columns, grain) is described in docs/results.md.

>>> con = connect(":memory:")
>>> tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
>>> sorted(r[0] for r in tables)  # doctest: +NORMALIZE_WHITESPACE
['generations', 'gold_forms', 'hidden_items', 'hidden_shards', 'human_responses',
 'instance_provenance', 'instances', 'layer_predictions', 'layer_probes', 'model_vocab',
 'probe_exports', 'prompts', 'responses', 'runs', 'score_cache', 'scores']
>>> with transaction(con):
...     _ = con.execute("INSERT INTO probe_exports VALUES ('p', 'h', now())")
>>> try:
...     with transaction(con):
...         _ = con.execute("DELETE FROM probe_exports")
...         raise KeyError("boom")
... except KeyError:
...     pass
>>> con.execute("SELECT count(*) FROM probe_exports").fetchone()[0]
1
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import duckdb

from kg import config
from kg.errors import UserError
from kg.errors import disk_error as disk_error  # kgprobe's one reader of a full disk
from probes.results.guard import GuardedConnection
from probes.results.guard import WriteOutsideContract as WriteOutsideContract
from probes.results.upgrade import upgrade

SCHEMA = Path(__file__).with_name("schema.sql")

TASKS = ("relatum", "choice", "binary", "subsumption", "records", "generate", "probing")
"""The probe tasks a run can have (``runs.task``; a metric file's ``-- tasks:``)."""


class ProbeError(UserError):
    """Base class of kgprobe's probe-layer errors (probes.engine.errors re-exports it; it lives here
    so that eval, which imports only this package from probes, can catch it). A command reports
    one as a single ``error:`` line (``kg.options.call_handler``)."""


class ResultsError(ProbeError):
    """The results file cannot be opened or written."""


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """``BEGIN`` ... ``COMMIT`` around the block; ``ROLLBACK`` (and the error goes on) when the
    block raises anything, so nothing of it is written."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def sql_path(path: Path) -> str:
    """``path`` as a SQL string literal (for ``ATTACH``).

    >>> sql_path(Path("/r/it's.duckdb"))
    "'/r/it''s.duckdb'"
    """
    return "'" + str(path).replace("'", "''") + "'"


def diagnose(path: Path, error: Exception | None = None) -> str:
    """What is wrong with the results file at ``path``: one sentence naming the fix. A full
    disk (:func:`disk_error`) is named as such: the file is not damaged."""
    disk = disk_error(error)
    if disk is not None:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        return (f"{disk} where the results file {path} lives ({detail}); the file is not "
                "damaged: free space (or point --results at another disk) and run the command "
                "again")
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
            "(python -m probes.engine.export) and re-run, or restore a copy")


def connect(path: str | Path | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and create if needed) the results file. A file that cannot be used gives a
    ResultsError saying what is wrong (a folder, read-only, not DuckDB, damaged, locked). The
    connection is guarded: only the contract's writers may write the result tables
    (:mod:`probes.results.guard`)."""
    path = str(path or config.results_path())
    if path != ":memory:":
        if read_only and not Path(path).exists():
            raise ResultsError(f"no results file at {path}: run `python -m probes.engine.export` "
                               f"first "
                               "(or point --results / KGPROBE_RESULTS at the right file).")
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ResultsError(f"{diagnose(Path(path), e)}. Nothing was written.") from e
    try:
        con = duckdb.connect(path, read_only=read_only)
        if not read_only:
            con.execute(SCHEMA.read_text(encoding="utf-8"))
            upgrade(con, SCHEMA.read_text(encoding="utf-8"))
            # Read every table once, so a damaged file fails here, not after a run reports.
            for table in ("instances", "runs", "score_cache"):
                con.execute(f"SELECT count(*) FROM {table}").fetchall()
    except duckdb.Error as e:
        if path == ":memory:":
            raise
        raise ResultsError(f"{diagnose(Path(path), e)}. Nothing was written.") from e
    if read_only:
        _require_current(con, path)
    # the connection behind the contract's guard: a write to a result table from code outside
    # probes.results raises (probes.results.guard); it is a DuckDB connection in all else
    return cast(duckdb.DuckDBPyConnection, GuardedConnection(con))


def _require_current(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """A read-only connection cannot upgrade: an older file is an error saying how to."""
    have = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables").fetchall()}
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'runs'").fetchall()}
    if "runs" in have and ("prompts" not in have or "method" not in cols):
        con.close()
        raise ResultsError(f"the results file {path} was written by an older kgprobe and lacks "
                           "the prompts table or the runs settings columns; open it once for "
                           "writing to upgrade it: python -m probes.results upgrade " + path)
