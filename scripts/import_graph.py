"""The import graph of kg/, probes/ and eval/, read from the code's imports (ast): modules,
layers, edges, import cycles.

    .venv/bin/python scripts/import_graph.py                # the working tree
    .venv/bin/python scripts/import_graph.py --rev REV      # the tree at git revision REV

An edge a -> b is a static ``import b`` / ``from b import x`` in module a (inside functions
too; ``from pkg import sub`` counts as pkg.sub when sub is a module), between modules of the
three layers. Layers: kg, eval, probes.results (the contract), probes.app and the engine (the
rest of probes). Cycles are the strongly connected components of more than one module
(Tarjan), counted with module-level imports only (what runs at import time: no function
bodies, no ``if TYPE_CHECKING:`` blocks) and with every import. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("kg", "probes", "eval")


def layer(module: str) -> str:
    for room in ("probes.results", "probes.app"):
        if module == room or module.startswith(room + "."):
            return room
    return "engine" if module.split(".")[0] == "probes" else module.split(".")[0]


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for top in LAYERS:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _type_checking(node: ast.stmt) -> bool:
    """An ``if TYPE_CHECKING:`` block (imports for the type checker only)."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def edges(root: Path, module_level_only: bool) -> dict[str, set[str]]:
    known = modules(root)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        nodes = tree.body if module_level_only else list(ast.walk(tree))
        if module_level_only:  # what runs at import: no functions, no TYPE_CHECKING blocks
            nodes = [n for top in tree.body if not isinstance(
                top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and not _type_checking(top) for n in ast.walk(top)]
        for node in nodes:
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                           for a in node.names]
            for t in targets:
                while t and t not in known:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def summary(root: Path) -> dict[str, str]:
    every = edges(root, module_level_only=False)
    top = edges(root, module_level_only=True)
    per_layer = Counter(layer(m) for m in every)
    cross = Counter((layer(a), layer(b)) for a, bs in every.items() for b in bs
                    if layer(a) != layer(b))
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in modules(root).values())
    cyc_all, cyc_top = cycles(every), cycles(top)
    return {
        "modules": str(len(every)),
        "lines of code": f"{lines:,}",
        "modules per layer": ", ".join(f"{k} {v}" for k, v in sorted(per_layer.items())),
        "import edges (all / module level)": f"{sum(map(len, every.values()))} / "
                                             f"{sum(map(len, top.values()))}",
        "edges between layers": ", ".join(f"{a}->{b} {n}" for (a, b), n in sorted(cross.items())),
        "import cycles, module level (modules in them)":
            f"{len(cyc_top)} ({sum(map(len, cyc_top))})",
        "import cycles, all imports (modules in them)":
            f"{len(cyc_all)} ({sum(map(len, cyc_all))})",
        "largest cycle (all imports)": (", ".join(max(cyc_all, key=len)) if cyc_all else "-"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", action="append", default=[], metavar="REV",
                        help="a git revision to read instead of (or beside) the working tree")
    parser.add_argument("--no-tree", action="store_true", help="only the --rev revisions")
    args = parser.parse_args(argv)
    columns: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rev in args.rev:
            root = Path(tmp) / rev
            root.mkdir()
            data = subprocess.run(["git", "archive", rev, *LAYERS], cwd=ROOT,
                                  capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(root)], input=data, check=True)
            columns[rev] = summary(root)
        if not args.no_tree:
            columns["working tree"] = summary(ROOT)
    names = list(columns)
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in next(iter(columns.values())):
        print(f"| {key} | " + " | ".join(columns[n][key] for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
