"""The text of metric SQL and of DuckDB's errors about it (eval.sqlfile): the code without its
comments, the file line an error names, and the error's text as a metric author reads it."""

from __future__ import annotations

import re


def code_only(text: str) -> str:
    r"""``text`` with its comments (``-- ...`` to the line's end, ``/* ... */``) blanked out:
    each comment character a space, line ends kept, so positions and lines stay those of the
    file; quoted strings and identifiers are kept whole (a ``--`` inside one is no comment).
    The statement text DuckDB hands back starts with the comments before it.

    >>> code_only("/* a\n b */ CREATE TEMP TABLE t AS SELECT '--x' -- note\n")
    "    \n      CREATE TEMP TABLE t AS SELECT '--x'        \n"
    """
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            end = text.find(c, i + 1)
            while end != -1 and text[end + 1:end + 2] == c:  # a doubled quote inside
                end = text.find(c, end + 2)
            end = n if end == -1 else end + 1
            out.append(text[i:end])
            i = end
        elif text.startswith("--", i) or text.startswith("/*", i):
            end = (text.find("\n", i) if c == "-" else text.find("*/", i + 2) + 2)
            end = n if end < (0 if c == "-" else 2) else end
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def error_line(message: str, sql: str) -> int | None:
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


_SET_ADVICE = re.compile(r"""\s*(?:Use|Try)\s+["']?SET\s[^.]*\.""", re.IGNORECASE)


def error_text(message: str) -> str:
    """DuckDB's error without its quoted ``LINE`` and caret lines, and without advice to change
    a setting with ``SET`` (a metric may not: :func:`sandbox` locks the configuration), which
    is replaced by what a metric author can do.

    >>> error_text('Parser Error: Max expression depth limit of 1000 exceeded. Use "SET '
    ...             'max_expression_depth TO x" to increase the maximum expression depth.')
    'Parser Error: Max expression depth limit of 1000 exceeded. (A metric cannot change \
DuckDB settings: write the expression with fewer nested terms, e.g. a list and list_sum, or a \
join.)'
    """
    lines = [ln for ln in message.splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith("LINE ") and set(ln.strip()) != {"^"}]
    text = " ".join(keep)
    if _SET_ADVICE.search(text):
        text = _SET_ADVICE.sub("", text).rstrip() + (
            " (A metric cannot change DuckDB settings: write the expression with fewer nested "
            "terms, e.g. a list and list_sum, or a join.)")
    return text
