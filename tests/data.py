"""Tests that need a benchmark source (``../shared/data``, ``KGPROBE_DATA_DIR``) or WordNet 3.0.

A missing source skips the test locally, naming the file and the fix; in CI (``CI=true``), where
every source must be there, it fails the test instead, so that a missing data folder can never
turn part of the suite into silent skips.

>>> import pathlib
>>> require(pathlib.Path("."), "the current folder")
PosixPath('.')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as CI sets it)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing(what: str, where: object) -> NoReturn:
    """Skip (locally) or fail (in CI) a test whose source is not there."""
    message = (f"{what} not found at {where}: put the shared data folder beside the checkout "
               "(../shared/data) or set KGPROBE_DATA_DIR")
    if in_ci():
        pytest.fail(f"CI needs every data source: {message}", pytrace=False)
    pytest.skip(message)


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
