"""Zero-shot CSJ throughput with and without prefix reuse (a benchmark, not a test).

Workload: ``--instances`` CSJ instances of 21 candidates (query entity and candidate names drawn
deterministically from the names in the KoLA CSJ samples, ../shared/data/copen/kola_samples),
scored as the zero-shot ``candidate`` part does for a causal LM: log P(" <candidate>" | "<query>
is conceptually similar with"), so the 21 requests of an instance share their context. The
requests are the ones ``probes.copen.zeroshot`` sends through the choice task.

Passes over the same requests with the same scorer, one per ``prefix_mode`` of the causal
backend (its public attribute, also a ``load_scorer`` option):

- ``packed`` (default): each shared context runs once, followed in the same row by all its
  candidates' tokens under a block attention mask;
- ``cache``: each context is encoded once and its key/value cache copied to the candidates;
- ``None``: no prefix reuse, every request runs as a full sequence.

Prints requests/s of each, the speed-up over no reuse, and the largest score difference from
the no-reuse pass.

Run: ``.venv/bin/python scripts/bench_copen.py --model smollm2-135m --threads 2``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import torch

from kg import config
from probes.backends.registry import load_scorer
from probes.copen.forms import probe_spec
from probes.tasks import Instance, TaskContext, get_task


def kola_names(data: Path) -> list[str]:
    """Every entity name in the KoLA CSJ samples (queries and candidates), in file order."""
    doc = json.loads((data / "copen" / "kola_samples" / "2-1_COPEN++csj_sample.json")
                     .read_text(encoding="utf-8"))
    names: list[str] = []
    for state in doc["request_states"]:
        text = state["instance"]["input"]["text"]
        m = re.fullmatch(r"Among (.*), which one is the most conceptually similar with (.*)\?",
                         text)
        if m:
            names += [*m.group(1).split(", "), m.group(2)]
    return list(dict.fromkeys(n.strip() for n in names if n.strip()))


def _h(*parts: object) -> str:
    return hashlib.md5("|".join(map(str, parts)).encode()).hexdigest()


def workload(names: list[str], n: int) -> list[tuple[str, str]]:
    """The loglik requests of ``n`` CSJ instances (21 candidates each, deterministic). Each
    instance has its own query entity while there are names left (then queries repeat and
    their instances share a context)."""
    spec = probe_spec("csj", "candidate", "causal")
    task = get_task("choice")
    queries = sorted(names, key=lambda x: _h("query", x))
    requests: list[tuple[str, str]] = []
    for i in range(n):
        query = queries[i % len(queries)]
        cands = sorted((x for x in names if x != query), key=lambda x: _h(i, x))[:21]
        inst = Instance("copen/csj", "bench", str(i), query, [cands[0]], cands[1:], {})
        for item in task.items(inst, spec, TaskContext("causal")):
            requests += [r.args for r in item.requests]
    return requests


def timed(scorer: object, requests: list[tuple[str, str]]) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    scores = scorer.loglik(requests)  # type: ignore[attr-defined]
    return time.perf_counter() - t0, [s.logprob for s in scores]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--instances", type=int, default=100,
                   help="CSJ instances (default 100; the KoLA samples hold 110 names, so more "
                   "instances repeat query entities)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None)
    p.add_argument("--data", type=Path, default=None, help="data directory (default: kg.config)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    names = kola_names(args.data or config.data_dir())
    requests = workload(names, args.instances)
    contexts = len({c for c, _ in requests})
    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype, threads=args.threads)
    default = getattr(scorer, "prefix_mode", None)
    if default is None:
        print(f"model {args.model} ({scorer.kind}) does not reuse prefixes; nothing to compare",
              file=sys.stderr)
        return 2
    scorer.loglik(requests[:42])  # warm-up (allocator, kernels)
    results: dict[str, tuple[float, list[float]]] = {}
    for mode in (None, "packed", "cache"):
        scorer.prefix_mode = mode  # type: ignore[attr-defined]
        try:
            results[str(mode)] = timed(scorer, requests)
        except Exception as e:  # a mode the model cannot run: report it, keep going
            print(f"prefix_mode {mode}: failed ({e})", file=sys.stderr)
        finally:
            scorer.prefix_mode = default  # type: ignore[attr-defined]
    print(f"model {args.model} on {args.device} ({scorer.dtype}), {args.threads} thread(s); "
          f"{args.instances} CSJ instances x 21 candidates = {len(requests)} requests, "
          f"{contexts} distinct contexts")
    base_t, base_s = results["None"]
    print("| prefix_mode | seconds | requests/s | speed-up | max abs score diff |")
    print("|---|---:|---:|---:|---:|")
    for mode, (t, scores) in results.items():
        diff = max(abs(a - b) for a, b in zip(scores, base_s, strict=True))
        label = "None (no reuse)" if mode == "None" else mode
        print(f"| {label} | {t:.2f} | {len(requests) / t:.1f} | {base_t / t:.2f}x | "
              f"{diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
