"""Whether the process that left a file behind still runs (its id is in the file's name).

Staging folders of ``kg.build``, HermiT's temporary folders (``kgprobe-reason-<pid>-*``) and the
Parquet files an export stages (``<split>.parquet.<pid>.tmp``) carry the id of the process that
made them; the next command removes those whose process is gone.

>>> import os
>>> pid_alive(os.getpid())
True
>>> pid_from("kgprobe-reason-", "kgprobe-reason-4242-x1y2")
4242
>>> pid_from("kgprobe-reason-", "kgprobe-reason-abc") is None
True
"""

from __future__ import annotations

import os
import re


def pid_alive(pid: int) -> bool:
    """True when a process with this id exists (one of another user's counts too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # larger than any process id
        return False
    return True


def pid_from(prefix: str, name: str) -> int | None:
    """The process id in ``<prefix><pid>-...`` (or ``<prefix><pid>`` at the end), else None."""
    match = re.fullmatch(re.escape(prefix) + r"(\d+)(?:-.*)?", name)
    return int(match.group(1)) if match else None
