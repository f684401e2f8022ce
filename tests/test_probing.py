"""The linear-probe fitting and the control task (probes.engine.probing), without a model."""

from __future__ import annotations

from collections import Counter

import torch

from probes.engine.probing import choose_on_dev, control_labels, fit_logistic, predict


def test_control_labels_are_a_seeded_function_of_the_item_with_the_label_balance() -> None:
    labels = ["true"] * 750 + ["false"] * 250
    items = [f"object-{i % 400}" for i in range(1000)]
    a = control_labels(items, labels, seed=42)
    assert control_labels(items, labels, seed=42) == a
    by_item: dict[str, set[str]] = {}
    for item, label in zip(items, a, strict=True):
        by_item.setdefault(item, set()).add(label)
    assert all(len(v) == 1 for v in by_item.values())  # one label per item type
    share = Counter(control_labels([f"x{i}" for i in range(4000)], labels, seed=1))["true"] / 4000
    assert abs(share - 0.75) < 0.03  # drawn from the empirical distribution
    assert control_labels(items, labels, seed=7) != a


def test_penalty_strength_changes_the_fit_and_dev_chooses_it() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 5, generator=gen, dtype=torch.float64)
    y = (x[:, 0] + 0.3 * torch.randn(200, generator=gen, dtype=torch.float64) > 0).long()
    strong = fit_logistic(x, y, 2, c=1e-6)
    weak = fit_logistic(x, y, 2, c=100.0)
    assert strong.weight.abs().max() < 1e-3 < weak.weight.abs().max()
    assert float((predict(weak, x) == y).double().mean()) > 0.85
    # dev labels that only the first feature's *opposite* explains: a tiny weight (the
    # strongest penalty, predicting the majority class) is best there, and it is chosen
    dev_x = x[:50]
    dev_y = torch.ones(50, dtype=torch.long) if int(y.sum()) >= 100 else torch.zeros(
        50, dtype=torch.long)
    chosen = choose_on_dev(x, y, dev_x, dev_y, 2, grid=(1e-6, 100.0))
    assert chosen.fit.c == 1e-6 and chosen.dev_accuracy == 1.0
    chosen = choose_on_dev(x, y, x[:50], y[:50], 2, grid=(1e-6, 100.0))
    assert chosen.fit.c == 100.0
