"""Linear probes on frozen states: L2-regularised logistic regression, its strength chosen on
dev, and Hewitt and Liang's (2019) control task.

The fitting is torch's (``torch.optim.LBFGS``, full batch, strong-Wolfe line search), not
hand-written optimisation: torch is already kgprobe's dependency, runs where the model runs,
and L-BFGS on this convex objective reaches the same optimum as scikit-learn's default solver
(``lbfgs``), so no second numerical library enters the lock. The objective is scikit-learn's
convention for ``LogisticRegression(C=c)`` divided by the number of training rows::

    mean cross-entropy(softmax(x W + b), y) + ||W||^2 / (2 c n)

(the bias is not penalised). Features are standardised with the training rows' mean and
standard deviation first. ``c`` runs over :data:`C_GRID`; the one with the best dev accuracy
wins (the smaller ``c``, the stronger penalty, on ties): test rows never choose anything.

The control task (Hewitt and Liang, "Designing and Interpreting Probes with Control Tasks",
EMNLP 2019, section 2): each item type (here the value of the probe's ``control_by``
variable, e.g. a statement's object) gets a label drawn once from the empirical distribution of
the real labels, by a seeded hash of the item (:func:`control_labels`), so the control task has
the same classes and balance but no relation to the statement's truth. Selectivity = probe
accuracy minus control accuracy.

>>> x = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
>>> fit = fit_logistic(x, torch.tensor([0, 0, 1, 1]), 2, c=10.0)
>>> predict(fit, x).tolist()
[0, 0, 1, 1]
>>> control_labels(["a", "b", "a"], ["x", "y", "y"], seed=1)[0] == \\
...     control_labels(["a"], ["x", "y", "y"], seed=1)[0]
True
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

C_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
"""The inverse regularisation strengths tried on dev."""
MAX_ITER = 200


@dataclass
class LogisticFit:
    """A fitted probe: weights ``[dim, classes]``, bias, and the standardisation it expects."""

    weight: torch.Tensor
    bias: torch.Tensor
    mean: torch.Tensor
    scale: torch.Tensor
    c: float


def standardiser(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation per column (1 where a column is constant)."""
    mean = x.mean(dim=0)
    scale = x.std(dim=0, unbiased=False)
    return mean, torch.where(scale > 0, scale, torch.ones_like(scale))


def fit_logistic(x: torch.Tensor, y: torch.Tensor, n_classes: int, c: float,
                 max_iter: int = MAX_ITER) -> LogisticFit:
    """Multinomial logistic regression on standardised ``x`` (float64), L2 strength ``1/c``."""
    x = x.to(torch.float64)
    mean, scale = standardiser(x)
    z = (x - mean) / scale
    weight = torch.zeros(x.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
    penalty = 1.0 / (2.0 * c * max(1, x.shape[0]))
    opt = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=max_iter, tolerance_grad=1e-9,
                            tolerance_change=1e-12, history_size=20,
                            line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(z @ weight + bias, y)
        loss = loss + penalty * (weight * weight).sum()
        loss.backward()  # type: ignore[no-untyped-call]
        return loss

    with torch.enable_grad():
        opt.step(closure)  # type: ignore[no-untyped-call]
    return LogisticFit(weight.detach(), bias.detach(), mean, scale, c)


def predict(fit: LogisticFit, x: torch.Tensor) -> torch.Tensor:
    """The most probable class of each row."""
    z = (x.to(torch.float64) - fit.mean) / fit.scale
    return (z @ fit.weight + fit.bias).argmax(dim=1)


def accuracy(fit: LogisticFit, x: torch.Tensor, y: torch.Tensor) -> float:
    if len(y) == 0:
        return float("nan")
    return float((predict(fit, x) == y).double().mean())


@dataclass
class Chosen:
    """The probe chosen on dev, with its train and dev accuracy."""

    fit: LogisticFit
    train_accuracy: float
    dev_accuracy: float


def choose_on_dev(x_train: torch.Tensor, y_train: torch.Tensor, x_dev: torch.Tensor,
                  y_dev: torch.Tensor, n_classes: int, grid: Sequence[float] = C_GRID
                  ) -> Chosen:
    """Fit one probe per ``c`` of ``grid`` on train; keep the best on dev (the first, i.e. the
    strongest penalty, on ties)."""
    best: Chosen | None = None
    for c in sorted(grid):
        fit = fit_logistic(x_train, y_train, n_classes, c)
        dev = accuracy(fit, x_dev, y_dev)
        if best is None or dev > best.dev_accuracy:
            best = Chosen(fit, accuracy(fit, x_train, y_train), dev)
    assert best is not None
    return best


def control_labels(items: Sequence[str], labels: Sequence[str], seed: int) -> list[str]:
    """Each item's control label: a fixed random function of the item, drawn (by a seeded
    SHA-256 of the item) from the empirical distribution of ``labels``; the same item always
    gets the same label."""
    counts = Counter(labels)
    classes = sorted(counts)
    total = sum(counts.values())
    out = []
    for item in items:
        digest = hashlib.sha256(f"{seed}\x00{item}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2.0**64 * total
        acc = 0
        for cls in classes:
            acc += counts[cls]
            if u < acc:
                out.append(cls)
                break
        else:
            out.append(classes[-1])
    return out
