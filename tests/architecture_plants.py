"""The 35 violations of issue 31, as plants for a temporary copy of the tree.

Each plant adds one violation to one file of the copy (a new file, or a line changed in an
existing one), never two plants in the same file, so a checker's findings can be attributed by
file. :func:`plant_all` plants them; :func:`caught` says which plants a checker's findings
name. ``tests/test_architecture.py`` requires the checker to catch every one;
``scripts/architecture_plants.py`` prints the table for any version of the checker (the one
in docs/architecture.md).
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Plant:
    id: str
    group: str
    what: str
    file: str          # relative to the tree root
    code: str          # appended to the file (created if missing) ...
    old: str = ""      # ... or, when set, the text in the file that ``code`` replaces


_CON = "def _leak(con, df, table):\n    "

PLANTS: tuple[Plant, ...] = (
    # static imports across layers
    Plant("I1", "import", "kg imports eval", "kg/plant_i1.py", "from eval import report\n"),
    Plant("I2", "import", "kg imports probes inside a function", "kg/plant_i2.py",
          "def f():\n    from probes.engine.spec import Probe\n    return Probe\n"),
    Plant("I3", "import", "eval imports an engine module", "eval/plant_i3.py",
          "from probes.engine.spec import Probe\n"),
    Plant("I4", "import", "eval imports the engine under TYPE_CHECKING", "eval/plant_i4.py",
          "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
          "    from probes.engine.tasks import Task\n"),
    Plant("I5", "import", "the engine imports eval inside a function", "probes/plant_i5.py",
          "def f():\n    from eval.copen_report import main\n    return main\n"),
    Plant("I6", "import", "a relative import from the engine into eval",
          "probes/engine/runner/plant_i6.py", "from ....eval import sqlfile\n"),
    # dynamic imports
    Plant("D1", "dynamic import", 'importlib.import_module("eval.report")',
          "probes/plant_d1.py",
          'import importlib\nreport = importlib.import_module("eval.report")\n'),
    Plant("D2", "dynamic import", '__import__("eval.report")', "probes/plant_d2.py",
          'report = __import__("eval.report")\n'),
    Plant("D3", "dynamic import", 'runpy.run_module("eval.report")', "probes/plant_d3.py",
          'import runpy\nrunpy.run_module("eval.report")\n'),
    Plant("D4", "dynamic import", 'exec("from eval import report")', "probes/plant_d4.py",
          'exec("from eval import report")\n'),
    # the string tables that import by name
    Plant("T1", "string table", '"eval.report" added to registry._MODULES',
          "probes/backends/registry.py", '    "seq2seq": "probes.backends.seq2seq",\n'
          '    "report": "eval.report",\n', old='    "seq2seq": "probes.backends.seq2seq",\n'),
    Plant("T2", "string table", '"eval.report" added to probes.backends._EXPORTS',
          "probes/backends/__init__.py", '    "KINDS": "probes.backends.registry",\n'
          '    "build_report": "eval.report",\n', old='    "KINDS": "probes.backends.registry",\n'),
    Plant("T3", "string table", '"eval.report:main" added to export.BUILDERS',
          "probes/engine/export.py", 'BUILDERS = ("probes.benchmarks.ontolama:instances", '
                                     '"eval.report:main")\n',
          old='BUILDERS = ("probes.benchmarks.ontolama:instances",)\n'),
    # the contract imports the engine
    Plant("C1", "contract", "probes/results imports probes.engine.spec",
          "probes/results/plant_c1.py", "from probes.engine.spec import Probe\n"),
    # writes to result tables outside probes/results
    Plant("W1", "write", "INSERT INTO scores", "probes/plant_w1.py",
          _CON + 'con.execute("INSERT INTO scores SELECT * FROM df")\n'),
    Plant("W2", "write", "UPDATE runs SET", "probes/plant_w2.py",
          _CON + "con.execute(\"UPDATE runs SET status = 'failed'\")\n"),
    Plant("W3", "write", "DELETE FROM an f-string's {table}", "eval/plant_w3.py",
          _CON + 'con.execute(f"DELETE FROM {table} WHERE run_id = ?", [1])\n'),
    Plant("W4", "write", "table name built with %", "probes/plant_w4.py",
          _CON + 'con.execute("DELETE FROM %s WHERE run_id = ?" % "scores", [1])\n'),
    Plant("W5", "write", "table name built with .format", "probes/plant_w5.py",
          _CON + 'con.execute("DELETE FROM {} WHERE run_id = ?".format("runs"), [1])\n'),
    Plant("W6", "write", 'quoted identifier: DELETE FROM "runs"', "probes/plant_w6.py",
          _CON + "con.execute('DELETE FROM \"runs\" WHERE run_id = ?', [1])\n"),
    Plant("W7", "write", "UPDATE runs AS r SET", "probes/plant_w7.py",
          _CON + "con.execute(\"UPDATE runs AS r SET status = 'x' WHERE r.run_id = ?\", [1])\n"),
    Plant("W8", "write", "'DELETE ' + 'FROM runs'", "eval/plant_w8.py",
          _CON + "con.execute('DELETE ' + 'FROM runs')\n"),
    Plant("W9", "write", "TRUNCATE scores", "probes/plant_w9.py",
          _CON + 'con.execute("TRUNCATE scores")\n'),
    Plant("W10", "write", "COPY scores FROM a file", "probes/plant_w10.py",
          _CON + "con.execute(\"COPY scores FROM 'scores.csv'\")\n"),
    Plant("W11", "write", "CREATE OR REPLACE TABLE runs", "eval/plant_w11.py",
          _CON + 'con.execute("CREATE OR REPLACE TABLE runs AS SELECT * FROM df")\n'),
    Plant("W12", "write", "con.append('scores', df)", "probes/plant_w12.py",
          _CON + 'con.append("scores", df)\n'),
    Plant("W13", "write", "rel.insert_into('runs')", "probes/plant_w13.py",
          _CON + 'con.sql("SELECT * FROM df").insert_into("runs")\n'),
    # second definitions of the relation codes
    Plant("R1", "relation codes", "a tuple of codes", "eval/plant_r1.py",
          'ORDER = ("SYN", "ANT", "HYP")\n'),
    Plant("R2", "relation codes", "a dict with codes among its values", "probes/plant_r2.py",
          'CODES = {"hyper": "HYP", "holo": "HOL", "mero": "MER"}\n'),
    Plant("R3", "relation codes", "codes in another case", "eval/plant_r3.py",
          'ORDER = ["hyp", "hpo", "hol", "mer"]\n'),
    Plant("R4", "relation codes", "an Enum of codes", "kg/plant_r4.py",
          "from enum import Enum\n\n\nclass Relation(Enum):\n    HYP = 1\n    HPO = 2\n"
          "    HOL = 3\n"),
    Plant("R5", "relation codes", "a .split() string", "probes/plant_r5.py",
          'CODES = "HYP HPO HOL MER ANT SYN".split()\n'),
    Plant("R6", "relation codes", "semrel/<code> probe names", "eval/plant_r6.py",
          'PROBES = ("semrel/hyp", "semrel/hpo", "semrel/hol")\n'),
    Plant("R7", "relation codes", "a code-to-name dict", "eval/plant_r7.py",
          'NAMES = {"HYP": "hypernymy", "HPO": "hyponymy", "HOL": "holonymy"}\n'),
    Plant("R8", "relation codes", "a code-to-probe dict", "probes/plant_r8.py",
          'PROBE = {"HYP": "semrel/hyp", "MER": "semrel/mer", "SYN": "semrel/syn"}\n'),
)


def copy_tree(root: Path, dest: Path) -> Path:
    """``kg/``, ``probes/`` and ``eval/`` of ``root`` copied into ``dest`` (no caches)."""
    for layer in ("kg", "probes", "eval"):
        shutil.copytree(root / layer, dest / layer,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def plant(root: Path, p: Plant) -> None:
    """Add plant ``p`` to the tree at ``root``."""
    path = root / p.file
    if p.old:
        text = path.read_text(encoding="utf-8")
        if p.old not in text:
            raise ValueError(f"plant {p.id}: {p.file} no longer holds {p.old!r}; update the plant")
        path.write_text(text.replace(p.old, p.code, 1), encoding="utf-8")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(before + textwrap.dedent(p.code), encoding="utf-8")


def plant_all(root: Path, plants: Iterable[Plant] = PLANTS) -> None:
    files = [p.file for p in plants]
    assert len(files) == len(set(files)), "two plants in one file"
    for p in plants:
        plant(root, p)


def caught(findings: Iterable[str], plants: Iterable[Plant] = PLANTS) -> dict[str, bool]:
    """Plant id -> whether a finding names the plant's file (findings start ``path:line``)."""
    named = {f.split(":", 1)[0] for f in findings}
    return {p.id: p.file in named for p in plants}
