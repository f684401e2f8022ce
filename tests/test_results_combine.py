"""``python -m probes.results combine``: finished runs of several results files into one.

Every expected count below is worked out from the rows the test writes: file A holds runs a1
(done, 3 score rows) and a2 (running, 1 score row); file B holds run b1 (done, 2 score rows)
and a copy of a1 (the same settings give the same run id)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from probes.app.cli import main as kgprobe
from probes.results import ResultsError, connect
from probes.results.__main__ import main
from probes.results.combine import combine


def _file(path: Path, runs: dict[str, tuple[str, int]], probe_hash: str = "h1") -> Path:
    """A results file with ``runs`` (run id -> (status, score rows)), one exported instance
    of probe ``p`` and a prompts row per run."""
    con = connect(path)
    con.execute("INSERT INTO probe_exports VALUES ('p', ?, now())", [probe_hash])
    con.execute("INSERT INTO instances (probe, split, instance_id, exported_at) "
                "VALUES ('p', 'test', 'i0', now())")
    for rid, (status, n) in runs.items():
        con.execute("INSERT INTO runs (run_id, model, probe, status, method, k) "
                    "VALUES (?, 'm', 'p', ?, 'kshot', 4)", [rid, status])
        con.execute("INSERT INTO prompts (run_id, prompt_id, template) VALUES (?, 0, 'T1')",
                    [rid])
        for j in range(n):
            con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                        "candidate, score, label) VALUES (?, 'p', 'test', 'i0', 0, ?, -1.0, "
                        "'1')", [rid, f"w{j}"])
    con.close()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_combine_copies_finished_runs_once_and_leaves_inputs_alone(tmp_path: Path) -> None:
    a = _file(tmp_path / "a.duckdb", {"a1": ("done", 3), "a2": ("running", 1)})
    b = _file(tmp_path / "b.duckdb", {"b1": ("done", 2), "a1": ("done", 3)})
    before = (_digest(a), _digest(b))
    out = tmp_path / "all.duckdb"
    s = combine(out, [a, b])
    # a1 and b1 added; a1 of B is the same run: already there; a2 is unfinished.
    assert (s.runs_added, s.runs_present, s.score_rows) == (2, 1, 5)
    assert s.unfinished == ["a2 (p, running)"]
    assert _rows(out, "SELECT run_id FROM runs ORDER BY 1") == [("a1",), ("b1",)]
    assert _rows(out, "SELECT run_id, count(*) FROM scores GROUP BY 1 ORDER BY 1") == [
        ("a1", 3), ("b1", 2)]
    assert _rows(out, "SELECT run_id FROM prompts ORDER BY 1") == [("a1",), ("b1",)]
    assert _rows(out, "SELECT count(*) FROM instances") == [(1,)]
    assert _rows(out, "SELECT k, method FROM runs WHERE run_id = 'b1'") == [(4, "kshot")]
    assert (_digest(a), _digest(b)) == before
    again = combine(out, [a, b])  # nothing new: idempotent
    assert (again.runs_added, again.runs_present) == (0, 3)
    assert _rows(out, "SELECT count(*) FROM scores") == [(5,)]


def test_combine_command_prints_the_summary(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    a = _file(tmp_path / "a.duckdb", {"a1": ("done", 1)})
    b = _file(tmp_path / "b.duckdb", {"b1": ("done", 1)})
    assert main(["combine", str(tmp_path / "o.duckdb"), str(a), str(b)]) == 0
    assert "2 run(s) added (2 score rows), 0 already there" in capsys.readouterr().out
    assert kgprobe(["results", "combine", str(tmp_path / "o.duckdb"), str(a)]) == 0
    assert "0 run(s) added (0 score rows), 1 already there" in capsys.readouterr().out
    assert main(["combine", str(a), str(a)]) == 2
    assert "both the output and an input" in capsys.readouterr().err


def test_another_probe_version_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    a = _file(tmp_path / "a.duckdb", {"a1": ("done", 1)})
    b = _file(tmp_path / "b.duckdb", {"b1": ("done", 1)}, probe_hash="h2")
    out = tmp_path / "all.duckdb"
    with pytest.raises(ResultsError, match=r"exported p from another version"):
        combine(out, [a, b])
    assert not out.exists()  # a1 rolled back too, and the OUT this call created removed


def test_an_older_input_is_named_with_the_upgrade_command(tmp_path: Path) -> None:
    old = tmp_path / "old.duckdb"
    _file(old, {"a1": ("done", 1)})
    con = duckdb.connect(str(old))
    con.execute("ALTER TABLE runs DROP COLUMN scoring")
    con.close()
    with pytest.raises(ResultsError, match=r"lacks runs\.scoring.*probes\.results upgrade"):
        combine(tmp_path / "all.duckdb", [old])
    with pytest.raises(ResultsError, match="no results file at"):
        combine(tmp_path / "all.duckdb", [tmp_path / "missing.duckdb"])


def test_an_input_still_being_written_is_named(tmp_path: Path) -> None:
    a = _file(tmp_path / "a.duckdb", {"a1": ("done", 1)})
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; "
                               f"c = duckdb.connect({str(a)!r}); print('ready', flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(ResultsError, match=r"locked by process"):
            combine(tmp_path / "all.duckdb", [a])
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert combine(tmp_path / "all.duckdb", [a]).runs_added == 1
