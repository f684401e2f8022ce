"""The boundaries guarded by behaviour (issue 43, point 4), and the plants they must catch.

- the import guard (tests/import_guard.py, installed by tests/conftest.py) records every import
  a module of ``kg``, ``probes`` or ``eval`` causes against the layers' rules, whatever the
  spelling; the test during which one breaks a rule fails;
- the results connection's guard (probes/results/guard.py): on the connection
  ``probes.results.connect`` hands out, a write to a result table from outside the contract
  raises, whatever built the statement.

The 29 plants of tests/guard_plants.py run in a fresh interpreter twice: before any ``eval``
module is loaded and after all are (an import of a loaded module must be seen too).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from probes.results import WriteOutsideContract, connect, transaction
from probes.results.guard import GuardedConnection, write_targets
from probes.results.writers import Run, insert_run
from tests import import_guard
from tests.guard_plants import PLANTS

ROOT = Path(__file__).resolve().parents[1]


def engine_module(tmp_path: Path, name: str, code: str) -> Any:
    """``code`` loaded as the module ``name`` (e.g. ``probes.engine.x``) from a file."""
    path = tmp_path / f"{name.rsplit('.', 1)[-1]}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the plants ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_every_plant_of_issue_43_is_caught() -> None:
    out = subprocess.run([sys.executable, "-m", "tests.guard_plants"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 2 * len(PLANTS) and len(PLANTS) == 29
    missed = [(r["pass"], r["id"], r["said"]) for r in rows if not r["caught"]]
    assert missed == []
    # each finding names the plant's own module: attributed to the code that caused it
    for r in rows:
        plant = next(p for p in PLANTS if p.id == r["id"])
        assert f"{plant.layer}.plant_{plant.id.lower()}" in r["said"], r


def test_the_plants_cover_the_forms_the_issue_names() -> None:
    forms = " | ".join(p.what for p in PLANTS)
    for form in ("importlib.import_module('.report', 'eval')", "pkgutil.resolve_name",
                 "con.table(x) then .insert", "SQL read from a .sql file", ".format_map"):
        assert form in forms, form
    assert {p.guard for p in PLANTS} == {"import", "write"}
    assert len({p.id for p in PLANTS}) == len(PLANTS)


# --- the results connection's guard -------------------------------------------------------------

def test_the_contracts_writers_write_and_engine_code_cannot(tmp_path: Path) -> None:
    con = connect(tmp_path / "r.duckdb")
    assert isinstance(con, GuardedConnection)
    insert_run(con, Run(run_id="r1", model="m", probe="p", task="choice"))  # a writer: fine
    leak = engine_module(tmp_path, "probes.engine.leak", (
        "def update(con, table):\n"
        "    con.execute(f'UPDATE {table} SET status = ?', ['failed'])\n"
        "def update_in_text(con):\n"
        "    exec(\"con.execute(\\\"DELETE FROM runs\\\")\", {'con': con})\n"))
    with pytest.raises(WriteOutsideContract, match=r"probes\.engine\.leak writes runs"):
        leak.update(con, "runs")
    with pytest.raises(WriteOutsideContract, match=r"probes\.results"):
        leak.update_in_text(con)
    assert con.execute("SELECT status FROM runs").fetchall() == [("running",)]  # unchanged
    con.execute("UPDATE runs SET status = 'done'")  # a test's own write is not restricted
    assert con.execute("SELECT status FROM runs").fetchall() == [("done",)]
    con.close()


def test_engine_code_keeps_everything_that_is_not_a_result_write(tmp_path: Path) -> None:
    con = connect(tmp_path / "r.duckdb")
    with transaction(con):
        insert_run(con, Run(run_id="r1", model="m", probe="p", task="choice"))
    reader = engine_module(tmp_path, "probes.engine.reader", (
        "import pyarrow as pa\n"
        "def read(con, out):\n"
        "    keys = pa.table({'run_id': ['r1', 'zz']})  # a local DuckDB finds by name\n"
        "    got = con.execute('SELECT k.run_id, r.model FROM keys k LEFT JOIN runs r '\n"
        "                      'USING (run_id) ORDER BY 1').fetchall()\n"
        "    con.execute('CREATE TEMP TABLE kgp_work AS SELECT 1 AS x')\n"
        "    con.execute('INSERT INTO kgp_work VALUES (2)')\n"
        "    con.execute(f\"COPY runs TO '{out}' (FORMAT csv)\")\n"
        "    rel = con.table('runs').filter(\"model = 'm'\")\n"
        "    return got, con.sql('SELECT sum(x) FROM kgp_work').fetchall(), len(rel)\n"))
    got, temp, n = reader.read(con, tmp_path / "runs.csv")
    assert got == [("r1", "m"), ("zz", None)]
    assert temp == [(3,)] and n == 1 and (tmp_path / "runs.csv").is_file()
    con.close()


def test_a_table_is_written_a_temp_object_is_the_connections_own(tmp_path: Path) -> None:
    con = connect(tmp_path / "r.duckdb")
    code = engine_module(tmp_path, "probes.engine.ddl", (
        "def replace(con):\n    con.execute('CREATE OR REPLACE TABLE scores AS SELECT 1 AS x')\n"
        "def temp(con):\n    con.execute('CREATE TEMP VIEW scores AS SELECT 1 AS x')\n"
        "    n = con.execute('SELECT count(*) FROM scores').fetchall()\n"
        "    con.execute('DROP VIEW scores')\n    return n\n"))
    with pytest.raises(WriteOutsideContract, match="scores"):
        code.replace(con)
    assert code.temp(con) == [(1,)]  # a metric's sandbox may shadow and drop its own views
    assert con.execute("SELECT count(*) FROM scores").fetchall() == [(0,)]
    con.close()


def test_write_targets_read_the_final_text() -> None:
    assert write_targets('delete from "Runs" where 1') == ["runs"]
    assert write_targets("UPDATE main.runs AS r SET x = 1; TRUNCATE TABLE scores") == [
        "runs", "scores"]
    assert write_targets("-- a note\nINSERT OR REPLACE INTO scores BY NAME SELECT 1") == [
        "scores"]
    assert write_targets("COPY scores (a, b) FROM 'x.csv'") == ["scores"]
    assert write_targets("COPY scores TO 'x.csv'; COPY (SELECT 1) TO 'y'") == []
    assert write_targets("MERGE INTO runs USING (SELECT 1 AS a) x ON true "
                         "WHEN MATCHED THEN DELETE") == ["runs"]
    assert write_targets("PREPARE p AS UPDATE runs SET x = 1") == ["runs"]
    assert write_targets("SELECT 'DELETE FROM runs' AS text") == []
    assert write_targets("ATTACH 'x.duckdb' AS o; INSERT INTO o.main.runs SELECT 1") == ["runs"]
    assert write_targets("CREATE TEMP TABLE runs AS SELECT 1; DROP VIEW v") == []


# --- the import guard ---------------------------------------------------------------------------

def test_the_import_guard_attributes_imports_to_the_code_that_caused_them(tmp_path: Path) -> None:
    with import_guard.recorded() as found:
        import eval.report  # noqa: F401  (a test may import anything)
    assert found == []
    with import_guard.recorded() as found:
        mod = engine_module(tmp_path, "probes.engine.caller", (
            "import functools, importlib\n"
            "def run():\n"  # through a library call: still the engine's doing
            "    return functools.reduce(lambda a, n: importlib.import_module(n), "
            "['eval.stats'], None)\n"))
        mod.run()
    assert [str(v) for v in found] == [
        "probes.engine.caller imports eval.stats (importlib.import_module)"]
    assert import_guard.layer_of("probes.benchmarks.copen") == "engine"


def test_a_main_block_may_run_the_application_layer(tmp_path: Path) -> None:
    with import_guard.recorded() as found:
        engine_module(tmp_path, "probes.engine.entry", (
            "if __name__ == '__main__':\n    raise SystemExit\n"
            "def main():\n    pass\n"))
        import runpy

        path = tmp_path / "entry_main.py"
        path.write_text("from probes.app import outputs\n", encoding="utf-8")
        runpy.run_path(str(path), run_name="__main__")
    assert found == []
