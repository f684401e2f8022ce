"""Errors raised by the knowledge-graph layer, and :class:`UserError`, the base of every layer's
errors that a command reports as one line. Each names the thing and the fix; and
:func:`disk_error`, the one reader of what a failed write says about the disk (every layer
uses it: kg.build, probes.engine.export, probes.engine.run, results files)."""

from __future__ import annotations

import errno
import os
from pathlib import Path


class UserError(Exception):
    """Base class of the errors a user can mend: the message names the thing and the fix. A
    command reports one as the single line ``error: <message>`` and exits with status 2
    (:func:`kg.options.call_handler`, the one place that writes that line). Its kinds:
    :class:`KgError` (sources, store), ``probes.results.ProbeError`` (probes, models, results
    files) and ``eval.sqlfile.MetricError`` (metric files)."""


class FileError(UserError):
    """A malformed file of the user's (a probe file, a metric file): ``str(e)`` reads
    ``path:line: message``. Each layer's kind derives from it and its layer's base class
    (``probes.engine.errors.ProbeFileError``, ``eval.sqlfile.MetricFileError``).

    >>> str(FileError("queries/x.rq", 3, "unknown header field 'tsk'"))
    "queries/x.rq:3: unknown header field 'tsk'"
    >>> str(FileError("eval/m.sql", None, "empty"))
    'eval/m.sql: empty'
    """

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


class KgError(UserError):
    """Base class for errors in sources, loaders and the store."""


class SourceError(KgError):
    """A source file is missing, has the wrong checksum, or cannot be parsed."""


class StoreError(KgError):
    """The store cannot be opened, is locked, or lacks a graph a probe needs."""


#: The write errors that say the disk, not the file, is at fault: errno -> what it means.
DISK_ERRORS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
               errno.EIO: "the disk failed to write (input/output error: a full or failing "
               "disk)"}


def disk_error(error: BaseException | None) -> str | None:
    """What a failed write says about the disk (full, over quota, input/output error), from an
    ``OSError``'s errno or from the system's message that DuckDB quotes (``Could not write file
    ...: No space left on device``); None for any other error.

    >>> disk_error(OSError(errno.ENOSPC, "No space left on device"))
    'the disk is full'
    >>> disk_error(RuntimeError('IO Error: Could not write file "r.duckdb": Disk quota '
    ...                         'exceeded'))
    'the disk quota is used up'
    >>> disk_error(RuntimeError("IO Error: Corrupt database file")) is None
    True
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in DISK_ERRORS:
            return DISK_ERRORS[error.errno]
        text = str(error)
        for code, what in DISK_ERRORS.items():
            if os.strerror(code) in text:
                return what
        error = error.__cause__ or error.__context__
    return None
