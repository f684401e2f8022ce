"""Errors raised by probes: each names the file (and line) or the thing, and the fix."""

from __future__ import annotations

from pathlib import Path

from probes.results import ProbeError, ResultsError

__all__ = ["ProbeError", "ProbeFileError", "ResultsError"]


class ProbeFileError(ProbeError):
    """A probe file is malformed. ``str(e)`` reads ``path:line: message``.

    >>> str(ProbeFileError("queries/x.rq", 3, "unknown header field 'tsk'"))
    "queries/x.rq:3: unknown header field 'tsk'"
    """

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")
