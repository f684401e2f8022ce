"""Metric files: a DuckDB SQL query over the results tables with a header of ``--`` comments.

A metric file is plain SQL (it runs unchanged in the DuckDB CLI); its leading comment block is a
YAML header::

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
  split]``. With ``run_id`` the report shows the run's model next to it.
- ``plot`` (optional, default true): draw a bar chart of the metric in the report.

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
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import yaml

from probes.spec import TASKS

FIELDS = ("name", "description", "tasks", "grain", "plot")
REQUIRED = ("name", "description", "tasks", "grain")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MetricError(Exception):
    """A metric cannot be loaded or computed."""


class MetricFileError(MetricError):
    """A metric file is malformed. ``str(e)`` reads ``path:line: message``."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


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


def _header(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if line.startswith("--"):
            body = line[2:]
            out.append((i, body[1:] if body.startswith(" ") else body))
        elif line.strip() or out:
            break
    return out


def _suggest(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _str_list(path: Path, line: int, key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise MetricFileError(path, line, f"{key} must be a non-empty list such as [a, b]")
    return value


def parse_metric(text: str, path: str | Path = "<string>") -> MetricFile:
    """Parse and validate a metric file's header; errors name the file and line."""
    path = Path(path)
    header = _header(text)
    if not header:
        raise MetricFileError(path, 1, "no header: a metric file starts with comment lines "
                              "'-- name: ...', '-- description: ...', '-- tasks: [...]', "
                              "'-- grain: [...]'")
    lines: dict[str, int] = {}
    for lineno, body in header:
        m = re.match(r"([A-Za-z_][\w-]*)\s*:", body)
        if m and not body.startswith((" ", "\t")):
            lines.setdefault(m.group(1), lineno)
    first = header[0][0]
    for key, lineno in lines.items():
        if key not in FIELDS:
            raise MetricFileError(path, lineno, f"unknown header field {key!r}"
                                  f"{_suggest(key, FIELDS)}; known fields: {', '.join(FIELDS)}")
    try:
        raw = yaml.safe_load("\n".join(body for _, body in header))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = header[mark.line][0] if mark is not None and mark.line < len(header) else first
        raise MetricFileError(path, line, "header is not valid YAML: "
                              f"{getattr(e, 'problem', None) or e}; quote values that contain "
                              "':' or '#'") from e
    if not isinstance(raw, dict):
        raise MetricFileError(path, first, "header must be 'field: value' lines")
    for key in REQUIRED:
        if raw.get(key) in (None, "", []):
            raise MetricFileError(path, first, f"header field {key!r} is required")
    name = raw["name"]
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]+", name):
        raise MetricFileError(path, lines["name"], f"name {name!r} must be lower-case letters, "
                              "digits and underscores")
    tasks = _str_list(path, lines["tasks"], "tasks", raw["tasks"])
    for t in tasks:
        if t not in TASKS:
            raise MetricFileError(path, lines["tasks"], f"unknown task {t!r}"
                                  f"{_suggest(t, TASKS)}; tasks: {', '.join(TASKS)}")
    grain = _str_list(path, lines["grain"], "grain", raw["grain"])
    for g in grain:
        if not _IDENT.fullmatch(g):
            raise MetricFileError(path, lines["grain"], f"grain column {g!r} is not a column "
                                  "name")
    plot = raw.get("plot", True)
    if not isinstance(plot, bool):
        raise MetricFileError(path, lines.get("plot", first), "plot must be true or false")
    sql = "\n".join(text.splitlines()[header[-1][0]:]).strip()
    if not sql:
        raise MetricFileError(path, header[-1][0] + 1, "no query after the header")
    return MetricFile(path=path, name=name, description=str(raw["description"]).strip(),
                      tasks=tasks, grain=grain, plot=plot, sql=text, header_lines=lines)


def load_metric(path: Path) -> MetricFile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise MetricFileError(path, None, f"cannot read the metric file: {e}") from e
    return parse_metric(text, path)


def default_metric_dir() -> Path:
    """The ``eval/metrics`` folder of the kgprobe package."""
    return Path(__file__).with_name("metrics")


def discover_metrics(dirs: list[Path] | None = None) -> list[MetricFile]:
    """Every ``*.sql`` metric file in ``dirs`` (default: eval/metrics), sorted by name; a name
    used twice is an error naming both files."""
    found: dict[str, MetricFile] = {}
    for d in dirs or [default_metric_dir()]:
        if not d.is_dir():
            raise MetricFileError(d, None, "metric folder does not exist")
        for path in sorted(d.rglob("*.sql")):
            metric = load_metric(path)
            other = found.get(metric.name)
            if other is not None:
                raise MetricFileError(path, metric.header_lines.get("name"),
                                      f"metric name {metric.name!r} is already used by "
                                      f"{other.path}")
            found[metric.name] = metric
    return sorted(found.values(), key=lambda m: m.name)


def _error_line(message: str, sql: str) -> int | None:
    """The file line of a DuckDB error. DuckDB quotes the line (``LINE n: text``, with ``n``
    counted from where it resumed parsing) or, for some errors, only names the table or column;
    the quoted text or the name is looked up in the file."""
    lines = list(enumerate(sql.splitlines(), start=1))
    code = [(i, ln) for i, ln in lines if not ln.lstrip().startswith("--")]
    m = re.search(r"LINE \d+: ?(.*)", message)
    if m and m.group(1).strip():
        quoted = m.group(1).strip().removesuffix("...").strip()
        for i, line in code:
            if quoted in line:
                return i
    first = message.splitlines()[0] if message else ""
    for a, b in re.findall(r'"([^"]+)"|name (\S+) does not exist', first):
        name = (a or b).strip("!.")
        for i, line in code:
            if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", line):
                return i
    return None


def _error_text(message: str) -> str:
    lines = [ln for ln in message.splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith("LINE ") and set(ln.strip()) != {"^"}]
    return " ".join(keep)


def run_metric(con: duckdb.DuckDBPyConnection, metric: MetricFile
               ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a metric's query; returns (columns, rows). Checks the grain and ``value`` columns."""
    try:
        cur = con.execute(metric.sql)
        cols = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    except duckdb.Error as e:
        raise MetricFileError(metric.path, _error_line(str(e), metric.sql),
                              f"the query fails: {_error_text(str(e))}") from e
    missing = [c for c in [*metric.grain, "value"] if c not in cols]
    if missing:
        raise MetricFileError(metric.path, metric.header_lines.get("grain"),
                              f"the query does not return column(s) {', '.join(missing)} "
                              f"(it returns {', '.join(cols)}); return the grain columns and "
                              "the metric AS value")
    return cols, rows
