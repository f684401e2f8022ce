"""Where kgprobe's scoring time goes, independent of the machine's load: the matrix-multiply FLOPs
each path executes against its arithmetic floor, and the share of operator time spent in matrix
multiplies (``torch.profiler`` with ``with_flops=True``; not a test, not a timing benchmark).

It scores the first requests of a ``scripts/bench_peers.py`` workload (``workload.json``) with
the same models (``--models``: the folder ``bench_peers.py`` built them in) and prints, per
request set: floor GFLOP (``bench_models`` counts, as in ``bench_peers.flops_per_request``),
executed matmul GFLOP and their ratio, the matmul share, and the five operators with the most
self time besides the matmuls. The fraction of the floor a path can reach is at most
floor / executed x matmul share x the matmul efficiency at the model's shapes.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_flops.py \
        --workload ~/.cache/kgprobe/bench/workload.json
    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_flops.py --bear P30,P103,P1412,P19
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_models
import torch
from torch.profiler import ProfilerActivity, profile

from probes.backends import load_scorer

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm")


def profiled(fn: Callable[[], Any]) -> tuple[float, float, list[tuple[str, float]]]:
    """(executed matmul GFLOP, matmul share of operator self time, the other top operators)
    of one call of ``fn`` after a warm-up call."""
    fn()
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        fn()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    flops = sum(e.flops for e in events if e.key in MATMULS)
    share = sum(e.self_cpu_time_total for e in events if e.key in MATMULS) / total
    others = sorted(((e.key, e.self_cpu_time_total / total) for e in events
                     if e.key not in MATMULS), key=lambda x: -x[1])[:5]
    return flops / 1e9, share, others


def report(label: str, floor: float, fn: Callable[[], Any]) -> None:
    gflop, share, others = profiled(fn)
    print(f"{label}: floor {floor / 1e9:.1f} GFLOP, executed matmuls {gflop:.1f} GFLOP "
          f"({gflop / (floor / 1e9):.2f}x the floor), {share:.0%} of operator time in matmuls; "
          "then " + ", ".join(f"{k} {v:.1%}" for k, v in others), flush=True)


def bear(model: str, relations: list[str], instances: int) -> None:
    """BEAR statements, ``loglik("", statement)`` each (the shared-prefix path), against the floor
    of ``scripts/bench_bear.py`` (an item's common token prefix once)."""
    import sys

    import bench_bear

    sys.path.insert(0, str(bench_bear.RUNNERS))
    import bear_common

    scorer = load_scorer(model, device="cpu", dtype="float32", boundary="whole")
    items = bench_bear.build_workload(bench_bear.DATA, relations, instances)["items"]
    texts = [[bear_common.statement(i["template"], i["subject"], a)[0] for a in i["answers"]]
             for i in items]
    requests = [("", t) for row in texts for t in row]
    params = sum(p.numel() for p in scorer.model.parameters())
    positions = bench_bear.floor_positions(texts, Path(scorer.model.name_or_path))
    floor = 2 * params * positions * len(requests)
    report(f"BEAR statements ({len(requests)}, {positions:.2f} floor positions each)", floor,
           lambda: scorer.loglik(requests))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path,
                        help="a bench_peers.py workload (sentences, PLL, seq2seq)")
    parser.add_argument("--bear", metavar="RELATIONS",
                        help="instead: BEAR's statements (scripts/bench_bear.py's workload: "
                        "these relations, --bear-instances each, every template) through "
                        "loglik, against bench_bear's floor")
    parser.add_argument("--bear-instances", type=int, default=1)
    parser.add_argument("--model", default="smollm2-135m", help="the causal model")
    parser.add_argument("--models", type=Path,
                        default=Path.home() / ".cache" / "kgprobe" / "bench" / "models",
                        help="folder with bert-base-random and t5-base-random")
    parser.add_argument("--sentences", type=int, default=50)
    parser.add_argument("--masked", type=int, default=6)
    parser.add_argument("--seq2seq", type=int, default=10, help="instances x their candidates")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.bear:
        bear(args.model, args.bear.split(","), args.bear_instances)
        return
    if args.workload is None:
        parser.error("--workload or --bear is required")
    work = json.loads(args.workload.read_text(encoding="utf-8"))

    if args.sentences:
        scorer = load_scorer(args.model, device="cpu", dtype="float32")
        chosen = work["sentences"][: args.sentences]
        params = sum(p.numel() for p in scorer.model.parameters())
        floor = 2 * params * sum(1 + s["tokens"] for s in chosen)
        pairs = [(scorer.tokenizer.bos_token, s["text"]) for s in chosen]
        report(f"sentences ({len(pairs)})", floor, lambda: scorer.loglik(pairs))
    if args.masked:
        folder = bench_models.build_bert(args.models / bench_models.MASKED)
        scorer = load_scorer(str(folder), device="cpu", dtype="float32")
        texts = [s["text"] for s in work["sentences"][: args.masked]]
        lengths = [len(scorer.tokenizer(t)["input_ids"]) for t in texts]
        floor = bench_models.pll_flops(bench_models.flop_parameters(folder), lengths)
        spans = [(t, (0, len(t))) for t in texts]
        report(f"masked PLL ({len(texts)} sentences)", floor, lambda: scorer.pll(spans))
    if args.seq2seq:
        folder = bench_models.build_t5(args.models / bench_models.SEQ2SEQ)
        scorer = load_scorer(str(folder), device="cpu", dtype="float32")
        tok = scorer.tokenizer
        instances = work["mc"][: args.seq2seq]
        floor = bench_models.seq2seq_flops(
            bench_models.flop_parameters(folder),
            [(len(tok(i["context"])["input_ids"]), [len(tok(c)["input_ids"])
                                                    for c in i["candidates"]])
             for i in instances])
        reqs = [(i["context"], c) for i in instances for c in i["candidates"]]
        report(f"seq2seq ({len(reqs)} requests)", floor, lambda: scorer.loglik(reqs))


if __name__ == "__main__":
    main()
