"""Issue 30 point 3: a metric folder is read like a probe folder. A FIFO or a link to
/dev/zero named ``*.sql`` is refused in one line (it hung the report, or grew it to 23 GB), a
statement type the checker does not know is refused in one line (it was a ValueError
traceback), and a metric that runs too long is stopped at ``--metric-timeout`` in one line.
The report runs in a process of its own, bounded, so a hang fails the test."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval.sqlfile import MetricFileError, check_statements
from tests.test_metric_sandbox import HEADER, counts, metric_folder, results  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
GOOD = HEADER.format(name="fine") + "SELECT 't/c' AS probe, 1 AS value\n"


def report(res: Path, folder: Path, *extra: str, timeout: float = 60
           ) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # 4 GB of address space: /dev/zero read whole would pass it
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    return subprocess.run([sys.executable, "-m", "eval.report", "--results", str(res),
                           "--metrics", str(folder), "--out", str(folder.parent / "out"),
                           "--no-plots", *extra], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_fifo_or_dev_zero_in_a_metric_folder_is_one_line(tmp_path: Path, results: Path,  # noqa: F811
                                                           kind: str) -> None:
    folder = metric_folder(tmp_path, {"fine.sql": GOOD})
    odd = folder / f"a_{kind}.sql"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to("/dev/zero")
    t0 = time.monotonic()
    try:
        got = report(results, folder)
    except subprocess.TimeoutExpired:
        pytest.fail("the report hung on the metric folder")
    assert time.monotonic() - t0 < 60
    what = "a FIFO (named pipe)" if kind == "fifo" else "a character device"
    assert got.returncode == 2, got.stderr[-400:]
    assert got.stderr.strip() == (f"error: {odd}: it is {what}, not a regular file; a metric "
                                  "file must be a plain text file (replace it, or move it out "
                                  "of the folder)")
    assert counts(results) == (5, 10, 1)


def test_a_support_file_that_is_a_fifo_is_one_line(tmp_path: Path, results: Path  # noqa: F811
                                                   ) -> None:
    folder = metric_folder(tmp_path, {"fine.sql": GOOD.replace(
        "-- grain: [probe]\n", "-- grain: [probe]\n-- requires: [_views.sql]\n")})
    os.mkfifo(folder / "_views.sql")
    try:
        got = report(results, folder)
    except subprocess.TimeoutExpired:
        pytest.fail("the report hung on the support file")
    assert got.returncode == 2 and "Traceback" not in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert f"error: {folder / '_views.sql'}: it is a FIFO (named pipe)" in got.stderr


def test_an_unknown_statement_type_is_refused_in_one_line() -> None:
    sql = HEADER.format(name="upd") + "SELECT 1 AS value;\nUPDATE EXTENSIONS;\n"
    with pytest.raises(MetricFileError) as info:
        check_statements(sql, "m.sql")
    assert str(info.value).startswith("m.sql:6: a metric file may only hold SELECT queries")
    assert "not UPDATE EXTENSIONS" in str(info.value)


@pytest.mark.slow  # builds a tiny model / waits for its deadline
def test_a_metric_that_runs_too_long_is_stopped_at_its_deadline(
        tmp_path: Path, results: Path  # noqa: F811
) -> None:
    folder = metric_folder(tmp_path, {"slow.sql": HEADER.format(name="slow") + (
        "SELECT 't/c' AS probe, count(*) AS value FROM range(10000000000000::BIGINT)\n")})
    # 30 s: the deadline holds for every metric, and the built-in ones must stay under it on a
    # loaded 2-core machine (at 10 s, shortcut_ceiling once ran past it under a load of 4)
    t0 = time.monotonic()
    got = report(results, folder, "--metric-timeout", "30", timeout=180)
    assert time.monotonic() - t0 < 120
    assert got.returncode == 2, got.stderr[-400:]
    assert got.stderr.strip() == (f"error: {folder / 'slow.sql'}: metric 'slow' ran longer "
                                  "than 30 s and was stopped; narrow its query (or raise "
                                  "--metric-timeout)")
    assert counts(results) == (5, 10, 1)
