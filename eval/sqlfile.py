"""Metric files: a DuckDB SQL query over the results tables with a header of ``--`` comments.

A metric file is plain SQL (it runs unchanged in the DuckDB CLI, after its ``requires`` files);
its leading comment block is a YAML header::

    -- name: choice_accuracy
    -- description: Share of instances whose gold candidate scores best.
    -- tasks: [choice]
    -- grain: [run_id, probe, split]
    SELECT run_id, probe, split, avg(...) AS value, count(*) AS n FROM ... GROUP BY ALL

Header fields:

- ``name`` (required): the metric's name, ``[a-z0-9_]+``, unique over all metric files.
- ``description`` (required): one or two sentences for the report, including how scores are
  aggregated (e.g. the mean over prompts).
- ``tasks`` (required): the probe tasks the metric applies to (relatum, choice, binary,
  subsumption, records); the report skips a metric when no run has one of them.
- ``grain`` (required): the columns that identify one result row, e.g. ``[run_id, probe,
  split]``. With ``run_id`` the report shows the run's model next to it. :func:`run_metric`
  checks that no two rows share a grain key (an error names the file and the key).
- ``plot`` (optional, default true): draw a bar chart of the metric in the report.
- ``items`` (optional): the metric's items file, named relative to its folder (start the name
  with ``_``), e.g. ``_choice_accuracy_items.sql``: a metric file of its own whose grain is
  the metric's grain plus ``instance_id`` and ``prompt_id``, one row per instance and prompt,
  ``value`` the item's value under that prompt alone and, where the metric does not simply
  average the prompts' values (e.g. it scores the mean over prompts), ``instance_value``: the
  instance's value in the metric. The reports derive from it the per-prompt values, their
  spread and the interval over instances (:mod:`eval.items`).
- ``requires`` (optional): support files, named relative to the metric file's folder, that
  :func:`run_metric` executes (in order) before the query, e.g. ``[_views.sql]`` holding
  ``CREATE OR REPLACE TEMP VIEW`` statements that several metrics share. Temporary views work
  on a read-only connection too. A support file is plain SQL without a header; its name starts
  with ``_`` so that :func:`discover_metrics` does not take it for a metric. In the DuckDB CLI,
  ``.read`` the required files first. A support file must lie inside the metric file's own
  folder (``../x.sql``, an absolute path or a link out of the folder is refused); kgprobe's
  own metric files (the ``eval`` package) may name the support files of its other folders
  (the profile reuses ``eval/ontolama/_class_scores.sql``). The same holds for ``items``.
  Any metric file may name kgprobe's own support files as ``kgprobe:NAME``
  (``kgprobe:_choice_ranks.sql`` for ``eval/metrics/_choice_ranks.sql``,
  ``kgprobe:semrel/_views.sql``; :func:`kgprobe_support`): they are read from the installed
  package, never copied or changed, and run in the metric's sandbox.

A metric file is data, like a probe file: it reads the results and nothing else.

- Its statements (and those of its support files) may only be ``SELECT`` (``WITH``, ``FROM``,
  ``VALUES`` ...) and ``CREATE [OR REPLACE] TEMP VIEW|MACRO|TABLE``; ``COPY``, ``ATTACH``,
  ``INSTALL``/``LOAD``, ``SET``, ``PRAGMA``, ``COMMIT``, writes and the like are refused with
  the file and line (:func:`check_statements`).
- The connection it runs on is a sandbox (:func:`sandbox`): DuckDB's
  ``enable_external_access``, ``autoinstall_known_extensions`` and
  ``autoload_known_extensions`` are off and ``lock_configuration`` is on, so no table
  function (``read_text``, ``read_csv('http://...')``, ``glob``) reads a file or the network
  and no statement turns the settings back on. The results file itself is opened before.
- Each metric runs on a cursor of its own inside a transaction that is rolled back
  (:func:`metric_cursor`): a ``TEMP VIEW scores`` (or anything else a metric creates) is gone
  before the next metric runs, so no metric depends on the order of the files.

Before a metric runs, :func:`sandbox` registers the Python functions of :mod:`eval.udf` (e.g.
``list_edit_distance``) on the connection; a metric calling one of them does not run in the
plain DuckDB CLI.

The query returns one row per grain with the grain columns, a ``value`` column (the metric)
and optionally ``n`` (how many items the value is computed from); other columns are ignored.

>>> m = parse_metric('''-- name: demo
... -- description: Count of runs.
... -- tasks: [choice]
... -- grain: [probe]
... SELECT probe, count(*) AS value FROM runs GROUP BY probe
... ''', "demo.sql")
>>> m.name, m.grain, m.plot
('demo', ['probe'], True)
>>> parse_metric("-- name: x\\n-- descripton: y\\nSELECT 1", "x.sql")
Traceback (most recent call last):
...
eval.sqlfile.MetricFileError: x.sql:2: unknown header field 'descripton' (did you mean ...
>>> parse_metric('''-- name: x
... -- description: y
... -- tasks: [relatum]
... -- grain: [probe]
... -- requires: [_no_such_views.sql]
... SELECT 1''', "metrics/x.sql")
Traceback (most recent call last):
...
eval.sqlfile.MetricFileError: metrics/x.sql:5: required file metrics/_no_such_views.sql ...
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator

from eval import udf
from eval.sqltext import code_only, error_line, error_text
from kg.errors import FileError, UserError
from kg.header import HeaderError, did_you_mean, parse_header
from kg.textfile import TextFileError, read_text
from probes.results import TASKS

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MetricError(UserError):
    """A metric cannot be loaded or computed (a command reports it as one ``error:`` line)."""


class MetricFileError(FileError, MetricError):
    """A metric file is malformed. ``str(e)`` reads ``path:line: message``
    (:class:`kg.errors.FileError`)."""


@dataclass(frozen=True)
class MetricFile:
    """A parsed, validated metric file."""

    path: Path
    name: str
    description: str
    tasks: list[str]
    grain: list[str]
    plot: bool
    sql: str
    header_lines: dict[str, int]
    requires: tuple[Path, ...] = ()
    items: Path | None = None

    @property
    def needs_run(self) -> bool:
        """Whether the metric reads model runs: its grain names ``run_id`` or ``model``. One
        that does not (the shortcut panel: model-free rules over the instances) runs on a
        file that has instances and no run yet."""
        return "run_id" in self.grain or "model" in self.grain


class MetricHeader(BaseModel):
    """The validated header of a metric file (the fields are described in the module's
    docstring); read and checked by kg.header like a probe file's header (probes.engine.spec)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: StrictStr = Field(examples=["choice_accuracy"])
    description: StrictStr = Field(min_length=1, examples=["Share of instances whose gold "
                                                           "candidate scores best."])
    tasks: list[StrictStr] = Field(min_length=1, examples=["[choice]"])
    grain: list[StrictStr] = Field(min_length=1, examples=["[run_id, probe, split]"])
    plot: StrictBool = Field(default=True, examples=["true|false"])
    requires: list[StrictStr] = Field(default=[], examples=["[_views.sql]"])
    items: StrictStr | None = Field(default=None, examples=["_x_items.sql"])

    @field_validator("tasks", "grain", "requires", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        """A list field may be written as its one value (``x`` for ``[x]``) or left empty."""
        return [v] if isinstance(v, str) else [] if v is None else v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9_]+", v):
            raise ValueError(f"{v!r} must be lower-case letters, digits and underscores")
        return v

    @field_validator("tasks")
    @classmethod
    def _tasks(cls, v: list[str]) -> list[str]:
        for t in v:
            if t not in TASKS:
                raise ValueError(f"unknown task {t!r}{did_you_mean(t, TASKS)}; tasks: "
                                 f"{', '.join(TASKS)}")
        return v

    @field_validator("grain")
    @classmethod
    def _grain(cls, v: list[str]) -> list[str]:
        for g in v:
            if not _IDENT.fullmatch(g):
                raise ValueError(f"grain column {g!r} is not a column name")
        return v


def parse_metric(text: str, path: str | Path = "<string>") -> MetricFile:
    """Parse and validate a metric file's header; errors name the file and line."""
    path = Path(path)
    try:
        header, fields = parse_header(text, MetricHeader, "--")
    except HeaderError as e:
        raise MetricFileError(path, e.line, e.message) from None
    lines = header.field_lines
    line = header.line_of("requires")
    requires = [_in_folder(path, line, name, "required file") for name in fields.requires]
    for req in requires:
        if not req.exists():
            raise MetricFileError(path, line, f"required file {req} does not exist")
        read_sql(req, "support file")  # a FIFO or a device is named as such, here
    items: Path | None = None
    if fields.items is not None:
        line = header.line_of("items")
        items = _in_folder(path, line, fields.items, "items file")
        if not items.is_file():
            raise MetricFileError(path, line, f"items file {items} does not exist")
    sql = "\n".join(text.splitlines()[header.end - 1:]).strip()
    if not sql:
        raise MetricFileError(path, header.end, "no query after the header")
    check_statements(text, path)
    return MetricFile(path=path, name=fields.name, description=fields.description.strip(),
                      tasks=list(fields.tasks), grain=list(fields.grain), plot=fields.plot,
                      sql=text, header_lines=lines, requires=tuple(requires), items=items)


#: The prefix of a ``requires`` entry that names one of kgprobe's own support files.
KGPROBE_PREFIX = "kgprobe:"


def kgprobe_support(path: Path, line: int, name: str) -> Path:
    """A ``requires`` entry ``kgprobe:NAME``: kgprobe's own support file ``NAME`` (a file
    ``_*.sql`` of ``eval/metrics``, or ``FOLDER/_*.sql`` of another folder of the ``eval``
    package, e.g. ``kgprobe:_choice_ranks.sql``, ``kgprobe:semrel/_views.sql``), read from the
    installed package; it runs in the same sandbox as the metric. Any other name is an error on
    ``line`` that lists the support files there are.

    >>> kgprobe_support(Path("mine.sql"), 3, "kgprobe:_choice_ranks.sql").name
    '_choice_ranks.sql'
    """
    package = Path(__file__).parent.resolve()
    rest = name[len(KGPROBE_PREFIX):]
    found = (package / rest) if "/" in rest else (package / "metrics" / rest)
    if (not Path(rest).name.startswith("_") or not rest.endswith(".sql")
            or not found.resolve().is_relative_to(package) or not found.is_file()):
        known = sorted(str(p.relative_to(package / "metrics") if p.parent.name == "metrics"
                           else p.relative_to(package)) for p in package.glob("**/_*.sql"))
        raise MetricFileError(path, line, f"{name!r} is not one of kgprobe's support files; "
                              f"name one of: {', '.join(KGPROBE_PREFIX + k for k in known)}")
    return found


def _in_folder(path: Path, line: int, name: str, what: str) -> Path:
    """``name`` (a ``requires`` or ``items`` entry) as a path next to the metric file ``path``
    (a ``requires`` entry ``kgprobe:NAME``: :func:`kgprobe_support`); a name outside its folder
    (``../x.sql``, an absolute path, a link out of it) is an error on ``line``."""
    if what == "required file" and name.startswith(KGPROBE_PREFIX):
        return kgprobe_support(path, line, name)
    found = path.parent / name
    if Path(name).is_absolute() or not found.resolve().is_relative_to(_support_root(path)):
        raise MetricFileError(path, line, f"{what} {name!r} lies outside the metric file's "
                              f"folder {path.parent}; a support file must be in the metric's "
                              "own folder (move or copy it there), or be one of kgprobe's own, "
                              f"named {KGPROBE_PREFIX}NAME (e.g. {KGPROBE_PREFIX}"
                              "_choice_ranks.sql)")
    return found


def _support_root(path: Path) -> Path:
    """The folder a metric file's support files must lie in: its own folder; for kgprobe's own
    metric files (in the ``eval`` package) the package folder."""
    own = path.parent.resolve()
    package = Path(__file__).parent.resolve()
    return package if own.is_relative_to(package) else own


#: The statements a metric or support file may hold: queries, and temporary objects for the
#: queries after them (``CREATE [OR REPLACE] TEMP[ORARY] VIEW|MACRO|TABLE|FUNCTION``).
_TEMP_CREATE = re.compile(r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+"
                          r"(?:VIEW|MACRO|TABLE|FUNCTION)\b", re.IGNORECASE)


def check_statements(sql: str, path: str | Path) -> None:
    """Refuse a metric or support file holding anything but ``SELECT`` queries and
    ``CREATE TEMP VIEW|MACRO|TABLE`` (no ``COPY``, ``ATTACH``, ``INSTALL``, ``LOAD``, ``SET``,
    ``PRAGMA``, ``CALL``, transactions or writes); the error names the file and line.

    >>> check_statements("CREATE OR REPLACE TEMP VIEW v AS SELECT 1;\\nFROM v", "m.sql")
    >>> check_statements("SELECT 1;\\n-- note\\nCOPY (SELECT 1) TO 'x.py'", "m.sql")
    Traceback (most recent call last):
    ...
    eval.sqlfile.MetricFileError: m.sql:3: a metric file may only hold SELECT queries and ...
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise MetricFileError(path, error_line(str(e), sql),
                              f"the SQL does not parse: {error_text(str(e))}") from e
    at = 0
    for st in statements:
        start = sql.find(st.query, at)
        start = at if start < 0 else start
        at = start + len(st.query)
        code = code_only(st.query)
        first = code.strip().split(None, 1)[0].upper() if code.strip() else ""
        try:
            kind = st.type
        except ValueError:  # a statement type this DuckDB's Python enum does not know
            kind, first = None, " ".join(code.split()[:2]).upper().rstrip(";")
        ok = (kind == duckdb.StatementType.SELECT
              or (kind == duckdb.StatementType.CREATE and _TEMP_CREATE.match(code)))
        if not ok:
            lead = len(code) - len(code.lstrip())  # the statement's first character of code
            line = sql.count("\n", 0, start) + code.count("\n", 0, lead) + 1
            raise MetricFileError(path, line, "a metric file may only hold SELECT queries and "
                                  f"CREATE TEMP VIEW/MACRO/TABLE statements, not {first}: "
                                  "metric files are data (they read the results file and "
                                  "nothing else); remove the statement")


def read_sql(path: Path, what: str = "metric file") -> str:
    """The text of a metric or support file, read as probe files are (kg.textfile.read_text:
    a regular file only, so a FIFO cannot hang a report and a link to /dev/zero cannot fill
    memory; at most kg.textfile.MAX_BYTES; UTF-8)."""
    try:
        return read_text(path, what=what)
    except TextFileError as e:
        raise MetricFileError(path, e.line, e.message) from None


def load_metric(path: Path) -> MetricFile:
    return parse_metric(read_sql(path), path)


def default_metric_dir() -> Path:
    """The ``eval/metrics`` folder of the kgprobe package."""
    return Path(__file__).with_name("metrics")


def discover_metrics(dirs: list[Path] | None = None) -> list[MetricFile]:
    """Every ``*.sql`` metric file in ``dirs`` (default: eval/metrics), sorted by name; a name
    used twice is an error naming both files. Files whose name starts with ``_`` are support
    files (see ``requires``), not metrics."""
    found: dict[str, MetricFile] = {}
    for d in dirs or [default_metric_dir()]:
        if not d.is_dir():
            raise MetricFileError(d, None, "metric folder does not exist")
        for path in sorted(d.rglob("*.sql")):
            if path.name.startswith("_"):
                continue
            metric = load_metric(path)
            other = found.get(metric.name)
            if other is not None:
                raise MetricFileError(path, metric.header_lines.get("name"),
                                      f"metric name {metric.name!r} is already used by "
                                      f"{other.path}")
            found[metric.name] = metric
    return sorted(found.values(), key=lambda m: m.name)


#: The DuckDB settings of a metric connection (:func:`sandbox`), set in this order; the last
#: one locks them all.
SANDBOX = (("enable_external_access", "false"), ("autoinstall_known_extensions", "false"),
           ("autoload_known_extensions", "false"), ("threads", "1"),
           ("lock_configuration", "true"))


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    row = con.execute("SELECT current_setting(?)::VARCHAR", [name]).fetchone()
    return str(row[0]).lower() if row else ""


def sandbox(con: duckdb.DuckDBPyConnection) -> None:
    """Make ``con``'s database a place where metric files can run and do nothing else: register
    the :mod:`eval.udf` functions, then turn off external access (no file but the open database,
    no network) and extension auto-install/auto-load, run on one thread (:func:`one_thread`)
    within :data:`METRIC_MEMORY_LIMIT` and lock the configuration, so that no statement can turn
    them back on. It holds for every connection and cursor of that database until it closes;
    open the results file first (the report runner opens it read-only). Calling it again checks
    the settings.

    >>> con = duckdb.connect()
    >>> sandbox(con); sandbox(con)
    >>> con.execute("SELECT * FROM read_text('/etc/hostname')")
    Traceback (most recent call last):
    ...
    _duckdb.PermissionException: Permission Error: Cannot access file "/etc/hostname" - file ...
    """
    if _setting(con, "lock_configuration") == "true":
        wrong = [k for k, v in SANDBOX if _setting(con, k) != v]
        if wrong:
            raise MetricError(f"the connection's configuration is locked with {', '.join(wrong)} "
                              "not as metrics need them; run metrics on a connection of their "
                              "own (eval.sqlfile.sandbox before anything locks it)")
        return
    udf.register(con)
    con.execute(f"SET memory_limit = '{METRIC_MEMORY_LIMIT}'")
    for name, value in SANDBOX:
        con.execute(f"SET {name} = {value}")


def _copy_variables(con: duckdb.DuckDBPyConnection, cur: duckdb.DuckDBPyConnection) -> None:
    """The DuckDB variables set on ``con`` (``SET VARIABLE``: report settings such as the
    semrel rank) set on ``cur`` too: variables belong to one connection."""
    for name, type_ in con.execute("SELECT name, type FROM duckdb_variables()").fetchall():
        row = con.execute("SELECT getvariable(?)", [name]).fetchone()
        ident = '"' + str(name).replace('"', '""') + '"'
        cur.execute(f"SET VARIABLE {ident} = CAST(? AS {type_})", [row[0] if row else None])


@contextlib.contextmanager
def metric_cursor(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of ``con`` (after :func:`sandbox`) for one metric: its own temporary catalog,
    ``con``'s variables, and a transaction rolled back at the end, so nothing the metric
    creates (a ``TEMP VIEW scores``, a macro) is seen by the next one."""
    sandbox(con)
    cur = con.cursor()
    try:
        _copy_variables(con, cur)
        cur.execute("BEGIN TRANSACTION")
        try:
            yield cur
        finally:
            with contextlib.suppress(duckdb.Error):
                cur.execute("ROLLBACK")
    finally:
        cur.close()


def run_support(con: duckdb.DuckDBPyConnection, files: tuple[Path, ...] | list[Path] = ()
                ) -> None:
    """Make ``con`` a metric sandbox (:func:`sandbox`: the :mod:`eval.udf` functions, no
    external access), then execute each support file (plain SQL, e.g. ``CREATE OR REPLACE TEMP
    VIEW``; :func:`check_statements`) on it; an error names the file and line. The views stay
    on ``con`` (a report reads them itself); :func:`run_metric` runs them on the metric's own
    cursor."""
    sandbox(con)
    for path in files:
        sql = read_sql(Path(path), "support file")
        check_statements(sql, path)
        try:
            con.execute(sql)
        except duckdb.Error as e:
            raise MetricFileError(path, error_line(str(e), sql),
                                  f"the support file fails: {error_text(str(e))}") from e


#: DuckDB's memory limit while a metric runs. DuckDB's own default is 80 % of the machine's
#: memory, which it fills with cached blocks on a large results file (the shortcut panel over
#: the whole OntoLAMA build peaked at 19 GB without a limit; it needs under 3 GB and spills the
#: rest).
METRIC_MEMORY_LIMIT = "4GB"


@contextlib.contextmanager
def one_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run DuckDB on one thread and within :data:`METRIC_MEMORY_LIMIT` inside the block (the
    settings are restored after). Parallel aggregation adds floating-point numbers in an order
    that changes from run to run, so a metric's last digits would too; on one thread the order
    is the table's, the same every time. A metric sandbox (:func:`sandbox`) is on one thread
    and within the limit already (and locked)."""
    before = con.execute("SELECT current_setting('threads'), "
                         "current_setting('memory_limit')").fetchone()
    if before is not None and int(before[0]) == 1:
        yield
        return
    con.execute("SET threads = 1")
    con.execute(f"SET memory_limit = '{METRIC_MEMORY_LIMIT}'")
    try:
        yield
    finally:
        if before is not None:
            con.execute(f"SET threads = {int(before[0])}")
            con.execute(f"SET memory_limit = '{before[1]}'")


METRIC_TIMEOUT_S: float | None = 600.0
"""The most seconds one metric (its support files and its query) may run; ``kgprobe report
--metric-timeout`` sets it (0 or None: no limit). The same idea as ``--query-timeout``."""


@contextlib.contextmanager
def deadline(cur: duckdb.DuckDBPyConnection, seconds: float | None) -> Iterator[list[bool]]:
    """Interrupt what ``cur`` runs once ``seconds`` have passed (DuckDB's ``interrupt``, from a
    timer thread); the list it yields holds True once it fired."""
    fired: list[bool] = []
    if not seconds:
        yield fired
        return

    def stop() -> None:
        fired.append(True)
        cur.interrupt()
    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def run_metric(con: duckdb.DuckDBPyConnection, metric: MetricFile,
               timeout: float | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a metric's query, after its support files, on a cursor of its own
    (:func:`metric_cursor`: sandboxed, rolled back after); returns (columns, rows). Checks the
    grain and ``value`` columns. Deterministic: the same file gives the same values to the
    last digit (one thread). ``timeout``: seconds (default :data:`METRIC_TIMEOUT_S`), then a
    MetricFileError in one line."""
    seconds = METRIC_TIMEOUT_S if timeout is None else timeout
    with metric_cursor(con) as cur, deadline(cur, seconds) as fired:
        try:
            run_support(cur, metric.requires)
            result = cur.execute(metric.sql)
            cols = [d[0] for d in result.description or []]
            rows = result.fetchall()
        except MetricFileError as e:
            if fired:
                raise _too_long(metric, seconds) from None
            raise e
        except duckdb.Error as e:
            if fired:
                raise _too_long(metric, seconds) from None
            hint = ("; a metric file reads the tables of the results file only (no other file, "
                    "URL or extension): load other data into the results file first"
                    if isinstance(e, duckdb.PermissionException) else "")
            raise MetricFileError(metric.path, error_line(str(e), metric.sql),
                                  f"the query fails: {error_text(str(e))}{hint}") from e
    missing = [c for c in [*metric.grain, "value"] if c not in cols]
    if missing:
        raise MetricFileError(metric.path, metric.header_lines.get("grain"),
                              f"the query does not return column(s) {', '.join(missing)} "
                              f"(it returns {', '.join(cols)}); return the grain columns and "
                              "the metric AS value")
    _check_grain(metric, cols, rows)
    return cols, rows


def _too_long(metric: MetricFile, seconds: float | None) -> MetricFileError:
    return MetricFileError(metric.path, None, f"metric {metric.name!r} ran longer than "
                           f"{seconds:g} s and was stopped; narrow its query (or raise "
                           "--metric-timeout)")


def _check_grain(metric: MetricFile, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
    """Each row's grain columns must identify it: a key on two rows is an error naming the
    metric file and the key (the query lacks a GROUP BY column, or a join fans out)."""
    idx = [cols.index(g) for g in metric.grain]
    seen: set[tuple[Any, ...]] = set()
    for row in rows:
        key = tuple(row[i] for i in idx)
        if key in seen:
            shown = ", ".join(f"{g}={v!r}" for g, v in zip(metric.grain, key, strict=True))
            raise MetricFileError(metric.path, metric.header_lines.get("grain"),
                                  f"the grain [{', '.join(metric.grain)}] does not identify "
                                  f"a row: more than one row has {shown}; group by every grain "
                                  "column (or add the missing one to the grain)")
        seen.add(key)
