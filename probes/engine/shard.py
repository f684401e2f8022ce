"""Data-parallel runs: split a run's instances over processes and merge their results.

Three ways to run, all on the same results file::

    torchrun --nproc-per-node 4 -m probes.engine.run -m MODEL -p 'semrel/*'  # one machine, 4 ranks
    python -m probes.engine.run -m MODEL -p 'semrel/*' --shard 2/4  # one shard (a scheduler's job)
    python -m probes.engine.run merge --shards 4                    # when all four are done

**Sharding.** Each probe's instances (after ``--split`` and ``--limit``), ordered by split and
instance id, are dealt round-robin: shard ``i`` of ``n`` takes positions ``i, i + n, ...``. All
candidates and prompts of an instance stay in one shard, so shared contexts are still encoded
once. A shard works in its own DuckDB file beside the results file,
``<results>.shard-<i>-of-<n>``: it gets a copy of its instances and of the model's cached
scores, then runs exactly like a single process (same run ids, chunked commits, score cache),
so a shard that is killed resumes where it stopped when started again. The probe's export hash
(``probe_exports``) goes along, so a shard refuses a probe file edited since its export like
an unsharded run does.

**torch.distributed.** Under ``torchrun`` (``WORLD_SIZE`` > 1) each rank is shard ``RANK`` of
``WORLD_SIZE``; the process group uses ``nccl`` when the rank runs on a GPU (``cuda:LOCAL_RANK``)
and ``gloo`` on the CPU, and carries only the ranks' exit codes. When every rank has finished,
rank 0 merges all shards into the results file.

**Merging** (rank 0, or ``python -m probes.engine.run merge --shards n``) first checks that the
shards were cut from the results file's current export (every instance a shard scored is there,
unchanged, and the shards together hold all the run chose; else nothing is merged), then writes
the shards' ``scores``,
``responses``, ``score_cache`` and ``model_vocab`` rows and one ``runs`` row per run into the
results file in ONE transaction: either everything lands or nothing does. A run's earlier score
rows in the results file are replaced by the union of its shards' rows. The merged ``runs`` row
sums ``requests`` and ``cache_hits`` over the shards (a request shared by two shards counts
twice), takes the longest shard's ``wall_s``, and records every shard's wall time in
``config.shards``. Shard files are removed after a successful merge unless ``--keep``.

>>> parse_shard("1/4")
Shard(index=1, count=4)
>>> [p for p in range(10) if Shard(1, 4).owns(p)]
[1, 5, 9]
>>> shard_path(Path("/r/results.duckdb"), Shard(0, 2)).name
'results.duckdb.shard-0-of-2'
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from kg import config, options
from probes.engine.errors import ProbeError
from probes.engine.runner.select import refuse_changed
from probes.engine.spec import discover
from probes.results import connect, sql_path, transaction
from probes.results.shared import (
    ProbeExport,
    copy_model_rows,
    replace_instances,
    replace_probe_export,
    replace_run_rows,
)
from probes.results.writers import Run, delete_run, insert_run

MainFn = Callable[..., int]


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (0-based) of ``count``."""

    index: int
    count: int

    def owns(self, position: int) -> bool:
        return position % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"i/n"`` with 0 <= i < n."""
    index, sep, count = text.partition("/")
    if not (sep and index.strip().isdigit() and count.strip().isdigit()):
        raise ProbeError(f"--shard {text!r}: write it as I/N, e.g. 0/4 for the first of four "
                         "shards")
    shard = Shard(int(index), int(count))
    if shard.count < 1 or not 0 <= shard.index < shard.count:
        raise ProbeError(f"--shard {text!r}: I must be in 0..N-1 (shards are numbered from 0)")
    return shard


def distributed_shard() -> Shard | None:
    """This process's shard under torchrun (``RANK``/``WORLD_SIZE``), else None."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return None
    return Shard(int(os.environ.get("RANK", "0")), world)


def shard_path(results: Path, shard: Shard) -> Path:
    """The DuckDB file of one shard, beside the results file."""
    return results.with_name(f"{results.name}.shard-{shard.index}-of-{shard.count}")


def _count(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> int:
    """The single value of a ``SELECT count(*) ...`` query."""
    row = con.execute(sql, params).fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    return int(row[0])


# --- one shard ----------------------------------------------------------------------------------


def prepare(results: Path, part: Path, shard: Shard, model: str, patterns: list[str],
            queries: list[Path], include_default: bool, splits: list[str] | None,
            limit: int | None) -> dict[str, int]:
    """Copy this shard's instances of every probe matching ``patterns`` (and the model's cached
    scores and vocabularies) from ``results`` into the shard file ``part``, in one transaction;
    returns the number of instances per probe."""
    if not results.exists():
        raise ProbeError(f"no results file at {results}: run `python -m probes.engine.export` "
                         f"first "
                         "(or point --results at the right file)")
    probes = [p for p in discover(queries, patterns, include_default=include_default)
              if p.spec.task != "records" or p.spec.name in patterns]
    names = [p.spec.name for p in probes]
    con = duckdb.connect()
    try:  # a probe edited since its export: refused before any shard file is cut
        con.execute(f"ATTACH {sql_path(results)} AS kgp_main (READ_ONLY)")
        refuse_changed(probes, dict(con.execute(
            "SELECT probe, query_hash FROM kgp_main.probe_exports").fetchall()), str(results))
    finally:
        con.close()
    con = connect(part)
    counts: dict[str, int] = {}
    try:
        con.execute(f"ATTACH {sql_path(results)} AS kgp_main (READ_ONLY)")
        with transaction(con):
            for name in names:
                where = "probe = ?"
                params: list[Any] = [name]
                if splits:
                    where += f" AND split IN ({', '.join('?' for _ in splits)})"
                    params += splits
                limited = "" if limit is None else (
                    " QUALIFY row_number() OVER (PARTITION BY split ORDER BY instance_id) <= ?")
                if limit is not None:
                    params.append(limit)
                # the export's hash goes along, so the shard's run checks "edited since export"
                export = con.execute("SELECT query_hash, exported_at FROM "
                                     "kgp_main.probe_exports WHERE probe = ?", [name]).fetchone()
                replace_probe_export(con, name, None if export is None
                                     else ProbeExport(*export))
                replace_instances(con, name, con.sql(f"""SELECT * EXCLUDE (kgp_pos) FROM (
                    SELECT *, row_number() OVER (ORDER BY split, instance_id) - 1 AS kgp_pos
                    FROM (SELECT * FROM kgp_main.instances WHERE {where}{limited}))
                    WHERE kgp_pos % ? = ?""", params=[*params, shard.count, shard.index]
                ).to_arrow_table())
                counts[name] = _count(con, "SELECT count(*) FROM instances WHERE probe = ?",
                                      [name])
            copy_model_rows(con, "kgp_main", model)
    finally:
        with contextlib.suppress(duckdb.Error):
            con.execute("DETACH kgp_main")
        con.close()
    empty = [n for n, c in counts.items() if c == 0]
    if empty:
        raise ProbeError(f"shard {shard} has no instances of {', '.join(empty)}: the probe has "
                         f"fewer instances than the {shard.count} shards (or was not exported); "
                         "use fewer shards for it")
    return counts


def run_shard(args: argparse.Namespace, argv: Sequence[str], main: MainFn,
              factory: Any, shard: Shard) -> int:
    """Prepare this shard's file and run ``main`` on it (a normal run, resumable)."""
    results = Path(args.results or config.results_path())
    part = shard_path(results, shard)
    counts = prepare(results, part, shard, args.model, list(args.probe), list(args.queries),
                     not args.only_extra, args.split, args.limit)
    print(f"shard {shard}: {sum(counts.values()):,} instances of {len(counts)} probe(s) -> "
          f"{part}", file=sys.stderr)
    inner = [*argv, "--results", str(part), "--shard-part"]
    return main(inner, factory)


def run_distributed(args: argparse.Namespace, argv: Sequence[str], main: MainFn,
                    factory: Any, shard: Shard) -> int:
    """One torchrun rank: run its shard, share exit codes, and on rank 0 merge all shards."""
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", shard.index))
    on_gpu = torch.cuda.is_available() and (args.device is None or args.device == "cuda")
    argv = list(argv)
    if on_gpu:
        torch.cuda.set_device(local)
        argv += ["--device", f"cuda:{local}"]
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if on_gpu else "gloo")
    try:
        code = run_shard(args, argv, main, factory, shard)
    except ProbeError as e:  # every rank goes on to share its exit code
        code = options.error_line(e)
    codes: list[Any] = [None] * shard.count
    dist.all_gather_object(codes, code)
    if shard.index == 0:
        failed = [i for i, c in enumerate(codes) if c != 0]
        if failed:
            options.error_line(f"shard(s) {', '.join(map(str, failed))} of {shard.count} "
                               "failed; nothing was merged. Run the same command again: every "
                               "shard resumes where it stopped")
            code = code or 1
        else:
            try:
                print(merge(Path(args.results or config.results_path()), shard.count))
            except ProbeError as e:  # on to the barrier, which every rank waits at
                code = options.error_line(e)
    dist.barrier()
    return code


# --- merging ------------------------------------------------------------------------------------


def _rows(con: duckdb.DuckDBPyConnection, sql: str,
          params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cur = con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _merged_run(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One runs row from the shards' rows of the same run."""
    out = dict(rows[0])
    out["requests"] = sum(r["requests"] or 0 for r in rows)
    out["cache_hits"] = sum(r["cache_hits"] or 0 for r in rows)
    walls = [float(r["wall_s"] or 0.0) for r in rows]
    out["wall_s"] = max(walls)
    out["started_at"] = min(r["started_at"] for r in rows if r["started_at"] is not None)
    out["finished_at"] = max(r["finished_at"] for r in rows if r["finished_at"] is not None)
    cfg = json.loads(out["config"]) if out["config"] else {}
    cfg["shards"] = {"count": len(rows), "wall_s": walls,
                     "requests": [r["requests"] for r in rows]}
    out["config"] = json.dumps(cfg, default=str)
    out["status"] = "done"
    return out


def _selected(con: duckdb.DuckDBPyConnection, probe: str, config: dict[str, Any]) -> int:
    """How many instances of ``probe`` the results file holds for a run's ``--split`` and
    ``--limit`` (what ``prepare`` dealt out over the shards)."""
    where, params = "probe = ?", [probe]
    splits = config.get("splits")
    if splits:
        where += f" AND split IN ({', '.join('?' for _ in splits)})"
        params += list(splits)
    limit = config.get("limit")
    limited = "" if limit is None else (
        " QUALIFY row_number() OVER (PARTITION BY split ORDER BY instance_id) <= ?")
    return _count(con, f"SELECT count(*) FROM (SELECT 1 FROM instances WHERE {where}{limited})",
                  [*params, *([] if limit is None else [limit])])


def check_instances(con: duckdb.DuckDBPyConnection, runs: list[list[dict[str, Any]]],
                    count: int) -> None:
    """Refuse shards that were not all cut from the results file's current export of their
    probes: every instance a shard scored must be in the results file with the same content,
    and together the shards must hold every instance the run chose (a probe re-exported, or
    edited and re-exported, between cutting two shards fails one of the two)."""
    problems = []
    for run in runs[0]:
        probe, config = run["probe"], json.loads(run["config"] or "{}")
        held = 0
        for i in range(count):
            held += _count(con, f"SELECT count(*) FROM kgp_s{i}.instances WHERE probe = ?",
                           [probe])
            gone = _count(con, f"""SELECT count(*) FROM kgp_s{i}.instances s
                WHERE s.probe = ? AND NOT EXISTS (SELECT 1 FROM instances m
                  WHERE m.probe = s.probe AND m.split = s.split
                  AND m.instance_id = s.instance_id
                  AND m.target IS NOT DISTINCT FROM s.target
                  AND m.gold IS NOT DISTINCT FROM s.gold
                  AND m.candidates IS NOT DISTINCT FROM s.candidates
                  AND m.fields::VARCHAR IS NOT DISTINCT FROM s.fields::VARCHAR)""", [probe])
            if gone:
                problems.append(f"shard {i}/{count} scored {gone} instance(s) of {probe} that "
                                "the results file no longer holds as they were")
        want = _selected(con, probe, config)
        if not problems and held != want:
            problems.append(f"the shards hold {held} instance(s) of {probe}, the results file "
                            f"{want} for this run")
    if problems:
        raise ProbeError("cannot merge: " + "; ".join(problems) + ". The probe was exported "
                         "again after some shards were cut, so their scores would mix two "
                         "versions of it; run every shard again (--shard I/N, they re-cut "
                         "from the current export), then merge. Nothing was merged.")


def merge(results: Path, count: int, keep: bool = False) -> str:
    """Merge the ``count`` shard files of ``results`` into it in one transaction; returns a
    one-line summary. Every shard must exist and have finished every run."""
    parts = [shard_path(results, Shard(i, count)) for i in range(count)]
    missing = [str(p) for p in parts if not p.exists()]
    if missing:
        raise ProbeError(f"cannot merge: missing shard file(s) {', '.join(missing)}; run "
                         f"`python -m probes.engine.run ... --shard I/{count}` for each of them "
                         f"first")
    con = connect(results)
    try:
        for i, part in enumerate(parts):
            con.execute(f"ATTACH {sql_path(part)} AS kgp_s{i} (READ_ONLY)")
        runs = [_rows(con, f"SELECT * FROM kgp_s{i}.runs") for i in range(count)]
        ids = [{r["run_id"] for r in rs} for rs in runs]
        if not ids[0] or any(s != ids[0] for s in ids):
            raise ProbeError(f"cannot merge: the shards hold different runs "
                             f"({[sorted(s) for s in ids]}); run every shard with the same "
                             "command (only --shard differs)")
        unfinished = [f"shard {i}/{count}: run {r['run_id']} ({r['probe']}) is {r['status']}"
                      for i, rs in enumerate(runs) for r in rs if r["status"] != "done"]
        if unfinished:
            raise ProbeError("cannot merge, not every shard has finished: "
                             + "; ".join(unfinished) + ". Run those shards again (they resume)")
        check_instances(con, runs, count)
        rids = sorted(ids[0])
        marks = ", ".join("?" for _ in rids)
        with transaction(con):
            replace_run_rows(con, [f"kgp_s{i}" for i in range(count)], rids)
            for i in range(count):
                copy_model_rows(con, f"kgp_s{i}")
            for rid in rids:
                row = _merged_run([next(r for r in rs if r["run_id"] == rid) for rs in runs])
                delete_run(con, rid, ("runs",))
                insert_run(con, Run(**{**row, "config": json.loads(row["config"])}))
            n_scores = _count(con, f"SELECT count(*) FROM scores WHERE run_id IN ({marks})",
                              rids)
    finally:
        for i in range(count):
            with contextlib.suppress(duckdb.Error):
                con.execute(f"DETACH kgp_s{i}")
        con.close()
    if not keep:
        for part in parts:
            for path in (part, part.with_name(part.name + ".wal")):
                path.unlink(missing_ok=True)
    return (f"merged {count} shards into {results}: {len(rids)} run(s), {n_scores:,} score "
            f"rows" + ("" if keep else "; shard files removed"))


def merge_main(argv: Sequence[str]) -> int:
    """``python -m probes.engine.run merge --shards N [--results PATH] [--keep]``."""
    p = argparse.ArgumentParser(
        prog="python -m probes.engine.run merge",
        description="Merge the shard files of a sharded run (--shard I/N) into the results "
        "file, in one transaction.")
    p.add_argument("--shards", type=int, required=True, metavar="N",
                   help="how many shards the run had (the N of --shard I/N)")
    options.add_results(p, help=options.RESULTS_HELP + "; the shards are "
                        "<results>.shard-I-of-N")
    p.add_argument("--keep", action="store_true", help="keep the shard files after merging")
    return options.call_handler(_merge, p.parse_args(list(argv)), list(argv))


def _merge(args: argparse.Namespace, argv: list[str]) -> int:
    if args.shards < 1:
        raise ProbeError("--shards must be a positive number")
    print(merge(Path(args.results or config.results_path()), args.shards, args.keep))
    return 0
