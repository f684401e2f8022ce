"""BEAR parity runner for kgprobe: ``load_scorer(folder, boundary=..., pll_metric=...)``.

Causal: every statement is one ``loglik`` request, all in one call (the shared-prefix fast
path sees every statement of an instance): ``("", statement)`` for the whole statement,
``(text before the answer, the rest)`` for the conditional score; ``boundary="whole"``, or
``"lm-pub-quiz"`` with ``--quirk``. Masked: ``pll((statement, span, answer span))`` with the
whole statement's span or the answer's (conditional) and ``pll_metric``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import bear_common as common

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    """Command line entry point."""
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    from probes.backends import load_scorer

    items = common.load_workload(args.workload)
    t0 = time.perf_counter()
    options = ({"boundary": "lm-pub-quiz" if args.quirk else "whole"} if args.kind == "causal"
               else {"pll_metric": args.pll_metric})
    scorer = load_scorer(str(args.model), device=args.device, dtype="float32", **options)
    load = time.perf_counter() - t0
    texts, requests = [], []
    for item in items:
        row = []
        for answer in item["answers"]:
            text, (a, b) = common.statement(item["template"], item["subject"], answer)
            row.append(text)
            conditional = args.scoring == "conditional"
            if args.kind == "masked":
                requests.append((text, (a, b) if conditional else (0, len(text)), (a, b)))
            elif conditional:
                before = text[:a].rstrip()
                requests.append((before, text[len(before):]))
            else:
                requests.append(("", text))
        texts.append(row)
    score = scorer.pll if args.kind == "masked" else scorer.loglik
    score(requests[: len(items[0]["answers"])])  # warm-up, untimed
    passes = []
    for k in range(max(1, args.repeat)):
        print(f"[kgprobe] {len(requests)} statements, pass {k + 1} ...", file=sys.stderr,
              flush=True)
        t0 = time.perf_counter()
        got = score(requests)
        passes.append(time.perf_counter() - t0)
        print(f"[kgprobe] {passes[-1]:.1f} s, {len(requests) / passes[-1]:.1f} statements/s",
              file=sys.stderr, flush=True)
    seconds = common.median(passes)
    scores, counts, k = [], [], 0
    for item in items:
        m = len(item["answers"])
        scores.append([s.logprob for s in got[k:k + m]])
        counts.append([s.n_tokens for s in got[k:k + m]])
        k += m
    common.write(args.out, {
        "tool": "kgprobe", "versions": common.version_of("torch", "transformers"),
        "threads": args.threads, "load_seconds": load, "statements": len(requests),
        "seconds": {"kgprobe": seconds},
        "passes": {"kgprobe": passes}, "scores": scores, "n_tokens": counts, "texts": texts})
    return 0


if __name__ == "__main__":
    sys.exit(main())
