"""The import rules of docs/architecture.md, checked on the code itself.

- ``kg`` (sources, store, headers) imports neither ``probes`` nor ``eval``;
- ``eval`` (metrics, reports) imports no ``probes`` module except the results contract
  ``probes.results`` (and its submodules);
- ``probes`` outside the application layer ``probes.app`` (the engine and the benchmarks)
  imports no ``eval`` module and not ``probes.app``; the one exception is the
  ``if __name__ == "__main__":`` block of a ``python -m`` entry, which may import ``probes.app``
  (``python -m probes.run`` runs :func:`probes.app.run.main`);
- ``probes.app`` (console script, notebook API, output files, the commands that need metrics)
  may import ``kg``, ``probes`` and ``eval``;
- nothing in ``kg``, ``probes`` or ``eval`` imports ``tests``;
- importing every ``eval`` module loads no torch (a fresh interpreter), and importing the
  engine's entry modules loads no ``eval`` module.

The static check reads every ``.py`` file with :mod:`ast` (imports inside functions and
``TYPE_CHECKING`` blocks count too, as do relative imports, resolved to absolute names). The
checker is tested on synthetic modules and on temporary copies of ``kg/`` and ``probes/`` with
one bad import added, so a broken rule cannot pass unnoticed.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def within(name: str, prefix: str) -> bool:
    """``name`` is the module ``prefix`` or one of its submodules."""
    return name == prefix or name.startswith(prefix + ".")


@dataclass(frozen=True)
class Rule:
    """What the modules of one package (a layer) may not import."""

    layer: str  # a package: "kg", "probes.app"
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()  # exceptions inside a forbidden package
    excluded: tuple[str, ...] = ()  # subpackages with a rule of their own
    entry_allowed: tuple[str, ...] = ()  # allowed in an ``if __name__ == "__main__":`` block

    def breaks(self, name: str, in_entry: bool = False) -> bool:
        """True when importing module ``name`` breaks this rule (``in_entry``: the import is
        in the module's ``if __name__ == "__main__":`` block)."""
        if in_entry and any(within(name, a) for a in self.entry_allowed):
            return False
        return (any(within(name, f) for f in self.forbidden)
                and not any(within(name, a) for a in self.allowed))

    def files(self, root: Path) -> list[Path]:
        """The layer's ``.py`` files, less those of its excluded subpackages."""
        skip = [root.joinpath(*e.split(".")) for e in self.excluded]
        return [p for p in sorted(root.joinpath(*self.layer.split(".")).rglob("*.py"))
                if not any(p.is_relative_to(s) for s in skip)]


RULES = (
    Rule("kg", forbidden=("probes", "eval", "tests")),
    Rule("probes", forbidden=("eval", "probes.app", "tests"), excluded=("probes.app",),
         entry_allowed=("probes.app",)),
    Rule("probes.app", forbidden=("tests",)),
    Rule("eval", forbidden=("probes", "tests"), allowed=("probes.results",)),
)


def module_name(path: Path, root: Path) -> str:
    """``kg/store.py`` -> ``kg.store``; ``probes/results/__init__.py`` -> ``probes.results``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file. ``from a import b`` yields
    ``a.b`` (``b`` may be a submodule: ``from probes import results`` is ``probes.results``);
    relative imports are resolved against the file's package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out += [(node.lineno, f"{module}.{alias.name}" if alias.name != "*" else module)
                    for alias in node.names]
    return sorted(out)


def entry_lines(path: Path) -> set[int]:
    """The lines of the file's top-level ``if __name__ == "__main__":`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines: set[int] = set()
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and test.left.id == "__name__" and len(test.comparators) == 1
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value == "__main__"):
            assert isinstance(node, ast.If)
            lines |= set(range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def violations(root: Path, rules: tuple[Rule, ...] = RULES) -> list[str]:
    """Every import under ``root`` that breaks a rule, as ``path:line imports name``."""
    found: list[str] = []
    for rule in rules:
        for path in rule.files(root):
            entry = entry_lines(path)
            for line, name in imported_names(path, root):
                if rule.breaks(name, line in entry):
                    found.append(f"{path.relative_to(root)}:{line} imports {name}")
    return found


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
            from probes.run import main
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
            from probes.spec import Probe
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
        "kg/store.py:6 imports probes.run.main",
        "kg/sub/x.py:1 imports eval.report",
        "probes/a.py:1 imports tests.test_run",
        "probes/b.py:2 imports probes.app.outputs",
        "probes/b.py:5 imports eval.sqlfile.run_metric",
        "probes/b.py:6 imports eval",
        "probes/b.py:11 imports eval.report",
        "probes/app/run.py:5 imports tests.test_run",
        "eval/bad.py:4 imports probes.spec.Probe",
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
    # issue 26: `from eval.copen_report import main` inside a function of probes/spec.py
    shutil.copytree(ROOT / "probes", tmp_path / "probes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    probes_rules = tuple(r for r in RULES if within(r.layer, "probes"))
    assert violations(tmp_path, probes_rules) == []
    spec = tmp_path / "probes" / "spec.py"
    lines = spec.read_text(encoding="utf-8").splitlines()
    spec.write_text("\n".join([*lines, "", "def _report():",
                               "    from eval.copen_report import main", "    return main", ""]),
                    encoding="utf-8")
    assert violations(tmp_path, probes_rules) == [
        f"probes/spec.py:{len(lines) + 3} imports eval.copen_report.main"]


def test_the_engine_entry_modules_load_no_eval_module() -> None:
    # the rules above are static; this checks the same on what the imports actually load
    code = textwrap.dedent("""
        import sys
        import probes.run, probes.export, probes.spec, probes.ontolama, probes.copen
        print(",".join(sorted(m for m in sys.modules if m == "eval" or m.startswith("eval.")))
              or "-")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "-"


# --- one definition of the semrel relation codes (kg.relations) ------------------------------

RELATION_CODES = frozenset({"HYP", "HPO", "HOL", "MER", "ANT", "SYN"})
"""Written out here on purpose (the paper's six codes, Cao et al. Table 1): the check must not
trust the module it checks."""
RELATION_HOME = "kg/relations.py"


def relation_code_copies(root: Path) -> list[str]:
    """``file:line`` of every tuple, list or set literal with three or more relation codes among
    its elements, and every dict literal with three or more among its values, in a ``.py`` file
    of ``kg/``, ``probes/`` or ``eval/`` other than kg/relations.py: a second definition of the
    codes. A dict keyed by codes (the paper's per-relation figures) is data about the
    relations, not a definition, and passes."""
    found = []
    for layer in ("kg", "probes", "eval"):
        for path in sorted((root / layer).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == RELATION_HOME:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
                if isinstance(node, ast.Tuple | ast.List | ast.Set):
                    elements = node.elts
                elif isinstance(node, ast.Dict):
                    elements = [v for v in node.values if v is not None]
                else:
                    continue
                codes = {e.value for e in elements
                         if isinstance(e, ast.Constant) and e.value in RELATION_CODES}
                if len(codes) >= 3:
                    found.append(f"{rel}:{node.lineno}")
    return found


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
    assert relation_code_copies(tmp_path) == ["probes/planted.py:2", "eval/planted.py:1"]


# --- every write to the results file goes through the contract (probes/results) ---------------
# An ``INSERT INTO`` / ``UPDATE ... SET`` / ``DELETE FROM`` naming a table of
# probes/results/schema.sql (or a table named at run time: ``{table}``, or a name left to a
# concatenation) in a string literal of kg/, probes/ or eval/ outside probes/results/ is a
# violation: the typed writers (probes.results.writers, probes.results.shared) are its one home.

RESULTS_PACKAGE = ("probes", "results")
_HOLE = "\x00"  # what a formatted value of an f-string reads as
_WRITE = re.compile(
    r"\b(?:INSERT\s+(?:OR\s+\w+\s+|\x00\s*)?INTO|DELETE\s+FROM)\s+(?:\w+\.)?(\w+|\x00|$)"
    r"|\bUPDATE\s+(?:\w+\.)?(\w+|\x00)\s+(?:\w+\s+)?SET\b", re.IGNORECASE)


def result_tables(root: Path = ROOT) -> frozenset[str]:
    """The tables of the results contract, as ``schema.sql`` creates them."""
    text = (root / "probes" / "results" / "schema.sql").read_text(encoding="utf-8")
    return frozenset(t.lower() for t in re.findall(
        r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", text, re.IGNORECASE))


def string_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal; an f-string's formatted values read as _HOLE."""
    out: list[tuple[int, str]] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inner.update(id(v) for v in node.values)
            out.append((node.lineno, "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else _HOLE
                for v in node.values)))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in inner):
            out.append((node.lineno, node.value))
    return out


def raw_result_writes(root: Path, tables: frozenset[str] | None = None) -> list[str]:
    """``path:line writes TABLE`` for each write to a result table outside probes/results."""
    tables = result_tables() if tables is None else tables
    found: list[str] = []
    for layer in ("kg", "probes", "eval"):
        for path in sorted((root / layer).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[:2] == RESULTS_PACKAGE:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for line, text in string_literals(tree):
                for m in _WRITE.finditer(text):
                    name = (m.group(1) if m.group(1) is not None else m.group(2)).lower()
                    if name in tables or name in (_HOLE, ""):
                        what = name if name in tables else "a table named at run time"
                        found.append(f"{rel.as_posix()}:{line} writes {what}")
    return found


def test_only_the_results_contract_writes_result_tables() -> None:
    assert raw_result_writes(ROOT) == []


def test_result_tables_are_read_from_the_schema() -> None:
    assert {"runs", "scores", "responses", "instances", "score_cache", "model_vocab",
            "human_responses", "gold_forms", "probe_exports", "prompts"} <= result_tables()


def test_write_checker_finds_raw_writes_in_synthetic_modules(tmp_path: Path) -> None:
    tables = frozenset({"runs", "scores", "model_vocab"})
    write(tmp_path, "probes/results/writers.py", 'SQL = "INSERT INTO runs VALUES (?)"\n')
    write(tmp_path, "probes/a.py", '''
        def f(con, table):
            con.execute("insert or ignore into model_vocab SELECT * FROM t")
            con.execute(f"DELETE FROM {table} WHERE run_id = ?")
            con.execute("""UPDATE main.runs
                           SET wall_s = 1""")
            con.execute("INSERT INTO kgp_tmp SELECT 1")  # not a result table
            con.execute("INSERT INTO " + table)
            return "the run row is updated; insert into the list"
        ''')
    write(tmp_path, "eval/b.py", 'X = f"INSERT {how} INTO scores SELECT 1"\n')
    write(tmp_path, "kg/c.py", '"""DO UPDATE SET x = 1; a SPARQL UPDATE."""\n')
    assert raw_result_writes(tmp_path, tables) == [
        "probes/a.py:3 writes model_vocab",
        "probes/a.py:4 writes a table named at run time",
        "probes/a.py:5 writes runs",
        "probes/a.py:8 writes a table named at run time",
        "eval/b.py:1 writes scores",
    ]


def test_write_checker_catches_a_raw_write_planted_in_a_copy_of_probes(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "probes", tmp_path / "probes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for layer in ("kg", "eval"):
        (tmp_path / layer).mkdir()
    assert raw_result_writes(tmp_path) == []
    target = tmp_path / "probes" / "runner" / "probe.py"
    lines = target.read_text(encoding="utf-8").splitlines()
    target.write_text("\n".join([*lines, "", "def _leak(con):",
                                 "    con.execute('update runs set wall_s = 0')", ""]),
                      encoding="utf-8")
    assert raw_result_writes(tmp_path) == [f"probes/runner/probe.py:{len(lines) + 3} writes runs"]
