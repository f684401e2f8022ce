"""COPEN fine-tuning: the whole model and a head, ``python -m probes.benchmarks.copen.finetune``

The model body is trained together with a linear head on the pooled feature the paper uses per
architecture (:func:`probes.benchmarks.copen.classify.default_pooling`; BART: the decoder's state at
the
final ``</s>``, :mod:`probes.benchmarks.copen.decoder_eos`): one score per option text and a softmax
over the instance's options for CSJ (21 candidates) and CiC (the concepts on its chains), two logits
for the CPJ statement (a sequence classifier). T5 is fine-tuned text-to-text on the Table 9
forms with its own vocabulary head (:mod:`probes.benchmarks.copen.text2text`). Hyper-parameters are
those of the COPEN repository's fine-tuning configurations (``code/finetuning/task{1,2,3}/configs/
config.yaml`` and ``t5.yaml``), whose learning rates, weight decay, warm-up and effective batch
sizes are the paper's Table 10 (:data:`TABLE10`, :data:`TABLE10_T5`):

======  ==========  =================  ======  ===========
task    learning    batch x gradient   epochs  max tokens
        rate        accumulation
======  ==========  =================  ======  ===========
CSJ     3e-5        2 x 2              6       64
CPJ     3e-5        32 x 2             6       80
CiC     3e-5        1 x 4              6       120
T5 CSJ  5e-5        4 x 4              15      320
T5 CPJ  5e-5        8 x 4              20      120
T5 CiC  5e-5        4 x 4              20      320
======  ==========  =================  ======  ===========

All tasks: AdamW, weight decay 1e-5, linear warm-up over the first 10% of the steps then linear
decay, gradient norm clipped at 1, evaluation on dev after every epoch and the best epoch's
weights kept (dev accuracy), in the shared loop (:func:`probes.engine.train.fit`). Seeds 42, 43, 44;
predictions go to ``runs``/``scores`` with method ``finetune``.

>>> TABLE10["csj"].effective_batch, TABLE10["cpj"].max_length, TABLE10_T5["cpj"].effective_batch
(4, 80, 32)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from kg import options as kg_options
from probes.backends.base import pool
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
    write_run,
)
from probes.benchmarks.copen.decoder_eos import decoder_eos_states
from probes.benchmarks.copen.forms import Example
from probes.benchmarks.copen.linear import SeedRun, format_runs, seed_everything
from probes.benchmarks.copen.text2text import TextToText
from probes.engine import options
from probes.engine.train import LoopSettings, fit, torch_shuffle
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

    def loop(self) -> LoopSettings:
        """The shared loop's settings: steps of ``effective_batch`` examples accumulated over
        micro-batches of ``batch_size``."""
        return LoopSettings(lr=self.lr, weight_decay=self.weight_decay, epochs=self.epochs,
                            batch_size=self.effective_batch, micro_batch=self.batch_size,
                            warmup_ratio=self.warmup_ratio, warmup_offset=1,
                            max_grad_norm=self.max_grad_norm)


TABLE10: dict[str, FinetuneConfig] = {
    "csj": FinetuneConfig(lr=3e-5, batch_size=2, grad_accum=2, epochs=6, max_length=64),
    "cpj": FinetuneConfig(lr=3e-5, batch_size=32, grad_accum=2, epochs=6, max_length=80),
    "cic": FinetuneConfig(lr=3e-5, batch_size=1, grad_accum=4, epochs=6, max_length=120),
}
TABLE10_T5: dict[str, FinetuneConfig] = {
    "csj": FinetuneConfig(lr=5e-5, batch_size=4, grad_accum=4, epochs=15, max_length=320),
    "cpj": FinetuneConfig(lr=5e-5, batch_size=8, grad_accum=4, epochs=20, max_length=120),
    "cic": FinetuneConfig(lr=5e-5, batch_size=4, grad_accum=4, epochs=20, max_length=320),
}
"""T5's text-to-text settings (the repository's ``t5.yaml``; Table 10's T5 column)."""


def table10(task: str, model_type: str, text_to_text: bool) -> FinetuneConfig:
    """The settings of a task for a model: T5's when it is trained text-to-text."""
    return (TABLE10_T5 if text_to_text and model_type in TEXT_TO_TEXT else TABLE10)[
        task_name(task)]


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
        if self.pooling == "decoder_eos":
            return decoder_eos_states(self.body, enc["input_ids"], enc["attention_mask"],
                                      self.tokenizer.eos_token_id)
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


def load_body(name: str, device: str | None = None, pooling: str | None = None
              ) -> tuple[Any, Any, str, str, str]:
    """(trainable body, tokenizer, model type, kind, revision) of a model named as for
    probes.engine.run.

    Seq2seq models: T5-style ones without ``pooling`` whole with their LM head (text-to-text),
    BART-style ones encoder and decoder (``decoder_eos``), others their encoder.
    """
    from transformers import AutoModel, AutoModelForSeq2SeqLM
    from transformers.utils import logging as hf_logging

    from probes.backends.base import resolve_device
    from probes.backends.registry import detect_kind
    from probes.engine.models import load_config, load_model, load_tokenizer, resolve

    source = resolve(name)
    config = load_config(source)
    kind, _ = detect_kind(config)
    dev = resolve_device(device)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the LM head's weights are left out on purpose
    try:
        model_type = getattr(config, "model_type", "")
        if kind == "seq2seq" and model_type in TEXT_TO_TEXT and pooling is None:
            body = load_model(source, AutoModelForSeq2SeqLM, dtype=torch.float32, device=dev)
        elif kind == "seq2seq" and (pooling or default_pooling(model_type, kind)) != "decoder_eos":
            body = load_model(source, AutoModelForSeq2SeqLM, dtype=torch.float32,
                              device=dev).get_encoder()
        else:
            body = load_model(source, AutoModel, dtype=torch.float32, device=dev)
    finally:
        hf_logging.set_verbosity(level)
    revision = source.revision or "unknown"
    return body, load_tokenizer(source), getattr(config, "model_type", ""), kind, revision


def _predict(model: torch.nn.Module, examples: Sequence[Example], batch: int
             ) -> list[torch.Tensor]:
    model.eval()
    out: list[torch.Tensor] = []
    with torch.no_grad():
        for start in range(0, len(examples), batch):
            out += [r.detach() for r in model(examples[start:start + batch])]
    return out


def finetune(model: Classifier, train: Sequence[Example], dev: Sequence[Example],
             cfg: FinetuneConfig, seed: int) -> FitResult:
    """Train in place with ``cfg``; the best dev epoch's weights are loaded at the end."""
    gen = seed_everything(seed)
    train = [e for e in train if e.gold is not None]
    dev = [e for e in dev if e.gold is not None]

    def loss(part: Sequence[Example]) -> torch.Tensor:
        if isinstance(model, TextToText):
            return model.loss(part)
        return loss_and_correct(model(part), [int(e.gold) for e in part])[0]  # type: ignore[arg-type]

    out = fit(model, train, loss,
              lambda: accuracy(_predict(model, dev, cfg.batch_size), dev) or 0.0,
              cfg.loop(), torch_shuffle(gen))
    return FitResult(cfg.epochs, out.best_epoch, out.best_dev_accuracy, out.wall_s)


def run_finetune(con: Any, name: str, task: str, seeds: Sequence[int] = SEEDS,
                 cfg: FinetuneConfig | None = None, pooling: str | None = None,
                 device: str | None = None, epochs: int | None = None) -> list[SeedRun]:
    """Fine-tune a fresh copy of the model per seed on one COPEN task and write the runs
    (``cfg`` None: the Table 10 settings for the model; ``epochs`` overrides their epochs)."""
    task = task_name(task)
    out = []
    for seed in seeds:
        seed_everything(seed)
        body, tokenizer, model_type, kind, revision = load_body(name, device, pooling)
        text = kind == "seq2seq" and model_type in TEXT_TO_TEXT and pooling is None
        chosen_cfg = cfg or table10(task, model_type, text)
        if epochs:
            chosen_cfg = FinetuneConfig(**{**asdict(chosen_cfg), "epochs": epochs})
        examples = load_examples(con, task, text_to_text=text)
        require_splits(examples, task)
        everything = [e for split in examples.values() for e in split]
        model: Classifier | TextToText
        if text:
            chosen = "text_to_text"
            model = TextToText(body, tokenizer, task, chosen_cfg.max_length)
        else:
            chosen = pooling or default_pooling(model_type, kind)
            outputs = 1 if everything[0].pairwise else len(everything[0].options)
            model = Classifier(body, tokenizer, chosen, outputs, chosen_cfg.max_length)
            model.head.to(next(body.parameters()).device)
        fit_result = finetune(model, examples["train"], examples["dev"], chosen_cfg, seed)  # type: ignore[arg-type]
        logits = _predict(model, everything, max(1, chosen_cfg.batch_size))
        settings = {"pooling": chosen, **asdict(chosen_cfg)}
        rid = write_run(con, model=name, revision=revision, kind=kind, task=task,
                        method="finetune", seed=seed, settings=settings, fit=fit_result,
                        examples=everything, logits=logits,
                        describe={"device": str(next(body.parameters()).device),
                                  "dtype": "float32"})
        test = examples.get("test", [])
        test_acc = accuracy(_predict(model, test, chosen_cfg.batch_size), test) if test else None
        out.append(SeedRun(task, seed, rid, fit_result, test_acc))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe finetune`` / ``python -m probes.benchmarks.copen.finetune``."""
    parser.description = (__doc__.split("\n")[0]
                          + " Instances come from `python -m probes.benchmarks.copen load`.")
    options.add_model(parser, required=True, help="model name (as for probes.engine.run)")
    parser.add_argument("--task", action="append", choices=list(PROBES),
                        help="COPEN task; repeatable (default: all three)")
    parser.add_argument("--seed", type=int, action="append",
                        help="seed; repeatable (default: 42, 43, 44)")
    parser.add_argument("--epochs", type=int, help="override the number of epochs")
    parser.add_argument("--pooling", choices=list(POOLINGS),
                        help="feature for the linear head (default: the paper's; T5 without "
                        "it: text-to-text with the vocabulary head)")
    options.add_device(parser)
    options.add_threads(parser)
    kg_options.add_results(parser, help="results DuckDB file")
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return kg_options.run_command("python -m probes.benchmarks.copen.finetune", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Fine-tune on every task and seed; print the runs."""
    if args.threads:
        torch.set_num_threads(args.threads)
    con = connect(args.results)
    try:
        runs = []
        for task in args.task or list(PROBES):
            runs += run_finetune(con, args.model, task, args.seed or SEEDS, None,
                                 args.pooling, args.device, args.epochs)
    finally:
        con.close()
    print(format_runs(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
