"""Errors raised by the knowledge-graph layer. Each names the thing and the fix."""


class KgError(Exception):
    """Base class for errors in sources, loaders and the store."""


class SourceError(KgError):
    """A source file is missing, has the wrong checksum, or cannot be parsed."""


class StoreError(KgError):
    """The store cannot be opened, is locked, or lacks a graph a probe needs."""
