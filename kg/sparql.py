"""Read a SPARQL query without running it: its syntax (Oxigraph) and its algebra (rdflib).

Probe files and derived files are data, so kgprobe decides what a query does from what a parser
makes of it, never from its words and never by running it:

- :func:`check_syntax` hands the text to Oxigraph's parser, the one that will run the query, and
  stops before evaluation (pyoxigraph parses first, then refuses the contradictory dataset
  options this call passes, so nothing is evaluated and no ``SERVICE`` endpoint is called).
  A syntax error comes back as Oxigraph's ``SyntaxError`` with its line and column.
- :func:`analyse` parses the text again with rdflib's SPARQL parser and translates it into SPARQL
  algebra (rdflib.plugins.sparql.algebra); the query form, the projected variables, every
  ``SERVICE``, every call of ``RAND``/``UUID``/``STRUUID``/``NOW``/``BNODE``, the literals and the
  ``FROM``/``FROM NAMED`` clauses are read off that tree. A text that Oxigraph reads but rdflib's
  parser cannot is refused (kgprobe cannot tell what it would do), with the hint to spell the
  unusual part plainly.

Both parsers are recursive: a query nested a few thousand groups deep, or an expression of some
ten thousand terms, overflows the native stack (a SIGSEGV, no message) in Oxigraph's parser or
evaluator. :func:`check_bounds` therefore runs first, on the text alone, in every entry point
(:func:`check_syntax`, :func:`analyse`): at most :data:`MAX_NESTING` nested brackets and
:data:`MAX_OPERATORS` operators outside strings, IRIs and comments, each refusal a
:class:`QueryShapeError` on its line. rdflib's parser is slow (about 25 kB of query per CPU
second, far slower on long expressions), so :func:`analyse` stops after :data:`CHECK_CPU_SECONDS`
of CPU time with one line too.

Two differences between the parsers are closed before rdflib reads the text: rdflib turns
``\\uXXXX`` escapes into characters before parsing (Oxigraph does not), so the grammar is
called without that step; rdflib ends a ``#`` comment only at a line feed (SPARQL also ends it
at a carriage return, as Oxigraph does), so carriage returns become line feeds for rdflib.

>>> shape = analyse('SELECT ?a (STR(?a) AS ?b) WHERE { ?a ?p "42" } ORDER BY MD5(CONCAT(?b, "7"))')
>>> shape.form, shape.variables, shape.services, shape.nondeterministic, sorted(shape.literals)
('SELECT', ('a', 'b'), (), (), ['42', '7'])
>>> analyse("SELECT ?x WHERE { SERVICE <http://e.org/q> { ?x ?p ?o } }").services
('http://e.org/q',)
>>> analyse("SELECT * WHERE { ?b ?a ?c }").variables  # as Oxigraph orders them
('a', 'b', 'c')
>>> analyse("SELECT ?s FROM <http://e.org/g> FROM NAMED <http://e.org/n> { ?s ?p ?o }").dataset
('http://e.org/g', 'http://e.org/n')
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

NONDETERMINISTIC = ("RAND", "UUID", "STRUUID", "NOW", "BNODE")
"""Built-in functions whose value changes on every run."""


MAX_NESTING = 64
"""The deepest nesting of ``{ }``, ``( )`` and ``[ ]`` a query may have (kgprobe's own queries
reach 14; Oxigraph's parser overflows its stack at about 2,000)."""

MAX_OPERATORS = 1_000
"""The most operators (``+ - * / = != < > <= >= && || ! | ^``) a query may hold (kgprobe's own
reach 81; Oxigraph's evaluator overflows its stack on one expression of 20,000 terms, and
rdflib's parser needs seconds per thousand)."""

CHECK_CPU_SECONDS = 20.0
"""The most CPU seconds rdflib's parser may spend checking one query."""


class QueryShapeError(ValueError):
    """A query that rdflib's SPARQL parser cannot read (``line``: where, when known)."""

    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class QueryShape:
    """What a query does, read from its algebra."""

    form: str                        # SELECT, ASK, CONSTRUCT or DESCRIBE
    variables: tuple[str, ...]       # projected variables (SELECT), in order
    services: tuple[str, ...]        # SERVICE targets: an IRI, or '?var' for a variable
    nondeterministic: tuple[str, ...]  # RAND, UUID, ... called anywhere in the query
    literals: frozenset[str]         # lexical forms of every literal in the query
    dataset: tuple[str, ...]         # IRIs of FROM and FROM NAMED clauses


_LEX = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\r\n])*"|\'(?:\\.|[^\'\\\r\n])*\'|'
    r"<[^<>\"{}|^`\\\s]*>|#[^\r\n]*|[?$]\w+|@[A-Za-z]+(?:-[A-Za-z0-9]+)*|"
    r"(?:[A-Za-z][\w.\-]*)?:[\w\-.:%\\]*|[A-Za-z_]\w*|\d*\.?\d+(?:[eE][+-]?\d+)?|"
    r"(?P<open>[({\[])|(?P<close>[)}\]])|(?P<op>\|\||&&|!=|<=|>=|[=<>+\-*/!|^])")


def _line(text: str, at: int) -> int:
    return len(re.split(r"\r\n|\r|\n", text[:at]))


def check_bounds(text: str) -> None:
    """Refuse a query nested deeper than :data:`MAX_NESTING` or holding more than
    :data:`MAX_OPERATORS` operators, before any parser reads it (a parser would overflow the
    native stack and kill the process). Strings, IRIs, comments and prefixed names do not count.

    >>> check_bounds("SELECT ?x WHERE { ?x <http://e.org/a-b> 'x-y' FILTER(?x != 1 + 2) }")
    >>> check_bounds("SELECT ?x WHERE " + "{ " * 100 + "}" * 100)
    Traceback (most recent call last):
    ...
    kg.sparql.QueryShapeError: the query nests brackets more than 64 deep ...; ...
    """
    depth = operators = 0
    for m in _LEX.finditer(text):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
            if depth > MAX_NESTING:
                raise QueryShapeError(_line(text, m.start()), f"the query nests brackets more "
                                      f"than {MAX_NESTING} deep ({{ }}, ( ) or [ ]); SPARQL "
                                      "parsers recurse on each level, so flatten the groups or "
                                      "expressions")
        elif kind == "close":
            depth -= 1
        elif kind == "op":
            operators += 1
            if operators > MAX_OPERATORS:
                raise QueryShapeError(_line(text, m.start()), f"the query holds more than "
                                      f"{MAX_OPERATORS:,} operators; an expression this long "
                                      "overflows the SPARQL parser's stack: put the values "
                                      "into the store or a VALUES list and compare with IN or "
                                      "a join")


def check_syntax(text: str) -> None:
    """Parse ``text`` with Oxigraph without evaluating it; ``SyntaxError`` when it does not parse,
    ``QueryShapeError`` when it is too deeply nested or too long to parse (:func:`check_bounds`).

    >>> check_syntax("SELECT ?x WHERE { SERVICE <http://127.0.0.1:9/> { ?x ?p ?o } }")
    >>> check_syntax("SELECT ?x WHERE { ?x ")
    Traceback (most recent call last):
    ...
    SyntaxError: error at 1:22: expected ...
    """
    check_bounds(text)
    try:
        # pyoxigraph parses the query first and only then checks the options: these two
        # contradict each other, so the call ends before the query is evaluated.
        ox.Store().query(text, use_default_graph_as_union=True, default_graph=ox.DefaultGraph())
    except ValueError as e:
        if "use_default_graph_as_union" not in str(e):
            raise
        return
    raise RuntimeError("pyoxigraph evaluated a query it was asked only to parse; kgprobe "
                       "relies on its option check (kg.sparql.check_syntax)")


@functools.lru_cache(maxsize=512)
def analyse(text: str) -> QueryShape:
    """The algebra of ``text`` (a query Oxigraph parses) as a :class:`QueryShape`.

    Raises QueryShapeError when rdflib's parser cannot read it, when the text is out of
    :func:`check_bounds`, or when checking takes more than :data:`CHECK_CPU_SECONDS` of CPU.
    The parser runs on a thread of its own: pyparsing leaves reference cycles through the
    frames of the caller's stack, which would keep the caller's objects (an open store) alive
    until the next garbage collection. The caller watches that thread's CPU clock and, past
    the budget, raises an exception inside it (``PyThreadState_SetAsyncExc``: pyparsing is pure
    Python, so it stops at its next bytecode; no hook slows the parse down)."""
    check_bounds(text)
    box: dict[str, Any] = {}

    too_slow = QueryShapeError(None, f"checking the query took more than "
                               f"{CHECK_CPU_SECONDS:g} s of CPU ({len(text):,} characters; "
                               "kgprobe's SPARQL checker reads about 25 kB per second, less on "
                               "long expressions); put long value lists into the store (a source "
                               "or a derived graph) and select them")

    def work() -> None:
        try:
            box["shape"] = _analyse(text)
        except _TooSlow:
            box["error"] = too_slow
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e.with_traceback(None)

    worker = threading.Thread(target=work, name="kgprobe-sparql-analyse", daemon=True)
    worker.start()
    over = False
    while worker.is_alive():
        worker.join(0.05)
        try:  # the thread's CPU clock; gone (OSError) once the thread has ended
            spent = time.clock_gettime(time.pthread_getcpuclockid(worker.ident or 0))
        except OSError:
            continue
        if worker.is_alive() and spent > CHECK_CPU_SECONDS:
            # sent again while the thread lives: an exception that lands where Python ignores
            # exceptions (a weakref callback during garbage collection) is lost
            over = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident or 0),
                                                       ctypes.py_object(_TooSlow))
    if over and "error" not in box:  # past the budget: too slow, even if it then finished
        box["error"] = too_slow
    if "error" in box:
        error = box.pop("error")
        try:
            raise error
        finally:
            del error
    return box["shape"]


_ESCAPED_NAME = re.compile(r"[\w-]*:[\w.-]*\\[^\s\\]")
"""A prefixed name with a backslash escape (``ex:a\\#``), which rdflib's parser cannot read."""

_HASH_HOLDERS = re.compile(r'(?P<t>"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\r\n])*"|'
                           r"'(?:\\.|[^'\\\r\n])*'|<[^<>\"{}|^`\\\x00-\x20]*>)|#[^\r\n]*")
"""Strings and IRIs (group ``t``), whose ``#`` is no comment, and comments."""


def _for_rdflib(text: str) -> tuple[str, str]:
    """``text`` as rdflib's parser reads it like Oxigraph, and the stand-in for ``#`` in it:
    carriage returns become line feeds (SPARQL ends a comment at either), and each ``#``
    inside an ``<IRI>`` or a string becomes a private-use character that the text does not
    hold. rdflib finds a SERVICE's own text by searching the whole query with comments ignored,
    so a ``#`` in an IRI or string earlier on the same line hid the SERVICE and the query did
    not parse (and rdflib's IRIs may not hold the escape ``\\u0023``); :func:`_shape` turns the
    stand-in back into ``#`` in every IRI and literal it reads off the algebra.

    >>> _for_rdflib("SELECT * { ?s <http://e.org/a#b> '#' } # <c#d>")[0].count("#")  # comment
    2
    """
    hold = next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text)

    def escape(m: re.Match[str]) -> str:
        return m.group(0).replace("#", hold) if m.group("t") else m.group(0)
    return _HASH_HOLDERS.sub(escape, text.replace("\r", "\n")), hold


ELIDE_CHARS = 2_000
"""A ``VALUES`` data block longer than this many characters reaches rdflib as its first row."""

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'",
            "\\": "\\"}


def _unquote(token: str) -> str:
    """The lexical form of a SPARQL string token (quotes off, escapes read)."""
    quote = 3 if token[:3] in ('"""', "'''") else 1
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)),
                  token[quote:-quote])


def elide_values(text: str) -> tuple[str, frozenset[str]]:
    """``text`` with each long ``VALUES`` data block (over :data:`ELIDE_CHARS` characters) cut
    to its first row, and the literals of the rows cut (their lexical forms, read by the
    lexer). rdflib's parser reads about 3 kB of ``VALUES`` rows per second, and rows of RDF
    terms change nothing of what :func:`analyse` reads off the algebra but its literals, which
    are added back; Oxigraph (:func:`check_syntax`) still reads every row.

    >>> rows = " ".join(f'("w{i}" {i})' for i in range(400))
    >>> short, cut = elide_values(f"SELECT * WHERE {{ VALUES (?w ?n) {{ {rows} }} }}")
    >>> short
    'SELECT * WHERE { VALUES (?w ?n) { ("w0" 0) } }'
    >>> sorted(cut)[:3], len(cut)
    (['1', '10', '100'], 798)
    >>> elide_values("SELECT ?x WHERE { VALUES ?x { 'a' 'b' } }")[0]  # short: as it is
    "SELECT ?x WHERE { VALUES ?x { 'a' 'b' } }"
    """
    tokens = list(_LEX.finditer(text))
    parts: list[str] = []
    literals: set[str] = set()
    done = 0
    i = 0
    while i < len(tokens):
        if tokens[i].group(0).upper() != "VALUES":
            i += 1
            continue
        start = next((j for j in range(i + 1, len(tokens)) if tokens[j].group(0) == "{"), None)
        end = None if start is None else next(
            (j for j in range(start + 1, len(tokens)) if tokens[j].group(0) == "}"), None)
        if start is None or end is None:
            break
        if tokens[end].start() - tokens[start].end() > ELIDE_CHARS and end > start + 1:
            first = start + 1
            if tokens[first].group(0) == "(":  # a row of several variables: up to its ")"
                last = next(j for j in range(first, end) if tokens[j].group(0) == ")")
            else:  # one variable: one term, with its language tag or ^^datatype
                last = first
                while last + 1 < end and (tokens[last + 1].group(0).startswith("@")
                                          or tokens[last + 1].group(0) == "^"
                                          or tokens[last].group(0) == "^"):
                    last += 1
            for t in tokens[last + 1:end]:
                word = t.group(0)
                if word[0] in "\"'":
                    literals.add(_unquote(word))
                elif word[0].isdigit() or word[0] == "." or word in ("true", "false"):
                    literals.add(word)
            parts += [text[done:tokens[last].end()], " "]
            done = tokens[end].start()
        i = end + 1
    if not parts:
        return text, frozenset()
    return "".join(parts) + text[done:], frozenset(literals)


class _TooSlow(BaseException):  # not caught by a parser's own "except Exception"
    """Raised inside rdflib's parser when checking ran out of CPU time."""


def _analyse(text: str) -> QueryShape:
    from pyparsing import ParseBaseException
    from rdflib.plugins.sparql.algebra import translateQuery
    from rdflib.plugins.sparql.parser import Query

    terms = logging.getLogger("rdflib.term")  # "... does not look like a valid URI": noise
    quiet, terms.disabled = terms.disabled, True
    try:
        short, elided = elide_values(text)
        plain, hold = _for_rdflib(short)
        parsed = Query.parse_string(plain, parse_all=True)
        star = parsed[1].name == "SelectQuery" and "projection" not in parsed[1]
        query = translateQuery(parsed)
    except ParseBaseException as e:
        hint = ("a full <IRI> instead of a prefixed name with backslash escapes"
                if _ESCAPED_NAME.search(text) else "write it another way SPARQL allows")
        raise QueryShapeError(e.lineno, f"kgprobe's SPARQL checker (rdflib) cannot read the "
                              f"query ({e.msg} at column {e.col}), so it cannot tell what the "
                              f"query does; spell that part plainly ({hint})") from e
    except RecursionError as e:
        raise QueryShapeError(None, "the query is nested too deeply to be checked; flatten "
                              "its groups or expressions") from e
    except Exception as e:  # rdflib's translation raises plain exceptions on odd queries
        raise QueryShapeError(None, f"kgprobe's SPARQL checker (rdflib) cannot translate the "
                              f"query ({type(e).__name__}: {e}); simplify it") from e
    finally:
        terms.disabled = quiet
    shape = _shape(query.algebra, star, hold)
    if elided:
        shape = dataclasses.replace(shape, literals=shape.literals | elided)
    return shape


def _shape(algebra: Any, star: bool, hold: str) -> QueryShape:
    from rdflib.plugins.sparql.parserutils import CompValue
    from rdflib.term import Literal, Variable

    form = str(getattr(algebra, "name", "")).removesuffix("Query").upper()
    services: list[str] = []
    calls: list[str] = []
    literals: set[str] = set()
    stack: list[object] = [algebra]
    seen: set[int] = set()
    while stack:  # iterative: a deeply nested query does not exhaust the Python stack
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Literal):
            literals.add(str(node).replace(hold, "#"))
        elif isinstance(node, CompValue):
            name = node.name
            if name == "ServiceGraphPattern":
                term = dict.get(node, "term")  # CompValue.get answers a missing key with the key
                services.append(f"?{term}" if isinstance(term, Variable)
                                else str(term).replace(hold, "#"))
            elif name.startswith("Builtin_") and name[8:] in NONDETERMINISTIC:
                calls.append(name[8:])
            stack.extend(node.values())
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend(node)
    variables = [str(v) for v in (dict.get(algebra, "PV") or [])] if form == "SELECT" else []
    if star:  # SELECT *: Oxigraph orders the variables by name; rdflib's order is a set's
        variables.sort()
    dataset: list[str] = []
    for clause in dict.get(algebra, "datasetClause") or []:
        for key in ("default", "named"):
            iri = dict.get(clause, key)
            if iri is not None:
                dataset.append(str(iri).replace(hold, "#"))
    return QueryShape(form=form, variables=tuple(variables),
                      services=tuple(dict.fromkeys(services)),
                      nondeterministic=tuple(dict.fromkeys(calls)),
                      literals=frozenset(literals), dataset=tuple(dataset))


_SKIP = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\r\n])*"|'
                   r"'(?:\\.|[^'\\\r\n])*'|<[^<>\s]*>|#[^\r\n]*")


def keyword_line(text: str, word: str) -> int | None:
    """The line of the first ``word`` (any case) outside comments, strings and IRIs of
    ``text``: where an error about a clause the algebra holds points (the algebra keeps no
    positions). Only a pointer for a message, never a decision. None when not found.

    >>> keyword_line("# rand\\rSELECT ?x\\rWHERE { ?x ?p 'rand' } ORDER BY rand()", "RAND")
    3
    """
    blank = _SKIP.sub(lambda m: re.sub(r"[^\r\n]", " ", m.group(0)), text)
    m = re.search(rf"(?<![\w?$:]){re.escape(word)}(?![\w:])", blank, re.IGNORECASE)
    return len(re.split(r"\r\n|\r|\n", text[:m.start()])) if m else None
