"""probes.engine.train.loop.fit's progress bar: shown on stderr with the epoch, loss and dev
accuracy when asked for, absent otherwise (the bar is what a researcher watches in a long fully
supervised run)."""

from __future__ import annotations

import pytest
import torch

from probes.engine.train.loop import LoopSettings, fit, torch_shuffle


def _fit(progress: str | None) -> None:
    model = torch.nn.Linear(2, 2)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    y = torch.tensor([0, 1])

    def loss(idx: list[int]) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(model(x[idx]), y[idx])

    def acc() -> float:
        return float((model(x).argmax(1) == y).float().mean())

    fit(model, [0, 1], loss, acc, LoopSettings(lr=0.5, weight_decay=0.0, epochs=3,
                                               batch_size=1, warmup_steps=0),
        torch_shuffle(torch.Generator().manual_seed(1)), progress=progress)


def test_progress_bar_counts_every_step_and_names_the_epoch(
        capsys: pytest.CaptureFixture[str]) -> None:
    _fit("K=4 T1 L1 seed 6666")
    err = capsys.readouterr().err
    # 2 examples, batch size 1, 3 epochs: 6 optimiser steps.
    assert "K=4 T1 L1 seed 6666" in err and "6/6" in err and "epoch=3/3" in err
    _fit(None)
    assert capsys.readouterr().err == ""
