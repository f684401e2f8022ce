"""The static checks behind tests/test_architecture.py, read from the code's syntax tree
(:mod:`ast`): the cheap first line in front of the guards that watch behaviour.

- :func:`violations`: the static ``import``/``from`` statements a layer may not make (inside
  functions and ``TYPE_CHECKING`` blocks too, relative ones resolved). Imports made at run
  time, by any spelling, are the import guard's (tests/import_guard.py, installed by
  tests/conftest.py); writes to the result tables are the results connection's guard's
  (probes/results/guard.py).
- :func:`relation_code_copies`: a second definition of the semrel relation codes (constant
  strings folded through ``+``, ``%``, ``.format``, f-strings and ``str.join``).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("kg", "probes", "eval")


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
    # the contract imports no other probes module (its own docstring says so): the engine
    # and the readers both import it, so it may depend on neither
    Rule("probes.results", forbidden=("probes", "eval", "tests"), allowed=("probes.results",)),
    Rule("probes.app", forbidden=("tests",)),
    Rule("eval", forbidden=("probes", "tests"), allowed=("probes.results",)),
)

def module_name(path: Path, root: Path) -> str:
    """``kg/store.py`` -> ``kg.store``; ``probes/results/__init__.py`` -> ``probes.results``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Parsed:
    """One file read once: its tree, the names bound to constant strings, its outermost string
    expressions (line, folded text)."""

    tree: ast.Module
    env: dict[str, str]
    strings: list[tuple[int, str]]


def parse(path: Path) -> ast.Module:
    """The file's syntax tree (read once per version of the file)."""
    return parsed(path).tree


def parsed(path: Path) -> Parsed:
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _parsed(path: str, _mtime: int, _size: int) -> Parsed:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    env = constants(tree)
    return Parsed(tree, env, list(string_expressions(tree, env)))


# --- folding strings --------------------------------------------------------------------------

HOLE = "kgp_hole_"
"""What a value that is not a constant reads as in folded text (an identifier to DuckDB)."""


def constants(tree: ast.AST) -> dict[str, str]:
    """Names bound once to a foldable string anywhere in the file (``TABLE = "runs"``)."""
    seen: dict[str, list[str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            seen.setdefault(node.targets[0].id, []).append(fold(node.value, {}))
    return {k: v[0] for k, v in seen.items() if len(v) == 1 and v[0] is not None}


def fold(node: ast.AST, env: dict[str, str]) -> str | None:
    """The text a string expression builds, holes for what is not constant; None when the
    expression is not a string expression at all."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(fold(v, env) or HOLE if isinstance(v, ast.Constant)
                       else _value(v, env) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _value(node.value, env)
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold(node.left, env), fold(node.right, env)
        if left is None and right is None:
            return None
        return (left if left is not None else HOLE) + (right if right is not None else HOLE)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = fold(node.left, env)
        if left is None:
            return None
        args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        values = iter([_value(a, env) for a in args])
        return re.sub(r"%(\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifx%]",
                      lambda m: "%" if m.group(0) == "%%" else next(values, HOLE), left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = fold(node.func.value, env)
        if base is not None and node.func.attr == "format":
            values = [_value(a, env) for a in node.args]
            named = {k.arg: _value(k.value, env) for k in node.keywords if k.arg}
            counter = iter(values)

            def field(m: re.Match[str]) -> str:
                key = m.group(1).split("!")[0].split(":")[0]
                if not key:
                    return next(counter, HOLE)
                if key.isdigit():
                    return values[int(key)] if int(key) < len(values) else HOLE
                return named.get(key, HOLE)

            return re.sub(r"\{([^{}]*)\}", field, base)
        if base is not None and node.func.attr == "join" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.List | ast.Tuple):
                return base.join(_value(e, env) for e in arg.elts)
            return HOLE
        if base is not None and node.func.attr in ("upper", "lower", "strip"):
            return str(getattr(base, node.func.attr)())
    return None


def _value(node: ast.AST, env: dict[str, str]) -> str:
    got = fold(node, env)
    return HOLE if got is None else got


def string_expressions(tree: ast.AST, env: dict[str, str]) -> Iterator[tuple[int, str]]:
    """(line, folded text) of every outermost string expression of the file."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        text = fold(node, env) if isinstance(node, ast.expr) else None
        if text is None:
            continue
        inside.update(id(n) for n in ast.walk(node))
        yield getattr(node, "lineno", 0), text


# --- imports ----------------------------------------------------------------------------------


def imported_names(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every static import in the file. ``from a import b``
    yields ``a.b`` (``b`` may be a submodule); relative imports are resolved against the
    file's package."""
    tree = parse(path)
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
    lines: set[int] = set()
    for node in parse(path).body:
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
            rel = path.relative_to(root).as_posix()
            entry = entry_lines(path)
            for line, name in imported_names(path, root):
                if rule.breaks(name, line in entry):
                    found.append(f"{rel}:{line} imports {name}")
    return found


# --- one definition of the semrel relation codes ----------------------------------------------

RELATION_CODES = {"HYP": "hypernymy", "HPO": "hyponymy", "HOL": "holonymy", "MER": "meronymy",
                  "ANT": "antonymy", "SYN": "synonymy"}
"""Written out here on purpose (the paper's six codes and names, Cao et al. Table 1): the check
must not trust the module it checks."""
RELATION_HOME = "kg/relations.py"
_BY_NAME = {v: k for k, v in RELATION_CODES.items()}
_WORD = re.compile(r"[A-Za-z][A-Za-z _/-]*")
RELATION_EXCEPTIONS = {
    ("kg/responses.py", "RELATION_CODES"):
        "the human-responses file's own relation names (hyp, rhyp, holo, mero, ant, syn), "
        "mapped to the codes of kg.relations",
}
"""(file, assigned name) of the literals that name relations but define no codes, each with
why."""


def relation_of(text: str) -> str | None:
    """The code a string stands for: the code in any case, ``semrel/<code>``, or the
    relation's name (``hypernymy``)."""
    t = text.strip().lower().removeprefix("semrel/")
    return t.upper() if t.upper() in RELATION_CODES else _BY_NAME.get(t)


def _codes(nodes: list[ast.expr | None], env: dict[str, str]) -> set[str]:
    out = set()
    for n in nodes:
        text = fold(n, env) if n is not None else None
        code = relation_of(text) if text is not None else None
        if code:
            out.add(code)
    return out


def relation_code_copies(root: Path) -> list[str]:
    """``file:line`` of every second definition of the relation codes in a ``.py`` file of
    ``kg/``, ``probes/`` or ``eval/`` other than kg/relations.py: a tuple, list or set with
    three or more relations among its elements (a code in any case, ``semrel/<code>`` or the
    relation's name); a dict with three among its values, or keyed by three with strings as
    values (code -> name or probe); an Enum (or any class body) assigning three; a string that
    splits into three (``"HYP HPO HOL".split()``, ``"HYP|HPO|HOL"``). A dict keyed by codes
    whose values are not strings (the paper's per-relation figures) is data and passes."""
    found = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == RELATION_HOME:
                continue
            info = parsed(path)
            tree, env = info.tree, info.env
            docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                          if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
                          and n.body and isinstance(n.body[0], ast.Expr)}
            allowed = {id(n) for a in ast.walk(tree) if isinstance(a, ast.Assign)
                       and any(isinstance(t, ast.Name) and (rel, t.id) in RELATION_EXCEPTIONS
                               for t in a.targets)
                       for n in ast.walk(a.value)}
            for node in ast.walk(tree):
                if id(node) in allowed:
                    continue
                codes: set[str] = set()
                if isinstance(node, ast.Tuple | ast.List | ast.Set):
                    codes = _codes(list(node.elts), env)
                elif isinstance(node, ast.Dict):
                    codes = _codes(list(node.values), env)
                    if all(isinstance(v, ast.Constant) and isinstance(v.value, str)
                           and _WORD.fullmatch(v.value) for v in node.values):
                        codes |= _codes(list(node.keys), env)  # code -> a name
                elif isinstance(node, ast.ClassDef):
                    names = [t.id for s in node.body if isinstance(s, ast.Assign)
                             for t in s.targets if isinstance(t, ast.Name)]
                    codes = {c for c in map(relation_of, names) if c}
                    codes |= _codes([s.value for s in node.body if isinstance(s, ast.Assign)],
                                    env)
                elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and id(node) not in docstrings and len(node.value) < 200):
                    codes = {c for c in map(relation_of, re.split(r"[\s,;|/]+", node.value))
                             if c}
                if len(codes) >= 3:
                    found.append(f"{rel}:{node.lineno}")
    return sorted(set(found), key=lambda f: (f.split(":")[0], int(f.split(":")[1])))
