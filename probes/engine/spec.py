"""Probe files: a SPARQL SELECT whose leading comment block is a YAML header.

The file stays valid SPARQL (the header is made of SPARQL comments), so it runs unchanged in any
SPARQL tool. Header fields (see README, "Probe files"):

- ``name`` (required): unique probe name, ``group/name``.
- ``task`` (required): relatum, choice, binary, subsumption, records or generate.
- ``split`` (required): a split name (``test``) or a variable holding it (``?split``).
- ``description``: one line for reports.
- ``target``: the variable holding the probed item.
- ``gold``: the variable (or list) holding gold answers.
- ``candidates``: the variable holding answer candidates (choice tasks).
- ``group_by``: variables that make one instance; other variables are collected in lists.
- ``id``: variables that identify an instance (default: group_by, else all selected).
- ``prompts``: prompt templates (``[W]``, ``[V]``, ``[DET]``, ...).
- ``prompts_from``: instead of ``prompts``, the variable whose values are each instance's own
  templates, in query order (collected like any non-grouped variable): prompt ``i`` of an
  instance is its ``i``-th value, so templates can live in the store (BEAR's per-relation
  templates; prompt index = lm-pub-quiz's ``template_index``). Only tasks that render per
  instance take it (choice). Identical values collapse into one prompt unless
- ``prompt_index`` names the variable holding each template's position (0, 1, ...): the
  prompts are then the distinct (index, template) pairs in index order, so a template listed
  twice stays two prompts (BEAR's P103 repeats its first template as its third).
- ``seed``: the seed written into the query's hash ordering; must appear in the query.
- ``distractors``: ``{pool: "?var", n: N, seed: S}`` (choice): the export draws each target's
  ``N`` distractors from the pool the query binds in ``?var`` (probes.engine.distractors).
- ``graphs``: sources the query reads (checked against the store before running).
- ``params``: the task's settings (a mapping), validated against the task's params model
  (probes.engine.tasks.registry): an unknown key gets a "did you mean", a wrong value an error.
- ``builder``: ``module:function`` that makes the instances from the query when SPARQL alone
  cannot (OntoLAMA's exact class balance and complex SI); default: the query's rows.
- ``builder_params``: the builder's settings (a mapping, e.g. OntoLAMA's ``ontolama`` and
  ``balance``), kept apart from the task's ``params``: they shape the instances, not the scoring.
- ``formats``: other tasks that read the same instances in the same run, each with its own
  params: ``{generate: {max_new_tokens: 8}}`` makes ``kgprobe run`` score a choice probe's
  candidates AND generate its answers, under the same instance ids (one run per format,
  :meth:`Probe.as_format`); eval/metrics/format_agreement.sql compares them. Not part of the
  instances' hash (it does not shape the instances).
- ``query`` and ``values``: the probe runs the shared query of ``query: FILE.sparql`` (under its
  folder) with FILE's declared parameters bound to ``values``, typed (probes.engine.shared_query).
- ``export``: ``false`` for a building-block query that a driver runs elsewhere (COPEN's
  Wikidata construction queries); ``python -m probes.engine.export`` skips it.

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
probes.engine.errors.ProbeFileError: demo.rq:2: unknown header field 'tsk' (did you mean 'task'?)...
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kg import config
from kg.header import HeaderError, comment_block, parse_header, read_header
from kg.sparql import QueryShapeError, analyse, check_syntax, keyword_line
from kg.textfile import TextFileError, read_text
from probes.engine.distractors import Distractors
from probes.engine.errors import ProbeFileError
from probes.engine.shared_query import query_name, resolve, shared_values
from probes.engine.tasks import params_problem
from probes.engine.tasks.generate import alias_variables
from probes.engine.tasks.registry import TASK_ENTRIES
from probes.results import TASKS

_VAR = r"\?[A-Za-z_][A-Za-z0-9_]*"
PROMPTS_FROM_TASKS = ("choice",)
"""The tasks whose templates may come from the instances (``prompts_from``)."""


def _var(value: str) -> str:
    if not re.fullmatch(_VAR, value):
        raise ValueError(f"{value!r} is not a SPARQL variable; write it as ?name")
    return value


class ProbeSpec(BaseModel):
    """The validated header of a probe file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9_\-]+(/[a-z0-9_\-]+)*$", max_length=120,
                      examples=["group/probe"])
    task: str = Field(examples=["|".join(TASKS)])
    split: str = Field(examples=["test"])
    description: str = ""
    target: str | None = None
    gold: list[str] = []
    candidates: str | None = None
    group_by: list[str] = []
    id: list[str] = []
    prompts: list[str] = []
    prompts_from: str | None = None
    prompt_index: str | None = None
    seed: int | None = None
    distractors: Distractors | None = None
    graphs: list[str] = []
    params: dict[str, Any] = {}
    builder: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    builder_params: dict[str, Any] = {}
    export: bool = True
    formats: dict[str, dict[str, Any]] = {}
    query: str | None = Field(default=None, examples=["atomic.sparql"])
    values: dict[str, Any] = {}

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

    @field_validator("target", "candidates", "prompts_from", "prompt_index")
    @classmethod
    def _one_var(cls, v: str | None) -> str | None:
        return None if v is None else _var(v)

    @field_validator("query")
    @classmethod
    def _query(cls, v: str | None) -> str | None:
        return None if v is None else query_name(v)

    @field_validator("values")
    @classmethod
    def _values(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return shared_values(v, info.data.get("query"), "query" in info.data)

    @field_validator("gold", "group_by", "id")
    @classmethod
    def _many_vars(cls, v: list[str]) -> list[str]:
        return [_var(x) for x in v]

    @field_validator("task")
    @classmethod
    def _task(cls, v: str) -> str:
        if v not in TASKS:
            raise ValueError(f"{v!r} is not one of {', '.join(TASKS)}")
        return v

    @field_validator("split")
    @classmethod
    def _split(cls, v: str) -> str:
        if v.startswith("?"):
            return _var(v)
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", v):
            raise ValueError(f"split {v!r} must be a name like 'test' or a variable like ?split")
        return v

    @model_validator(mode="after")
    def _distractors(self) -> ProbeSpec:
        if self.distractors is not None and (self.task != "choice" or not self.candidates
                                             or not self.target or not self.gold):
            raise ValueError("distractors: needs a choice probe with target, gold and "
                             "candidates (the variable the drawn candidates fill)")
        return self

    @model_validator(mode="after")
    def _apart(self) -> ProbeSpec:
        both = sorted(set(self.params) & set(self.builder_params))
        if both:
            raise ValueError(f"params and builder_params both set {', '.join(both)}; a setting "
                             "of the builder belongs in builder_params, one of the task in params")
        if self.prompt_index is not None and self.prompts_from is None:
            raise ValueError("prompt_index orders the templates of prompts_from; set "
                             "prompts_from: ?var too, or drop prompt_index")
        if self.prompts_from is not None:
            if self.prompts:
                raise ValueError("set either prompts (templates in the header) or prompts_from "
                                 "(a variable holding each instance's templates), not both")
            if self.task not in PROMPTS_FROM_TASKS:
                raise ValueError(f"prompts_from is taken by the task(s) "
                                 f"{', '.join(PROMPTS_FROM_TASKS)}, not by {self.task}; write "
                                 "the templates in prompts:")
        return self

    @property
    def hashed_params(self) -> dict[str, Any]:
        """``params`` and ``builder_params`` in one mapping, as headers wrote them before the
        builder's settings had a field of their own. Run ids and the exported instances' hash
        are computed from it, so runs and exports made before the split stay current."""
        return {**self.builder_params, **self.params}

    @property
    def split_variable(self) -> str | None:
        return self.split[1:] if self.split.startswith("?") else None

    def variables_used(self) -> dict[str, str]:
        """Header field -> variable name (without '?') for every variable the header names."""
        used: dict[str, str] = {}
        for fld in ("target", "candidates", "prompts_from", "prompt_index"):
            v = getattr(self, fld)
            if v:
                used[f"{fld} {v}"] = v[1:]
        for fld in ("gold", "group_by", "id"):
            for v in getattr(self, fld):
                used[f"{fld} {v}"] = v[1:]
        if self.split_variable:
            used[f"split {self.split}"] = self.split_variable
        params = self.params if self.task == "generate" else self.formats.get("generate") or {}
        aliases = alias_variables(params.get("aliases"))
        for v in aliases if isinstance(aliases, list) else []:
            if isinstance(v, str) and v.startswith("?"):
                used[f"params aliases {v}"] = v[1:]
        if self.distractors is not None:
            used[f"distractors pool {self.distractors.pool}"] = self.distractors.pool[1:]
            used.pop(f"candidates {self.candidates}", None)  # the export fills it
        return used


@dataclass(frozen=True)
class Probe:
    """A parsed, validated probe file."""

    path: Path
    spec: ProbeSpec
    query: str
    variables: list[str]
    header_lines: dict[str, int]
    services: tuple[str, ...] = ()  # endpoints of the query's SERVICE clauses
    query_file: Path | None = None  # the shared query file (header ``query:``) ``query`` is from

    def as_format(self, task: str) -> Probe:
        """This probe read as another of its ``formats``: the same name and instances, the
        task and params of that format (its own run id, since both enter it)."""
        params = self.spec.formats[task]
        spec = self.spec.model_copy(update={"task": task, "params": dict(params),
                                            "formats": {}})
        return dataclasses.replace(self, spec=spec)

    def formatted(self) -> list[Probe]:
        """The probe, then the probe read in each of its ``formats``."""
        return [self, *(self.as_format(t) for t in self.spec.formats)]

    @property
    def instances_hash(self) -> str:
        """A hash of what shapes the probe's instances: the query (comments included, so any
        edit counts) and the header fields other than prompts and description. Stored with the
        exported instances, so a run notices a probe file edited since its export."""
        spec = self.spec.model_dump(exclude={"prompts", "description", "builder_params",
                                             "formats", "query", "values"})
        spec["params"] = self.spec.hashed_params
        header_end = comment_block(self.query, "#")[1]
        body = "\n".join(self.query.splitlines()[header_end - 1:])
        raw = json.dumps([spec, body], sort_keys=True, default=str)
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


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


def parse_probe(text: str, path: str | Path = "<string>") -> Probe:
    """Parse and validate a probe file's text. Raises ProbeFileError naming file and line."""
    path = Path(path)
    try:
        header, spec = parse_header(text, ProbeSpec, "#")
    except HeaderError as e:
        raise ProbeFileError(path, e.line, e.message) from None
    lines, first = header.field_lines, header.first
    problem = params_problem(TASK_ENTRIES[spec.task].params, spec.params)
    if problem is not None:
        hint = "; a setting of the builder goes in builder_params" if spec.builder else ""
        raise ProbeFileError(path, lines.get("params", first), f"{problem[1]} (task "
                             f"{spec.task}; see the task table in the README){hint}")
    for task, params in spec.formats.items():
        if task not in TASK_ENTRIES or task in (spec.task, "records"):
            others = ", ".join(t for t in TASKS if t not in (spec.task, "records"))
            raise ProbeFileError(path, lines.get("formats", first),
                                 f"formats: {task!r} is not another task to read the instances "
                                 f"in; use one of {others}")
        problem = params_problem(TASK_ENTRIES[task].params, params or {})
        if problem is not None:
            raise ProbeFileError(path, lines.get("formats", first),
                                 f"formats {task}: {problem[1]} (see the task table in the "
                                 "README)")
    if spec.task == "choice" and spec.candidates is None and spec.builder is None:
        raise ProbeFileError(path, lines.get("task", first),
                             "a choice probe needs 'candidates: ?var' (the answers to choose "
                             "from); without it only the gold answer is scored and accuracy "
                             "is always 100%")
    query, query_file = text, None  # a shared query: its file, resolved with the values
    if spec.query is not None:
        query_file, query = resolve(path, text, spec.query, spec.values, lines, first)
    variables, services = check_query(query, query_file or path)
    for what, var in spec.variables_used().items():
        if var not in variables:
            field = what.split()[0]
            raise ProbeFileError(path, lines.get(field, first),
                                 f"header {what} is not selected by the query; add ?{var} to "
                                 f"the SELECT clause (it selects: "
                                 f"{', '.join('?' + v for v in variables)})")
    if query_file is not None:  # RAND() and the like on the shared file's line
        check_ordering(query, None, query_file, None)
    check_ordering(query, spec.seed, path, lines.get("seed", first))
    return Probe(path=path, spec=spec, query=query, variables=variables, header_lines=lines,
                 services=services, query_file=query_file)


def strip_comments(text: str) -> str:
    """``text`` with SPARQL comments blanked (strings and IRIs kept, line numbers kept). Used
    only to point at a line in a message, never to decide what a query does.

    >>> strip_comments('SELECT ?a # drop graph\\nWHERE { ?a ?b "#x" }')
    'SELECT ?a             \\nWHERE { ?a ?b "#x" }'
    """
    return _COMMENT.sub(lambda m: " " * len(m.group(0)) if m.group("c") else m.group(0), text)


_COMMENT = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|'
                      r"'(?:\\.|[^'\\\n])*'|<[^<>\s]*>|(?P<c>#[^\n]*)")
_SEED_TOKEN = r"(?<![\w.:/#-]){}(?![\w.:/#-])"


def check_ordering(text: str, seed: int | None, path: str | Path, seed_line: int | None) -> None:
    """A probe's sample must be reproducible: no call of ``RAND()``/``UUID()``/``STRUUID()``/
    ``NOW()``/``BNODE()`` anywhere in the query's algebra, and a ``seed`` must be a value of
    the query (a literal ``"42"`` or ``42``, or a token of one), as in ``ORDER BY
    MD5(CONCAT(STR(?x), "42"))``. Both are read from the algebra (kg.sparql.analyse), so a
    comment or an IRI never counts and no spelling hides a call."""
    try:
        shape = analyse(text)
    except QueryShapeError as e:
        raise ProbeFileError(path, e.line, e.message) from e
    if shape.nondeterministic:
        name = shape.nondeterministic[0]
        raise ProbeFileError(path, keyword_line(text, name), f"{name}() gives a different result "
                             "on every run, so the probe's rows would change between exports; "
                             "order or sample by a seeded hash instead: ORDER BY "
                             "MD5(CONCAT(STR(?x), \"42\")) with '# seed: 42' in the header")
    if seed is None:
        return
    # A token, not a substring: seed 1 is not "in" the literal "100" or "x1".
    token = re.compile(_SEED_TOKEN.format(re.escape(str(seed))))
    if not any(token.search(value) for value in shape.literals):
        raise ProbeFileError(path, seed_line, f"seed {seed} does not appear in the query as a "
                             "value; write it into the hash ordering: ORDER BY "
                             f"MD5(CONCAT(STR(?x), \"{seed}\"))")


def check_query(text: str, path: str | Path) -> tuple[list[str], tuple[str, ...]]:
    """Check that ``text`` is a read-only SPARQL SELECT without executing anything; return its
    projected variables and the endpoints its ``SERVICE`` clauses name.

    Oxigraph's parser checks the syntax (kg.sparql.check_syntax: parsed, never evaluated) and
    rdflib's algebra says what the query does (kg.sparql.analyse): its form, its variables and
    its SERVICE clauses."""
    try:
        check_syntax(text)
    except QueryShapeError as e:  # nested too deeply or too long for any parser
        raise ProbeFileError(path, e.line, e.message) from None
    except SyntaxError as e:
        stripped = _STRIP.sub(_blank, text)
        m = _UPDATE.search(stripped)
        if m:  # a clearer message than the parser's for the usual mistake
            line = stripped.count("\n", 0, m.start("kw")) + 1
            words = [w for w in m.group("kw").upper().split() if w != "SILENT"]
            kw = " ".join(words[:2]).rstrip("{<").strip()
            raise ProbeFileError(path, line, f"{kw} is a SPARQL UPDATE; probe files are "
                                 "read-only queries against the store: write a SELECT") from e
        raise _syntax_error(text, path, e) from e
    try:
        shape = analyse(text)
    except QueryShapeError as e:
        raise ProbeFileError(path, e.line, e.message) from e
    if shape.form != "SELECT":
        kind = shape.form or "an ASK, CONSTRUCT or DESCRIBE"
        raise ProbeFileError(path, keyword_line(text, shape.form) if shape.form else None,
                             f"a probe file must hold a SELECT query, not {kind}; rewrite it as "
                             "SELECT ?var ... WHERE { ... }")
    for target in shape.services:
        if target.startswith("?"):
            raise ProbeFileError(path, keyword_line(text, "SERVICE"), f"SERVICE {target}: a "
                                 "SERVICE endpoint held in a variable is not allowed in probe "
                                 "files (the data would choose which server is called); name "
                                 "the endpoint IRI, SERVICE <https://...>")
    return list(shape.variables), shape.services


_REFINE_LIMIT = 8_000
"""Queries up to this many characters get rdflib's opinion on the line of a syntax error."""


def _syntax_error(text: str, path: str | Path, error: SyntaxError) -> ProbeFileError:
    """A ProbeFileError for a query Oxigraph cannot parse, on the line of the mistake.

    Oxigraph reports the furthest character its keyword matching looked at, which can be a
    line or more past the mistake (often the end of the file). rdflib's parser names the start
    of the clause that fails; its line is used when it is not after Oxigraph's, for queries of
    up to ``_REFINE_LIMIT`` characters (on a longer one it would take seconds to minutes).
    """
    detail = str(error)
    m = re.match(r"error at (\d+):(\d+): ", detail)
    line = int(m.group(1)) if m else None
    detail = detail[m.end():] if m else detail
    if len(text) <= _REFINE_LIMIT:  # rdflib's parser is slow (seconds per 10 kB): small only
        try:
            from rdflib.plugins.sparql.parser import Query

            Query.parse_string(text.replace("\r", "\n"), parse_all=True)
        except Exception as e2:  # pyparsing's ParseException; anything else gives no line
            other = getattr(e2, "lineno", None)
            if isinstance(other, int) and other >= 1 and (line is None or other <= line):
                line = other
    lines = re.split(r"\r\n|\r|\n", text)
    at = lines[line - 1].strip() if line and line <= len(lines) else ""
    near = f" near `{_clip(at)}`" if at else (" at the end of the query" if line else "")
    detail = _clip(re.sub(r"\s+", " ", detail), 200)
    return ProbeFileError(path, line, f"SPARQL syntax error{near}: {detail}; fix the query "
                          "there (it must parse as a SPARQL 1.1 SELECT)")


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def load_probe(path: Path) -> Probe:
    """Read and parse one probe file (a regular UTF-8 file of at most kg.textfile.MAX_BYTES)."""
    try:
        text = read_text(path)
    except TextFileError as e:
        raise ProbeFileError(path, e.line, e.message) from None
    return parse_probe(text, path)


def default_query_dirs() -> list[Path]:
    """``./queries`` if it exists, else the ``queries/`` folder of the kgprobe checkout."""
    here = Path("queries")
    if here.is_dir():
        return [here]
    return [Path(__file__).resolve().parents[2] / "queries"]


def header_name(text: str) -> str | None:
    """The ``name:`` of a probe file's header, or None when the header cannot be read: enough to
    choose a probe by name without parsing its query.

    >>> header_name("# name: a/b\\n# task: [\\nSELECT ?x {}"), header_name("SELECT ?x {}")
    (None, None)
    >>> header_name("# name: a/b\\n# task: records\\nSELECT ?x {}")
    'a/b'
    """
    try:
        name = read_header(text, "#").fields.get("name")
    except HeaderError:
        return None
    return name if isinstance(name, str) else None


class UnreadableProbesError(ProbeFileError):
    """Probe files that a pattern matches (or may match: their name cannot be read) and that
    cannot be read. ``problems``: one ProbeFileError per file. ``str(e)`` starts with the
    first file's own error (a query's error before anything else); each further file follows
    on a line of its own."""

    def __init__(self, problems: list[ProbeFileError], patterns: list[str]) -> None:
        self.problems = problems
        first, more = problems[0], len(problems) - 1
        them = "it" if not more else "them"
        what = (f"the probe file matches {' '.join(patterns)}" if not more else
                f"and {more} more probe file(s) that {' '.join(patterns)} matches cannot be "
                "read")
        text = (f"{first.message} ({what}; fix {them}, or move {them} out of the folder: "
                f"`export` and `run` leave {them} out with --skip-bad-files). Nothing was done."
                + "".join(f"\n  {e}" for e in problems[1:]))
        super().__init__(first.path, first.line, text)


_LOOSE_NAME = re.compile(r"^#[ \t]*name[ \t]*:[ \t]*[\"']?([^\s\"'#]+)", re.MULTILINE)


def loose_name(text: str) -> str | None:
    """The value of the first ``# name:`` line, read without YAML: which probe a file whose
    header does not parse was meant to be (to name it when a pattern asks for it).

    >>> loose_name("# name: nu/a\\n# task: records\\n# a note: x: y\\nSELECT ?x {}")
    'nu/a'
    """
    m = _LOOSE_NAME.search(text[:20_000])
    return m.group(1) if m else None


def discover(extra_dirs: list[Path] | None = None, patterns: list[str] | None = None,
             include_default: bool = True,
             problems: list[ProbeFileError] | None = None) -> list[Probe]:
    """All probe files (``*.rq``) under ``queries/`` and the extra folders (except folders named
    ``derived``, which hold kg.derived's CONSTRUCT files), optionally filtered by
    name patterns (``fnmatch``: ``starter/*``). Duplicate names are an error naming both files.

    With patterns, a file is chosen by the ``name:`` of its header before its query is parsed,
    so a broken file that is not asked for does not stop the others. A file that a pattern
    matches (by its header's name, or by its ``# name:`` line when the header does not parse,
    :func:`loose_name`) or whose name cannot be read at all, and that cannot be read, is an
    :class:`UnreadableProbesError` naming every such file (the file's own error first), never
    a probe left out in silence. Without patterns a bad file is an error too. When
    ``problems`` is given, each bad file's error is appended there instead and the others are
    returned (``--list``, ``--skip-bad-files``)."""
    dirs = (default_query_dirs() if include_default else []) + list(extra_dirs or [])
    dirs += [d for d in config.extra_query_dirs()  # KGPROBE_QUERIES, each folder once
             if d.resolve() not in {x.resolve() for x in dirs}]
    probes: dict[str, Probe] = {}
    skipped: list[ProbeFileError] = []
    seen: set[str] = set()  # header names of every file read, for "known probes"

    def wanted(name: str) -> bool:
        return not patterns or any(fnmatch.fnmatch(name, pat) for pat in patterns)

    for d in dirs:
        if not d.is_dir():
            raise ProbeFileError(d, None, "probe folder does not exist")
        for path in sorted(d.rglob("*.rq")):
            if "derived" in path.relative_to(d).parts[:-1]:
                continue  # queries/derived: CONSTRUCT files of kg.derived, not probes
            try:
                try:
                    text = read_text(path)
                except TextFileError as e:
                    raise ProbeFileError(path, e.line, e.message) from None
                name = header_name(text) or loose_name(text)
                seen.update([name] if name else [])
                if patterns and name is not None and not wanted(name):
                    continue  # not asked for: its query is not read (point 18)
                probe = parse_probe(text, path)
            except ProbeFileError as e:
                if problems is not None:
                    problems.append(e)
                elif patterns:
                    skipped.append(e)
                else:
                    raise
                continue
            other = probes.get(probe.spec.name)
            if other is not None:
                raise ProbeFileError(path, probe.header_lines.get("name"),
                                     f"probe name {probe.spec.name!r} is already used by "
                                     f"{other.path}; names must be unique")
            probes[probe.spec.name] = probe
    if skipped and patterns:
        raise UnreadableProbesError(skipped, patterns)
    chosen = [p for p in probes.values() if wanted(p.spec.name)]
    if patterns and not chosen:
        names = ", ".join(sorted(seen)) or "(none found)"
        raise ProbeFileError(", ".join(map(str, dirs)), None,
                             f"no probe matches {' '.join(patterns)}; known probes: {names}. "
                             "A probe in a folder of your own needs --queries DIR on every "
                             "command that reads it (export, run, ...), or set "
                             "KGPROBE_QUERIES=DIR once")
    return chosen
