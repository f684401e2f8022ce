"""Which of issue 31's 35 planted violations a version of the architecture check catches.

    .venv/bin/python scripts/architecture_plants.py                # the checker in tests/
    .venv/bin/python scripts/architecture_plants.py --before REV   # and REV's, side by side

The plants (tests/architecture_plants.py) go into one temporary copy of ``kg/``, ``probes/``
and ``eval/``; each checker runs once on the copy and a plant counts as caught when a finding
names its file (the copy without plants must give no finding). ``--before REV`` reads
``tests/test_architecture.py`` as it was at git revision REV (the checker before issue 31
lived in that one file) and runs its ``violations``, ``raw_result_writes`` and
``relation_code_copies``. Prints a Markdown table (docs/architecture.md holds its output).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import architecture  # noqa: E402
from tests.architecture_plants import PLANTS, caught, copy_tree, plant_all  # noqa: E402


def checker_at(rev: str, folder: Path) -> ModuleType:
    """tests/test_architecture.py at git revision ``rev``, imported as a module."""
    text = subprocess.run(["git", "show", f"{rev}:tests/test_architecture.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    path = folder / "checker_before.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("checker_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["checker_before"] = module
    spec.loader.exec_module(module)
    return module


def findings(checker: ModuleType, root: Path) -> list[str]:
    tables = checker.result_tables(root) if "root" in checker.result_tables.__code__.co_varnames \
        else checker.result_tables()
    return [*checker.violations(root), *checker.raw_result_writes(root, tables),
            *checker.relation_code_copies(root)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the checker of git REV")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        checkers = {"now": architecture}
        if args.before:
            checkers = {"before": checker_at(args.before, Path(tmp)), **checkers}
        root = copy_tree(ROOT, Path(tmp) / "tree")
        for name, checker in checkers.items():
            clean = findings(checker, root)
            if clean:
                print(f"error: the {name} checker finds violations in the unplanted copy: "
                      f"{clean}", file=sys.stderr)
                return 2
        plant_all(root)
        got = {name: caught(findings(c, root)) for name, c in checkers.items()}
    head = " | ".join(f"caught {n}" for n in checkers)
    print(f"| plant | kind | form | {head} |")
    print("|---|---|---|" + "---|" * len(checkers))
    for p in PLANTS:
        marks = " | ".join("yes" if got[n][p.id] else "**no**" for n in checkers)
        print(f"| {p.id} | {p.group} | {p.what.replace('|', '/')} | {marks} |")
    totals = " | ".join(f"{sum(got[n].values())}/{len(PLANTS)}" for n in checkers)
    print(f"| | | total | {totals} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
