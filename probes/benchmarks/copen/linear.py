"""COPEN linear probing: a trained head on a frozen model, ``python -m
probes.benchmarks.copen.linear``

The model is only read: every text's feature is computed once and shared by the three seeds,
pooled as in the paper (Appendix A.2, :func:`probes.benchmarks.copen.classify.default_pooling`):
[CLS] for
BERT, ``<s>`` for RoBERTa, the last token for GPT-2/GPT-Neo, for BART the decoder's state at the
final ``</s>`` (:mod:`probes.benchmarks.copen.decoder_eos`). The probe is one linear layer: for CSJ
and CiC it scores each (query, candidate) or (context, concept) text and a softmax runs over the
instance's options; for CPJ it maps the statement to two logits (false, true). T5 instead
"tune[s] the final vocabulary classification head" on the Table 9 text-to-text forms
(:mod:`probes.benchmarks.copen.text2text`). Training (Appendix A.2: learning rate 1e-3, early
stopping on
dev accuracy with a patience of 20 epochs, "the other hyperparameters the same as in Table
10"), in the shared loop (:func:`probes.engine.train.fit`): AdamW with weight decay 1e-5, the task's
Table 10 batch size (CSJ 4, CPJ 64, CiC 4; T5 16, 32, 16), a linear warm-up over the first 10%
of the steps of ``max_epochs`` (default 200) then linear decay; the weights of the first epoch
with the best dev accuracy kept; seeds 42, 43 and 44. Predictions for every split go to
``runs``/``scores`` (method ``linear`` in ``config.runtime.copen``), so the COPEN metrics and
report read them like zero-shot runs.

>>> feats = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1], [0.1, 1.0]])
>>> ex = [Example("train", "a", ("x", "y"), ("x", "y"), 0, True),
...       Example("dev", "b", ("x2", "y2"), ("x2", "y2"), 0, True)]
>>> head, res = train_probe(feats, {"a": [0, 1], "b": [2, 3]}, ex[:1], ex[1:], seed=42, lr=0.1)
>>> res.dev_accuracy, res.epochs - res.best_epoch
(1.0, 20)
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kg import options as kg_options
from probes.backends.hidden import pooled_features
from probes.backends.protocol import Describes, capabilities, family
from probes.benchmarks.copen import PROBES, task_name
from probes.benchmarks.copen.classify import (
    POOLINGS,
    SEEDS,
    TEXT_TO_TEXT,
    FitResult,
    accuracy,
    default_pooling,
    load_examples,
    loss_and_correct,
    require_splits,
    seed_summary,
    write_run,
)
from probes.benchmarks.copen.decoder_eos import decoder_eos_features
from probes.benchmarks.copen.forms import Example
from probes.benchmarks.copen.text2text import TextToText, head_only, predict, reset_head
from probes.engine import options
from probes.engine.train import LoopSettings, fit, torch_shuffle
from probes.results import connect

LR = 1e-3
PATIENCE = 20
MAX_EPOCHS = 200
BATCH = 32
WEIGHT_DECAY = 1e-5
WARMUP = 0.1
TABLE10_BATCH = {"csj": 4, "cpj": 64, "cic": 4}
TABLE10_BATCH_T5 = {"csj": 16, "cpj": 32, "cic": 16}
"""Table 10's batch sizes (instances per step) for "the others" and for T5."""


def table10_batch(task: str, model_type: str) -> int:
    """The Table 10 batch size of a task for a model.

    >>> table10_batch("cpj", "bert"), table10_batch("csj", "t5")
    (64, 16)
    """
    table = TABLE10_BATCH_T5 if model_type.startswith(("t5", "mt5")) else TABLE10_BATCH
    return table[task_name(task)]


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python's and torch's generators; returns a torch Generator for shuffling."""
    random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def featurize(scorer: Any, examples: Sequence[Example], pooling: str
              ) -> tuple[torch.Tensor, dict[str, list[int]]]:
    """Features of every distinct text once: (matrix, instance id -> its rows, in option order).
    """
    texts: dict[str, int] = {}
    rows: dict[str, list[int]] = {}
    for ex in examples:
        rows[ex.instance_id] = [texts.setdefault(t, len(texts)) for t in ex.texts]
    if pooling == "decoder_eos":
        feats = decoder_eos_features(scorer.model, scorer.tokenizer, list(texts))
    elif getattr(scorer, "hidden_states", False):  # the layer probes' extraction, last layer
        feats = pooled_features(scorer, list(texts), pooling)
    else:
        feats = scorer.features(list(texts), pooling=pooling)
    return feats.float().clone(), rows  # a normal tensor (features run in inference mode)


class LinearProbe(torch.nn.Module):
    """A linear layer: one score per text (pairwise) or one logit per class."""

    def __init__(self, dim: int, outputs: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(dim, outputs)

    def forward(self, feats: torch.Tensor, rows: Sequence[Sequence[int]], pairwise: bool
                ) -> list[torch.Tensor]:
        out = self.linear(feats)
        if pairwise:
            return [out[list(r), 0] for r in rows]
        return [out[r[0]] for r in rows]


def _predict(head: LinearProbe, feats: torch.Tensor, rows: dict[str, list[int]],
             examples: Sequence[Example]) -> list[torch.Tensor]:
    if not examples:
        return []
    return head(feats, [rows[e.instance_id] for e in examples], examples[0].pairwise)


def linear_settings(n_train: int, lr: float, patience: int, max_epochs: int, batch: int
                    ) -> LoopSettings:
    """The linear-probing loop: AdamW (weight decay on every parameter), warm-up over the first
    10% of the steps (at least one), no gradient clipping, early stopping on dev accuracy."""
    steps = max_epochs * max(1, -(-n_train // batch))
    return LoopSettings(lr=lr, weight_decay=WEIGHT_DECAY, epochs=max_epochs, batch_size=batch,
                        warmup_steps=max(1, int(WARMUP * steps)), warmup_offset=1,
                        max_grad_norm=None, patience=patience, decay_everything=True)


def train_probe(feats: torch.Tensor, rows: dict[str, list[int]], train: Sequence[Example],
                dev: Sequence[Example], seed: int, lr: float = LR, patience: int = PATIENCE,
                max_epochs: int = MAX_EPOCHS, batch: int = BATCH
                ) -> tuple[LinearProbe, FitResult]:
    """Train a linear probe with early stopping on dev accuracy; returns the best epoch's."""
    gen = seed_everything(seed)
    train = [e for e in train if e.gold is not None]
    dev = [e for e in dev if e.gold is not None]
    pairwise = train[0].pairwise
    head = LinearProbe(feats.shape[1], 1 if pairwise else len(train[0].options))

    def loss(part: Sequence[Example]) -> torch.Tensor:
        return loss_and_correct(_predict(head, feats, rows, part),
                                [int(e.gold) for e in part])[0]  # type: ignore[arg-type]

    def dev_accuracy() -> float:
        with torch.no_grad():
            _, right = loss_and_correct(_predict(head, feats, rows, dev),
                                        [int(e.gold) for e in dev])  # type: ignore[arg-type]
        return right / len(dev)

    out = fit(head, train, loss, dev_accuracy,
              linear_settings(len(train), lr, patience, max_epochs, batch), torch_shuffle(gen))
    return head, FitResult(out.epochs, out.best_epoch, out.best_dev_accuracy, out.wall_s)


@dataclass
class SeedRun:
    task: str
    seed: int
    run_id: str
    fit: FitResult
    test_accuracy: float | None


def run_linear(con: Any, scorer: Any, task: str, seeds: Sequence[int] = SEEDS,
               pooling: str | None = None, lr: float = LR, patience: int = PATIENCE,
               max_epochs: int = MAX_EPOCHS, batch: int | None = None) -> list[SeedRun]:
    """Linear probing of one COPEN task with ``scorer``'s frozen model, one run per seed
    (``batch`` None: the task's Table 10 batch size). T5-style models train their vocabulary
    head text-to-text (:func:`run_linear_text_to_text`), the others a linear layer on frozen
    features."""
    model_type = getattr(getattr(scorer.model, "config", None), "model_type", "") or ""
    batch = batch or table10_batch(task, model_type)
    if model_type in TEXT_TO_TEXT and pooling is None:
        return run_linear_text_to_text(con, scorer, task, seeds, lr, patience, max_epochs, batch)
    examples = load_examples(con, task)
    require_splits(examples, task)
    pooling = pooling or default_pooling(model_type, family(capabilities(scorer)))
    everything = [e for split in examples.values() for e in split]
    feats, rows = featurize(scorer, everything, pooling)
    settings = {"pooling": pooling, "lr": lr, "patience": patience, "batch_size": batch,
                "max_epochs": max_epochs, "optimizer": "adamw", "weight_decay": WEIGHT_DECAY,
                "warmup": WARMUP}
    out = []
    for seed in seeds:
        head, fit = train_probe(feats, rows, examples["train"], examples["dev"], seed, lr,
                                patience, max_epochs, batch)
        with torch.no_grad():
            logits = _predict(head, feats, rows, everything)
        rid = write_run(con, model=scorer.name, revision=scorer.revision, kind=scorer.kind,
                        family=family(capabilities(scorer)),
                        task=task, method="linear", seed=seed, settings=settings, fit=fit,
                        examples=everything, logits=logits,
                        describe=(scorer.describe()
                                  if isinstance(scorer, Describes) else None))
        test = examples.get("test", [])
        test_acc = accuracy(_predict(head, feats, rows, test), test) if test else None
        out.append(SeedRun(task, seed, rid, fit, test_acc))
    return out


def run_linear_text_to_text(con: Any, scorer: Any, task: str, seeds: Sequence[int], lr: float,
                            patience: int, max_epochs: int, batch: int) -> list[SeedRun]:
    """T5 linear probing (Appendix A.2): the Table 9 forms, only the vocabulary head trained
    (:func:`probes.benchmarks.copen.text2text.head_only`, reset to the pre-trained head for every
    seed and at the end), the linear-probing loop and hyper-parameters."""
    examples = load_examples(con, task, text_to_text=True)
    require_splits(examples, task)
    everything = [e for split in examples.values() for e in split]
    train = [e for e in examples["train"] if e.gold is not None]
    dev = [e for e in examples["dev"] if e.gold is not None]
    t2t = TextToText(scorer.model, scorer.tokenizer, task)
    original = head_only(scorer.model)
    settings = {"pooling": "text_to_text", "head": "lm_head", "lr": lr, "patience": patience,
                "batch_size": batch, "max_epochs": max_epochs, "optimizer": "adamw",
                "weight_decay": WEIGHT_DECAY, "warmup": WARMUP}
    out = []
    try:
        for seed in seeds:
            gen = seed_everything(seed)
            reset_head(scorer.model, original)
            loop = fit(t2t, train, t2t.loss, lambda: accuracy(predict(t2t, dev, batch), dev) or 0.0,
                       linear_settings(len(train), lr, patience, max_epochs, batch),
                       torch_shuffle(gen))
            result = FitResult(loop.epochs, loop.best_epoch, loop.best_dev_accuracy, loop.wall_s)
            logits = predict(t2t, everything, batch)
            rid = write_run(con, model=scorer.name, revision=scorer.revision, kind=scorer.kind,
                            family=family(capabilities(scorer)),
                            task=task, method="linear", seed=seed, settings=settings, fit=result,
                            examples=everything, logits=logits,
                            describe=(scorer.describe()
                                      if isinstance(scorer, Describes) else None))
            test = examples.get("test", [])
            test_acc = accuracy(predict(t2t, test, batch), test) if test else None
            out.append(SeedRun(task, seed, rid, result, test_acc))
    finally:
        reset_head(scorer.model, original)
        scorer.model.eval()
    return out


def format_runs(runs: Sequence[SeedRun]) -> str:
    """A markdown table: per task, dev accuracy (mean ± std over seeds) and epochs."""
    lines = ["| task | seeds | dev accuracy | test accuracy | best epochs |",
             "|---|---|---:|---:|---|"]
    for task in dict.fromkeys(r.task for r in runs):
        mine = [r for r in runs if r.task == task]
        dev_m, dev_s = seed_summary([r.fit.dev_accuracy for r in mine])
        tests = [r.test_accuracy for r in mine if r.test_accuracy is not None]
        test = "hidden"
        if tests:
            test_m, test_s = seed_summary(tests)
            test = f"{test_m:.3f} ± {test_s:.3f}"
        lines.append(f"| {task} | {', '.join(str(r.seed) for r in mine)} | {dev_m:.3f} ± "
                     f"{dev_s:.3f} | {test} | {', '.join(str(r.fit.best_epoch) for r in mine)} |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe linear`` / ``python -m probes.benchmarks.copen.linear``."""
    parser.description = (__doc__.split("\n")[0]
                          + " Instances come from `python -m probes.benchmarks.copen load`.")
    options.add_model(parser, required=True, help="model name (as for probes.engine.run)")
    parser.add_argument("--task", action="append", choices=list(PROBES),
                        help="COPEN task; repeatable (default: all three)")
    parser.add_argument("--seed", type=int, action="append",
                        help="seed; repeatable (default: 42, 43, 44)")
    parser.add_argument("--pooling", choices=list(POOLINGS),
                        help="feature pooling (default: the paper's for the architecture; "
                        "T5 without it: text-to-text with the vocabulary head)")
    parser.add_argument("--lr", type=float, default=LR)
    parser.add_argument("--patience", type=int, default=PATIENCE)
    parser.add_argument("--max-epochs", type=int, default=MAX_EPOCHS)
    options.add_device(parser)
    options.add_dtype(parser)
    options.add_threads(parser)
    kg_options.add_results(parser, help="results DuckDB file")
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return kg_options.run_command("python -m probes.benchmarks.copen.linear", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Fit the probes of every task and seed; print the runs."""
    from probes.backends.registry import load_scorer

    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype,
                         threads=args.threads, require=("features",))
    con = connect(args.results)
    try:
        runs = [r for task in (args.task or list(PROBES)) for r in run_linear(
            con, scorer, task, args.seed or SEEDS, args.pooling, args.lr, args.patience,
            args.max_epochs)]
    finally:
        con.close()
    print(format_runs(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
