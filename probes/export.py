"""Run probe queries and write their instances: ``python -m probes.export``.

Instances go to the ``instances`` table of the results DuckDB file (replacing that probe's
earlier rows in one transaction) and to one Parquet file per probe and split.

>>> from kg.store import LocalStore
>>> from probes.spec import parse_probe
>>> probe = parse_probe('''# name: demo/pairs
... # task: relatum
... # split: test
... # target: ?w
... # gold: ?v
... # group_by: ?w
... SELECT ?w ?v WHERE { VALUES (?w ?v) { ("dog" "animal") ("dog" "canine") ("cat" "feline") } }
... ''')
>>> df = instances_for(probe, LocalStore.in_memory())
>>> df.select("target", "gold").rows()
[('dog', ['animal', 'canine']), ('cat', ['feline'])]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from kg import config
from kg.errors import KgError
from kg.store import KnowledgeStore, open_store
from kg.vocab import graph
from probes.errors import ProbeError, ProbeFileError
from probes.results import connect
from probes.spec import Probe, discover


def instance_id(values: list[Any]) -> str:
    """A stable 16-hex-digit id for an instance from its id values.

    >>> instance_id(["dog"]) == hashlib.md5(b'"dog"').hexdigest()[:16]
    True
    >>> instance_id(["dog", "animal"]) != instance_id(["animal", "dog"])
    True
    """
    raw = "\x1f".join(json.dumps(v, sort_keys=True, default=str) for v in values)
    return hashlib.md5(raw.encode("utf-8")).hexdigest()[:16]


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, list):
        return [str(x) for x in v if x is not None]
    return [str(v)]


def check_graphs(probes: list[Probe], store: KnowledgeStore) -> None:
    """Raise ProbeFileError for the first probe whose ``graphs:`` names a source not in store.

    >>> from kg.store import LocalStore
    >>> from probes.spec import parse_probe
    >>> head = ["# name: t/x", "# task: records", "# split: test", "# graphs: [wordnet]"]
    >>> probe = parse_probe("\\n".join([*head, "SELECT ?a WHERE { }"]), "x.rq")
    >>> check_graphs([probe], LocalStore.in_memory())
    Traceback (most recent call last):
    ...
    probes.errors.ProbeFileError: x.rq:4: probe 't/x' reads source(s) wordnet which are not ...
    """
    have = set(store.graphs())
    for probe in probes:
        missing = [g for g in probe.spec.graphs if graph(g).value not in have]
        if missing:
            raise ProbeFileError(
                probe.path, probe.header_lines.get("graphs"),
                f"probe {probe.spec.name!r} reads source(s) {', '.join(missing)} which are not "
                f"in the store; build them with `python -m kg.build "
                f"{' '.join('-s ' + m for m in missing)}`. Nothing was exported.")


def instances_for(probe: Probe, store: KnowledgeStore) -> pl.DataFrame:
    """Run a probe's query and shape its rows into instances (one DataFrame row each)."""
    spec = probe.spec
    check_graphs([probe], store)
    rows = store.query(probe.query)
    split_var = spec.split_variable
    if split_var:
        unbound = sum(1 for r in rows if r[split_var] is None)
        if unbound:
            raise ProbeFileError(probe.path, probe.header_lines.get("split"),
                                 f"split variable ?{split_var} is unbound in {unbound} row(s); "
                                 "bind it in every row (e.g. with BIND or COALESCE)")
    keys = [v[1:] for v in spec.group_by]
    if keys:
        # An instance belongs to one split: the split variable is always part of the group key.
        group_keys = [*keys, split_var] if split_var and split_var not in keys else keys
        grouped: dict[tuple, dict[str, Any]] = {}
        for row in rows:
            k = tuple(row[c] for c in group_keys)
            inst = grouped.get(k)
            if inst is None:
                inst = grouped[k] = {c: row[c] if c in group_keys else []
                                     for c in probe.variables}
            for c in probe.variables:
                if c not in group_keys and row[c] is not None and row[c] not in inst[c]:
                    inst[c].append(row[c])
        records = list(grouped.values())
    else:
        records = rows
    id_vars = [v[1:] for v in spec.id] or keys or probe.variables
    out = {
        "split": [str(r[split_var]) if split_var else spec.split for r in records],
        "instance_id": [instance_id([r[c] for c in id_vars]) for r in records],
        "target": [None if spec.target is None else _scalar(r[spec.target[1:]]) for r in records],
        "gold": [[x for g in spec.gold for x in _as_list(r[g[1:]])] for r in records],
        "candidates": [_as_list(r[spec.candidates[1:]]) if spec.candidates else []
                       for r in records],
        "fields": [json.dumps(r, ensure_ascii=False, default=str) for r in records],
    }
    df = pl.DataFrame(out, schema={"split": pl.String, "instance_id": pl.String,
                                   "target": pl.String, "gold": pl.List(pl.String),
                                   "candidates": pl.List(pl.String), "fields": pl.String})
    dupes = df.select(pl.struct("split", "instance_id").is_duplicated().sum()).item()
    if dupes:
        raise ProbeFileError(probe.path, probe.header_lines.get("id"),
                             f"{dupes} rows share an instance id; name the variables that identify "
                             "an instance in 'id:' or group rows with 'group_by:'")
    return df.with_columns(pl.lit(spec.name).alias("probe"))


def build_instances(probe: Probe, store: KnowledgeStore) -> pl.DataFrame:
    """The probe's instances: its ``builder`` when the header names one, else the query rows
    shaped by :func:`instances_for`."""
    if probe.spec.builder is None:
        return instances_for(probe, store)
    module_name, _, func_name = probe.spec.builder.partition(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as e:
        raise ProbeFileError(probe.path, probe.header_lines.get("builder"),
                             f"builder {probe.spec.builder!r} cannot be loaded ({e}); name a "
                             "function as module:function, e.g. probes.ontolama:instances") from e
    return func(probe, store)


def _scalar(v: Any) -> str | None:
    if isinstance(v, list):
        return str(v[0]) if v else None
    return None if v is None else str(v)


@dataclass
class ExportReport:
    probe: str
    split: str
    rows: int
    seconds: float


def write_instances(con: Any, name: str, df: pl.DataFrame) -> None:
    """Replace a probe's rows in the ``instances`` table in one transaction."""
    now = datetime.now(UTC).replace(tzinfo=None)
    frame = df.with_columns(pl.lit(now).alias("exported_at"))
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM instances WHERE probe = ?", [name])
        con.register("new_instances", frame.to_arrow())
        con.execute("""INSERT INTO instances
            SELECT probe, split, instance_id, target, gold, candidates, fields::JSON, exported_at
            FROM new_instances""")
        con.unregister("new_instances")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def write_parquet(out_dir: Path, name: str, df: pl.DataFrame) -> list[Path]:
    """One Parquet file per split: ``<out>/<probe name>/<split>.parquet`` (written atomically).

    Parquet files of splits the probe no longer has are removed.
    """
    paths = []
    for (split,), part in df.partition_by("split", as_dict=True, maintain_order=True).items():
        path = out_dir / name / f"{split}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".parquet.tmp")
        part.write_parquet(tmp)
        tmp.replace(path)
        paths.append(path)
    folder = out_dir / name
    if folder.is_dir():
        for old in folder.glob("*.parquet"):
            if old not in paths:
                old.unlink()
    return paths


def export(probes: list[Probe], store: KnowledgeStore, results: str | Path | None = None,
           out_dir: Path | None = None, progress: bool = True) -> list[ExportReport]:
    """Export each probe's instances; returns one report row per probe and split.

    Every probe's ``graphs:`` is checked before anything is written.
    """
    check_graphs(probes, store)
    con = connect(results)
    reports: list[ExportReport] = []
    try:
        bar = tqdm(probes, desc="exporting", unit="probe", disable=not progress)
        for probe in bar:
            bar.set_postfix_str(probe.spec.name)
            t0 = time.perf_counter()
            df = build_instances(probe, store)
            write_instances(con, probe.spec.name, df)
            if out_dir is not None:
                write_parquet(out_dir, probe.spec.name, df)
            seconds = time.perf_counter() - t0
            counts = df.group_by("split", maintain_order=True).len().rows() or [("-", 0)]
            reports += [ExportReport(probe.spec.name, s, n, seconds) for s, n in counts]
    finally:
        con.close()
    return reports


def format_reports(reports: list[ExportReport]) -> str:
    lines = ["| probe | split | rows | seconds |", "|---|---|---:|---:|"]
    lines += [f"| {r.probe} | {r.split} | {r.rows:,} | {r.seconds:.2f} |" for r in reports]
    empty = sorted({r.probe for r in reports if r.rows == 0})
    if empty:
        lines += ["", f"warning: no instances from {', '.join(empty)} (is the source built?)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m probes.export",
        description="Run probe files (SPARQL SELECT with a YAML header) against the store and "
        "write their instances to the results DuckDB file (table `instances`) and to one Parquet "
        "file per probe and split.",
    )
    parser.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                        help="probe name or glob pattern (e.g. 'starter/*'); repeatable; "
                        "default: every probe found")
    parser.add_argument("--queries", "-q", action="append", type=Path, metavar="DIR",
                        help="extra folder of probe files (*.rq) besides queries/; repeatable")
    parser.add_argument("--only-extra", action="store_true",
                        help="do not read the default queries/ folder, only --queries folders")
    parser.add_argument("--store", type=Path, default=None,
                        help="store folder (default: $KGPROBE_STORE or .kgprobe/store)")
    parser.add_argument("--endpoint", metavar="URL",
                        help="query this SPARQL 1.1 endpoint instead of the embedded store")
    parser.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file (default: $KGPROBE_RESULTS or "
                        ".kgprobe/results.duckdb)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for Parquet files (default: $KGPROBE_EXPORTS or "
                        ".kgprobe/exports)")
    parser.add_argument("--no-parquet", action="store_true", help="write DuckDB only")
    parser.add_argument("--list", action="store_true", help="list the probes found and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        found = discover(args.queries, args.probe, include_default=not args.only_extra)
        probes = [p for p in found if p.spec.export]
        if args.list:
            for p in probes:
                print(f"{p.spec.name:40} {p.spec.task:12} {p.path}")
            return 0
        store = open_store(args.endpoint, args.store)
        out = None if args.no_parquet else (args.out or config.exports_dir())
        t0 = time.perf_counter()
        reports = export(probes, store, args.results, out, progress=not args.quiet)
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_reports(reports))
    print(f"\nexported {len(probes)} probe(s) in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
