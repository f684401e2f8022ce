"""The results connection's guard: a write to a result table from outside the contract raises.

:func:`probes.results.connect` hands out a :class:`GuardedConnection`: the DuckDB connection
behind a thin proxy that looks at every statement when it runs, not at how the code spelled
it. A statement is a write when DuckDB's own parser says so (``duckdb.extract_statements``:
INSERT, UPDATE, DELETE and TRUNCATE, COPY ... FROM, CREATE, DROP, ALTER, MERGE, PREPARE of
one of these) and its target (read from DuckDB's tokens of the final text) is a table of
``schema.sql`` (a TEMP object, which lives on the connection and goes with it, is not the
file's: the metrics' sandbox makes and drops its own); the relational writers (``append``,
``appender``, ``rel.insert``, ``rel.insert_into``, ``rel.create``, ``rel.to_table``,
``rel.update``) are writes to the table they name. Such a write raises
:class:`WriteOutsideContract` unless the nearest frame of kgprobe's own code (``kg``,
``probes``, ``eval``) on the call stack belongs to ``probes.results``: the typed writers are
the only home of writes, whatever string building, ``format_map``, SQL read from a file,
``exec`` or third-party helper led there. Code outside the three layers (tests, notebooks,
scripts) is not restricted.

DuckDB resolves a Python variable named in a query (a "replacement scan") in the frame that
calls it; the proxy runs each query in a namespace holding its caller's variables, so such
queries work through it as they do on the bare connection.

>>> from probes.results import connect
>>> con = connect(":memory:")
>>> isinstance(con, GuardedConnection), con.execute("SELECT 1").fetchall()
(True, [(1,)])
>>> write_targets("INSERT OR REPLACE INTO main.\\"Runs\\" SELECT 1; SELECT 2")
['runs']
>>> write_targets("COPY scores TO 'x.csv'"), write_targets("CREATE TEMP VIEW runs AS SELECT 1")
([], [])
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

import duckdb

SCHEMA = Path(__file__).with_name("schema.sql")
GUARDED_LAYERS = ("kg", "probes", "eval")
"""The top-level packages whose code the guard restricts."""
CONTRACT = "probes.results"
"""The package whose code may write the result tables."""

_WRITES = {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "COPY", "MERGE_INTO"}
_SKIP = {"OR", "REPLACE", "IGNORE", "TEMP", "TEMPORARY", "TABLE", "VIEW", "IF", "NOT", "EXISTS",
         "ONLY", "UNIQUE", "INDEX", "SEQUENCE", "TYPE", "MACRO", "SCHEMA", "PERSISTENT",
         "SECRET", "FUNCTION", "INTO", "FROM", "CASCADE"}


class WriteOutsideContract(RuntimeError):
    """A write to a result table by code outside :mod:`probes.results` (a bug, not a user's
    mistake: the write belongs in a typed writer)."""


@functools.cache
def result_tables() -> frozenset[str]:
    """The tables ``schema.sql`` declares (read by DuckDB, lower case)."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(SCHEMA.read_text(encoding="utf-8"))
        rows = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    finally:
        con.close()
    return frozenset(str(r[0]).lower() for r in rows)


def _words(sql: str) -> list[tuple[str, bool]]:
    """(text, is a keyword or name) of each token of ``sql``, by DuckDB's tokenizer, quoted
    names unquoted."""
    tokens = duckdb.tokenize(sql)
    words = []
    for n, (start, kind) in enumerate(tokens):
        end = tokens[n + 1][0] if n + 1 < len(tokens) else len(sql)
        text = sql[start:end].strip()
        if kind == duckdb.token_type.comment:
            continue
        named = kind in (duckdb.token_type.keyword, duckdb.token_type.identifier)
        if named and len(text) > 1 and text[0] == text[-1] == '"':
            text = text[1:-1].replace('""', '"')
        words.append((text, named))
    return words


def _target(kind: str, words: list[tuple[str, bool]]) -> str | None:
    """The table a write statement of ``kind`` names, or None when it cannot be read."""
    upper = [w.upper() if named else "" for w, named in words]
    head = upper[:6]
    if kind == "CREATE" and ("TEMP" in head or "TEMPORARY" in head):
        return ""  # the connection's own temporary object, not the file's (metrics' views)
    if kind in ("CREATE", "DROP", "ALTER") and "TABLE" not in head:
        return ""  # a view, macro, sequence, ...: the result tables are tables
    if kind == "COPY" and "TO" in upper and "FROM" not in upper[:upper.index("TO")]:
        return ""  # COPY t TO file: a read
    if kind == "INSERT" and "INTO" in upper:
        i = upper.index("INTO") + 1
    elif kind == "DELETE" and upper[:1] == ["TRUNCATE"]:
        i = 1
    elif kind == "DELETE" and "FROM" in upper:
        i = upper.index("FROM") + 1
    elif kind == "MERGE_INTO" and "INTO" in upper:
        i = upper.index("INTO") + 1
    else:
        i = 1
    while i < len(words) and upper[i] in _SKIP:
        i += 1
    name = []
    while i < len(words) and words[i][1]:
        name.append(words[i][0])
        if i + 1 < len(words) and words[i + 1][0] == ".":
            i += 2
            continue
        break
    return name[-1].lower() if name else None


_MAY_WRITE = re.compile(r"\b(insert|update|delete|truncate|copy|create|drop|alter|merge|prepare)\b",
                       re.IGNORECASE)


def write_targets(sql: str) -> list[str]:
    """The tables the writes of ``sql`` name (``"?"`` where DuckDB says a statement writes but
    its target cannot be read), as DuckDB parses the text. A text without any write keyword
    is not parsed; a text seen before is answered from a cache (metric files run often)."""
    return list(_write_targets(sql)) if _MAY_WRITE.search(sql) else []


@functools.lru_cache(maxsize=2048)
def _write_targets(sql: str) -> tuple[str, ...]:
    out = []
    for statement in duckdb.extract_statements(sql):
        kind = statement.type.name
        text = statement.query
        if kind == "PREPARE":  # PREPARE name AS <statement>
            inner = text.split(None, 3)[3] if len(text.split(None, 3)) == 4 else ""
            out += write_targets(inner) if inner else []
            continue
        if kind not in _WRITES:
            continue
        target = _target(kind, _words(text))
        if target != "":
            out.append(target if target is not None else "?")
    return tuple(out)


def _caller() -> str | None:
    """The module of the nearest frame of kgprobe's layers on the stack, or None when code
    outside them (a test, a notebook, a script) comes first."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        top = name.partition(".")[0]
        if name != __name__ and top in GUARDED_LAYERS:
            return name
        if top == "tests" or name == "__main__":
            return None
        frame = frame.f_back
    return None


def check(tables: Iterable[str], how: str) -> None:
    """Raise :class:`WriteOutsideContract` when code outside the contract writes a result
    table (``"?"``: a write whose table cannot be read counts as one)."""
    hit = [t for t in tables if t == "?" or t in result_tables()]
    if not hit:
        return
    who = _caller()
    if who is None or who == CONTRACT or who.startswith(CONTRACT + "."):
        return
    what = ", ".join("a table it names at run time" if t == "?" else t for t in hit)
    raise WriteOutsideContract(
        f"{who} writes {what} ({how}) on the results connection: writes to the result tables "
        f"belong in the typed writers of probes.results (writers, shared)")


def _sql_of(query: Any) -> str:
    return query if isinstance(query, str) else str(getattr(query, "query", query))


_CALL = compile("__kgp_out = __kgp_call(*__kgp_args, **__kgp_kwargs)", "<results guard>", "exec")


def _call_in_callers_scope(frame: FrameType, call: Any, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
    """``call(*args, **kwargs)`` run in a namespace with the variables of ``frame`` (guarded
    relations unwrapped), so DuckDB's replacement scans find what the caller named."""
    local = {k: (v.relation if isinstance(v, GuardedRelation) else v)
             for k, v in frame.f_locals.items()}
    space = {**local, "__kgp_call": call, "__kgp_args": args, "__kgp_kwargs": kwargs}
    exec(_CALL, frame.f_globals, space)  # a fixed statement, compiled above
    return space["__kgp_out"]


def _unwrap(value: Any) -> Any:
    if isinstance(value, GuardedRelation):
        return value.relation
    if isinstance(value, GuardedConnection):
        return value.connection
    return value


class GuardedRelation:
    """A DuckDB relation whose writing methods are checked (``table``: the table it reads,
    for ``insert`` and ``update``)."""

    def __init__(self, relation: duckdb.DuckDBPyRelation, table: str | None) -> None:
        self.relation, self.table = relation, table

    def _own(self, how: str) -> None:
        check([self.table.lower() if self.table else "?"], how)

    def insert(self, *args: Any, **kwargs: Any) -> Any:
        self._own("rel.insert()")
        return self.relation.insert(*args, **kwargs)

    def update(self, *args: Any, **kwargs: Any) -> Any:
        self._own("rel.update()")
        return self.relation.update(*args, **kwargs)

    def insert_into(self, table: Any, *args: Any, **kwargs: Any) -> Any:
        check([str(table).split(".")[-1].strip('"').lower()], "rel.insert_into()")
        return self.relation.insert_into(table, *args, **kwargs)

    def create(self, table: Any, *args: Any, **kwargs: Any) -> Any:
        check([str(table).split(".")[-1].strip('"').lower()], "rel.create()")
        return self.relation.create(table, *args, **kwargs)

    def to_table(self, table: Any, *args: Any, **kwargs: Any) -> Any:
        check([str(table).split(".")[-1].strip('"').lower()], "rel.to_table()")
        return self.relation.to_table(table, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.relation, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def method(*args: Any, **kwargs: Any) -> Any:
            out = value(*(_unwrap(a) for a in args), **{k: _unwrap(v) for k, v in kwargs.items()})
            return GuardedRelation(out, None) if isinstance(out, duckdb.DuckDBPyRelation) else out

        return method

    def __iter__(self) -> Any:
        return iter(self.relation.fetchall())

    def __len__(self) -> int:
        return len(self.relation)

    def __repr__(self) -> str:
        return repr(self.relation)


class GuardedConnection:
    """A DuckDB connection on which a write to a result table from outside the contract raises
    (see the module docstring); everything else is the connection's own."""

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self.connection = connection

    def _query(self, name: str, query: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
        check(write_targets(_sql_of(query)), f"{name}()")
        out = _call_in_callers_scope(sys._getframe(2), getattr(self.connection, name),
                                     (query, *args), kwargs)
        if isinstance(out, duckdb.DuckDBPyConnection):
            return self
        if isinstance(out, duckdb.DuckDBPyRelation):
            return GuardedRelation(out, None)
        return out

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        return self._query("execute", query, args, kwargs)

    def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        return self._query("executemany", query, args, kwargs)

    def sql(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        return self._query("sql", query, args, kwargs)

    def query(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        return self._query("query", query, args, kwargs)

    def from_query(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        return self._query("from_query", query, args, kwargs)

    def append(self, table: Any, *args: Any, **kwargs: Any) -> Any:
        check([str(table).lower()], "append()")
        self.connection.append(table, *args, **kwargs)
        return self

    def appender(self, table: Any, *args: Any, **kwargs: Any) -> Any:
        check([str(table).lower()], "appender()")
        return self.connection.appender(table, *args, **kwargs)

    def table(self, name: str) -> GuardedRelation:
        return GuardedRelation(self.connection.table(name), name.split(".")[-1].strip('"'))

    def cursor(self) -> GuardedConnection:
        return GuardedConnection(self.connection.cursor())

    def duplicate(self) -> GuardedConnection:
        return GuardedConnection(self.connection.duplicate())

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.connection, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def method(*args: Any, **kwargs: Any) -> Any:
            out = value(*(_unwrap(a) for a in args), **{k: _unwrap(v) for k, v in kwargs.items()})
            if isinstance(out, duckdb.DuckDBPyConnection):
                return self
            return GuardedRelation(out, None) if isinstance(out, duckdb.DuckDBPyRelation) else out

        return method

    def __enter__(self) -> GuardedConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.connection.close()
