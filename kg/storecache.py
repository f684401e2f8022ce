"""Facts that depend only on the store, worked out once per store and kept beside it.

Some reads of the store cost seconds and give the same answer until the store changes: the
WordNet lemmas and exception lists that ``[DET]`` and inflection-aware gold matching need
(:func:`kg.morphology.read_morphology`), say. :func:`cached_json` keeps such a value as a JSON
file inside the store's own folder (``<store>/kgprobe-cache/<name>.json``), keyed by the store's
version: RocksDB's ``CURRENT`` file (its text, inode and modification time), which a rebuild
replaces with the whole folder (``kg.build`` swaps a new folder in) and a writer rewrites
when it opens the store. A store that changed, a file that cannot be read or a value of
another ``version`` of the reader is worked out again; a folder that cannot be written (a
read-only store) only loses the saving. An in-memory store or a SPARQL endpoint has no folder:
the value is worked out each time (callers keep their own in-process cache).

>>> import tempfile
>>> from pathlib import Path
>>> from types import SimpleNamespace
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "CURRENT").write_text("MANIFEST-000001\\n")
>>> store = SimpleNamespace(path=folder)
>>> calls = []
>>> def make() -> list[int]:
...     calls.append(1)
...     return [1, 2]
>>> cached_json(store, "demo", 1, make), cached_json(store, "demo", 1, make), len(calls)
([1, 2], [1, 2], 1)
>>> _ = cached_json(store, "demo", 2, make); len(calls)  # another version of the reader
2
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_DIR = "kgprobe-cache"
"""The folder inside a store's folder that holds its cached facts."""


def store_version(store: Any) -> dict[str, Any] | None:
    """What identifies the state of a store on disk (see the module); None for a store
    without a folder of its own (in memory, an endpoint)."""
    path = getattr(store, "path", None)
    if path is None:
        return None
    current = Path(path) / "CURRENT"
    try:
        st = current.stat()
        return {"store": str(Path(path).resolve()), "current": current.read_text().strip(),
                "inode": st.st_ino, "mtime_ns": st.st_mtime_ns}
    except OSError:
        return None


def load(store: Any, name: str, version: int) -> Any | None:
    """The value saved as ``name`` for this state of the store and this ``version`` of its
    reader; None when there is none (or no folder: see the module)."""
    key = store_version(store)
    if key is None:
        return None
    try:
        saved = json.loads((Path(store.path) / CACHE_DIR / f"{name}.json").read_text(
            encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(saved, dict) and saved.get("key") == {**key, "version": version}:
        return saved.get("value")
    return None


def save(store: Any, name: str, version: int, value: Any) -> None:
    """Keep ``value`` (JSON) as ``name`` for this state of the store; a folder that cannot be
    written only loses the saving."""
    key = store_version(store)
    if key is None:
        return
    file = Path(store.path) / CACHE_DIR / f"{name}.json"
    tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
    try:
        file.parent.mkdir(exist_ok=True)
        tmp.write_text(json.dumps({"key": {**key, "version": version}, "value": value},
                                  ensure_ascii=False), encoding="utf-8")
        tmp.replace(file)
    except OSError:
        with contextlib.suppress(OSError):  # OSError too when no folder can hold it
            tmp.unlink(missing_ok=True)


def cached_json(store: Any, name: str, version: int, make: Callable[[], Any]) -> Any:
    """``make()`` (a value JSON can hold), read from the store's cache when the store and the
    reader's ``version`` are those it was saved for, else worked out and saved there."""
    value = load(store, name, version)
    if value is None:
        value = make()
        save(store, name, version, value)
    return value
