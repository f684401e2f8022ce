"""Errors raised by probes: each names the file (and line) or the thing, and the fix.

Probe-layer errors are apart from the knowledge-graph layer's (``kg.errors.KgError``: sources,
loaders, the store); a command line catches both, ``except (ProbeError, KgError)``.
"""

from __future__ import annotations

from kg.errors import FileError
from probes.results import ProbeError, ResultsError

__all__ = ["ModelError", "ProbeError", "ProbeFileError", "ResultsError"]


class ProbeFileError(FileError, ProbeError):
    """A probe file is malformed. ``str(e)`` reads ``path:line: message``
    (:class:`kg.errors.FileError`).

    >>> str(ProbeFileError("queries/x.rq", 3, "unknown header field 'tsk'"))
    "queries/x.rq:3: unknown header field 'tsk'"
    """


class ModelError(ProbeError):
    """A model cannot be found, loaded or used for the requested operation (not a source
    error: models are no knowledge-graph source)."""
