"""The Parquet files of an export kept in step with its DuckDB rows.

``probes.engine.export`` commits a probe's instances to DuckDB, then moves its staged Parquet files
(``<split>.parquet.<pid>.tmp``) into place and writes ``_kgprobe_export.json`` beside them: the
export they hold (results file, probe-file hash, export time, row count). A process killed
between the commit and the last move leaves the folder behind DuckDB, with staged files lying
about. :func:`sync`, run by the next ``probes.engine.export`` and ``probes.engine.run``, removes
staged files
of processes that are gone and rewrites from the results file the Parquet files of every probe
whose record names this results file but another export (or, written by an older kgprobe, has
no record and had staged files left).

The record also holds each Parquet file's size and SHA-256 (``files``), taken when the file was
written. :func:`sync` checks them before the files are trusted: a file cut short, changed or
removed since is rewritten from the results file, with one line saying so.

>>> staged_name(Path("out/p/test.parquet"), 42).name
'test.parquet.42.tmp'
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from kg.pids import pid_alive
from probes.engine.frames import frame

RECORD = "_kgprobe_export.json"
_SCHEMA = {"split": pl.String, "instance_id": pl.String, "target": pl.String,
           "gold": pl.List(pl.String), "candidates": pl.List(pl.String), "fields": pl.String,
           "probe": pl.String}


def staged_name(path: Path, pid: int | None = None) -> Path:
    """Where the Parquet file ``path`` is staged by process ``pid`` (default: this one)."""
    return path.with_name(f"{path.name}.{os.getpid() if pid is None else pid}.tmp")


_STAMPS = """SELECT i.probe, e.query_hash, i.exported_at, i.n FROM (
                  SELECT probe, max(exported_at) AS exported_at, count(*) AS n
                  FROM instances {where} GROUP BY probe) i
              LEFT JOIN probe_exports e USING (probe) ORDER BY i.probe"""


def _stamps(con: duckdb.DuckDBPyConnection, results: Path,
            probe: str | None = None) -> dict[str, dict[str, Any]]:
    """The export of each probe (or of ``probe``) that the results file holds, as a record
    says it: results file, probe-file hash, export time and row count; one pass over the
    instances."""
    sql = _STAMPS.format(where="" if probe is None else "WHERE probe = ?")
    where = str(results.resolve())
    return {name: {"results": where, "query_hash": qhash,
                   "exported_at": None if at is None else str(at), "rows": int(n)}
            for name, qhash, at, n in con.execute(sql, [] if probe is None else [probe])
            .fetchall()}


def stamp(con: duckdb.DuckDBPyConnection, probe: str, results: Path) -> dict[str, Any]:
    """The export of ``probe`` that the results file holds now, as its record says it (a run
    records its ``query_hash`` and ``exported_at`` in ``runs.config.export`` too)."""
    return _stamps(con, results, probe).get(probe) or {
        "results": str(results.resolve()), "query_hash": None, "exported_at": None, "rows": 0}


def digest(path: Path) -> dict[str, Any]:
    """A written file's size in bytes and SHA-256, as the export record keeps them."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": h.hexdigest()}


def damage(folder: Path, record: dict[str, Any]) -> list[str]:
    """What differs between the folder's Parquet files and the sizes and hashes its record
    took at export: one phrase per file (none for a record without ``files``, an older
    kgprobe's)."""
    files = record.get("files")
    if not isinstance(files, dict):
        return []
    found = []
    for name, want in sorted(files.items()):
        path = folder / name
        if not isinstance(want, dict) or not path.is_file():
            found.append(f"{name} is missing")
            continue
        size = path.stat().st_size
        if size != want.get("bytes"):
            found.append(f"{name} has {size:,} bytes, {want.get('bytes'):,} were written")
        elif digest(path)["sha256"] != want.get("sha256"):
            found.append(f"{name} changed since it was written (its SHA-256 differs)")
    return found


def write_record(folder: Path, record: dict[str, Any],
                 paths: list[Path] | None = None) -> None:
    """Write the folder's export record atomically (after its Parquet files are in place),
    with the size and SHA-256 of each of ``paths`` (the Parquet files just written)."""
    if paths is not None:
        record = {**record, "files": {p.name: digest(p) for p in paths}}
    tmp = staged_name(folder / RECORD)
    tmp.write_text(json.dumps(record, sort_keys=True))
    tmp.replace(folder / RECORD)


def _read_record(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _leftovers(out_dir: Path) -> list[Path]:
    """Staged files of processes that are gone (and unnamed ones of older kgprobe versions)."""
    found = []
    for path in out_dir.rglob("*.tmp"):
        stem, _, pid = path.name[:-len(".tmp")].rpartition(".")
        if path.name.endswith(".parquet.tmp"):
            found.append(path)  # an older kgprobe's staged file
        elif pid.isdigit() and (stem.endswith(".parquet") or stem == RECORD) \
                and not pid_alive(int(pid)):
            found.append(path)
    return found


def rewrite(con: duckdb.DuckDBPyConnection, out_dir: Path, probe: str,
            record: dict[str, Any]) -> list[Path]:
    """Write the probe's Parquet files again from its instances in the results file (one per
    split, in the order they were inserted), then its record; Parquet files of other splits
    go."""
    folder = out_dir / probe
    rows = frame(con, """SELECT split, instance_id, target, gold, candidates,
                                fields::VARCHAR AS fields, probe
                         FROM instances WHERE probe = ? ORDER BY rowid""", [probe])
    rows = rows.cast(_SCHEMA)  # type: ignore[arg-type]
    paths = []
    for (split,), part in rows.partition_by("split", as_dict=True,
                                             maintain_order=True).items():
        path = folder / f"{split}.parquet"
        part.write_parquet(staged_name(path))
        staged_name(path).replace(path)
        paths.append(path)
    for old in folder.glob("*.parquet"):
        if old not in paths:
            old.unlink()
    write_record(folder, record, paths)
    return paths


def sync(con: duckdb.DuckDBPyConnection, results: Path, out_dir: Path) -> list[str]:
    """Bring ``out_dir``'s Parquet files in step with the results file; returns one line per
    thing done (nothing when all was in step)."""
    if not out_dir.is_dir():
        return []
    notes = []
    leftovers = _leftovers(out_dir)
    interrupted = {p.parent for p in leftovers}
    for path in leftovers:
        path.unlink(missing_ok=True)
    if leftovers:
        notes.append(f"removed {len(leftovers)} staged file(s) that a stopped export left "
                     f"under {out_dir}")
    for probe, now in _stamps(con, results).items():
        folder = out_dir / probe
        if not folder.is_dir() or not folder.resolve().is_relative_to(out_dir.resolve()):
            continue
        record = _read_record(folder)
        if record is None and folder not in interrupted:
            continue  # written by an older kgprobe, nothing says it is stale
        if record is not None and record.get("results") != now["results"]:
            continue  # another results file's export
        in_step = record is not None and {k: v for k, v in record.items()
                                          if k != "files"} == now
        damaged = damage(folder, record) if in_step and record is not None else []
        if in_step and not damaged:
            continue
        rewrite(con, out_dir, probe, now)
        if damaged:
            notes.append(f"the Parquet files of probe {probe!r} under {out_dir} were damaged "
                         f"after export ({'; '.join(damaged)}); rewrote them from the results "
                         f"file ({now['rows']:,} rows)")
        else:
            notes.append(f"the Parquet files of probe {probe!r} under {out_dir} were not "
                         f"those of its instances in {results} (an export was stopped between "
                         f"writing the two); rewrote them from the results file "
                         f"({now['rows']:,} rows)")
    return notes
