"""Combining results files: the finished runs of several files copied into one.

Runs that go in parallel as separate processes (one dataset or one model each, as the K-shot
protocol on a CPU) write separate files, because DuckDB lets one process write a file at a
time. ``python -m probes.results combine OUT IN [IN ...]`` copies, in ONE transaction on
``OUT``:

- every finished (``status = 'done'``) run of each input whose ``run_id`` ``OUT`` does not
  hold yet, with its ``prompts``, ``scores``, ``responses`` and ``generations`` rows. A run
  id is a hash of the run's settings, so an id already in ``OUT`` is the same run: it is
  kept and counted as
  "already there". Unfinished runs are left out (they resume in their own file) and named;
- the shared rows (``instances``, ``probe_exports``, ``gold_forms``, ``human_responses``,
  ``score_cache``, ``model_vocab``) that ``OUT`` lacks.

The inputs are only read. An input written by an older kgprobe must be upgraded first
(``python -m probes.results upgrade IN``), and two files that exported the same probe from
different probe files (another ``query_hash``) are refused: their instances would mix.

>>> import tempfile
>>> from pathlib import Path
>>> from probes.results import connect
>>> tmp = Path(tempfile.mkdtemp())
>>> for name in ("a", "b"):
...     con = connect(tmp / f"{name}.duckdb")
...     _ = con.execute("INSERT INTO runs (run_id, model, probe, status) "
...                     "VALUES (?, 'm', 'p', 'done')", [f"run-{name}"])
...     con.close()
>>> combine(tmp / "all.duckdb", [tmp / "a.duckdb", tmp / "b.duckdb"]).runs_added
2
>>> combine(tmp / "all.duckdb", [tmp / "a.duckdb"]).runs_present
1
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from probes.results import (
    SCHEMA,
    ResultsError,
    connect,
    diagnose,
    disk_error,
    sql_path,
    transaction,
)
from probes.results.upgrade import missing_columns

RUN_TABLES = ("prompts", "scores", "responses", "generations")
"""Tables whose rows belong to one run (keyed by ``run_id``)."""

SHARED_TABLES = ("instances", "probe_exports", "gold_forms", "human_responses", "score_cache",
                 "model_vocab", "instance_provenance")
"""Tables shared by every run of a file (rows kept when ``OUT`` lacks their key)."""


@dataclass
class CombineSummary:
    """What :func:`combine` copied."""

    out: Path
    inputs: list[Path]
    runs_added: int = 0
    runs_present: int = 0
    unfinished: list[str] = field(default_factory=list)
    score_rows: int = 0

    def __str__(self) -> str:
        text = (f"combined {len(self.inputs)} file(s) into {self.out}: {self.runs_added} run(s) "
                f"added ({self.score_rows:,} score rows), {self.runs_present} already there")
        if self.unfinished:
            text += (f"; left out {len(self.unfinished)} unfinished run(s) (finish them in "
                     f"their own file, then combine again): {', '.join(self.unfinished)}")
        return text


def _check_current(path: Path) -> None:
    """The input opens read-only (not locked, not damaged) and has every table and column of
    the current schema (else: upgrade it)."""
    con = connect(path, read_only=True)  # ResultsError names a lock, damage, an old file
    try:
        tables = {t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}
        missing = missing_columns(con, SCHEMA.read_text(encoding="utf-8"))
    finally:
        con.close()
    if "runs" not in tables:
        raise ResultsError(f"{path} has no runs table: it is not a kgprobe results file")
    lacking = [t for t in ("runs", *RUN_TABLES, *SHARED_TABLES) if t not in tables]
    if lacking or missing:
        what = ", ".join(lacking + [f"{t}.{c}" for t, c, _ in missing])
        raise ResultsError(f"{path} was written by an older kgprobe (it lacks {what}); run "
                           f"`python -m probes.results upgrade {path}` first (it adds them in "
                           "place and loses no row), then combine again")


def _attach(con: duckdb.DuckDBPyConnection, path: Path, alias: str) -> None:
    try:
        con.execute(f"ATTACH {sql_path(path)} AS {alias} (READ_ONLY)")
    except duckdb.Error as e:
        raise ResultsError(f"{diagnose(path, e)}. Nothing was written.") from e


def _conflicting_exports(con: duckdb.DuckDBPyConnection, alias: str) -> list[str]:
    return [p for (p,) in con.execute(
        f"SELECT s.probe FROM {alias}.probe_exports s JOIN out.probe_exports o USING (probe) "
        "WHERE s.query_hash <> o.query_hash ORDER BY 1").fetchall()]


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def combine(out: Path, inputs: Sequence[Path]) -> CombineSummary:
    """Copy the finished runs of ``inputs`` (and the shared rows they need) into ``out``
    (created when missing) in one transaction; returns what was copied."""
    out = Path(out)
    paths = [Path(p) for p in inputs]
    if not paths:
        raise ResultsError("combine needs at least one input results file")
    for p in paths:
        if not p.is_file():
            raise ResultsError(f"no results file at {p}")
        if out.exists() and p.resolve() == out.resolve():
            raise ResultsError(f"{p} is both the output and an input; name another output "
                               "file")
    for p in paths:
        _check_current(p)
    created = [f for f in (out, _wal(out)) if not f.exists()]
    try:
        return _combine(out, paths)
    except BaseException as e:
        # A file this call created is removed whole: no half-written OUT is left behind.
        for f in created:
            with contextlib.suppress(OSError):
                f.unlink(missing_ok=True)
        if isinstance(e, duckdb.Error | OSError):
            undone = (f"{out} was not created" if out in created else
                      f"{out} is as it was")
            what = (diagnose(out, e) if disk_error(e) else
                    f"combining into {out} failed ({str(e).splitlines()[0] if str(e) else e!r})")
            raise ResultsError(f"{what}. Nothing was written: {undone}") from e
        raise


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _combine(out: Path, paths: list[Path]) -> CombineSummary:
    connect(out).close()  # create or upgrade the output under the current schema
    con = duckdb.connect(":memory:")
    summary = CombineSummary(out, paths)
    try:
        con.execute(f"ATTACH {sql_path(out)} AS out")
        aliases = [f"kgp_in{i}" for i in range(len(paths))]
        for p, alias in zip(paths, aliases, strict=True):
            _attach(con, p, alias)
        with transaction(con):
            for p, alias in zip(paths, aliases, strict=True):
                clash = _conflicting_exports(con, alias)
                if clash:
                    raise ResultsError(
                        f"{p} exported {', '.join(clash)} from another version of the probe "
                        f"file than {out} holds (different query_hash); their instances would "
                        "mix. Re-export and re-run one side, or combine into another file")
                summary.unfinished += [f"{rid} ({probe}, {status})" for rid, probe, status in
                                       con.execute(f"SELECT run_id, probe, status FROM "
                                                   f"{alias}.runs WHERE status <> 'done' "
                                                   "ORDER BY run_id").fetchall()]
                new = (f"SELECT run_id FROM {alias}.runs WHERE status = 'done' AND run_id NOT "
                       "IN (SELECT run_id FROM out.runs)")
                summary.runs_present += _count(
                    con, f"SELECT count(*) FROM {alias}.runs WHERE status = 'done' AND run_id "
                    "IN (SELECT run_id FROM out.runs)")
                con.execute(f"CREATE OR REPLACE TEMP TABLE kgp_new AS {new}")
                summary.runs_added += _count(con, "SELECT count(*) FROM kgp_new")
                summary.score_rows += _count(con, f"SELECT count(*) FROM {alias}.scores "
                                                  "WHERE run_id IN (SELECT run_id FROM kgp_new)")
                for table in ("runs", *RUN_TABLES):
                    con.execute(f"INSERT INTO out.{table} BY NAME SELECT * FROM "
                                f"{alias}.{table} WHERE run_id IN (SELECT run_id FROM kgp_new)")
                for table in SHARED_TABLES:
                    con.execute(f"INSERT OR IGNORE INTO out.{table} BY NAME SELECT * FROM "
                                f"{alias}.{table}")
    finally:
        for alias in ("out", *(f"kgp_in{i}" for i in range(len(paths)))):
            with contextlib.suppress(duckdb.Error):
                con.execute(f"DETACH {alias}")
        con.close()
    return summary
