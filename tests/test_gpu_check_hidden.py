"""The GPU check's hidden-state step (scripts/gpu_check_hidden.py) in its CPU smoke form: on
the check's tiny random Llama it times the extraction against the same forwards without hidden
states and finds the stored states equal to output_hidden_states; a wrong stored state fails
the check (an agreement row)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402
import gpu_check_hidden  # noqa: E402


def _check(tmp_path: Path) -> Any:
    args = argparse.Namespace(tiny=True, budget_s=60.0, no_lm_eval=True)
    check = gpu_check.Check(tmp_path, args, torch.device("cpu"), torch.float32)
    return check


@pytest.fixture(scope="module")
def llama() -> tuple[Any, Any, Any]:
    tok = gpu_check.load_tokenizers(None)["causal"]
    model = gpu_check.build_model("llama-1b", True, tok, torch.device("cpu"), torch.float32)
    scorer = gpu_check.make_scorer("causal", model, tok, "llama-1b", torch.device("cpu"))
    return model, tok, scorer


def test_hidden_step_measures_and_agrees(tmp_path: Path, llama: tuple[Any, Any, Any]) -> None:
    model, tok, scorer = llama
    check = _check(tmp_path)
    gpu_check_hidden.hidden_step(check, "llama-1b", model, tok, scorer)
    row = check.data["hidden"]["llama-1b"]
    assert row["texts"] == 40 and row["layers"] == 3
    assert row["ok"] and 0 < row["agreement"] <= 2e-3  # float16 storage: not bit-equal
    assert row["plain_per_s"] > 0 and row["hidden_per_s"] > 0
    # the seconds are stored rounded to 4 decimals: the ratio of the rounded values moves by
    # up to half a unit of the 4th decimal relative to each time
    slack = 0.5e-4 / row["plain_s"] + 0.5e-4 / row["hidden_s"] + 1e-4
    assert row["ratio"] == pytest.approx(row["plain_s"] / row["hidden_s"], rel=slack)
    assert not check.data["agreement"]
    assert any("llama-1b hidden states: 40 texts, 3 layers" in n for n in check.data["notes"])


def test_a_wrong_state_fails_the_check(tmp_path: Path, llama: tuple[Any, Any, Any],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from probes.engine.hidden_cache import HiddenStates

    model, tok, scorer = llama
    real = HiddenStates.matrix
    monkeypatch.setattr(HiddenStates, "matrix",
                        lambda self, items, layer, pos: real(self, items, layer, pos) * 1.1)
    check = _check(tmp_path)
    gpu_check_hidden.hidden_step(check, "llama-1b", model, tok, scorer)
    (row,) = check.data["agreement"]
    assert not row["ok"] and row["check"] == "llama-1b stored hidden states = output_hidden_states"
