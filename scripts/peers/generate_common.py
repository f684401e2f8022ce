"""Shared plumbing of the generation benchmark runners (standard library only).

``scripts/bench_generate.py`` writes the prompts and settings as JSON; each runner (kgprobe
with kgprobe's Python, lm-evaluation-harness in the peers' venv) generates greedily for every
prompt, at each batch size asked for, and writes::

    {"tool": "lm-eval", "versions": {...}, "load_seconds": 3.1,
     "runs": {"8": {"seconds": 40.2, "texts": [...]}, ...}}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", type=Path, required=True, help="HF-format model folder")
    parser.add_argument("--workload", type=Path, required=True, help="prompts and settings")
    parser.add_argument("--out", type=Path, required=True, help="result JSON to write")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", default="8", help="comma-separated batch sizes")
    return parser.parse_args()


def set_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    import torch

    torch.set_num_threads(n)


def run(tool: str, args: argparse.Namespace, versions: dict[str, str],
        load: Callable[[], object],
        generate: Callable[[object, list[str], int, list[str], int], list[str]],
        plain: Callable[[object, list[str], int, list[str], int], list[str]] | None = None
        ) -> int:
    """Load once, generate at every batch size, write the result JSON; with the workload's
    ``compare_plain`` and a ``plain`` function, each batch size again through it
    (``plain_runs``: kgprobe without prefix sharing)."""
    work = json.loads(args.workload.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    model = load()
    result: dict = {"tool": tool, "versions": versions, "threads": args.threads,
                    "load_seconds": time.perf_counter() - t0, "runs": {}}
    generate(model, work["prompts"][:1], 2, work["stop"], 1)  # warm-up, not timed
    for size in [int(s) for s in str(args.batch_sizes).split(",") if s]:
        t0 = time.perf_counter()
        texts = generate(model, work["prompts"], work["max_new_tokens"], work["stop"], size)
        result["runs"][str(size)] = {"seconds": time.perf_counter() - t0, "texts": texts}
        print(f"{tool} batch {size}: {result['runs'][str(size)]['seconds']:.1f} s",
              file=sys.stderr, flush=True)
        if plain is not None and work.get("compare_plain"):
            t0 = time.perf_counter()
            texts = plain(model, work["prompts"], work["max_new_tokens"], work["stop"], size)
            result.setdefault("plain_runs", {})[str(size)] = {
                "seconds": time.perf_counter() - t0, "texts": texts}
    args.out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return 0


def version_of(*names: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name.replace("_", "-"))
        except PackageNotFoundError:
            out[name] = "?"
    return out
