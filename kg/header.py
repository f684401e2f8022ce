"""The header of a query or SQL file: its leading comment block, read as YAML.

Probe files (``*.rq``, comments start with ``#``) and metric files (``*.sql``, comments start
with ``--``) both begin with a block of comment lines holding ``field: value`` pairs; the rest
of the file is the query, unchanged, so it runs in any SPARQL or SQL tool. This module is the
one reader of that block for every layer (probes.engine.spec reads ``.rq`` probe headers, kg.derived
``.rq`` derived headers, eval.sqlfile ``.sql`` metric headers), and validates it the same way
for all of them: :func:`read_header` finds the block, remembers the line of each top-level
field and parses the YAML; :func:`validate_header` checks the fields against the caller's
pydantic model (unknown field with "did you mean", missing field, wrong type, each with its
fix); :func:`parse_header` does both. Every mistake is a :class:`HeaderError` on its line,
which the caller wraps in its own error class with the file name. What the fields mean is the
caller's model.

>>> h = read_header("# name: demo\\n# prompts:\\n#   - '[W] is [V]'\\nSELECT ?a {}\\n", "#")
>>> h.fields, h.field_lines, h.end
({'name': 'demo', 'prompts': ['[W] is [V]']}, {'name': 1, 'prompts': 2}, 4)
>>> read_header("-- name: x\\n-- grain: [a\\nSELECT 1", "--")
Traceback (most recent call last):
...
kg.header.HeaderError: line 2: header is not valid YAML: expected ',' or ']', but got ...
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

_FIELD = re.compile(r"([A-Za-z_][\w -]*?)\s*:")  # "a note:" too: an unknown field's line


class HeaderError(ValueError):
    """A header that cannot be read. ``line`` is the 1-based line of the file (None: unknown)."""

    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}" if line else message)


@dataclass(frozen=True)
class Header:
    """A file's header: the comment lines, the first line after them, the parsed fields and
    the line of each top-level field."""

    lines: tuple[tuple[int, str], ...]  # (line number, text without the comment marker)
    end: int                            # 1-based number of the first line after the header
    fields: dict[str, Any]
    field_lines: dict[str, int]

    @property
    def first(self) -> int:
        """The line of the header's first comment (where an error without a field points)."""
        return self.lines[0][0] if self.lines else 1

    def line_of(self, field: str) -> int:
        """The line of ``field``, or the header's first line when the field is absent."""
        return self.field_lines.get(field, self.first)


def comment_block(text: str, marker: str) -> tuple[list[tuple[int, str]], int]:
    """The leading comment lines of ``text`` as (line number, text) pairs, with the marker and
    one following space removed, and the 1-based number of the first line after them. Blank
    lines before the first comment are skipped; the block ends at the first line that is not a
    comment (a blank line included).

    >>> comment_block("\\n# a: 1\\n#b: 2\\n\\n# c: 3\\n", "#")
    ([(2, 'a: 1'), (3, 'b: 2')], 4)
    >>> comment_block("SELECT 1", "--")
    ([], 1)
    """
    lines = text.splitlines()
    block: list[tuple[int, str]] = []
    i = 0
    while i < len(lines) and (lines[i].startswith(marker) or (not lines[i].strip() and not block)):
        if lines[i].startswith(marker):
            body = lines[i][len(marker):]
            block.append((i + 1, body[1:] if body.startswith(" ") else body))
        i += 1
    return block, i + 1


def field_lines(block: Iterable[tuple[int, str]]) -> dict[str, int]:
    """The line of each top-level ``field:`` of a comment block (the first, when repeated);
    indented lines and list items belong to the field above them.

    >>> field_lines([(1, "name: x"), (2, "params:"), (3, "  top_k: 3"), (4, "- a: b")])
    {'name': 1, 'params': 2}
    """
    out: dict[str, int] = {}
    for lineno, body in block:
        m = _FIELD.match(body)
        if m and not body.startswith((" ", "\t", "-")):
            out.setdefault(m.group(1), lineno)
    return out


MAX_DEPTH = 20
"""How deeply a header's values may nest (lists in mappings in lists ...)."""


class _Refused(yaml.YAMLError):
    """A header that is valid YAML but uses what a header must not (alias, anchor, a key twice,
    nesting deeper than MAX_DEPTH)."""

    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark, self.message = mark, message


class _HeaderLoader(yaml.SafeLoader):
    """PyYAML's safe loader without anchors and aliases (an alias bomb expands a few lines into
    gigabytes), without repeated keys (the last one would win silently) and with a depth bound
    (50,000 nested brackets would exhaust Python's stack)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            kind = "alias '*" if isinstance(event, yaml.AliasEvent) else "anchor '&"
            raise _Refused(event.start_mark, f"YAML {kind}{event.anchor}' is not allowed in a "
                           "header; write the value out where it is used")
        if self._depth >= MAX_DEPTH:
            raise _Refused(event.start_mark, f"header values nest deeper than {MAX_DEPTH} "
                           "levels; flatten them")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                continue
            if repeated:
                raise _Refused(key_node.start_mark, f"field {key!r} is given twice; keep one "
                               "(YAML would silently keep the last)")
        return super().construct_mapping(node, deep=deep)


def check_bom(text: str) -> None:
    """A HeaderError on line 1 when ``text`` starts with a byte-order mark."""
    if text.startswith("\ufeff"):
        raise HeaderError(1, "the file starts with a byte-order mark (U+FEFF), so its first "
                          "line is not a comment; save it as UTF-8 without BOM")


def parse_yaml(block: list[tuple[int, str]]) -> Any:
    """The YAML value of a comment block; a syntax error is a HeaderError on the line where the
    mistake starts (an unclosed quote or bracket: where it was opened). Anchors, aliases, a
    key given twice and nesting deeper than MAX_DEPTH are refused on their line."""
    try:
        return yaml.load("\n".join(body for _, body in block), Loader=_HeaderLoader)
    except _Refused as e:
        line = block[e.mark.line][0] if e.mark is not None and e.mark.line < len(block) else (
            block[0][0] if block else 1)
        raise HeaderError(line, e.message) from None
    except RecursionError:
        raise HeaderError(block[0][0] if block else 1, "header values nest too deeply; "
                          "flatten them") from None
    except ValueError as e:  # int('1' * 5000): Python's limit on digits in an integer string
        long = next((n for n, body in block if re.search(r"\d{1000}", body)), None)
        raise HeaderError(long or (block[0][0] if block else 1), "a number in the header is too "
                          f"long to read ({_first(e)}); write a shorter number, or quote it "
                          "as a string") from None
    except yaml.YAMLError as e:
        # The problem mark is where the parser gave up (often the next line, or the end); the
        # context mark, when there is one, is where the unclosed quote or bracket started.
        opened = re.search(r"quoted scalar|flow (sequence|mapping)",
                           str(getattr(e, "context", "") or ""))
        marks = [m for m in (getattr(e, "context_mark", None) if opened else None,
                             getattr(e, "problem_mark", None))
                 if m is not None and m.line < len(block)]
        line = block[min(m.line for m in marks)][0] if marks else (block[0][0] if block else 1)
        problem = getattr(e, "problem", None) or str(e)
        raise HeaderError(line, f"header is not valid YAML: {problem}; check quoting (quote "
                          "values that contain ':', '#', '[' or ']')") from e


def _first(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0].split(";")[0][:120] if text else type(error).__name__


def read_header(text: str, marker: str, *, required: bool = True, example: str = "") -> Header:
    """The header of ``text`` whose comments start with ``marker`` (``#`` or ``--``): the one
    reader of probe, derived and metric headers.

    Raises HeaderError on its line for a byte-order mark, a header that is not valid YAML
    (:func:`parse_yaml`) or not a mapping of fields, and, when ``required``, for a file without
    a comment block (``example``: the lines such a block starts with, for the message). An
    absent header that is not required reads as no fields.
    """
    check_bom(text)
    block, end = comment_block(text, marker)
    if not block:
        if required:
            raise HeaderError(1, f"no header: the file must start with '{marker} field: value' "
                              f"comment lines{f' such as {example}' if example else ''}")
        return Header(lines=(), end=end, fields={}, field_lines={})
    raw = parse_yaml(block)
    if not isinstance(raw, dict):
        raise HeaderError(block[0][0], "header must be 'field: value' lines (a YAML mapping)")
    return Header(lines=tuple(block), end=end, fields=raw, field_lines=field_lines(block))


M = TypeVar("M", bound=BaseModel)


def validate_header(header: Header, model: type[M], marker: str) -> M:
    """``header``'s fields validated by the pydantic ``model``; every mistake is a HeaderError
    on the line of its field (the header's first line for a missing one), in the same words for
    every kind of file:

    - an unknown field names the closest known one ("did you mean", difflib) and lists them;
    - a missing required field says which line to add, from the field's ``examples``;
    - a value of the wrong type or shape names the field, what is wrong and, where the field
      has ``examples``, the line to write instead.

    The model's own validators word their ``ValueError`` as the fix (``'word' is not a SPARQL
    variable; write it as ?name``); the message is prefixed with the field.

    >>> from pydantic import BaseModel, Field
    >>> class Demo(BaseModel):
    ...     tasks: list[str] = Field(examples=["[choice]"])
    >>> h = read_header("-- taks: [x]\\nSELECT 1", "--")
    >>> validate_header(h, Demo, "--")
    Traceback (most recent call last):
    ...
    kg.header.HeaderError: line 1: unknown header field 'taks' (did you mean 'tasks'?); ...
    >>> validate_header(read_header("-- tasks: 3\\nSELECT 1", "--"), Demo, "--")
    Traceback (most recent call last):
    ...
    kg.header.HeaderError: line 1: tasks: Input should be a valid list; write it as ...
    """
    unknown = unknown_fields(header.fields, model.model_fields)
    if unknown:
        raise HeaderError(header.line_of(unknown[0]), unknown[1])
    try:
        return model.model_validate(header.fields)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        info = model.model_fields.get(field)
        example = info.examples[0] if info is not None and info.examples else None
        where = f"{field}: " if field else ""  # no field: a check of the whole header
        if err["type"] == "missing":
            msg = (f"header field {field!r} is required: add a line "
                   f"'{marker} {field}: {example or '...'}'")
        elif err["type"] == "value_error":  # the model's own check, worded as its fix
            msg = where + err["msg"].removeprefix("Value error, ")
        else:
            fix = f"; write it as '{marker} {field}: {example}'" if example else ""
            msg = f"{where}{err['msg']}{fix}"
        raise HeaderError(header.line_of(field), msg) from e


def parse_header(text: str, model: type[M], marker: str) -> tuple[Header, M]:
    """Read (:func:`read_header`) and validate (:func:`validate_header`) the header of
    ``text``; a missing header names the lines it must start with (the model's required fields
    and their ``examples``)."""
    example = ", ".join(f"'{marker} {name}: {(info.examples or ['...'])[0]}'"
                        for name, info in model.model_fields.items() if info.is_required())
    header = read_header(text, marker, example=example)
    return header, validate_header(header, model, marker)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or an empty string.

    >>> did_you_mean("tagret", ["target", "task"])
    " (did you mean 'target'?)"
    """
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_fields(fields: Iterable[str], known: Iterable[str]) -> tuple[str, str] | None:
    """The first field not in ``known`` and the message that names it, or None.

    >>> unknown_fields(["name", "tsk"], ["name", "task"])
    ('tsk', "unknown header field 'tsk' (did you mean 'task'?); known fields: name, task")
    """
    allowed = list(known)
    for key in fields:
        if key not in allowed:
            return str(key), (f"unknown header field {key!r}{did_you_mean(str(key), allowed)}; "
                              f"known fields: {', '.join(allowed)}")
    return None
