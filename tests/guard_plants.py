"""The plants of issue 43: boundary violations in the spellings a static checker misses.

Each plant is the source of one module that breaks one rule when it runs. It is loaded under
a module name of the layer it pretends to be in (``probes.engine.plant_<id>``, ``kg.plant_...``,
``eval.plant_...``, ``probes.results.plant_...``) from a temporary file, so the guards see it
as that layer's code, and its ``run(con)`` is called with a results connection
(:func:`probes.results.connect`). ``tests/test_guards.py`` requires the import guard
(``tests/import_guard.py``) or the results connection's guard (``probes/results/guard.py``)
to catch every one. The issue lists the forms, not the plants themselves: these are one per
form it names, and the other ways of spelling the same import or write that Python offers.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Plant:
    id: str
    guard: str        # "import" or "write": which guard must catch it
    layer: str        # the package it is loaded into
    what: str
    code: str         # module source; run(con, here) does the deed (here: the plant's folder)
    files: tuple[tuple[str, str], ...] = ()  # data files written into ``here`` first


def _p(id_: str, guard: str, layer: str, what: str, body: str,
       files: tuple[tuple[str, str], ...] = ()) -> Plant:
    return Plant(id_, guard, layer, what, body.strip() + "\n", files)


PLANTS: tuple[Plant, ...] = (
    # --- imports the engine may not make (eval, probes.app) --------------------------------
    _p("I1", "import", "probes.engine", "from eval import report, at module level",
       "from eval import report\n\ndef run(con, here):\n    return report"),
    _p("I2", "import", "probes.engine", "an import of eval inside a function",
       "def run(con, here):\n    from eval.report import build_report\n    return build_report"),
    _p("I3", "import", "probes.engine", "importlib.import_module('.report', 'eval')",
       "import importlib\n\ndef run(con, here):\n"
       "    return importlib.import_module('.report', 'eval')"),
    _p("I4", "import", "probes.engine", "importlib.import_module of a name built at run time",
       "import importlib\n\ndef run(con, here):\n"
       "    return importlib.import_module('.'.join(['ev' + 'al', 'rep' + 'ort']))"),
    _p("I5", "import", "probes.engine", "__import__('eval.report')",
       "def run(con, here):\n    return __import__('eval.report')"),
    _p("I6", "import", "probes.engine", "pkgutil.resolve_name('eval.report:build_report')",
       "import pkgutil\n\ndef run(con, here):\n"
       "    return pkgutil.resolve_name('eval.report:build_report')"),
    _p("I7", "import", "probes.engine", "runpy.run_module('eval.copen_table8')",
       "import runpy\n\ndef run(con, here):\n"
       "    return runpy.run_module('eval.copen_table8', run_name='plant')"),
    _p("I8", "import", "probes.engine", "exec('from eval import report')",
       "def run(con, here):\n    exec('from eval import report')"),
    _p("I9", "import", "probes.engine", "exec of an import with globals of its own",
       "def run(con, here):\n    exec('import eval.sqlfile', {'__name__': 'anything'})"),
    _p("I10", "import", "probes.engine", "an eval file loaded by its path "
       "(spec_from_file_location + exec_module)",
       "import importlib.util\nfrom pathlib import Path\n\ndef run(con, here):\n"
       "    import kg\n    path = Path(kg.__file__).parents[1] / 'eval' / 'report.py'\n"
       "    spec = importlib.util.spec_from_file_location('not_eval', path)\n"
       "    module = importlib.util.module_from_spec(spec)\n"
       "    spec.loader.exec_module(module)\n    return module"),
    _p("I11", "import", "probes.engine", "getattr(importlib, 'import_' + 'module')",
       "import importlib\n\ndef run(con, here):\n"
       "    return getattr(importlib, 'import_' + 'module')('eval.udf')"),
    _p("I12", "import", "probes.engine", "from probes import app (the application layer)",
       "def run(con, here):\n    from probes import app\n    return app"),
    _p("I13", "import", "probes.engine", "importlib.import_module('probes.app.outputs')",
       "import importlib\n\ndef run(con, here):\n"
       "    return importlib.import_module('probes.app.outputs')"),
    _p("I14", "import", "probes.engine", "builtins.__import__ fetched by name",
       "import builtins\n\ndef run(con, here):\n"
       "    return getattr(builtins, '__imp' + 'ort__')('eval.plots')"),
    # --- the other layers' rules ----------------------------------------------------------
    _p("I15", "import", "kg", "kg imports the engine",
       "def run(con, here):\n    import probes.engine.spec\n    return probes.engine.spec"),
    _p("I16", "import", "kg", "kg imports eval through importlib",
       "import importlib\n\ndef run(con, here):\n    return importlib.import_module('eval')"),
    _p("I17", "import", "eval", "eval imports the engine",
       "def run(con, here):\n    from probes.engine import spec\n    return spec"),
    _p("I18", "import", "eval", "eval imports torch",
       "def run(con, here):\n    import torch\n    return torch"),
    _p("I19", "import", "probes.results", "the contract imports the engine",
       "def run(con, here):\n    from probes.engine.errors import ModelError\n"
       "    return ModelError"),
    # --- writes to the result tables outside the contract ---------------------------------
    _p("W1", "write", "probes.engine", "INSERT INTO probe_exports",
       "def run(con, here):\n    con.execute(\"INSERT INTO probe_exports VALUES "
       "('p', 'h', now())\")"),
    _p("W2", "write", "probes.engine", "'DELETE FROM {t}'.format_map(...)",
       "def run(con, here):\n    con.execute('DELETE FROM {t}'.format_map({'t': 'runs'}))"),
    _p("W3", "write", "probes.engine", "SQL read from a .sql file",
       "def run(con, here):\n    con.execute((here / 'leak.sql').read_text())",
       files=(("leak.sql", "UPDATE runs SET status = 'failed'\n"),)),
    _p("W4", "write", "probes.engine", "con.table(x) then .insert",
       "def run(con, here):\n    t = con.table('probe_exports')\n"
       "    t.insert(['p', 'h', '2025-01-01 00:00:00'])"),
    _p("W5", "write", "probes.engine", "rel.insert_into('runs')",
       "def run(con, here):\n    con.sql('SELECT * FROM runs').insert_into('runs')"),
    _p("W6", "write", "probes.engine", "DuckDB's appender('model_vocab')",
       "def run(con, here):\n    a = con.appender('model_vocab')\n"
       "    a.append_row(['m', 'v', 'a'])\n    a.flush()"),
    _p("W7", "write", "probes.engine", "TRUNCATE on a cursor",
       "def run(con, here):\n    con.cursor().execute('TRUNCATE score_cache')"),
    _p("W8", "write", "eval", "a prepared statement that writes",
       "def run(con, here):\n    con.execute('PREPARE p AS DELETE FROM runs')"),
    _p("W9", "write", "probes.benchmarks", "a write inside the contract's own transaction",
       "from probes.results import transaction\n\ndef run(con, here):\n"
       "    with transaction(con):\n"
       "        con.execute('CREATE OR REPLACE TABLE prompts AS SELECT 1 AS x')"),
    _p("W10", "write", "probes.engine", "exec of a write with globals of its own",
       "def run(con, here):\n"
       "    exec(\"con.execute('DROP TABLE gold_forms')\", {'con': con, '__name__': 'x'})"),
)
"""29 plants: 19 imports, 10 writes."""


def load(plant: Plant, folder: Path) -> Any:
    """The plant as a module of its layer (``<layer>.plant_<id>``), loaded from a file in
    ``folder``; a violation made at import time is the guards' to see."""
    name = f"{plant.layer}.plant_{plant.id.lower()}"
    path = folder / f"plant_{plant.id.lower()}.py"
    path.write_text(plant.code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def catch(plant: Plant, folder: Path) -> tuple[bool, str]:
    """Run one plant on a fresh results file in ``folder``: (caught, what the guard said).
    An import plant is caught when the import guard records a violation naming its module, a
    write plant when the write raises WriteOutsideContract and the table is unchanged."""
    from probes.results import WriteOutsideContract, connect
    from tests import import_guard

    here = folder / plant.id
    here.mkdir()
    for name, text in plant.files:
        (here / name).write_text(text, encoding="utf-8")
    con = connect(here / "results.duckdb")
    before = _counts(con)
    try:
        with import_guard.recorded() as found:
            try:
                load(plant, here).run(con, here)
            except WriteOutsideContract as e:
                said = str(e)
                return plant.guard == "write" and _counts(con) == before, said
            except Exception as e:  # the deed failed after the guard saw it (or did not)
                failed = f"{type(e).__name__}: {e}"
            else:
                failed = ""
        mine = [v for v in found if v.importer == f"{plant.layer}.plant_{plant.id.lower()}"]
        return plant.guard == "import" and bool(mine), "; ".join(map(str, mine)) or failed or "-"
    finally:
        con.close()


def _counts(con: Any) -> dict[str, int]:
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
    ).fetchall()]
    return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def main() -> int:
    """Run every plant twice in this fresh interpreter (first with no ``eval`` module loaded,
    then with all of them loaded) and print one JSON line per plant."""
    from tests import import_guard

    import_guard.install()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            folder = Path(tmp) / f"pass{n}"
            folder.mkdir()
            for plant in PLANTS:
                ok, said = catch(plant, folder)
                print(json.dumps({"pass": n, "id": plant.id, "caught": ok, "said": said}))
            for name in [m for m in sys.modules if m.startswith(tuple(
                    f"{p.layer}.plant_" for p in PLANTS))]:
                del sys.modules[name]
    return 0


if __name__ == "__main__":
    sys.exit(main())
