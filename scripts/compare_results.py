"""Compare two results files: do they hold the same scores, responses, instances, human answers
and metric rows? Prints the largest difference (0 when identical) and exits 1 when they differ.

    python scripts/compare_results.py A.duckdb B.duckdb [--tolerance 0] [--metrics DIR]

Run ids, timestamps and wall times are ignored: a run is known by what it ran (model, revision,
backend, probe, task and its config without the volatile ``runtime``, ``backend``,
``probe_file``, ``shards`` and ``export`` entries: ``export`` records when the instances were
exported and the query's hash, and the instances themselves are compared row by row), so two
files made by separate invocations compare equal. Rows are
matched on their non-float columns; float columns are compared numerically (the difference
printed is the largest absolute one; a row that only one file has counts as an infinite
difference).

Metric rows are every metric file of eval/ (metrics, copen, ontolama, semrel) run on a copy of
each file (so the files are never changed). To compare the metrics of two code versions (the
"behaviour unchanged" check), first store each version's metric rows in its own file, with
that version on PYTHONPATH::

    PYTHONPATH=OLD_CHECKOUT python scripts/compare_results.py --materialize A.duckdb
    PYTHONPATH=$PWD         python scripts/compare_results.py --materialize B.duckdb
    python scripts/compare_results.py A.duckdb B.duckdb

``--materialize`` writes each metric's rows into a table ``metric__<name>`` of the file; a file
holding such tables is compared on them instead of re-running the metrics.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from eval.sqlfile import (
    MetricError,
    default_metric_dir,
    discover_metrics,
    one_thread,
    run_metric,
    run_support,
)
from probes.results import connect

TABLES = ("instances", "scores", "responses", "human_responses")
IGNORED = {"run_id", "started_at", "finished_at", "wall_s", "exported_at", "cache_hits"}
METRIC_DIRS = ("metrics", "copen", "ontolama", "semrel")
VOLATILE_CONFIG = ("runtime", "backend", "probe_file", "shards", "export")


def run_labels(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """run_id -> what the run ran, as a string that is the same in another file."""
    out = {}
    for rid, model, revision, backend, probe, task, cfg in con.execute(
            "SELECT run_id, model, revision, backend, probe, task, config::VARCHAR "
            "FROM runs").fetchall():
        c = json.loads(cfg) if cfg else {}
        for key in VOLATILE_CONFIG:
            c.pop(key, None)
        out[rid] = json.dumps([model, revision, backend, probe, task, c], sort_keys=True,
                              default=str)
    return out


def _is_float(v: Any) -> bool:
    return isinstance(v, float)


def keyed_rows(cols: Sequence[str], rows: Sequence[tuple[Any, ...]], labels: dict[str, str]
               ) -> dict[tuple[Any, ...], list[list[float | None]]]:
    """Rows by their non-float, non-ignored columns (run_id replaced by the run's label);
    the float columns are the values."""
    keep = [i for i, c in enumerate(cols) if c not in IGNORED or c == "run_id"]
    out: dict[tuple[Any, ...], list[list[float | None]]] = {}
    for row in rows:
        key, values = [], []
        for i in keep:
            v = row[i]
            if cols[i] == "run_id":
                key.append(("run", labels.get(v, v)))
            elif _is_float(v) or (v is None and cols[i] in ("score", "probability", "value")):
                values.append(v)
            else:
                key.append(repr(v))
        out.setdefault(tuple(key), []).append(values)
    for vs in out.values():
        vs.sort(key=lambda x: [(-math.inf if v is None else v) for v in x])
    return out


def difference(a: dict, b: dict) -> tuple[float, int]:
    """(largest absolute difference, number of rows only one side has)."""
    worst, unmatched = 0.0, 0
    for key in a.keys() | b.keys():
        va, vb = a.get(key, []), b.get(key, [])
        unmatched += abs(len(va) - len(vb))
        for ra, rb in zip(va, vb, strict=False):
            if len(ra) != len(rb):
                unmatched += 1
                continue
            for x, y in zip(ra, rb, strict=True):
                if x is None or y is None:
                    if (x is None) != (y is None):
                        worst = math.inf
                elif math.isnan(x) or math.isnan(y):
                    if not (math.isnan(x) and math.isnan(y)):
                        worst = math.inf
                else:
                    worst = max(worst, abs(x - y))
    return (math.inf if unmatched else worst), unmatched


def metric_files(dirs: Sequence[str] = METRIC_DIRS) -> list[Any]:
    """The metric files of the eval package on PYTHONPATH, in the folders ``dirs``."""
    root = default_metric_dir().parent
    folders = [root / d for d in dirs if (root / d).is_dir()]
    return discover_metrics(folders) if folders else []


def metric_rows(con: duckdb.DuckDBPyConnection, dirs: Sequence[str] = METRIC_DIRS
                ) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every metric's (columns, rows); a failing metric gives its error as one row."""
    out = {}
    for metric in metric_files(dirs):
        try:
            out[metric.name] = run_metric(con, metric)
        except MetricError as e:
            out[metric.name] = (["error"], [(str(e).split(": ", 1)[-1],)])
    return out


def stored_metrics(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[list[str], list[tuple]]]:
    out = {}
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables WHERE "
                                "table_name LIKE 'metric\\_\\_%' ESCAPE '\\'").fetchall():
        cur = con.execute(f'SELECT * FROM "{table}"')
        out[table.removeprefix("metric__")] = ([d[0] for d in cur.description], cur.fetchall())
    return out


def materialize(path: Path, dirs: Sequence[str] = METRIC_DIRS) -> None:
    """Store every metric's rows (with the code on PYTHONPATH) in tables ``metric__<name>``
    (a failing metric: a one-row table with its error). The metrics run on a copy in
    :func:`canonical_order`, as :func:`compare` runs them, so two files holding the same rows
    in another physical order store the same metric rows to the last digit; only the
    ``metric__`` tables are written into the file."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "sorted.duckdb"
        shutil.copyfile(path, copy)
        con = connect(copy)
        names = []
        try:
            canonical_order(con)
            for metric in metric_files(dirs):
                table = f'"metric__{metric.name}"'
                names.append(table)
                try:
                    run_metric(con, metric)  # validates (on a cursor of its own)
                    run_support(con, metric.requires)  # the views the query reads, on con
                    with one_thread(con):
                        con.execute(f"CREATE OR REPLACE TABLE {table} AS "
                                    f"{metric.sql.strip().rstrip(';')}")
                except (MetricError, duckdb.Error) as e:
                    con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT ? AS error",
                                [str(e).split(": ", 1)[-1]])
        finally:
            con.close()
        con = connect(path)
        try:
            con.execute("ATTACH ? AS sorted (READ_ONLY)", [str(copy)])
            for table in names:
                con.execute(f"CREATE OR REPLACE TABLE main.{table} AS "
                            f"SELECT * FROM sorted.{table}")
            con.execute("DETACH sorted")
        finally:
            con.close()


def canonical_order(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the copy's tables in sorted row order, so that both files' metrics add their
    rows up in the same order: DuckDB's sums of doubles follow the physical order, and two runs
    that write the same rows may store them in another order (chunks, parallel inserts), which
    moves a mean in its last binary digit without any row being different."""
    for table in (*TABLES, "runs"):
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {table} ORDER BY ALL")


def snapshot(path: Path, tmp: Path, dirs: Sequence[str] = METRIC_DIRS
             ) -> tuple[dict[str, str], dict, dict]:
    """(run labels, table rows, metric rows) of a results file, read from a copy."""
    copy = tmp / f"{len(list(tmp.iterdir()))}.duckdb"
    shutil.copyfile(path, copy)
    con = connect(copy)
    try:
        canonical_order(con)
        labels = run_labels(con)
        tables = {}
        for t in TABLES:
            cur = con.execute(f"SELECT * FROM {t}")
            tables[t] = ([d[0] for d in cur.description], cur.fetchall())
        metrics = stored_metrics(con) or metric_rows(con, dirs)
    finally:
        con.close()
    return labels, tables, metrics


def without(columns: Sequence[str], rows: Sequence[tuple[Any, ...]], drop: set[str]
            ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The table without the columns in ``drop``."""
    keep = [i for i, c in enumerate(columns) if c not in drop]
    return [columns[i] for i in keep], [tuple(r[i] for i in keep) for r in rows]


def compare(a: Path, b: Path, ignore: Sequence[str] = (), dirs: Sequence[str] = METRIC_DIRS
            ) -> list[tuple[str, float, int]]:
    """(table or metric:<name>, largest difference, unmatched rows) of everything compared;
    ``ignore``: ``table.column`` names left out of both sides (a column one file's code did not
    write, e.g. ``responses.prompt`` against a file from before it existed); ``dirs``: the
    metric folders of eval run on both (none: the tables only).

    >>> without(["a", "prompt"], [(1, "x")], {"prompt"})
    (['a'], [(1,)])
    """
    with tempfile.TemporaryDirectory() as d:
        la, ta, ma = snapshot(a, Path(d), dirs)
        lb, tb, mb = snapshot(b, Path(d), dirs)
    for t in TABLES:
        drop = {i.split(".", 1)[1] for i in ignore if i.startswith(f"{t}.")}
        ta[t], tb[t] = without(*ta[t], drop), without(*tb[t], drop)
    out = []
    for t in TABLES:
        out.append((t, *difference(keyed_rows(*ta[t], la), keyed_rows(*tb[t], lb))))
    for name in sorted(ma.keys() | mb.keys()):
        ca, ra = ma.get(name, ([], []))
        cb, rb = mb.get(name, ([], []))
        if ca != cb and (ra or rb):
            out.append((f"metric:{name}", math.inf, max(len(ra), len(rb))))
            continue
        out.append((f"metric:{name}", *difference(keyed_rows(ca, ra, la),
                                                  keyed_rows(cb, rb, lb))))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="A.duckdb B.duckdb")
    parser.add_argument("--materialize", action="store_true",
                        help="store each metric's rows in the file(s) instead of comparing")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="largest difference that counts as equal (default 0)")
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per table")
    parser.add_argument("--metrics", action="append", choices=(*METRIC_DIRS, "none"),
                        help="run only this metric folder of eval (repeatable; none: compare "
                             "the tables only); default: all of them")
    parser.add_argument("--ignore", action="append", default=[], metavar="TABLE.COLUMN",
                        help="leave a column out of the comparison, e.g. responses.prompt for "
                             "a file written before that column existed (repeatable)")
    args = parser.parse_args(argv)
    dirs = [d for d in args.metrics or METRIC_DIRS if d != "none"]
    for f in args.files:
        if not f.is_file():
            parser.error(f"no results file at {f}")
    if args.materialize:
        for f in args.files:
            materialize(f, dirs)
            print(f"{f}: metric rows stored")
        return 0
    if len(args.files) != 2:
        parser.error("give two results files")
    for name in args.ignore:
        if name.split(".", 1)[0] not in TABLES or "." not in name:
            parser.error(f"--ignore {name}: give TABLE.COLUMN with TABLE one of "
                         f"{', '.join(TABLES)}")
    results = compare(*args.files, ignore=args.ignore, dirs=dirs)
    worst = max((d for _, d, _ in results), default=0.0)
    for name, diff, unmatched in results:
        if args.verbose or diff > args.tolerance:
            extra = f" ({unmatched} unmatched rows)" if unmatched else ""
            print(f"{name}: {diff:g}{extra}")
    print(f"largest difference: {worst:g} over {len(results)} tables and metrics")
    return 1 if worst > args.tolerance else 0


if __name__ == "__main__":
    sys.exit(main())
