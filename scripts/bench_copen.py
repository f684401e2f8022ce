"""Zero-shot CSJ throughput of the COPEN scorer, batched vs one prompt at a time (a benchmark,
not a test).

Workload: ``--instances`` CSJ instances of 21 candidates (query entity and candidate names drawn
deterministically from the names in the KoLA CSJ samples, ../shared/data/copen/kola_samples),
built as ``probes.benchmarks.copen.zeroshot`` builds them (:mod:`probes.benchmarks.copen.marked`,
the authors' piece-by-piece tokenisation) and scored for every text part at once
(:func:`probes.benchmarks.copen.tokenscore.score_marked`: query, candidate and the ``all`` negative
perplexity). A causal LM needs one forward per prompt; a masked LM one per scored token.

Passes over the same prompts with ``batch_rows`` 1 (unbatched reference) and ``--batch-rows``;
prints prompts/s of each, the speed-up and the largest score difference from the reference.

Run: ``.venv/bin/python scripts/bench_copen.py --model smollm2-135m --threads 1``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from pathlib import Path

import torch

from kg import config
from probes.backends.registry import load_scorer
from probes.benchmarks.copen.marked import Marked, mark, pieces_for
from probes.benchmarks.copen.tokenscore import score_marked


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


def workload(scorer: object, names: list[str], n: int) -> list[Marked]:
    """The marked prompts of ``n`` CSJ instances (21 candidates each, deterministic)."""
    queries = sorted(names, key=lambda x: _h("query", x))
    prompts: list[Marked] = []
    for i in range(n):
        query = queries[i % len(queries)]
        cands = sorted((x for x in names if x != query), key=lambda x: _h(i, x))[:21]
        for cand in cands:
            pieces = pieces_for("csj", {"query": query}, cand)
            prompts.append(mark(scorer.tokenizer, scorer.kind, "csj", pieces))  # type: ignore
    return prompts


def timed(scorer: object, prompts: list[Marked], rows: int) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    got = score_marked(scorer, prompts, ["query", "candidate"], batch_rows=rows)
    flat = [s[p].score for s in got for p in ("query", "candidate", "all")]
    return time.perf_counter() - t0, flat


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--instances", type=int, default=20,
                   help="CSJ instances (default 20; the KoLA samples hold 110 names)")
    p.add_argument("--batch-rows", type=int, default=32, help="rows per forward (default 32)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None)
    p.add_argument("--data", type=Path, default=None, help="data directory (default: kg.config)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    names = kola_names(args.data or config.data_dir())
    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype, threads=args.threads)
    prompts = workload(scorer, names, args.instances)
    score_marked(scorer, prompts[:8], ["query", "candidate"])  # warm-up (allocator, kernels)
    results = {rows: timed(scorer, prompts, rows) for rows in (1, args.batch_rows)}
    print(f"model {args.model} ({scorer.kind}) on {args.device} ({scorer.dtype}), "
          f"{args.threads} thread(s); {args.instances} CSJ instances x 21 candidates = "
          f"{len(prompts)} prompts, every part scored")
    base_t, base_s = results[1]
    print("| batch_rows | seconds | prompts/s | speed-up | max abs score diff |")
    print("|---:|---:|---:|---:|---:|")
    for rows, (t, scores) in results.items():
        diff = max(abs(a - b) for a, b in zip(scores, base_s, strict=True))
        print(f"| {rows} | {t:.2f} | {len(prompts) / t:.1f} | {base_t / t:.2f}x | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
