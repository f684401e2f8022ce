"""Shared queries: one SPARQL query that several probe files run, each with values of its own.

A probe file whose header says ``query: FILE.sparql`` holds a header and no SPARQL: it runs
the query of ``FILE.sparql`` (a path under the probe file's folder), with the parameters that
file declares bound to the probe's ``values:``. The shared file's header declares each
parameter and its type; in its query, ``$name`` (SPARQL's other spelling of a variable) marks
a parameter, so the file is valid SPARQL as it stands:

    # parameters: {graph: iri, digits: integer}
    SELECT ?c WHERE { GRAPH $graph { ?c a ?k } BIND(SUBSTR(STR(?c), 1, $digits) AS ?b) }

A value is checked against its parameter's type and written into the query as one SPARQL term
(``iri``: ``<...>``, an absolute IRI without the characters an IRI may not hold; ``integer``:
digits; ``string``: a quoted literal with its escapes), never as text: no value can add a
clause, close a bracket or end a string. ``$name`` is replaced only in the query's code (not in
strings, IRIs or comments), the resolved query keeps the shared file's lines, and it is then
checked like any probe's query (probes.engine.spec.parse_probe). An unknown, missing or
ill-typed value is one line naming the probe file, the value and the fix.

>>> shared = '''# parameters: {graph: iri, digits: integer, word: string}
... SELECT ?c WHERE { GRAPH $graph { ?c ?p $word } BIND(SUBSTR("$digits", 1, $digits) AS ?b) }
... '''
>>> print(resolve_text(shared, {"graph": "http://e.org/g", "digits": 2, "word": 'a"b'},
...                    "s.sparql", "p.rq", 3).splitlines()[1])
SELECT ?c WHERE { GRAPH <http://e.org/g> { ?c ?p "a\\"b" } BIND(SUBSTR("$digits", 1, 2) AS ?b) }
>>> resolve_text(shared, {"graph": "http://e.org/g> } ?x {", "digits": 2, "word": ""},
...              "s.sparql", "p.rq", 3)
Traceback (most recent call last):
...
probes.engine.errors.ProbeFileError: p.rq:3: values: graph must be an absolute IRI ...
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kg.header import HeaderError, comment_block, did_you_mean, parse_header
from kg.textfile import TextFileError, read_text
from probes.engine.errors import ProbeFileError

ParamType = Literal["iri", "integer", "string"]
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# The query's code tokens that hold text of their own (strings, IRIs, comments), kept as they
# are, and its $name parameters, replaced.
_TOKENS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|'
                     r"'(?:\\.|[^'\\\n])*'|<[^<>\s]*>|#[^\n]*|\$(?P<name>[A-Za-z0-9_]+)")
_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>\"{}|^`\\]*")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class SharedQueryHeader(BaseModel):
    """The header of a shared query file: its parameters and their types."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parameters: dict[str, ParamType] = Field(examples=["{graph: iri, digits: integer}"])

    @field_validator("parameters")
    @classmethod
    def _names(cls, v: dict[str, ParamType]) -> dict[str, ParamType]:
        for name in v:
            if not re.fullmatch(_NAME, str(name)):
                raise ValueError(f"{name!r} is not a parameter name; write a name like "
                                 "soft_digits (letters, digits, _), used as $soft_digits")
        return v


def term(name: str, kind: ParamType, value: Any) -> str:
    """``value`` written as the one SPARQL term its type allows; a ValueError worded as the
    fix when it is not of that type.

    >>> term("n", "integer", 3), term("s", "string", 'x"\\n'), term("g", "iri", "urn:x:1")
    ('3', '"x\\\\"\\\\n"', '<urn:x:1>')
    >>> term("n", "integer", "3 } UNION { ?s ?p ?o")
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer (as 3, unquoted), not '3 } UNION { ?s ?p ?o'
    """
    if kind == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise ValueError(f"{name} must be an integer (as 3, unquoted), not {value!r}")
    if kind == "string":
        if isinstance(value, str):
            return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'
        raise ValueError(f"{name} must be a string (quote it: {name}: \"...\"), not {value!r}")
    if isinstance(value, str) and _IRI.fullmatch(value):
        return f"<{value}>"
    raise ValueError(f"{name} must be an absolute IRI such as https://w3id.org/kgprobe/graph/x "
                     f"(no spaces, <, >, \", {{, }}, |, ^, ` or \\), not {value!r}")


def resolve_text(shared: str, values: dict[str, Any], shared_path: str | Path,
                 probe_path: str | Path, values_line: int | None) -> str:
    """The shared query ``shared`` with each ``$name`` replaced by the term of ``values[name]``
    (same lines as the shared file). Errors in the shared file name it and its line; errors in
    the values name the probe file and the line of its ``values:``."""
    try:
        header, spec = parse_header(shared, SharedQueryHeader, "#")
    except HeaderError as e:
        raise ProbeFileError(shared_path, e.line, e.message) from None
    params = spec.parameters
    declared = ", ".join(params) or "(none)"
    for name in values:
        if name not in params:
            raise ProbeFileError(probe_path, values_line, f"values: {name!r} is not a parameter "
                                 f"of {shared_path}{did_you_mean(str(name), params)}; its "
                                 f"parameters: {declared}")
    terms: dict[str, str] = {}
    for name, kind in params.items():
        if name not in values:
            raise ProbeFileError(probe_path, values_line, f"values: parameter {name!r} of "
                                 f"{shared_path} ({kind}) has no value; add it: values: "
                                 f"{{{name}: ...}}")
        try:
            terms[name] = term(name, kind, values[name])
        except ValueError as e:
            raise ProbeFileError(probe_path, values_line, f"values: {e}") from None
    used: set[str] = set()

    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name is None:
            return m.group(0)
        if name not in terms:
            line = shared.count("\n", 0, start + m.start()) + 1
            raise ProbeFileError(shared_path, line, f"${name} is not a declared parameter (its "
                                 f"parameters: {declared}); declare it under parameters:, or "
                                 f"write the variable as ?{name} ($ marks a parameter here)")
        used.add(name)
        return terms[name]

    start = _offset(shared, header.end)
    resolved = shared[:start] + _TOKENS.sub(replace, shared[start:])
    unused = [n for n in params if n not in used]
    if unused:
        raise ProbeFileError(shared_path, header.line_of("parameters"), f"parameter "
                             f"{unused[0]!r} is declared but the query never uses "
                             f"${unused[0]}; use it or drop it from parameters:")
    return resolved


def _offset(text: str, line: int) -> int:
    """The character offset of the start of 1-based ``line`` (the end of ``text`` past it)."""
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[:line - 1])


def query_name(query: str) -> str:
    """``query`` when it names a ``.sparql`` file under a probe file's folder (a relative path
    without ``..``); a ValueError worded as the fix otherwise.

    >>> query_name("shared/atomic.sparql")
    'shared/atomic.sparql'
    >>> query_name("../../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: '../../etc/passwd' is not a shared query of this folder; name a .sparql file ...
    """
    path = PurePosixPath(query)
    if path.is_absolute() or ".." in path.parts or path.suffix != ".sparql" or "\\" in query:
        raise ValueError(f"{query!r} is not a shared query of this folder; name a .sparql file "
                         "under the probe file's folder, as atomic.sparql")
    return query


def shared_values(values: dict[str, Any], query: str | None, query_ok: bool) -> dict[str, Any]:
    """``values`` when the header names a shared query to bind them in (``query_ok``: its
    ``query:`` was valid, or absent); a ValueError worded as the fix otherwise."""
    if values and query is None and query_ok:
        raise ValueError("binds the parameters of a shared query; add 'query: FILE.sparql' (the "
                         "file that declares them) or drop values:")
    return values


def resolve(probe_path: Path, text: str, query: str, values: dict[str, Any],
            lines: dict[str, int], first: int) -> tuple[Path, str]:
    """The shared query file of a probe file (``text`` at ``probe_path``, whose header names
    ``query`` and binds ``values``; ``lines``: its header's field lines) and its resolved text.
    The probe file must hold nothing after its header but comments and blank lines."""
    end = comment_block(text, "#")[1]
    for n, line in enumerate(text.splitlines()[end - 1:], start=end):
        if line.strip() and not line.lstrip().startswith("#"):
            raise ProbeFileError(probe_path, n, f"this probe runs the shared query {query} "
                                 "(its 'query:' line), so it holds no SPARQL of its own; move "
                                 "the SPARQL into the shared file, or drop 'query:' and "
                                 "'values:'")
    path = probe_path.parent / query
    try:
        shared = read_text(path, what="shared query file")
    except TextFileError as e:
        raise ProbeFileError(probe_path, lines.get("query", first), f"query: {query}: "
                             f"{e.message} ({path}); name a .sparql file under the probe "
                             "file's folder") from None
    return path, resolve_text(shared, values, path, probe_path, lines.get("values", first))
