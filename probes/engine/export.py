"""Run probe queries and write their instances: ``python -m probes.engine.export``.

Instances go to the ``instances`` table of the results DuckDB file (replacing that probe's
earlier rows in one transaction) and to one Parquet file per probe and split.

:func:`export` is the one entry of the export's pipeline: per probe, :func:`prepare` (query,
rows and instances: :mod:`probes.engine.instances`; checks: :func:`build_instances`; gold forms
and provenance), then :func:`write_exported`; each step is named on the progress lines
(:class:`probes.engine.progress.Heartbeat`). ``--preview`` runs the same steps up to the checks
(:func:`print_preview`).

>>> from kg.store import LocalStore
>>> from probes.engine.spec import parse_probe
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
import importlib
import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from tqdm import tqdm

from kg import config, options
from kg.store import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, KnowledgeStore, open_store
from probes.backends.protocol import FAMILIES
from probes.engine import parquet_sync
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.graph_checks import check_graphs, skip_unbuilt_optional
from probes.engine.inflections import GoldForm, gold_form_rows, mark_plurals
from probes.engine.instance_templates import check_templates
from probes.engine.instances import (
    FIELDS_JSON,
    QueryLimits,
    instance_id,
    instances_for,
    run_query,
)
from probes.engine.preview import check_task, preview_prompts
from probes.engine.progress import Heartbeat, Quiet
from probes.engine.provenance import provenance
from probes.engine.spec import Probe, discover
from probes.results import connect, diagnose, disk_error, transaction
from probes.results.shared import (
    GoldFormRow,
    ProbeExport,
    ProvenanceRow,
    replace_gold_forms,
    replace_instances,
    replace_probe_export,
    replace_provenance,
)

__all__ = ["QueryLimits", "build_instances", "check_graphs", "export", "instance_id",
           "instances_for", "run_query", "write_instances", "write_parquet"]

BUILDERS = ("probes.benchmarks.ontolama:instances",)
"""The project's own instance builders a probe's ``builder:`` may name. A builder module of
one's own must live under a probe folder passed with ``--queries`` (see :func:`load_builder`)."""


def load_builder(probe: Probe, builder_dirs: list[Path] | None = None) -> Any:
    """The function a probe's ``builder: module:function`` names: one of :data:`BUILDERS`, or
    ``module`` as a file ``<folder>/<module path>.py`` under one of ``builder_dirs`` (the
    probe folders the user passed with ``--queries``). No other module is ever imported."""
    name = probe.spec.builder or ""
    line = probe.header_lines.get("builder")
    module_name, _, func_name = name.partition(":")
    if name in BUILDERS:
        return getattr(importlib.import_module(module_name), func_name)
    for folder in builder_dirs or []:
        file = folder / Path(*module_name.split(".")).with_suffix(".py")
        if file.is_file() and file.resolve().is_relative_to(folder.resolve()):
            spec = importlib.util.spec_from_file_location(f"kgprobe_builder_{module_name}", file)
            if spec is None or spec.loader is None:
                break
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
                return getattr(module, func_name)
            except AttributeError as e:
                raise ProbeFileError(probe.path, line, f"builder {name!r}: {file} has no "
                                     f"function {func_name!r}") from e
    raise ProbeFileError(probe.path, line,
                         f"builder {name!r} is not allowed: a builder is one of kgprobe's own "
                         f"({', '.join(BUILDERS)}) or a module file under a probe folder you "
                         f"pass with --queries (e.g. --queries DIR with DIR/"
                         f"{module_name.replace('.', '/')}.py); other modules are never imported")


def build_instances(probe: Probe, store: KnowledgeStore, limits: QueryLimits | None = None,
                    builder_dirs: list[Path] | None = None,
                    beat: Heartbeat | None = None) -> pl.DataFrame:
    """Steps 1 to 4 of the pipeline (:mod:`probes.engine.instances`): the probe's instances,
    from its ``builder`` when the header names one, else from the query rows shaped by
    :func:`instances_for`; then the checks: prompt templates against the instances' fields
    and the task's own checks, before anything is written or any model loads, and ``[DET]``'s
    plural texts."""
    beat = beat or Quiet()
    if probe.spec.builder is None:
        df = instances_for(probe, store, limits, beat)
    else:
        func = load_builder(probe, builder_dirs)
        if probe.services and not (limits or QueryLimits()).allow_service:
            run_query(probe, store, limits)  # raises the SERVICE refusal
        beat.step(f"building instances with {probe.spec.builder}")
        df = func(probe, store)
    beat.step(f"checking {df.height:,} instances")
    check_templates(probe, df)
    for warning in check_task(probe, df):
        print(warning, file=sys.stderr)
    return mark_plurals(probe, df, store)


@dataclass
class ExportReport:
    probe: str
    split: str
    rows: int
    seconds: float


@dataclass(frozen=True)
class Exported:
    """What the steps made of one probe, ready to be written: its instances, the gold forms of
    ``params: {inflections: ...}`` and each instance's provenance."""

    probe: Probe
    instances: pl.DataFrame
    gold_forms: list[GoldForm]
    provenance: list[ProvenanceRow]


def provenance_rows(name: str, df: pl.DataFrame, store: KnowledgeStore,
                    beat: Heartbeat | None = None) -> list[ProvenanceRow]:
    """The ``instance_provenance`` rows of a probe's instances (probes.engine.provenance)."""
    records = [json.loads(f) for f in df["fields"]]
    tick = None if beat is None else beat.tick
    return [ProvenanceRow(name, split, iid, FIELDS_JSON(p["bindings"]), FIELDS_JSON(p["triples"]))
            for split, iid, p in zip(df["split"], df["instance_id"],
                                     provenance(records, store, tick), strict=True)]


def prepare(probe: Probe, store: KnowledgeStore, limits: QueryLimits | None = None,
            builder_dirs: list[Path] | None = None, beat: Heartbeat | None = None) -> Exported:
    """Steps 1 to 4 and what the write needs besides the instances: gold forms, provenance."""
    beat = beat or Quiet()
    df = build_instances(probe, store, limits, builder_dirs, beat)
    beat.step(f"gold forms of {df.height:,} instances")
    forms = gold_form_rows(probe.spec, df, store)
    beat.step("provenance lookups", unit="store queries")
    origin = provenance_rows(probe.spec.name, df, store, beat)
    return Exported(probe, df, forms, origin)


def write_exported(con: Any, exported: Exported, where: Path, out_dir: Path | None,
                   seconds_from: float) -> list[ExportReport]:
    """Step 5: the probe's rows to DuckDB and its Parquet files, together or not at all;
    one report row per split."""
    probe, df = exported.probe, exported.instances
    staged: list[tuple[Path, Path]] = []

    def stage() -> None:
        if out_dir is not None:
            staged.extend(stage_parquet(out_dir, probe.spec.name, df))

    write_instances(con, probe.spec.name, df, probe.instances_hash, before_commit=stage,
                    gold_forms=exported.gold_forms, provenance=exported.provenance)
    if out_dir is not None:
        publish_parquet(out_dir, probe.spec.name, staged,
                        parquet_sync.stamp(con, probe.spec.name, where))
    seconds = time.perf_counter() - seconds_from
    counts = df.group_by("split", maintain_order=True).len().rows() or [("-", 0)]
    return [ExportReport(probe.spec.name, s, n, seconds) for s, n in counts]


def write_instances(con: Any, name: str, df: pl.DataFrame, query_hash: str | None = None,
                    before_commit: Any = None, gold_forms: list[GoldForm] | None = None,
                    provenance: list[ProvenanceRow] | None = None) -> None:
    """Replace a probe's rows in the ``instances`` table in one transaction, with the hash of
    the probe file that made them, its ``gold_forms`` rows (probes.engine.inflections) and its
    ``instance_provenance`` rows (none given: the probe's earlier ones go).
    ``before_commit()`` runs inside the transaction: if it fails, nothing is written (the
    Parquet files are staged there, so both or neither)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    frame = df.with_columns(pl.lit(now).alias("exported_at"))
    with transaction(con):
        replace_instances(con, name, frame.to_arrow())
        replace_gold_forms(con, name, [GoldFormRow(*g) for g in gold_forms or ()])
        replace_provenance(con, name, provenance or [])
        replace_probe_export(con, name, None if query_hash is None
                             else ProbeExport(query_hash, now))
        if before_commit is not None:
            before_commit()


def stage_parquet(out_dir: Path, name: str, df: pl.DataFrame) -> list[tuple[Path, Path]]:
    """Write one ``<split>.parquet.<pid>.tmp`` per split under ``<out>/<probe name>/``; returns
    (temporary, final) paths for :func:`publish_parquet`. Raises ProbeError (temporary files
    removed) when the folder cannot hold them."""
    staged: list[tuple[Path, Path]] = []
    try:
        for (split,), part in df.partition_by("split", as_dict=True,
                                              maintain_order=True).items():
            path = out_dir / name / f"{split}.parquet"
            if not path.resolve().is_relative_to(out_dir.resolve()):
                raise ProbeError(f"split {split!r} of probe {name!r} would write outside "
                                 f"{out_dir}; use plain split names")
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = parquet_sync.staged_name(path)
            staged.append((tmp, path))  # before writing: a half-written file is removed too
            part.write_parquet(tmp)
    except (OSError, pl.exceptions.PolarsError) as e:  # polars: ComputeError on a full disk
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        why = disk_error(e) or (e.strerror if isinstance(e, OSError) else None) or str(e)
        raise ProbeError(f"cannot write the Parquet files of probe {name!r} under {out_dir}: "
                         f"{why}; free space or choose another --out folder (or --no-parquet). "
                         "Nothing was written for it.") from e
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    return staged


def publish_parquet(out_dir: Path, name: str, staged: list[tuple[Path, Path]],
                    record: dict[str, Any] | None = None) -> list[Path]:
    """Move staged files into place; Parquet files of splits the probe no longer has go; then
    the folder's export record (``parquet_sync.stamp``), which says which export they hold."""
    paths = []
    for tmp, path in staged:
        tmp.replace(path)
        paths.append(path)
    folder = out_dir / name
    if folder.is_dir():
        for old in folder.glob("*.parquet"):
            if old not in paths:
                old.unlink()
        if record is not None:
            parquet_sync.write_record(folder, record, paths)
    return paths


def write_parquet(out_dir: Path, name: str, df: pl.DataFrame,
                  record: dict[str, Any] | None = None) -> list[Path]:
    """One Parquet file per split: ``<out>/<probe name>/<split>.parquet`` (written atomically).

    Parquet files of splits the probe no longer has are removed; ``record`` (the export they
    hold, ``parquet_sync.stamp``) is written last.
    """
    return publish_parquet(out_dir, name, stage_parquet(out_dir, name, df), record)


def check_out_dir(out_dir: Path) -> None:
    """``--out`` must be a folder (or not exist yet)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ProbeError(f"--out {out_dir} is a file, not a folder; give a folder for the "
                         "Parquet files (or --no-parquet). Nothing was exported.")


def export(probes: list[Probe], store: KnowledgeStore, results: str | Path | None = None,
           out_dir: Path | None = None, progress: bool = True,
           limits: QueryLimits | None = None,
           builder_dirs: list[Path] | None = None) -> list[ExportReport]:
    """Export each probe's instances; returns one report row per probe and split.

    Every probe's ``graphs:`` is checked before anything is written. A probe's rows go to
    DuckDB and Parquet together or not at all; Parquet files that an export stopped between
    the two left behind are set right first (``parquet_sync.sync``, a line each on stderr).
    """
    check_graphs(probes, store)
    if out_dir is not None:
        check_out_dir(out_dir)
    con = connect(results)
    where = Path(results or config.results_path())
    reports: list[ExportReport] = []
    try:
        for note in parquet_sync.sync(con, where, out_dir) if out_dir is not None else []:
            print(f"note: {note}", file=sys.stderr)
        bar = tqdm(probes, desc="exporting", unit="probe", disable=not progress)
        for probe in bar:
            bar.set_postfix_str(probe.spec.name)
            t0 = time.perf_counter()
            with Heartbeat("exporting", probe.spec.name) as beat:
                exported = prepare(probe, store, limits, builder_dirs, beat)
                beat.step(f"writing {exported.instances.height:,} instances")
                reports += write_exported(con, exported, where, out_dir, t0)
                beat.result = f"{exported.instances.height:,} instances"
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


def list_probes(extra_dirs: list[Path] | None = None, patterns: list[str] | None = None,
                include_default: bool = True,
                problems: list[ProbeFileError] | None = None) -> list[Probe]:
    """The probes that ``--list`` shows and an export exports: every probe file found (see
    :func:`probes.engine.spec.discover`) except building blocks with ``export: false``. One function
    for ``probes.engine.export --list``, ``probes.engine.run --list`` and ``kgprobe list``; with
    ``problems`` a bad file is collected there instead of stopping the list."""
    return [p for p in discover(extra_dirs, patterns, include_default=include_default,
                                problems=problems)
            if p.spec.export]


def print_probe_list(extra_dirs: list[Path] | None = None, patterns: list[str] | None = None,
                     include_default: bool = True) -> int:
    """Print the probe list (stdout) and one line per probe file that cannot be read (stderr,
    after the list); 0 when every file was read, else 2. One bad file never hides the others."""
    problems: list[ProbeFileError] = []
    print(format_probe_list(list_probes(extra_dirs, patterns, include_default, problems)))
    for e in problems:
        options.error_line(e)
    return options.ERROR_STATUS if problems else 0


def format_probe_list(probes: list[Probe]) -> str:
    """One line per probe: name, task, file and description.

    >>> from probes.engine.spec import parse_probe
    >>> p = parse_probe("# name: a/b\\n# task: records\\n# split: test\\n"
    ...                 "# description: demo\\nSELECT ?x WHERE { }", "b.rq")
    >>> format_probe_list([p])
    'a/b                                      records      b.rq  demo'
    """
    return "\n".join(f"{p.spec.name:40} {p.spec.task:12} {p.path}  {p.spec.description or ''}"
                     .rstrip() for p in probes)


def print_preview(probes: list[Probe], store: KnowledgeStore, n: int, kind: str,
                  limits: QueryLimits | None = None,
                  builder_dirs: list[Path] | None = None) -> None:
    """Print ``n`` instances' rendered prompts per probe (``--preview N``); writes nothing."""
    check_graphs(probes, store)
    for probe in probes:
        t0 = time.perf_counter()
        with Heartbeat("previewing", probe.spec.name) as beat:
            df = build_instances(probe, store, limits, builder_dirs, beat)
            beat.result = f"{df.height:,} instances"
        print(f"## {probe.spec.name} ({probe.spec.task}, {df.height:,} instances, "
              f"{time.perf_counter() - t0:.2f} s; prompts as a {kind} model gets them)")
        print("\n".join(preview_prompts(probe, df, n, kind)) or "(no instances)")
        print()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe export`` / ``python -m probes.engine.export``."""
    parser.description = (
        "Run probe files (SPARQL SELECT with a YAML header) against the store and "
        "write their instances to the results DuckDB file (table `instances`) and to one Parquet "
        "file per probe and split.")
    parser.set_defaults(handler=run)
    parser.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                        help="probe name or glob pattern (e.g. 'starter/*'); repeatable; "
                        "default: every probe found")
    options.add_queries(parser)
    parser.add_argument("--only-extra", action="store_true",
                        help="do not read the default queries/ folder, only --queries folders")
    options.add_store(parser)
    options.add_endpoint(parser, help="query this SPARQL 1.1 endpoint instead of the embedded "
                         "store")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="--endpoint only: the most seconds one request may take in all, "
                        "connecting and reading included (default: 120)")
    parser.add_argument("--query-timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        metavar="SECONDS", help="the most seconds one probe query may run "
                        f"(default: {DEFAULT_TIMEOUT_S:g}; 0: no limit)")
    parser.add_argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS, metavar="N",
                        help="the most rows one probe query may return, to bound memory "
                        f"(default: {DEFAULT_MAX_ROWS:,}; 0: no limit)")
    parser.add_argument("--allow-service", action="store_true",
                        help="let probe queries call other SPARQL endpoints with SERVICE "
                        "(refused by default: a probe file is data); bounded by --query-timeout")
    options.add_results(parser)
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for Parquet files (default: $KGPROBE_EXPORTS or "
                        ".kgprobe/exports)")
    parser.add_argument("--no-parquet", action="store_true", help="write DuckDB only")
    parser.add_argument("--list", action="store_true", help="list the probes found and exit")
    parser.add_argument("--skip-bad-files", action="store_true",
                        help="leave out probe files that cannot be read (each is named on a "
                        "'note:' line) instead of stopping; without it a matched file that "
                        "cannot be read stops the command")
    parser.add_argument("--preview", type=int, default=None, metavar="N",
                        help="run the queries and print N instances' rendered prompts per probe "
                        "(template and params checked); writes nothing")
    parser.add_argument("--kind", choices=FAMILIES, default="causal",
                        help="--preview: render prompts as this kind of model gets them "
                        "(default: causal)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m probes.engine.export", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Export (or list, or preview) the chosen probes (a ProbeError or KgError: one error line
    from the command's runner, ``kg.options.call_handler``)."""
    try:
        if args.list:
            return print_probe_list(args.queries, args.probe, not args.only_extra)
        skipped: list[ProbeFileError] | None = [] if args.skip_bad_files else None
        probes = list_probes(args.queries, args.probe, not args.only_extra, skipped)
        for e in skipped or []:
            print(f"note: skipped (--skip-bad-files): {e}", file=sys.stderr)
        for flag, value in (("--timeout", args.timeout), ("--query-timeout", args.query_timeout),
                            ("--max-rows", args.max_rows)):
            if value < 0 or (flag == "--timeout" and value == 0):
                raise ProbeError(f"{flag} must be a positive number (got {value:g})")
        limits = QueryLimits(timeout_s=args.query_timeout or None, max_rows=args.max_rows or None,
                             allow_service=args.allow_service)
        store = open_store(args.endpoint, args.store, timeout=args.timeout)
        if not args.probe:  # every probe: those of optional sources not built are skipped
            probes, unbuilt = skip_unbuilt_optional(probes, store)
            for name, sources in unbuilt:
                print(f"skipped {name}: it reads the optional source(s) {', '.join(sources)}, "
                      f"not in the store; build with `python -m kg.build "
                      f"{' '.join('-s ' + s for s in sources)}` or name the probe with -p",
                      file=sys.stderr)
        builder_dirs = [*(args.queries or []), *config.extra_query_dirs()]
        if args.preview is not None:
            if args.preview < 1:
                raise ProbeError(f"--preview must be a positive number (got {args.preview})")
            print_preview(probes, store, args.preview, args.kind, limits, builder_dirs)
            return 0
        out = None if args.no_parquet else (args.out or config.exports_dir())
        t0 = time.perf_counter()
        reports = export(probes, store, args.results, out, progress=not args.quiet,
                         limits=limits, builder_dirs=builder_dirs)
    except duckdb.Error as e:  # the results file went bad under us, or the disk is full
        kept = (". Nothing of the probe being exported was written; the probes exported "
                "before it are kept" if disk_error(e) else "")
        return options.error_line(f"{diagnose(Path(args.results or config.results_path()), e)}"
                                  f"{kept}")
    except KeyboardInterrupt:
        print("interrupted: probes exported so far are kept; nothing of the current one was "
              "written", file=sys.stderr)
        return 130
    print(format_reports(reports))
    print(f"\nexported {len(probes)} probe(s) in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
