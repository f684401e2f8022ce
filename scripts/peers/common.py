"""Shared plumbing for the benchmark runners (standard library only).

Every runner is a small script run in its own process by ``scripts/bench_peers.py``:
kgprobe and the naive loop with kgprobe's Python, lm-evaluation-harness and minicons with the
peers' virtual environment. A runner reads the workload JSON, turns it into requests, times
the scoring of each request set and writes one JSON result::

    {"tool": "minicons", "versions": {...}, "threads": 2, "load_seconds": 1.9,
     "workloads": {"mc": {"requests": 4200, "seconds": 150.2, "scores": [...]},
                   "sentences": {...}}}

Request conventions (identical for every tool):

* ``mc``: ``(context, candidate)`` pairs in workload order (instance by instance, candidates
  in order); the candidate carries its leading space and the score is the summed
  log-probability of its tokens given the context.
* ``sentences``: the summed log-probability of every token of the sentence given the
  tokenizer's BOS token (and the preceding sentence tokens).
* ``masked`` (a bert-base-shaped model): the pseudo-log-likelihood of each sentence, every
  non-special token masked in its own copy ("original" PLL of Salazar et al.).
* ``seq2seq`` (a t5-base-shaped model): ``(context, candidate)`` pairs; the encoder reads the
  context (tokenizer's special tokens included: T5 appends ``</s>``), the score is the summed
  log-probability of the candidate's tokens followed by ``</s>``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

Request = tuple[str, str]
WORKLOADS = ("mc", "sentences", "masked", "seq2seq")


def mc_requests(workload: dict) -> list[Request]:
    """Flatten the multiple-choice instances to ``(context, candidate)`` pairs.

    >>> mc_requests({"mc": [{"context": "A dog is a kind of", "candidates": [" animal", " tree"]}]})
    [('A dog is a kind of', ' animal'), ('A dog is a kind of', ' tree')]
    """
    return [(inst["context"], cand) for inst in workload["mc"] for cand in inst["candidates"]]


def seq2seq_requests(workload: dict) -> list[Request]:
    """The seq2seq ``(context, candidate)`` pairs, in workload order."""
    return [(i["context"], c) for i in workload.get("seq2seq", []) for c in i["candidates"]]


def masked_texts(workload: dict) -> list[str]:
    """The sentences of the masked-LM workload, in workload order."""
    return [s["text"] for s in workload.get("masked", [])]


def sentences(workload: dict) -> list[str]:
    """The sentence texts, in workload order.

    >>> sentences({"sentences": [{"text": "It rained.", "tokens": 3}]})
    ['It rained.']
    """
    return [s["text"] for s in workload["sentences"]]


def runner_parser(description: str, threads: int) -> argparse.ArgumentParser:
    """The options of every runner, the BEAR runners' too (``bear_common.parse_args``): the
    model folder, the workload, the result file and the torch threads (default ``threads``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", type=Path, required=True, help="HF-format model folder")
    parser.add_argument("--workload", type=Path, required=True, help="workload JSON")
    parser.add_argument("--out", type=Path, required=True, help="result JSON to write")
    parser.add_argument("--threads", type=int, default=threads, help="torch CPU threads")
    return parser


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line every runner shares."""
    parser = runner_parser(description, threads=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", default="cpu", help="torch device: cpu or cuda")
    parser.add_argument("--dtype", default="float32", help="float32 or bfloat16")
    parser.add_argument("--only", choices=WORKLOADS, action="append",
                        help="run only this request set (repeatable)")
    return parser.parse_args(argv)


def set_threads(n: int) -> None:
    """Pin torch (and the BLAS it uses) to ``n`` threads before any model work."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    import torch

    torch.set_num_threads(n)


def run(
    tool: str,
    args: argparse.Namespace,
    versions: dict[str, str],
    load: Callable[[], object],
    score_mc: Callable[[object, list[Request]], list[float]] | None,
    score_sentences: Callable[[object, list[str]], list[float]] | None,
    score_masked: Callable[[object, list[str]], list[float]] | None = None,
    score_seq2seq: Callable[[object, list[Request]], list[float]] | None = None,
) -> int:
    """Load the model, score each request set, write the result JSON; return an exit code."""
    workload = json.loads(args.workload.read_text(encoding="utf-8"))
    wanted = args.only or ["mc", "sentences"]
    t0 = time.perf_counter()
    model = load()
    result: dict = {
        "tool": tool,
        "versions": versions,
        "threads": args.threads,
        "batch_size": args.batch_size,
        "load_seconds": time.perf_counter() - t0,
        "workloads": {},
    }
    scorers: dict[str, tuple[Callable[[object, list], list[float]] | None,
                             Callable[[dict], list]]] = {
        "mc": (score_mc, mc_requests), "sentences": (score_sentences, sentences),
        "masked": (score_masked, masked_texts), "seq2seq": (score_seq2seq, seq2seq_requests)}
    jobs: list[tuple[str, Callable[[], list[float]], int]] = []
    for name, (score, requests) in scorers.items():
        if name in wanted and score is not None:
            reqs = requests(workload)
            jobs.append((name, functools.partial(score, model, reqs), len(reqs)))
    if not jobs:
        print(f"[{tool}] nothing to do for {', '.join(wanted)}", file=sys.stderr)
        return 1
    for name, job, n in jobs:
        print(f"[{tool}] {name}: {n} requests ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        scores = [float(s) for s in job()]
        seconds = time.perf_counter() - t0
        if len(scores) != n:
            print(f"[{tool}] {name}: got {len(scores)} scores for {n} requests", file=sys.stderr)
            return 1
        print(f"[{tool}] {name}: {seconds:.1f} s, {n / seconds:.1f} requests/s",
              file=sys.stderr, flush=True)
        result["workloads"][name] = {"requests": n, "seconds": seconds, "scores": scores}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


def batches(items: Sequence, size: int) -> list[Sequence]:
    """Split ``items`` into consecutive chunks of at most ``size``.

    >>> batches([1, 2, 3, 4, 5], 2)
    [[1, 2], [3, 4], [5]]
    """
    return [items[i:i + size] for i in range(0, len(items), size)]


def version_of(*names: str) -> dict[str, str]:
    """Installed versions of the named distributions (``"?"`` when not installed)."""
    from importlib import metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "?"
    return out
