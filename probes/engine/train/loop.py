"""One training loop for every trained probe: OntoLAMA's K-shot prompt fine-tuning
(:mod:`probes.benchmarks.ontolama.kshot`), COPEN's fine-tuning and linear probing
(:mod:`probes.benchmarks.copen.finetune`, :mod:`probes.benchmarks.copen.linear`).

:func:`fit` trains a model in place:

- AdamW over two parameter groups (:func:`param_groups`): weights with weight decay, biases and
  normalisation weights without (or every parameter with it, ``decay_everything``);
- a linear schedule (:func:`linear_warmup_decay`): warm-up over ``warmup_steps`` (or a
  ``warmup_ratio`` of all steps), then linear decay to 0 at the last step;
- optimiser steps of ``batch_size`` examples in the order ``shuffle`` gives each epoch; with
  ``micro_batch`` the step's gradient is accumulated over micro-batches, each loss weighted by
  its share of the step's examples;
- the gradient norm clipped at ``max_grad_norm`` (None: no clipping);
- dev accuracy after every epoch; the weights of the first best epoch are kept and loaded at the
  end; ``patience``: stop after that many epochs without a better dev accuracy;
- the mean training loss of every epoch.

The caller seeds the generators and chooses the order (:func:`python_shuffle` or
:func:`torch_shuffle`), so each use keeps its own reproducible sequence.

>>> model = torch.nn.Linear(2, 2)
>>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0]]); y = torch.tensor([0, 1])
>>> loss = lambda idx: torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
>>> acc = lambda: float((model(x).argmax(1) == y).float().mean())
>>> out = fit(model, [0, 1], loss, acc, LoopSettings(lr=0.5, weight_decay=0.0, epochs=5,
...           batch_size=2, warmup_steps=0), torch_shuffle(torch.Generator().manual_seed(1)))
>>> out.dev_accuracy[out.best_epoch - 1], out.train_loss[0] > out.train_loss[-1]
(1.0, True)
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
from tqdm import tqdm

T = TypeVar("T")

NO_DECAY = ("bias", "norm")
"""Parameter-name parts (lower case) that get no weight decay."""


@dataclass(frozen=True)
class LoopSettings:
    """The optimiser, schedule and stopping settings of one training run."""

    lr: float
    weight_decay: float
    epochs: int
    batch_size: int
    """Examples per optimiser step."""
    micro_batch: int | None = None
    """Examples per backward pass when the step's gradient is accumulated (None: one pass)."""
    warmup_steps: int | None = None
    warmup_ratio: float = 0.0
    """Warm-up as a share of all steps, used when ``warmup_steps`` is None."""
    warmup_offset: int = 0
    """0: the rate at step s of the warm-up is s / warm-up (transformers'
    ``get_linear_schedule_with_warmup``: 0 at the first step); 1: (s + 1) / warm-up."""
    max_grad_norm: float | None = 1.0
    patience: int | None = None
    decay_everything: bool = False
    """Weight decay on every parameter (one group) instead of :data:`NO_DECAY`'s split."""


@dataclass
class LoopResult:
    """What :func:`fit` did: epochs run, the best epoch (1-based; 0 when none ran), dev
    accuracy and mean training loss per epoch, wall time."""

    epochs: int
    best_epoch: int
    dev_accuracy: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def best_dev_accuracy(self) -> float:
        return self.dev_accuracy[self.best_epoch - 1] if self.best_epoch else 0.0


def param_groups(model: torch.nn.Module, weight_decay: float, decay_everything: bool = False
                 ) -> list[dict[str, Any]]:
    """AdamW parameter groups of the trainable parameters: with weight decay, and without it
    for names containing a :data:`NO_DECAY` part.

    >>> m = torch.nn.ModuleDict({"proj": torch.nn.Linear(2, 2), "norm": torch.nn.LayerNorm(2)})
    >>> [len(g["params"]) for g in param_groups(m, 0.01)], param_groups(m, 0.01)[1]["weight_decay"]
    ([1, 3], 0.0)
    """
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if decay_everything:
        return [{"params": [p for _, p in named], "weight_decay": weight_decay}]
    decay = [p for n, p in named if not any(x in n.lower() for x in NO_DECAY)]
    rest = [p for n, p in named if any(x in n.lower() for x in NO_DECAY)]
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": rest, "weight_decay": 0.0}]


def linear_warmup_decay(warmup: int, total: int, offset: int = 0) -> Callable[[int], float]:
    """The learning-rate factor at step s: (s + offset) / warm-up during the warm-up, then a
    linear decay from 1 to 0 at step ``total``.

    >>> f = linear_warmup_decay(2, 6)
    >>> [f(s) for s in range(6)]
    [0.0, 0.5, 1.0, 0.75, 0.5, 0.25]
    >>> [linear_warmup_decay(2, 6, offset=1)(s) for s in range(2)]
    [0.5, 1.0]
    """
    def factor(step: int) -> float:
        if step < warmup:
            return (step + offset) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def python_shuffle(seed: int) -> Callable[[Sequence[T]], list[T]]:
    """Each epoch's order: ``random.Random(seed).shuffle`` of the examples, one generator."""
    rng = random.Random(seed)

    def order(items: Sequence[T]) -> list[T]:
        out = list(items)
        rng.shuffle(out)
        return out

    return order


def torch_shuffle(generator: torch.Generator) -> Callable[[Sequence[T]], list[T]]:
    """Each epoch's order: ``torch.randperm`` with ``generator``."""
    def order(items: Sequence[T]) -> list[T]:
        return [items[i] for i in torch.randperm(len(items), generator=generator).tolist()]

    return order


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def fit(model: torch.nn.Module, train: Sequence[T], loss: Callable[[Sequence[T]], torch.Tensor],
        dev_accuracy: Callable[[], float], settings: LoopSettings,
        shuffle: Callable[[Sequence[T]], list[T]], progress: str | None = None) -> LoopResult:
    """Train ``model`` in place (see the module docstring); ``loss(batch)`` is the mean loss of
    a batch of training examples, ``dev_accuracy()`` evaluates the model as it is.
    ``progress``: a label for a progress bar on stderr over every optimiser step (epoch, last
    loss and dev accuracy beside it); None: no bar."""
    t0 = time.perf_counter()
    s = settings
    optim = torch.optim.AdamW(param_groups(model, s.weight_decay, s.decay_everything), lr=s.lr)
    total = s.epochs * -(-len(train) // s.batch_size)
    warmup = s.warmup_steps if s.warmup_steps is not None else int(s.warmup_ratio * total)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, linear_warmup_decay(warmup, max(total, 1), s.warmup_offset))
    result = LoopResult(epochs=0, best_epoch=0)
    best, best_state, since = -1.0, None, 0
    bar = tqdm(total=total, unit="step", desc=progress, disable=progress is None, leave=False,
               dynamic_ncols=True, mininterval=1.0 if sys.stderr.isatty() else 30.0)
    for epoch in range(1, s.epochs + 1):
        model.train()
        order = shuffle(train)
        seen = 0.0
        for step in _chunks(order, s.batch_size):
            optim.zero_grad()
            if s.micro_batch is None:
                value = loss(step)
                value.backward()
                seen += float(value.detach()) * len(step)
            else:
                for part in _chunks(step, s.micro_batch):
                    value = loss(part)
                    (value * len(part) / len(step)).backward()
                    seen += float(value.detach()) * len(part)
            if s.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), s.max_grad_norm)
            optim.step()
            sched.step()
            bar.update(1)
        result.train_loss.append(seen / max(1, len(order)))
        model.eval()
        acc = dev_accuracy()
        result.dev_accuracy.append(acc)
        bar.set_postfix(epoch=f"{epoch}/{s.epochs}", loss=f"{result.train_loss[-1]:.3f}",
                        dev=f"{acc:.3f}")
        result.epochs = epoch
        if acc > best:
            best, result.best_epoch, since = acc, epoch, 0
            best_state = {k: v.detach().to("cpu", copy=True)
                          for k, v in model.state_dict().items()}
        else:
            since += 1
            if s.patience is not None and since >= s.patience:
                break
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    result.wall_s = time.perf_counter() - t0
    return result
