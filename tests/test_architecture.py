"""The import rules of docs/architecture.md, checked on the code itself (the checker is
tests/architecture.py; docs/architecture.md says exactly what it enforces).

- ``kg`` (sources, store, headers) imports neither ``probes`` nor ``eval``;
- ``eval`` (metrics, reports) imports no ``probes`` module except the results contract
  ``probes.results`` (and its submodules);
- ``probes.results`` (the contract) imports no other ``probes`` module;
- ``probes`` outside the application layer ``probes.app`` (the engine and the benchmarks)
  imports no ``eval`` module and not ``probes.app``; the one exception is the
  ``if __name__ == "__main__":`` block of a ``python -m`` entry, which may import ``probes.app``;
- ``probes.app`` may import ``kg``, ``probes`` and ``eval``;
- nothing in ``kg``, ``probes`` or ``eval`` imports ``tests``;
- here an import is a static ``import``/``from`` (in functions and ``TYPE_CHECKING`` blocks
  too): the cheap first line. Imports made at run time in any spelling are the import guard's
  (tests/import_guard.py, installed by tests/conftest.py: the test during which a module of
  ``kg``, ``probes`` or ``eval`` imports what its layer may not fails), and writes to the
  result tables outside ``probes/results`` raise on the results connection
  (probes/results/guard.py); tests/test_guards.py shows both catching issue 43's 29 plants;
- importing every ``eval`` module loads no torch (a fresh interpreter), and importing the
  engine's entry modules loads no ``eval`` module;
- the relation codes are defined once, ``TASKS`` means the task names, and the error line is
  written in one place.

The checker is tested on synthetic modules and on temporary copies of the tree with one bad
import added, so a broken rule cannot pass unnoticed.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.architecture import (
    RELATION_HOME,
    ROOT,
    RULES,
    imported_names,
    relation_code_copies,
    violations,
    within,
)

# --- the rules hold on the code ---------------------------------------------------------------


def test_layers_import_only_what_they_may() -> None:
    assert violations(ROOT) == []


def test_every_layer_has_code_to_check() -> None:
    # a renamed folder must not make the rules pass vacuously
    for rule in RULES:
        assert len(rule.files(ROOT)) >= 5, rule.layer


def test_importing_every_eval_module_loads_no_torch() -> None:
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import eval
        names = [m.name for m in pkgutil.walk_packages(eval.__path__, "eval.")
                 if not m.name.endswith("__main__")]
        for name in names:
            importlib.import_module(name)
        heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
        probes = sorted(m for m in sys.modules if m == "probes" or m.startswith("probes."))
        print(len(names), ",".join(heavy) or "-", ",".join(probes))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    count, heavy, probes = int(out[0]), out[1], out[2].split(",")
    assert count >= 8  # report, sqlfile, stats, udf, plots, profile and the three reports
    assert heavy == "-"
    assert all(p == "probes" or p.startswith("probes.results") for p in probes), probes


# --- the checker can fail ---------------------------------------------------------------------


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_checker_finds_bad_imports_in_synthetic_modules(tmp_path: Path) -> None:
    write(tmp_path, "kg/__init__.py", "")
    write(tmp_path, "kg/store.py", """
        import json
        from kg import vocab

        def load():
            from probes.engine.run import main
            return main
        """)
    write(tmp_path, "kg/sub/__init__.py", "")
    write(tmp_path, "kg/sub/x.py", "import eval.report as r\nfrom .. import store\n")
    write(tmp_path, "eval/__init__.py", "")
    write(tmp_path, "eval/ok.py", """
        from probes.results import connect
        from probes import results
        from probes.results.writers import Run
        """)
    write(tmp_path, "eval/bad.py", """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from probes.engine.spec import Probe
        from probes import api, results
        from probes.resultsx import y
        import tests.test_run
        """)
    write(tmp_path, "probes/__init__.py", "")
    write(tmp_path, "probes/a.py", "from tests import test_run\nfrom . import b\n")
    write(tmp_path, "probes/b.py", """
        from probes.app import outputs

        def metrics():
            from eval.sqlfile import run_metric
            import eval
            return run_metric

        if __name__ == "__main__":
            from probes.app.run import main
            from eval import report
            main()
        """)
    write(tmp_path, "probes/app/__init__.py", "")
    write(tmp_path, "probes/app/run.py", """
        from eval.sqlfile import run_metric
        from probes import b
        from kg import store
        import tests.test_run
        """)
    assert violations(tmp_path) == [
        "kg/store.py:6 imports probes.engine.run.main",
        "kg/sub/x.py:1 imports eval.report",
        "probes/a.py:1 imports tests.test_run",
        "probes/b.py:2 imports probes.app.outputs",
        "probes/b.py:5 imports eval.sqlfile.run_metric",
        "probes/b.py:6 imports eval",
        "probes/b.py:11 imports eval.report",
        "probes/app/run.py:5 imports tests.test_run",
        "eval/bad.py:4 imports probes.engine.spec.Probe",
        "eval/bad.py:5 imports probes.api",
        "eval/bad.py:6 imports probes.resultsx.y",
        "eval/bad.py:7 imports tests.test_run",
    ]


def test_relative_imports_resolve_to_absolute_names(tmp_path: Path) -> None:
    write(tmp_path, "eval/sub/__init__.py", "from ..x import y\n")
    write(tmp_path, "eval/sub/m.py", "from . import z\nfrom ...probes import api\n")
    assert imported_names(tmp_path / "eval/sub/__init__.py", tmp_path) == [(1, "eval.x.y")]
    assert imported_names(tmp_path / "eval/sub/m.py", tmp_path) == [
        (1, "eval.sub.z"), (2, "probes.api")]


def test_checker_catches_a_bad_import_added_to_a_copy_of_kg(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "kg", tmp_path / "kg")
    assert violations(tmp_path, RULES[:1]) == []
    store = tmp_path / "kg" / "store.py"
    lines = store.read_text(encoding="utf-8").splitlines()
    store.write_text("\n".join([*lines, "", "def _leak():", "    from eval import sqlfile", ""]),
                     encoding="utf-8")
    assert violations(tmp_path, RULES[:1]) == [
        f"kg/store.py:{len(lines) + 3} imports eval.sqlfile"]


def test_checker_catches_the_issue_example_in_a_copy_of_probes(tmp_path: Path) -> None:
    # issue 26: `from eval.copen_report import main` inside a function of probes/engine/spec.py
    shutil.copytree(ROOT / "probes", tmp_path / "probes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    probes_rules = tuple(r for r in RULES if within(r.layer, "probes"))
    assert violations(tmp_path, probes_rules) == []
    spec = tmp_path / "probes" / "engine" / "spec.py"
    lines = spec.read_text(encoding="utf-8").splitlines()
    spec.write_text("\n".join([*lines, "", "def _report():",
                               "    from eval.copen_report import main", "    return main", ""]),
                    encoding="utf-8")
    assert violations(tmp_path, probes_rules) == [
        f"probes/engine/spec.py:{len(lines) + 3} imports eval.copen_report.main"]


def test_the_engine_entry_modules_load_no_eval_module() -> None:
    # the rules above are static; this checks the same on what the imports actually load
    code = textwrap.dedent("""
        import sys
        import probes.engine.run, probes.engine.export, probes.engine.spec
        import probes.benchmarks.ontolama, probes.benchmarks.copen
        print(",".join(sorted(m for m in sys.modules if m == "eval" or m.startswith("eval.")))
              or "-")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "-"


# --- one definition of the semrel relation codes (kg.relations) ------------------------------

def test_relation_codes_are_defined_once() -> None:
    assert (ROOT / RELATION_HOME).is_file()
    assert relation_code_copies(ROOT) == [], (
        "the semrel relation codes are defined in kg/relations.py; import RELATIONS from there")


def test_relation_code_check_catches_a_copy_planted_in_a_copy_of_the_code(tmp_path: Path) -> None:
    for layer in ("kg", "probes", "eval"):
        shutil.copytree(ROOT / layer, tmp_path / layer,
                        ignore=shutil.ignore_patterns("__pycache__"))
    assert relation_code_copies(tmp_path) == []
    write(tmp_path, "eval/planted.py", 'ORDER = ["SYN", "ANT", "HYP"]\n')
    write(tmp_path, "probes/planted.py", 'X = 1\nCODES = {"hyp": "HYP", "holo": "HOL",\n'
          '         "mero": "MER"}\n')
    write(tmp_path, "kg/planted.py", 'PAPER = {"HYP": 1, "HOL": 2, "MER": 3}  # keyed: data\n')
    assert relation_code_copies(tmp_path) == ["eval/planted.py:1", "probes/planted.py:2"]


# --- one meaning of TASKS: the contract's tuple of task names (probes.results) ----------------

def module_level_tasks(root: Path) -> list[str]:
    """Each module-level assignment to the name ``TASKS`` in kg/, probes/, eval/ (``file:line``)."""
    found = []
    for layer in ("kg", "probes", "eval"):
        for path in sorted((root / layer).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target] if isinstance(node, ast.AnnAssign) else [])
                if any(isinstance(t, ast.Name) and t.id == "TASKS" for t in targets):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_tasks_means_the_task_names_only() -> None:
    found = [f.partition(":")[0] for f in module_level_tasks(ROOT)]
    assert found == ["probes/results/__init__.py"], (
        "TASKS is the contract's tuple of task names; name another table after what it holds "
        "(TASK_ENTRIES, COPEN_TASKS)")


def test_tasks_check_finds_a_second_definition(tmp_path: Path) -> None:
    write(tmp_path, "eval/planted.py", 'X = 1\nTASKS: tuple[str, ...] = ("csj", "cpj")\n')
    write(tmp_path, "probes/planted.py", 'def f() -> None:\n    TASKS = 1\n')  # a local: fine
    write(tmp_path, "kg/planted.py", "TASKS = {}\n")
    assert module_level_tasks(tmp_path) == ["kg/planted.py:1", "eval/planted.py:2"]


# --- the error line of a command is written in one place (kg.options.error_line) ------------

def error_line_texts(root: Path) -> list[str]:
    """Each string (or f-string part) of kg/, probes/, eval/ that starts ``error: `` (file:line)."""
    found = []
    for layer in ("kg", "probes", "eval"):
        for path in sorted((root / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and node.value.startswith("error: ")):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_the_error_line_is_written_in_one_place() -> None:
    found = [f.partition(":")[0] for f in error_line_texts(ROOT)]
    assert found == ["kg/options.py"], (
        "a command's error line is kg.options.error_line's: raise a UserError (KgError, "
        "ProbeError, MetricError) or call error_line, never print 'error: ...' yourself")


def test_error_line_check_finds_a_copy(tmp_path: Path) -> None:
    write(tmp_path, "probes/planted.py",
          'import sys\ntry:\n    pass\nexcept ValueError as e:\n'
          '    print(f"error: {e}", file=sys.stderr)\n')
    write(tmp_path, "eval/planted.py", 'NOTE = "a parse error: line 3"\nX = "error: " + "x"\n')
    assert error_line_texts(tmp_path) == ["probes/planted.py:5", "eval/planted.py:2"]


# --- the contract's own rule ---------------------------------------------------------------------


def test_the_contract_imports_no_other_probes_module(tmp_path: Path) -> None:
    write(tmp_path, "probes/results/__init__.py", "from probes.results import writers\n")
    write(tmp_path, "probes/results/x.py", "from probes.engine.errors import ProbeError\n")
    rules = tuple(r for r in RULES if r.layer == "probes.results")
    assert violations(tmp_path, rules) == ["probes/results/x.py:1 imports "
                                           "probes.engine.errors.ProbeError"]


def test_relation_code_check_reads_every_form(tmp_path: Path) -> None:
    for layer in ("kg", "probes"):
        (tmp_path / layer).mkdir()
    write(tmp_path, "eval/forms.py", """
        A = ["hyp", "hpo", "hol"]
        B = "HYP|HPO|HOL"
        C = {"HYP": "hypernymy", "HPO": "hyponymy", "HOL": "holonymy"}
        D = {"HYP": 0.5, "HPO": 0.25, "HOL": 0.1}  # figures keyed by code: data
        E = {"HYP": "> 0.95", "HPO": "0.83", "ANT": "0.9"}  # figures as text: data
        F = ("hypernymy", "meronymy", "synonymy")
        G = ("HYP", "cat")  # fewer than three

        class R:
            HYP = "x"
            MER = "y"
            SYN = "z"
        """)
    assert relation_code_copies(tmp_path) == [
        "eval/forms.py:2", "eval/forms.py:3", "eval/forms.py:4", "eval/forms.py:7",
        "eval/forms.py:10"]


