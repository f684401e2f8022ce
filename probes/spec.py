"""Probe files: a SPARQL SELECT whose leading comment block is a YAML header.

The file stays valid SPARQL (the header is made of SPARQL comments), so it runs unchanged in any
SPARQL tool. Header fields (see README, "Probe files"):

- ``name`` (required): unique probe name, ``group/name``.
- ``task`` (required): relatum, choice, binary, subsumption or records.
- ``split`` (required): a split name (``test``) or a variable holding it (``?split``).
- ``description``: one line for reports.
- ``target``: the variable holding the probed item.
- ``gold``: the variable (or list) holding gold answers.
- ``candidates``: the variable holding answer candidates (choice tasks).
- ``group_by``: variables that make one instance; other variables are collected in lists.
- ``id``: variables that identify an instance (default: group_by, else all selected).
- ``prompts``: prompt templates (``[W]``, ``[V]``, ``[DET]``, ...).
- ``seed``: the seed written into the query's hash ordering; must appear in the query.
- ``graphs``: sources the query reads (checked against the store before running).
- ``params``: task-specific settings (a mapping), passed to the renderer unchanged.
- ``builder``: ``module:function`` that makes the instances from the query when SPARQL alone
  cannot (OntoLAMA's exact class balance and complex SI); default: the query's rows.
- ``export``: ``false`` for a building-block query that a driver runs elsewhere (COPEN's
  Wikidata construction queries); ``python -m probes.export`` skips it.

>>> text = '''# name: demo/pairs
... # task: records
... # split: test
... # target: ?a
... SELECT ?a ?b WHERE { VALUES (?a ?b) { ("x" "y") } }
... '''
>>> probe = parse_probe(text, "demo.rq")
>>> probe.spec.name, probe.variables
('demo/pairs', ['a', 'b'])
>>> parse_probe(text.replace("task:", "tsk:"), "demo.rq")
Traceback (most recent call last):
...
probes.errors.ProbeFileError: demo.rq:2: unknown header field 'tsk' (did you mean 'task'?); ...
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyoxigraph as ox
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from probes.errors import ProbeFileError

TASKS = ("relatum", "choice", "binary", "subsumption", "records")
_VAR = r"\?[A-Za-z_][A-Za-z0-9_]*"


def _var(value: str) -> str:
    if not re.fullmatch(_VAR, value):
        raise ValueError(f"{value!r} is not a SPARQL variable; write it as ?name")
    return value


class ProbeSpec(BaseModel):
    """The validated header of a probe file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9_\-]+(/[a-z0-9_\-]+)*$")
    task: Literal["relatum", "choice", "binary", "subsumption", "records"]
    split: str
    description: str = ""
    target: str | None = None
    gold: list[str] = []
    candidates: str | None = None
    group_by: list[str] = []
    id: list[str] = []
    prompts: list[str] = []
    seed: int | None = None
    graphs: list[str] = []
    params: dict[str, Any] = {}
    builder: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    export: bool = True

    @field_validator("gold", "group_by", "id", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        """Accept ``?a``, ``?a ?b``, ``[?a, ?b]`` and ``["?a", "?b"]``."""
        if isinstance(v, str):
            return v.replace(",", " ").split()
        if isinstance(v, list):
            # In a YAML flow list '?' starts a key: `[?a, ?b]` reads as [{'a': None}, {'b': None}].
            return [f"?{next(iter(x))}" if isinstance(x, dict) and list(x.values()) == [None]
                    else x for x in v]
        return v

    @field_validator("graphs", "prompts", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, str):
            return v.replace(",", " ").split() if info.field_name == "graphs" else [v]
        return v

    @field_validator("target", "candidates")
    @classmethod
    def _one_var(cls, v: str | None) -> str | None:
        return None if v is None else _var(v)

    @field_validator("gold", "group_by", "id")
    @classmethod
    def _many_vars(cls, v: list[str]) -> list[str]:
        return [_var(x) for x in v]

    @field_validator("split")
    @classmethod
    def _split(cls, v: str) -> str:
        if v.startswith("?"):
            return _var(v)
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", v):
            raise ValueError(f"split {v!r} must be a name like 'test' or a variable like ?split")
        return v

    @property
    def split_variable(self) -> str | None:
        return self.split[1:] if self.split.startswith("?") else None

    def variables_used(self) -> dict[str, str]:
        """Header field -> variable name (without '?') for every variable the header names."""
        used: dict[str, str] = {}
        for fld in ("target", "candidates"):
            v = getattr(self, fld)
            if v:
                used[f"{fld} {v}"] = v[1:]
        for fld in ("gold", "group_by", "id"):
            for v in getattr(self, fld):
                used[f"{fld} {v}"] = v[1:]
        if self.split_variable:
            used[f"split {self.split}"] = self.split_variable
        return used


@dataclass(frozen=True)
class Probe:
    """A parsed, validated probe file."""

    path: Path
    spec: ProbeSpec
    query: str
    variables: list[str]
    header_lines: dict[str, int]


_UPDATE = re.compile(
    r"(?:^|[\s;{}])(?P<kw>INSERT\s+DATA|DELETE\s+DATA|DELETE\s+WHERE|INSERT\s*\{|DELETE\s*\{|"
    r"WITH\s+<|LOAD\s+(?:SILENT\s+)?<|CLEAR\s+(?:SILENT\s+)?(?:GRAPH|DEFAULT|NAMED|ALL)|"
    r"DROP\s+(?:SILENT\s+)?(?:GRAPH|DEFAULT|NAMED|ALL)|CREATE\s+(?:SILENT\s+)?GRAPH|"
    r"(?:ADD|MOVE|COPY)\s+(?:SILENT\s+)?(?:GRAPH|DEFAULT|<))",
    re.IGNORECASE,
)
_STRIP = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
    r"<[^<>\s]*>|#[^\n]*"
)


def _blank(m: re.Match[str]) -> str:
    text = m.group(0)
    if text.startswith("<"):
        return "<" + " " * (len(text) - 2) + ">"
    return re.sub(r"[^\n]", " ", text)


def split_header(text: str) -> tuple[list[tuple[int, str]], int]:
    """The header's (line number, text) pairs with ``#`` removed, and the first line after it."""
    lines = text.splitlines()
    header: list[tuple[int, str]] = []
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or (not lines[i].strip() and not header)):
        if lines[i].startswith("#"):
            body = lines[i][1:]
            header.append((i + 1, body[1:] if body.startswith(" ") else body))
        i += 1
    return header, i + 1


def _header_lines(header: list[tuple[int, str]]) -> dict[str, int]:
    out = {}
    for lineno, body in header:
        m = re.match(r"([A-Za-z_][\w-]*)\s*:", body)
        if m and not body.startswith((" ", "\t", "-")):
            out.setdefault(m.group(1), lineno)
    return out


def parse_probe(text: str, path: str | Path = "<string>") -> Probe:
    """Parse and validate a probe file's text. Raises ProbeFileError naming file and line."""
    path = Path(path)
    header, body_start = split_header(text)
    if not header:
        raise ProbeFileError(path, 1, "no header: a probe file starts with a comment block such as "
                             "'# name: group/probe', '# task: relatum', '# split: test'")
    lines = _header_lines(header)
    first = header[0][0]
    try:
        raw = yaml.safe_load("\n".join(body for _, body in header))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = header[mark.line][0] if mark is not None and mark.line < len(header) else first
        problem = getattr(e, "problem", None) or str(e)
        raise ProbeFileError(path, line, f"header is not valid YAML: {problem}; check quoting "
                             "(quote values that contain ':', '#', '[' or ']')") from e
    if not isinstance(raw, dict):
        raise ProbeFileError(path, first, "header must be 'field: value' lines (a YAML mapping)")
    for key in raw:
        if key not in ProbeSpec.model_fields:
            close = difflib.get_close_matches(str(key), ProbeSpec.model_fields, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ProbeFileError(path, lines.get(str(key), first),
                                 f"unknown header field {key!r}{hint}; known fields: "
                                 f"{', '.join(ProbeSpec.model_fields)}")
    try:
        spec = ProbeSpec.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            example = "|".join(TASKS) if field == "task" else "..."
            msg = f"header field {field!r} is required: add a line '# {field}: {example}'"
        elif err["type"] == "literal_error":
            msg = f"{field}: {raw.get(field)!r} is not one of {', '.join(TASKS)}"
        else:
            msg = f"{field}: {msg}"
        raise ProbeFileError(path, lines.get(field, first), msg) from e
    variables = check_query(text, path)
    for what, var in spec.variables_used().items():
        if var not in variables:
            field = what.split()[0]
            raise ProbeFileError(path, lines.get(field, first),
                                 f"header {what} is not selected by the query; add ?{var} to "
                                 f"the SELECT clause (it selects: "
                                 f"{', '.join('?' + v for v in variables)})")
    body = "\n".join(text.splitlines()[body_start - 1:])
    if spec.seed is not None and str(spec.seed) not in body:
        raise ProbeFileError(path, lines.get("seed", first),
                             f"seed {spec.seed} does not appear in the query; write it into the "
                             f"hash ordering: ORDER BY MD5(CONCAT(STR(?x), \"{spec.seed}\"))")
    return Probe(path=path, spec=spec, query=text, variables=variables, header_lines=lines)


def check_query(text: str, path: str | Path) -> list[str]:
    """Check that ``text`` is a read-only SPARQL SELECT; return its projected variables."""
    stripped = _STRIP.sub(_blank, text)
    m = _UPDATE.search(stripped)
    if m:
        line = stripped.count("\n", 0, m.start("kw")) + 1
        words = [w for w in m.group("kw").upper().split() if w != "SILENT"]
        kw = " ".join(words[:2]).rstrip("{<").strip()
        raise ProbeFileError(path, line, f"{kw} is a SPARQL UPDATE; probe files are read-only "
                             "queries against the store: write a SELECT")
    try:
        result = ox.Store().query(text)
    except SyntaxError as e:
        raise _syntax_error(text, path, e) from e
    if not isinstance(result, ox.QuerySolutions):
        form = re.search(r"(?<![\w?$:])(ASK|CONSTRUCT|DESCRIBE)(?![\w:])", stripped, re.IGNORECASE)
        line = stripped.count("\n", 0, form.start()) + 1 if form else None
        kind = form.group(1).upper() if form else "an ASK, CONSTRUCT or DESCRIBE"
        raise ProbeFileError(path, line, f"a probe file must hold a SELECT query, not {kind}; "
                             "rewrite it as SELECT ?var ... WHERE { ... }")
    return [v.value for v in result.variables]


def _syntax_error(text: str, path: str | Path, error: SyntaxError) -> ProbeFileError:
    """A ProbeFileError for a query Oxigraph cannot parse, on the line of the mistake.

    Oxigraph reports the furthest character its keyword matching looked at, which can be a
    line or more past the mistake (often the end of the file). rdflib's parser names the start
    of the clause that fails; its line is used when it is not after Oxigraph's.
    """
    detail = str(error)
    m = re.match(r"error at (\d+):(\d+): ", detail)
    line = int(m.group(1)) if m else None
    detail = detail[m.end():] if m else detail
    try:
        from rdflib.plugins.sparql.parser import parseQuery

        parseQuery(text)
    except Exception as e2:  # pyparsing's ParseException; anything else gives no line
        other = getattr(e2, "lineno", None)
        if isinstance(other, int) and other >= 1 and (line is None or other <= line):
            line = other
    lines = text.splitlines()
    near = f" near `{lines[line - 1].strip()}`" if line and line <= len(lines) else ""
    return ProbeFileError(path, line, f"SPARQL syntax error{near}: {detail}; fix the query "
                          "there (it must parse as a SPARQL 1.1 SELECT)")


def load_probe(path: Path) -> Probe:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProbeFileError(path, None, f"cannot read the probe file: {e}") from e
    return parse_probe(text, path)


def default_query_dirs() -> list[Path]:
    """``./queries`` if it exists, else the ``queries/`` folder of the kgprobe checkout."""
    here = Path("queries")
    if here.is_dir():
        return [here]
    return [Path(__file__).resolve().parents[1] / "queries"]


def discover(extra_dirs: list[Path] | None = None, patterns: list[str] | None = None,
             include_default: bool = True) -> list[Probe]:
    """All probe files (``*.rq``) under ``queries/`` and the extra folders (except folders named
    ``derived``, which hold kg.derived's CONSTRUCT files), optionally filtered by
    name patterns (``fnmatch``: ``starter/*``). Duplicate names are an error naming both files."""
    dirs = (default_query_dirs() if include_default else []) + list(extra_dirs or [])
    probes: dict[str, Probe] = {}
    for d in dirs:
        if not d.is_dir():
            raise ProbeFileError(d, None, "probe folder does not exist")
        for path in sorted(d.rglob("*.rq")):
            if "derived" in path.relative_to(d).parts[:-1]:
                continue  # queries/derived: CONSTRUCT files of kg.derived, not probes
            probe = load_probe(path)
            other = probes.get(probe.spec.name)
            if other is not None:
                raise ProbeFileError(path, probe.header_lines.get("name"),
                                     f"probe name {probe.spec.name!r} is already used by "
                                     f"{other.path}; names must be unique")
            probes[probe.spec.name] = probe
    chosen = list(probes.values())
    if patterns:
        chosen = [p for p in chosen if any(fnmatch.fnmatch(p.spec.name, pat) for pat in patterns)]
        if not chosen:
            names = ", ".join(sorted(probes)) or "(none found)"
            raise ProbeFileError(", ".join(map(str, dirs)), None,
                                 f"no probe matches {' '.join(patterns)}; known probes: {names}")
    return chosen
