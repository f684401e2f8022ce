"""The report runner that the benchmark reports share (re-exported by :mod:`eval.report`).

:func:`metric_rows`, :func:`report_folder`, :func:`write_report`, :func:`run_report`,
:func:`report_command`: run every metric SQL file of a folder against the results file, hand
the rows to a render function that returns markdown and figures, and write them into a folder
of their own per call (``<reports>/<name>-<time>-<arguments hash>/``; a folder given with
``--out`` is used as is, and PNGs an earlier call of the same report wrote there and this call
did not are removed).

>>> report_folder(Path("mine"), "report", [])
PosixPath('mine')
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from eval.sqlfile import discover_metrics, run_metric
from kg import config
from probes.results import connect

Rows = dict[str, list[dict[str, Any]]]


@dataclass
class Rendered:
    """What a render function returns: the report's markdown and the figures it wrote."""

    markdown: str
    figures: list[Path] = field(default_factory=list)


#: A render function: the open (read-only) results file, for what no metric covers (the runs
#: table), the metric rows by metric name, and the folder for its figures.
Render = Callable[[duckdb.DuckDBPyConnection, Rows, Path], Rendered]


def metric_rows(con: duckdb.DuckDBPyConnection, folders: Sequence[Path]) -> Rows:
    """Every metric SQL file of ``folders`` run against the results file: its rows as dicts,
    by metric name."""
    out: Rows = {}
    for metric in discover_metrics(list(folders)):
        cols, rows = run_metric(con, metric)
        out[metric.name] = [dict(zip(cols, r, strict=True)) for r in rows]
    return out


def report_folder(out: Path | None, name: str, argv: Sequence[str]) -> Path:
    """Where one call's report goes: ``out`` when given, else a new folder
    ``$KGPROBE_HOME/reports/<name>-<UTC time>-<hash of the arguments>`` (so no call overwrites
    an earlier report).

    >>> report_folder(Path("mine"), "report", [])
    PosixPath('mine')
    >>> report_folder(None, "report", ["-p", "x"]).name.startswith("report-")
    True
    """
    if out is not None:
        return out
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    digest = hashlib.sha1("\0".join(argv).encode()).hexdigest()[:6]
    return config.home() / "reports" / f"{name}-{stamp}-{digest}"


def write_report(out: Path, filename: str, rendered: Rendered) -> Path:
    """Write the markdown as ``out/filename`` and remove the PNGs that an earlier call of the
    same report wrote into ``out`` and this one did not (stale charts; listed in the hidden
    ``.<filename>.figures``, so other reports' PNGs in the folder stay); returns the path."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / f".{filename}.figures"
    keep = {f.name for f in rendered.figures}
    if manifest.is_file():
        for name in manifest.read_text(encoding="utf-8").split("\n"):
            stale = out / name
            if name.endswith(".png") and name not in keep and stale.parent == out:
                stale.unlink(missing_ok=True)
    manifest.write_text("\n".join(sorted(keep)), encoding="utf-8")
    path = out / filename
    path.write_text(rendered.markdown.rstrip("\n") + "\n", encoding="utf-8")
    return path


def run_report(results: str | Path, folders: Sequence[Path], render: Render, out: Path,
               filename: str = "report.md",
               prepare: Callable[[duckdb.DuckDBPyConnection], None] | None = None
               ) -> tuple[Path, Rendered]:
    """The report runner: open the results file read-only, call ``prepare`` (settings the
    metrics read, such as DuckDB variables), run every metric of ``folders``, hand the rows to
    ``render`` (figures go into ``out``) and write its markdown (see :func:`write_report`).
    Returns the markdown file's path and what was rendered. A render function raises
    :class:`MetricError` to report that there is nothing to show (nothing is written)."""
    con = connect(str(results), read_only=True)
    try:
        if prepare is not None:
            prepare(con)
        rows = metric_rows(con, folders)
        rendered = render(con, rows, out)  # figures make their folder (eval.plots)
    finally:
        con.close()
    return write_report(out, filename, rendered), rendered


def report_command(results: Path | None, name: str, argv: Sequence[str] | None,
                   out: Path | None, folders: Sequence[Path], render: Render,
                   filename: str) -> int:
    """The body of a benchmark report's command line: a folder per call (or ``out``),
    :func:`run_report`, the markdown and the written paths printed (a MetricError or
    ProbeError: one error line, status 2, from the command's runner,
    ``kg.options.call_handler``)."""
    where = report_folder(out, name, sys.argv[1:] if argv is None else argv)
    path, rendered = run_report(str(results or config.results_path()), folders, render, where,
                                filename)
    print(rendered.markdown)
    print(f"\nwrote {path}" + "".join(f" and {f}" for f in rendered.figures))
    return 0
