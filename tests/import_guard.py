"""The import guard of the test session: who imported what, checked against the layers' rules.

:func:`install` (called by ``tests/conftest.py`` before any kgprobe module loads) watches every
import the session makes, however it was spelled, at the three doors Python has:

- a meta-path finder first on ``sys.meta_path``: every first import of a module, whether by an
  ``import`` statement, ``importlib.import_module('.report', 'eval')``, ``__import__``,
  ``pkgutil.resolve_name``, ``runpy``, ``exec`` of an import, or a package's parent import;
- ``builtins.__import__``: every ``import`` / ``from ... import`` statement and ``__import__``
  call, also of a module already loaded;
- ``importlib.import_module``: the calls of it (and of ``pkgutil.resolve_name``, which calls
  it) for a module already loaded.

Each import is attributed to the module of kgprobe's code that caused it: the nearest frame
on the call stack whose globals name a module of ``kg``, ``probes`` or ``eval``, past import
machinery, third-party code and code loaded under a made-up name (so an ``exec`` in a module,
or a file of ``eval`` loaded by path from an engine module, counts as that module). The rules
(:data:`FORBIDDEN`) are those of docs/architecture.md; a module's ``if __name__ ==
"__main__":`` block runs as ``__main__`` and is not restricted. A broken rule is recorded in
:data:`VIOLATIONS`; the test during which it happened fails in its teardown, and one outside
any test (at collection) fails the session (``tests/conftest.py``).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import Any

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "kg": ("probes", "eval", "tests"),
    "probes.results": ("probes.engine", "probes.backends", "probes.benchmarks", "probes.app",
                       "eval", "tests"),
    "engine": ("eval", "probes.app", "tests"),
    "probes.app": ("tests",),
    "eval": ("probes.engine", "probes.backends", "probes.benchmarks", "probes.app", "torch",
             "transformers", "tests"),
}
"""Per layer of an importing module, the module prefixes it may not import. ``engine`` is every
``probes`` module outside ``probes.results`` and ``probes.app`` (the engine, the backends, the
benchmarks); ``eval`` may import ``probes`` and ``probes.results`` only."""


def layer_of(module: str) -> str | None:
    """The layer of a module name, as :data:`FORBIDDEN` keys it (None: not kgprobe's code).

    >>> [layer_of(m) for m in ("kg.store", "probes.results.writers", "probes.engine.spec",
    ...                        "probes", "probes.app.cli", "eval.report", "tests.x", "__main__")]
    ['kg', 'probes.results', 'engine', 'engine', 'probes.app', 'eval', None, None]
    """
    top = module.partition(".")[0]
    if top in ("kg", "eval"):
        return top
    if top != "probes":
        return None
    for room in ("probes.results", "probes.app"):
        if module == room or module.startswith(room + "."):
            return room
    return "engine"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@dataclass(frozen=True)
class Violation:
    importer: str
    imported: str
    how: str

    def __str__(self) -> str:
        return f"{self.importer} imports {self.imported} ({self.how})"


VIOLATIONS: list[Violation] = []
"""Every broken rule recorded so far, in order."""


def importer(depth: int = 2) -> str | None:
    """The module of kgprobe's code (``kg``, ``probes``, ``eval``) that caused the import
    being made: the nearest such frame, ``depth`` frames up or more, past import machinery and
    third-party or anonymous code (a module loaded from a file under a made-up name, a
    library called with a callback); None when test code, a ``__main__`` block or nothing of
    kgprobe's comes first."""
    frame: FrameType | None = sys._getframe(depth)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name == __name__:  # the guard's own hooks
            frame = frame.f_back
            continue
        if layer_of(name) is not None:
            return name
        if name == "__main__" or _within(name, "tests") or _within(name, "_pytest"):
            return None
        frame = frame.f_back
    return None


def check(who: str | None, names: Sequence[str], how: str) -> None:
    """Record a :class:`Violation` for each of ``names`` that module ``who`` may not import."""
    layer = layer_of(who) if who else None
    if layer is None or who is None:
        return
    for name in names:
        bad = next((p for p in FORBIDDEN[layer] if _within(name, p)), None)
        if bad is not None:
            violation = Violation(who, name, how)
            if violation not in VIOLATIONS:
                VIOLATIONS.append(violation)


class _Finder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: sees every module's first import and finds nothing itself."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not _probing():
            check(importer(2), [fullname], "first import")
        return None


def _probing() -> bool:
    """Whether the finder was asked by ``importlib.util.find_spec`` (a library asking whether
    a module could be imported, which imports nothing)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "find_spec" and frame.f_globals.get("__name__") == \
                "importlib.util":
            return True
        frame = frame.f_back
    return False


_original_import = builtins.__import__
_original_import_module = importlib.import_module


def _absolute(name: str, globals_: dict[str, Any] | None, level: int) -> str:
    if level == 0:
        return name
    package = (globals_ or {}).get("__package__") or (globals_ or {}).get("__name__", "")
    try:
        return importlib.util.resolve_name("." * level + name, str(package))
    except (ImportError, ValueError):
        return name


def _import(name: str, globals: dict[str, Any] | None = None,  # as builtins'
            locals: Any = None, fromlist: Sequence[str] | None = (),
            level: int = 0) -> ModuleType:
    absolute = _absolute(name, globals, level)
    if absolute.partition(".")[0] in ("kg", "probes", "eval", "tests", "torch", "transformers"):
        who = importer(2)
        names = [absolute, *(f"{absolute}.{f}" for f in fromlist or () if f != "*")]
        check(who, names, "import statement" if globals else "__import__")
    return _original_import(name, globals, locals, fromlist or (), level)


def _import_module(name: str, package: str | None = None) -> ModuleType:
    absolute = importlib.util.resolve_name(name, package) if name.startswith(".") else name
    check(importer(2), [absolute], "importlib.import_module")
    return _original_import_module(name, package)


_FINDER = _Finder()


def install() -> None:
    """Watch every import from now on (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    builtins.__import__ = _import
    importlib.import_module = _import_module


def uninstall() -> None:
    """Stop watching (the plants' own test restores what it found)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    builtins.__import__ = _original_import
    importlib.import_module = _original_import_module


@contextlib.contextmanager
def recorded() -> Iterator[list[Violation]]:
    """The violations recorded while the block runs, taken out of :data:`VIOLATIONS` (for a
    test that plants them on purpose)."""
    start = len(VIOLATIONS)
    found: list[Violation] = []
    try:
        yield found
    finally:
        found.extend(VIOLATIONS[start:])
        del VIOLATIONS[start:]
