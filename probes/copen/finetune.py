"""Fine-tuning on COPEN: the whole model and a linear head, ``python -m probes.finetune``.

The model body (the encoder; for seq2seq models the encoder of the encoder-decoder) is trained
together with a linear head on the pooled feature the paper uses per architecture
(:func:`probes.copen.classify.default_pooling`): one score per option text and a softmax over
the instance's options for CSJ (21 candidates) and CiC (the concepts on its chains), two logits
for the CPJ statement (a sequence classifier). Hyper-parameters (:data:`TABLE10`) are those of
the COPEN repository's fine-tuning configurations (``code/finetuning/task{1,2,3}/configs/
config.yaml``), which the paper reports as its Table 10:

======  ==========  =================  ======  ===========
task    learning    batch x gradient   epochs  max tokens
        rate        accumulation
======  ==========  =================  ======  ===========
CSJ     3e-5        2 x 2              6       64
CPJ     3e-5        32 x 2             6       80
CiC     3e-5        1 x 4              6       120
======  ==========  =================  ======  ===========

All tasks: AdamW, weight decay 1e-5, linear warm-up over the first 10% of the steps then linear
decay, gradient norm clipped at 1, evaluation on dev after every epoch and the best epoch's
weights kept (dev accuracy). Seeds 42, 43, 44; predictions go to ``runs``/``scores`` with method
``finetune``. Not reproduced: the repository fine-tunes T5 text-to-text (learning rate 5e-5, 15
epochs, batch 4 x 4, 320 tokens, predicting the option letter); here T5 gets the same
classification head on its first encoder token as the other models.

>>> TABLE10["csj"].effective_batch, TABLE10["cpj"].max_length
(4, 80)
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from kg.errors import KgError
from probes.backends.base import pool
from probes.copen import PROBES, task_name
from probes.copen.classify import (
    SEEDS,
    FitResult,
    accuracy,
    default_pooling,
    load_examples,
    loss_and_correct,
    require_splits,
    write_run,
)
from probes.copen.forms import Example
from probes.errors import ProbeError
from probes.linear import SeedRun, format_runs, seed_everything
from probes.results import connect


@dataclass(frozen=True)
class FinetuneConfig:
    """One task's fine-tuning hyper-parameters."""

    lr: float
    batch_size: int
    grad_accum: int
    epochs: int
    max_length: int
    weight_decay: float = 1e-5
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0

    @property
    def effective_batch(self) -> int:
        return self.batch_size * self.grad_accum


TABLE10: dict[str, FinetuneConfig] = {
    "csj": FinetuneConfig(lr=3e-5, batch_size=2, grad_accum=2, epochs=6, max_length=64),
    "cpj": FinetuneConfig(lr=3e-5, batch_size=32, grad_accum=2, epochs=6, max_length=80),
    "cic": FinetuneConfig(lr=3e-5, batch_size=1, grad_accum=4, epochs=6, max_length=120),
}


class Classifier(torch.nn.Module):
    """A model body, pooling and a linear head over option texts."""

    def __init__(self, body: Any, tokenizer: Any, pooling: str, outputs: int,
                 max_length: int) -> None:
        super().__init__()
        self.body = body
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = max_length
        hidden = body.config.get_text_config().hidden_size if hasattr(
            body.config, "get_text_config") else body.config.hidden_size
        self.head = torch.nn.Linear(hidden, outputs)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    def features(self, texts: Sequence[str]) -> torch.Tensor:
        device = next(self.head.parameters()).device
        enc = self.tokenizer(list(texts), padding=True, truncation=True,
                             max_length=self.max_length, return_tensors="pt",
                             return_special_tokens_mask=True)
        special = enc.pop("special_tokens_mask").to(device)
        enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        hidden = self.body(**enc).last_hidden_state
        return pool(hidden, enc["attention_mask"], special, self.pooling)

    def forward(self, examples: Sequence[Example]) -> list[torch.Tensor]:
        texts = [t for e in examples for t in e.texts]
        out = self.head(self.features(texts))
        rows, pos = [], 0
        for e in examples:
            n = len(e.texts)
            rows.append(out[pos:pos + n, 0] if e.pairwise else out[pos])
            pos += n
        return rows


def load_body(name: str, device: str | None = None) -> tuple[Any, Any, str, str, str]:
    """(trainable body, tokenizer, model type, kind, revision) of a model named as for probes.run.
    """
    from transformers import AutoModel, AutoModelForSeq2SeqLM
    from transformers.utils import logging as hf_logging

    from probes.backends.base import resolve_device
    from probes.backends.registry import detect_kind
    from probes.models import load_config, load_model, load_tokenizer, resolve

    source = resolve(name)
    config = load_config(source)
    kind, _ = detect_kind(config)
    dev = resolve_device(device)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the LM head's weights are left out on purpose
    try:
        if kind == "seq2seq":
            body = load_model(source, AutoModelForSeq2SeqLM, dtype=torch.float32,
                              device=dev).get_encoder()
        else:
            body = load_model(source, AutoModel, dtype=torch.float32, device=dev)
    finally:
        hf_logging.set_verbosity(level)
    revision = source.revision or "unknown"
    return body, load_tokenizer(source), getattr(config, "model_type", ""), kind, revision


def _predict(model: Classifier, examples: Sequence[Example], batch: int) -> list[torch.Tensor]:
    model.eval()
    out: list[torch.Tensor] = []
    with torch.no_grad():
        for start in range(0, len(examples), batch):
            out += [r.detach() for r in model(examples[start:start + batch])]
    return out


def finetune(model: Classifier, train: Sequence[Example], dev: Sequence[Example],
             cfg: FinetuneConfig, seed: int) -> FitResult:
    """Train in place with ``cfg``; the best dev epoch's weights are loaded at the end."""
    t0 = time.perf_counter()
    gen = seed_everything(seed)
    train = [e for e in train if e.gold is not None]
    dev = [e for e in dev if e.gold is not None]
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias") and "norm" not in
             n.lower()]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in
                n.lower()]
    optim = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                               {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    steps = cfg.epochs * math.ceil(len(train) / cfg.effective_batch)
    warmup = int(cfg.warmup_ratio * steps)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (steps - step) / max(1, steps - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(optim, schedule)
    best, best_epoch = -1.0, 0
    best_state = copy.deepcopy(model.state_dict())
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=gen).tolist()
        for start in range(0, len(order), cfg.effective_batch):
            step_items = [train[i] for i in order[start:start + cfg.effective_batch]]
            optim.zero_grad()
            for micro in range(0, len(step_items), cfg.batch_size):
                part = step_items[micro:micro + cfg.batch_size]
                loss, _ = loss_and_correct(model(part), [int(e.gold) for e in part])  # type: ignore[arg-type]
                (loss * len(part) / len(step_items)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optim.step()
            sched.step()
        dev_acc = accuracy(_predict(model, dev, cfg.batch_size), dev) or 0.0
        if dev_acc > best:
            best, best_epoch = dev_acc, epoch
            best_state = copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    return FitResult(cfg.epochs, best_epoch, best, time.perf_counter() - t0)


def run_finetune(con: Any, name: str, task: str, seeds: Sequence[int] = SEEDS,
                 cfg: FinetuneConfig | None = None, pooling: str | None = None,
                 device: str | None = None) -> list[SeedRun]:
    """Fine-tune a fresh copy of the model per seed on one COPEN task and write the runs."""
    task = task_name(task)
    cfg = cfg or TABLE10[task]
    examples = load_examples(con, task)
    require_splits(examples, task)
    everything = [e for split in examples.values() for e in split]
    out = []
    for seed in seeds:
        seed_everything(seed)
        body, tokenizer, model_type, kind, revision = load_body(name, device)
        chosen = pooling or default_pooling(model_type, kind)
        outputs = 1 if everything[0].pairwise else len(everything[0].options)
        model = Classifier(body, tokenizer, chosen, outputs, cfg.max_length)
        model.head.to(next(body.parameters()).device)
        fit = finetune(model, examples["train"], examples["dev"], cfg, seed)
        logits = _predict(model, everything, max(1, cfg.batch_size))
        settings = {"pooling": chosen, **asdict(cfg)}
        rid = write_run(con, model=name, revision=revision, kind=kind, task=task,
                        method="finetune", seed=seed, settings=settings, fit=fit,
                        examples=everything, logits=logits,
                        describe={"device": str(next(body.parameters()).device),
                                  "dtype": "float32"})
        test = examples.get("test", [])
        test_acc = accuracy(_predict(model, test, cfg.batch_size), test) if test else None
        out.append(SeedRun(task, seed, rid, fit, test_acc))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m probes.finetune", description=__doc__.split(
        "\n")[0] + " Instances come from `python -m probes.copen load`.")
    parser.add_argument("--model", "-m", required=True, help="model name (as for probes.run)")
    parser.add_argument("--task", action="append", choices=list(PROBES),
                        help="COPEN task; repeatable (default: all three)")
    parser.add_argument("--seed", type=int, action="append",
                        help="seed; repeatable (default: 42, 43, 44)")
    parser.add_argument("--epochs", type=int, help="override the number of epochs")
    parser.add_argument("--pooling", choices=["cls", "first", "last", "mean"])
    parser.add_argument("--device")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--results", default=None, help="results DuckDB file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        con = connect(args.results)
        try:
            runs = []
            for task in args.task or list(PROBES):
                cfg = TABLE10[task]
                if args.epochs:
                    cfg = FinetuneConfig(**{**asdict(cfg), "epochs": args.epochs})
                runs += run_finetune(con, args.model, task, args.seed or SEEDS, cfg,
                                     args.pooling, args.device)
        finally:
            con.close()
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_runs(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
