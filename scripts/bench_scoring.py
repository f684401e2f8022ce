"""Quick internal throughput benchmark of the scoring backends (not a test, not the peer benchmark).

Two fixed, seeded workloads through ``Scorer.loglik``:

- multiple choice with shared contexts: ``--instances`` contexts of 8-20 tokens, each with
  ``--candidates`` continuations of 1-6 tokens (default 200 x 21 = 4,200 requests);
- independent sentences: ``--sentences`` texts of 10-25 tokens scored whole (empty context).

It prints requests/s for each, the same for a naive one-request-at-a-time loop over a sample,
and the arithmetic floor: 2 x parameters FLOPs per token processed (each distinct context once)
at the matrix-multiply rate measured on this device in the same run.

    .venv/bin/python scripts/bench_scoring.py --model smollm2-135m --threads 2
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import torch

from probes.backends import load_scorer

SUBJECTS = ["A robin", "The old oak tree", "My neighbour's small dog", "Every violin", "An emu",
            "The red car parked outside", "A hammer", "This kind of cheese", "The tallest tower",
            "A sparrow", "Her favourite chair", "The river near the village"]  # fmt: skip
FRAMES = ["is a kind of", "is a type of", "is best described as a", "belongs to the category of",
          "can be found in the", "is usually made of", "is often used as a",
          "would most likely be called a", "is commonly known as a"]  # fmt: skip
OPENERS = ["", "In my opinion,", "Everyone knows that", "According to the old book,",
           "As the teacher explained to the class,", "Strictly speaking,"]  # fmt: skip


def word_pool(scorer: Any, n: int, rng: random.Random) -> list[str]:
    """Lower-case whole words of 3-10 letters from the model's own vocabulary."""
    words = [w for w in scorer.word_vocab(lowercase=True).words if 3 <= len(w) <= 10]
    return rng.sample(words, min(n, len(words)))


def multiple_choice(
    scorer: Any, instances: int, candidates: int, seed: int
) -> list[tuple[str, str]]:
    """Contexts of 8-20 tokens, each with `candidates` continuations of 1-6 tokens."""
    rng = random.Random(seed)
    words = word_pool(scorer, 4000, rng)
    count = lambda text: len(scorer.tokenizer(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    requests: list[tuple[str, str]] = []
    while len(requests) < instances * candidates:
        context = " ".join(x for x in (rng.choice(OPENERS), rng.choice(SUBJECTS),
                                       rng.choice(FRAMES)) if x)  # fmt: skip
        if not 8 <= count(context) <= 20:
            continue
        chosen: list[str] = []
        while len(chosen) < candidates:
            cont = " " + " ".join(rng.sample(words, rng.choice((1, 1, 2, 3))))
            if 1 <= count(context + cont) - count(context) <= 6 and cont not in chosen:
                chosen.append(cont)
        requests += [(context, c) for c in chosen]
    return requests


def sentences(scorer: Any, n: int, seed: int) -> list[tuple[str, str]]:
    """`n` sentences of 10-25 tokens, scored whole (empty context)."""
    rng = random.Random(seed + 1)
    words = word_pool(scorer, 4000, rng)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        text = f"{rng.choice(SUBJECTS)} {rng.choice(FRAMES)} " + " ".join(
            rng.sample(words, rng.randint(2, 9))
        ) + "."
        if 10 <= len(scorer.tokenizer(text, add_special_tokens=False)["input_ids"]) <= 25:
            out.append(("", text))
    return out


def matmul_rate(dtype: torch.dtype, device: torch.device, seconds: float = 2.0) -> float:
    """Measured GFLOP/s of a 1024 x 1024 x 1024 matrix multiply on this device."""
    a = torch.randn(1024, 1024, dtype=dtype, device=device)
    b = torch.randn(1024, 1024, dtype=dtype, device=device)
    a @ b
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        n += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    return n * 2 * 1024**3 / (time.perf_counter() - start) / 1e9


def flops(scorer: Any, requests: list[tuple[str, str]], shared: bool) -> float:
    """The issue's arithmetic floor: 2 x parameters FLOPs per token processed, each distinct
    context counted once when contexts are shared."""
    params = sum(p.numel() for p in scorer.model.parameters())
    pairs = scorer.encode_pairs(requests)
    if shared:
        contexts = {ctx for ctx, _ in pairs}
        tokens = sum(len(c) for c in contexts) + sum(len(cont) for _, cont in pairs)
    else:
        tokens = sum(len(ctx) + len(cont) for ctx, cont in pairs)
    return 2 * params * tokens


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=21)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--naive", type=int, default=50, help="requests in the naive loop")
    parser.add_argument("--only", choices=["multiple", "independent"], default=None,
                        help="run one workload only")
    parser.add_argument("--repeat", type=int, default=1, help="timed repetitions (median)")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype,
                         batch_size=args.batch_size, threads=args.threads)  # fmt: skip
    dtype = getattr(torch, scorer.dtype)
    print(f"model {scorer.name} ({scorer.revision[:12]}), {scorer.device}, {scorer.dtype}, "
          f"threads {torch.get_num_threads()}, batch size {args.batch_size or 'auto'}")
    mc = multiple_choice(scorer, args.instances, args.candidates, args.seed)
    single = sentences(scorer, args.sentences, args.seed)
    scorer.loglik(mc[:50] + single[:20])  # warm-up
    workloads = [("multiple choice, shared contexts", mc, True),
                 ("independent sentences", single, False)]  # fmt: skip
    if args.only:
        workloads = [w for w in workloads if w[0].startswith(args.only)]
    for label, requests, shared in workloads:
        times, rates = [], [matmul_rate(dtype, scorer.device)]
        for _ in range(args.repeat):
            seconds, scores = timed(scorer.loglik, requests)
            times.append(seconds)
        rates.append(matmul_rate(dtype, scorer.device))
        seconds, rate = statistics.median(times), statistics.mean(rates)
        print(f"matrix multiply around this run: {rate:.0f} GFLOP/s "
              f"({', '.join(f'{r:.0f}' for r in rates)})")  # fmt: skip
        floor = flops(scorer, requests, shared) / (rate * 1e9)
        sample = requests[:: max(1, len(requests) // args.naive)][: args.naive]
        naive_s, _ = timed(lambda reqs: [scorer.reference_loglik(c, x) for c, x in reqs], sample)
        print(f"{label}: {len(requests)} requests in {seconds:.2f} s = "
              f"{len(requests) / seconds:.1f} requests/s; naive loop "
              f"{len(sample) / naive_s:.1f} requests/s; arithmetic floor {floor:.2f} s "
              f"({len(requests) / floor:.0f} requests/s), reached {floor / seconds:.0%}")
        assert all(s.n_tokens > 0 for s in scores)


if __name__ == "__main__":
    main()
