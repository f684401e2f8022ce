"""A missing model package or data source skips locally and fails in CI (tests/data.py), and
no test skips on its own for something CI must have."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.data import package_dir

TESTS = Path(__file__).resolve().parent
OWN_SKIPS = {"test_reliability_faults.py": "this machine has CUDA",
             "test_truthful_errors.py": "this machine has CUDA"}
"""The skips that are not about something missing (a CPU-only check on a GPU machine)."""


def test_a_missing_model_package_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-model-pkg.*scripts/setup.sh"):
        package_dir("no_such_model_pkg", "no-such-model-pkg")


def test_a_missing_model_package_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI needs .*no-such-model-pkg"):
        package_dir("no_such_model_pkg", "no-such-model-pkg")


def test_no_test_skips_around_tests_data() -> None:
    found = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name == "data.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("skip", "importorskip")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest"):
                reason = node.args[0].value if node.args and isinstance(
                    node.args[0], ast.Constant) else None
                if OWN_SKIPS.get(path.name) != reason:
                    found.append(f"{path.name}:{node.lineno}")
    assert found == [], "skip through tests.data (missing / require / package_dir) instead"
