"""Which of issue 43's 29 plants the guards catch, beside a static checker of a git revision.

    .venv/bin/python scripts/guard_plants.py                 # the guards only
    .venv/bin/python scripts/guard_plants.py --before REV    # and REV's static checker

The guards run the plants (tests/guard_plants.py) in a fresh interpreter, twice: before any
``eval`` module is loaded and after all are. ``--before REV`` writes each plant as a file of
its layer (``probes/engine/plant_i1.py``, ...) into ``kg/``, ``probes/`` and ``eval/`` as they
were at REV (a temporary copy) and runs the checker of ``tests/architecture.py`` as it was at REV
(``violations``, ``raw_result_writes``, ``relation_code_copies``); a plant counts as caught
when a finding names its file (the copy without plants must give none). Prints a Markdown
table (docs/architecture.md holds its output).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.guard_plants import PLANTS  # noqa: E402


def checker_at(rev: str, folder: Path) -> ModuleType:
    """tests/architecture.py at git revision ``rev``, imported as a module."""
    text = subprocess.run(["git", "show", f"{rev}:tests/architecture.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    path = folder / "checker_before.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("checker_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["checker_before"] = module
    spec.loader.exec_module(module)
    return module


def static_findings(checker: ModuleType, root: Path) -> list[str]:
    found = list(checker.violations(root))
    if hasattr(checker, "raw_result_writes"):
        found += checker.raw_result_writes(root, checker.result_tables(root))
    if hasattr(checker, "relation_code_copies"):
        found += checker.relation_code_copies(root)
    return found


def static_caught(rev: str, tmp: Path) -> dict[str, bool]:
    checker = checker_at(rev, tmp)
    root = tmp / "tree"
    root.mkdir()
    archive = subprocess.run(["git", "archive", rev, "kg", "probes", "eval"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    clean = static_findings(checker, root)
    if clean:
        raise SystemExit(f"the checker of {rev} finds violations in the unplanted copy: {clean}")
    files = {}
    for p in PLANTS:
        rel = f"{p.layer.replace('.', '/')}/plant_{p.id.lower()}.py"
        (root / rel).write_text(p.code, encoding="utf-8")
        for name, text in p.files:  # data files (a .sql file) beside it
            (root / rel).with_name(name).write_text(text, encoding="utf-8")
        files[p.id] = rel
    named = {f.split(":", 1)[0] for f in static_findings(checker, root)}
    return {pid: rel in named for pid, rel in files.items()}


def guards_caught() -> dict[str, tuple[bool, bool]]:
    out = subprocess.run([sys.executable, "-m", "tests.guard_plants"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    got: dict[str, list[bool]] = {}
    for r in rows:
        got.setdefault(r["id"], []).append(bool(r["caught"]))
    return {k: (v[0], v[1]) for k, v in got.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the static checker of git REV")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        before = static_caught(args.before, Path(tmp)) if args.before else None
    now = guards_caught()
    head = (f"caught by the static checker of {args.before} | " if before is not None else "")
    print(f"| plant | guard | layer | form | {head}caught (eval not loaded) | "
          "caught (eval loaded) |")
    print("|---|---|---|---|" + ("---|" if before is not None else "") + "---|---|")

    def mark(ok: bool) -> str:
        return "yes" if ok else "**no**"

    for p in PLANTS:
        cells = [p.id, p.guard, f"`{p.layer}`", p.what.replace("|", "/")]
        if before is not None:
            cells.append(mark(before[p.id]))
        cells += [mark(now[p.id][0]), mark(now[p.id][1])]
        print("| " + " | ".join(cells) + " |")
    totals = [f"{sum(v[i] for v in now.values())}/{len(PLANTS)}" for i in (0, 1)]
    first = [f"{sum(before.values())}/{len(PLANTS)}"] if before is not None else []
    print("| | | | total | " + " | ".join([*first, *totals]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
