"""Read a data file (probe, derived, metric or support file) safely: a regular file, bounded, UTF-8.

Probe and derived files come from folders a user points at; one of them may be a FIFO (which
would block a reader forever), a link to ``/dev/zero`` (endless) or a huge file. This reader
opens without blocking, refuses anything but a regular file, reads at most ``limit`` bytes and
decodes UTF-8, each failure one :class:`TextFileError` naming the fix.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 1_000_000
"""The largest probe or derived file read (bytes). Data of that size belongs in the store."""

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a folder"))


class TextFileError(ValueError):
    """A file that cannot be read as text. ``line``: 1-based, or None."""

    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message)


def read_text(path: Path, limit: int = MAX_BYTES, what: str = "query file") -> str:
    """The UTF-8 text of the regular file ``path`` (links followed) of at most ``limit`` bytes;
    ``what`` names the kind of file in a message (query, metric or support file).

    >>> read_text(Path("/dev/null"))
    Traceback (most recent call last):
    ...
    kg.textfile.TextFileError: it is a character device, not a regular file; ...
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO without a writer: no wait
    except OSError as e:
        raise TextFileError(None, f"cannot read the file: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise TextFileError(None, f"it is {kind}, not a regular file; a {what} must be "
                                "a plain text file (replace it, or move it out of the folder)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise TextFileError(None, f"cannot read the file: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TextFileError(None, f"the file is larger than {limit:,} bytes; a {what} this "
                            "large holds data that belongs in the store (load it as a source "
                            "or a derived graph and select it)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TextFileError(line, f"the file is not UTF-8 text (byte {data[e.start]:#04x} "
                            "cannot be decoded); save it as UTF-8") from None
