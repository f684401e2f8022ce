"""The command line of ``python -m probes.engine.run``: its parser (the scale options among them),
the device check, the scorer factory."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kg import options as kg_options
from probes.engine import options
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import DEFAULT_CHUNK


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m probes.engine.run`` (:func:`add_arguments`)."""
    p = argparse.ArgumentParser(prog="python -m probes.engine.run")
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe run`` / ``python -m probes.engine.run``."""
    p.description = (
        "Score exported probe instances with a language model and write runs, "
        "scores and top-k responses into the results DuckDB file. Scores are cached by (model, "
        "revision, prompt, scoring options): a re-run with nothing new does no model work, and "
        "a run that was killed resumes where it stopped.")
    options.add_model(p, help=options.MODEL_HELP + "; or --models")
    p.add_argument("--backend", metavar="NAME", default=None,
                   help="the backend to load the model with, by its registered name (as "
                   "lm-evaluation-harness's --model): masked, causal, seq2seq, or one of your "
                   "own found through the Python entry point group kgprobe.backends "
                   "(README, Backends); default: the kind the model's config says. The name "
                   "is a label stored with the run; what is scored follows the backend's "
                   "declared capabilities")
    p.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="probe name or glob pattern (e.g. 'starter/*'); repeatable; required "
                   "unless --list. The probes must have been exported with `python -m "
                   "probes.engine.export`")
    p.add_argument("--list", action="store_true",
                   help="list the probes found (as `python -m probes.engine.export --list`) and "
                        "exit")
    p.add_argument("--skip-bad-files", action="store_true",
                   help="leave out probe files that cannot be read (each is named on a 'note:' "
                   "line) instead of stopping")
    kg_options.add_results(p)
    kg_options.add_queries(p)
    p.add_argument("--only-extra", action="store_true",
                   help="do not read the default queries/ folder, only --queries folders")
    options.add_device(p)
    options.add_dtype(p)
    p.add_argument("--batch-size", "--batch_size", type=batch_size, default=None,
                   metavar="N|auto",
                   help="requests per forward pass, or auto (the default): found "
                   "automatically by the backend, backing off on out-of-memory")
    options.add_threads(p)
    p.add_argument("--top-k", type=int, default=10,
                   help="answers kept per prompt for relatum prediction, unless the probe's "
                   "params set top_k (default: 10)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="only the first N instances (by instance id) of each probe and split, "
                   "for smoke runs; instance ids are hashes of the instance's values, so these "
                   "are a fixed pseudo-random sample (the same N every run, not the first N of "
                   "the query's order, not stratified: see --sample); a limited run is a run "
                   "of its own")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="a seeded sample of N instances per probe and split, stratified by "
                   "gold class (N / classes of each); a sampled run is a run of its own")
    p.add_argument("--split", action="append", default=None, metavar="NAME",
                   help="only instances of this split; repeatable (default: all splits)")
    p.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help=f"requests scored between two commits (default: {DEFAULT_CHUNK['cpu']} "
                   f"on a CPU, {DEFAULT_CHUNK['gpu']} on a GPU); a "
                   "killed run loses about one chunk of work (log-likelihood requests that share a "
                   "text prefix are scored in one chunk, across instances)")
    p.add_argument("--no-cache", action="store_true",
                   help="ignore cached scores: score every request again, overwriting its "
                   "cache entry and this run's rows")
    p.add_argument("--allow-pickle", action="store_true",
                   help="allow loading pickle weights (pytorch_model.bin) when a model has no "
                   "safetensors; pickle can run code when loaded, so only for sources you trust")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar: one line after 30 s, then one a minute")
    p.add_argument("--model-args", "--model_args", metavar="KEY=VALUE,...",
                   help="model loading options in one string, as in lm-evaluation-harness: "
                   "revision, dtype, trust_remote_code, allow_pickle, device_map (e.g. "
                   "revision=main,dtype=bfloat16); dtype, allow_pickle and device_map may also "
                   "be given as their own flags, but not both ways with different values")
    p.add_argument("--apply-chat-template", action="store_true",
                   help="causal instruct models: wrap every prompt in the tokenizer's chat "
                   "template as a user turn before scoring (a run of its own, cached apart)")
    p.add_argument("--output-path", "--output_path", type=Path, default=None, metavar="DIR",
                   help="also write DIR/<model>/results_<time>.json (metrics per probe, the "
                   "run config, versions) and the runs' scores/responses as Parquet")
    p.add_argument("--log-samples", "--log_samples", action="store_true",
                   help="with --output-path: also write samples_<probe>_<time>.jsonl, one line "
                   "per instance (prompts, gold, scores, prediction)")
    add_scale_arguments(p)  # --models, --device-map, --max-memory, --shard (docs/scale.md)
    for flags in LM_EVAL_ONLY:  # answered with the kgprobe equivalent (check_lm_eval_flags)
        p.add_argument(*flags, dest=f"lm_eval_{flags[0].lstrip('-').replace('-', '_')}",
                       default=None, help=argparse.SUPPRESS)


def add_scale_arguments(p: argparse.ArgumentParser) -> None:
    """The scale options: model lists, model placement, shards (docs/scale.md; what they do to
    a run: :mod:`probes.engine.scale`)."""
    p.add_argument("--models", metavar="LIST",
                   help="run every model of a paper's list, one run per model, resumable: "
                   "paper:semrel, paper:copen, paper:ontolama, or a .toml list "
                   "(probes/engine/model_lists/); instead of --model")
    p.add_argument("--model-dir", action="append", metavar="LABEL=FOLDER",
                   help="with --models: load the listed model LABEL from a local folder "
                   "instead of the hub; repeatable")
    p.add_argument("--device-map", choices=("auto", "balanced", "balanced_low_0", "sequential"),
                   help="spread a model larger than one GPU over all GPUs (and CPU/disk) "
                   "with accelerate")
    p.add_argument("--max-memory", metavar="DEV=SIZE,...",
                   help="with --device-map: memory per device, e.g. 0=70GiB,1=70GiB,cpu=200GiB "
                   "(what does not fit is offloaded to disk)")
    p.add_argument("--offload-folder", metavar="DIR",
                   help="with --device-map: folder for weights offloaded to disk (default: "
                   "offload/<model> in the model cache)")
    p.add_argument("--shard", metavar="I/N",
                   help="score only shard I of N (0-based) into <results>.shard-I-of-N; merge "
                   "them with `python -m probes.engine.run merge --shards N` (torchrun sets this "
                   "from RANK/WORLD_SIZE and merges by itself)")
    p.add_argument("--shard-part", action="store_true", help=argparse.SUPPRESS)


LM_EVAL_ONLY: dict[tuple[str, ...], str] = {
    ("--tasks", "--task"): (
        "kgprobe has no task names: a probe is a file (queries/**/*.rq); pick probes with "
        "--probe PATTERN (e.g. --probe 'starter/*'), list them with `kgprobe list`, and export "
        "them first with `kgprobe export -p PATTERN`"),
    ("--num_fewshot", "--num-fewshot"): (
        "probes.engine.run scores zero-shot prompts only; write in-context examples into the "
        "probe's "
        "prompts: templates, or use `kgprobe kshot` (OntoLAMA K-shot prompt-based "
        "fine-tuning) and `kgprobe linear` / `kgprobe finetune` (COPEN)"),
}
"""lm-evaluation-harness options that kgprobe answers with its own way of doing the same."""


def check_lm_eval_flags(args: argparse.Namespace) -> None:
    """A ProbeError pointing at the kgprobe equivalent when an lm-evaluation-harness option
    without a kgprobe spelling was given (``--tasks``, ``--num_fewshot``)."""
    for flags, message in LM_EVAL_ONLY.items():
        if getattr(args, f"lm_eval_{flags[0].lstrip('-').replace('-', '_')}") is not None:
            raise ProbeError(f"{flags[0]} is an lm-evaluation-harness option: {message}")


def batch_size(value: str) -> int | None:
    """``--batch-size``: a positive number, or ``auto`` (None: the backend finds it).

    >>> batch_size("auto") is None, batch_size("8")
    (True, 8)
    >>> batch_size("auto:4")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --batch-size takes a positive number or auto (got 'auto:4')
    """
    if value.strip().lower() == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(
            f"--batch-size takes a positive number or auto (got {value!r})")
    return n


def check_device(device: str | None, option: str = "--device {}", cpu: str = "--device cpu"
                 ) -> None:
    """A clear error for a ``--device`` torch does not know or this machine lacks. ``option``
    and ``cpu`` say how the caller spells the option (the notebook API: ``device={!r}`` and
    ``device='cpu'``)."""
    if device is None:
        return
    import torch

    shown = option.format(device)
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as e:
        raise ProbeError(f"{shown} is not a torch device; use cpu, cuda, cuda:N or mps") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ProbeError(f"{shown}: this machine has no CUDA GPU that torch can use; "
                         f"run with {cpu} (or leave the device out)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ProbeError(f"{shown}: there are only {torch.cuda.device_count()} CUDA "
                         "device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ProbeError(f"{shown}: MPS is not available here; use {cpu}")


ScorerFactory = Callable[..., Any]


def default_factory(name: str, **kwargs: Any) -> Any:
    from probes.backends.registry import load_scorer

    return load_scorer(name, **kwargs)
