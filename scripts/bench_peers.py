"""Side-by-side speed benchmark: kgprobe against a naive loop, lm-evaluation-harness and minicons.

One fixed, seeded workload (``scripts/bench_workload.py``) is scored by every tool, each in its
own process with the same model folder, fp32 on CPU and the same number of torch threads:

* ``kgprobe``  - ``probes.backends.registry.load_scorer(folder).loglik(requests)``;
* ``naive``    - plain transformers, one forward pass and a full log-softmax per request;
* ``lm-eval``  - lm-evaluation-harness ``HFLM`` ``loglikelihood`` requests, batch 16;
* ``minicons`` - ``scorer.IncrementalLMScorer`` in batches of 16.

The peers run with the Python of their own virtual environment (``scripts/setup_peers.sh``;
``KGPROBE_PEERS_VENV``, default ``~/.cache/kgprobe/peers-venv``). The script prints requests/s
per tool and workload, kgprobe's speed-up over each tool, the arithmetic floor from the
machine's measured fp32 matmul rate, and the largest score difference between every pair of
tools on the same requests. Results (workload, per-tool JSON, summary) go to ``--out``.

Usage::

    scripts/setup_peers.sh                      # once
    .venv/bin/python scripts/bench_peers.py     # full run (about 15 minutes on a quiet 2-core CPU)
    .venv/bin/python scripts/bench_peers.py --quick --tools kgprobe,lm-eval
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import bench_workload

SCRIPTS = Path(__file__).resolve().parent
RUNNERS = SCRIPTS / "peers"
TOOLS = {  # tool -> (runner script, runs in the peers' venv)
    "kgprobe": ("kgprobe_runner.py", False),
    "naive": ("naive_runner.py", False),
    "lm-eval": ("lmeval_runner.py", True),
    "minicons": ("minicons_runner.py", True),
}
WORKLOAD_LABELS = {"mc": "multiple choice (shared contexts)", "sentences": "independent sentences"}
QUICK_SIZES = (10, 50)  # multiple-choice instances, sentences
NOT_INSTALLED = 3  # exit code of kgprobe_runner.py when the backends are missing
TARGETS = {"mc": {"lm-eval": 3.0, "minicons": 4.0}}
FLOOR_TARGET = {"sentences": 0.70}
SCORE_TOLERANCE = 5e-4
NOISE = 0.15  # relative change of the matmul rate between start and end that flags a busy machine


class BenchError(Exception):
    """The benchmark cannot run (missing model, peers venv, workload)."""


def default_peers_venv() -> Path:
    """``$KGPROBE_PEERS_VENV`` or ``~/.cache/kgprobe/peers-venv``."""
    env = os.environ.get("KGPROBE_PEERS_VENV")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kgprobe" / "peers-venv"


def resolve_model(name: str) -> Path:
    """The Hugging Face format folder for ``name`` (an alias such as ``smollm2-135m`` or a folder).

    Aliases and GGUF files go through ``probes.models.resolve``, which dequantises a GGUF once
    into the model cache; every tool then loads that same folder.
    """
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path.resolve()
    try:
        from probes.models import resolve
    except ImportError as exc:
        raise BenchError(f"--model {name!r} is not a model folder and probes.models is not "
                         f"importable ({exc}); pass a folder with config.json") from exc
    source = resolve(name)
    folder = Path(source.location)
    if not (folder / "config.json").is_file():
        raise BenchError(f"--model {name!r} resolved to {source.location!r}, which is not a "
                         "local model folder; the benchmark needs a local folder")
    return folder


def count_parameters(folder: Path) -> int:
    """Number of parameters in the folder's ``*.safetensors`` files (read from the headers).

    Tied weights are stored once, so this is the count that does arithmetic per token.
    """
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise BenchError(f"{folder}: no .safetensors weights to count parameters from")
    total = 0
    for file in files:
        with file.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        for key, info in header.items():
            if key != "__metadata__":
                n = 1
                for dim in info["shape"]:
                    n *= dim
                total += n
    return total


def measure_matmul_gflops(threads: int, n: int = 2048, rounds: int = 5) -> float:
    """Best fp32 GFLOP/s of ``n x n`` matmuls with torch on ``threads`` CPU threads."""
    import torch

    torch.set_num_threads(threads)
    a = torch.randn(n, n, dtype=torch.float32)
    b = torch.randn(n, n, dtype=torch.float32)
    for _ in range(2):
        torch.mm(a, b)
    best = 0.0
    for _ in range(rounds):
        reps, t0 = 0, time.perf_counter()
        while True:
            torch.mm(a, b)
            reps += 1
            elapsed = time.perf_counter() - t0
            if elapsed > 0.5:
                break
        best = max(best, 2 * n**3 * reps / elapsed / 1e9)
    return best


def tokens_per_request(workload: dict) -> dict[str, float]:
    """Tokens the model must process per request, each shared context counted once.

    Multiple choice: context tokens once per instance plus every candidate's tokens.
    Sentences: the BOS token plus the sentence tokens.

    >>> w = {"mc": [{"context_tokens": 10, "candidate_tokens": [1, 3]}],
    ...      "sentences": [{"tokens": 11}, {"tokens": 13}]}
    >>> tokens_per_request(w)
    {'mc': 7.0, 'sentences': 13.0}
    """
    out = {}
    if workload["mc"]:
        n_req = sum(len(i["candidate_tokens"]) for i in workload["mc"])
        n_tok = sum(i["context_tokens"] + sum(i["candidate_tokens"]) for i in workload["mc"])
        out["mc"] = n_tok / n_req
    if workload["sentences"]:
        sents = workload["sentences"]
        out["sentences"] = sum(1 + s["tokens"] for s in sents) / len(sents)
    return out


def floor_rate(gflops: float, params: int, tokens: float) -> float:
    """Requests/s at the arithmetic floor: 2 x params FLOPs per processed token.

    >>> round(floor_rate(185.0, 134_515_008, 18.5), 1)
    37.2
    """
    return gflops * 1e9 / (2 * params * tokens)


def run_tool(tool: str, python: Path, model: Path, workload: Path, out: Path,
             args: argparse.Namespace) -> tuple[int, dict | None]:
    """Run one tool's runner in its own process; return (exit code, its result JSON)."""
    script, _ = TOOLS[tool]
    cmd = [str(python), str(RUNNERS / script), "--model", str(model), "--workload",
           str(workload), "--out", str(out), "--threads", str(args.threads),
           "--batch-size", str(args.batch_size)]
    for name in args.only or ():
        cmd += ["--only", name]
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(args.threads)
    env["TOKENIZERS_PARALLELISM"] = "false"
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    print(f"\n== {tool}: {' '.join(cmd[1:2])} ({python})", flush=True)
    out.unlink(missing_ok=True)
    try:
        proc = subprocess.run(cmd, env=env, timeout=args.timeout, check=False)
    except subprocess.TimeoutExpired:
        print(f"{tool}: timed out after {args.timeout} s", file=sys.stderr)
        return 124, None
    if proc.returncode != 0 or not out.is_file():
        return proc.returncode or 1, None
    return 0, json.loads(out.read_text(encoding="utf-8"))


def score_differences(results: dict[str, dict], workload: str) -> list[tuple[str, str, float, int]]:
    """Largest absolute score difference (and its request index) for every pair of tools.

    >>> r = {"a": {"workloads": {"mc": {"scores": [-1.0, -2.0]}}},
    ...      "b": {"workloads": {"mc": {"scores": [-1.0, -2.5]}}}}
    >>> score_differences(r, "mc")
    [('a', 'b', 0.5, 1)]
    """
    have = [t for t, r in results.items() if workload in r["workloads"]]
    out = []
    for a, b in itertools.combinations(have, 2):
        sa = results[a]["workloads"][workload]["scores"]
        sb = results[b]["workloads"][workload]["scores"]
        diffs = [abs(x - y) for x, y in zip(sa, sb, strict=True)]
        worst = max(range(len(diffs)), key=diffs.__getitem__)
        out.append((a, b, diffs[worst], worst))
    return out


def report(results: dict[str, dict], workload: dict, gflops: float, params: int) -> str:
    """The markdown tables: speed, floor, score differences and the issue's targets."""
    tokens = tokens_per_request(workload)
    lines = [
        f"Machine fp32 matmul: {gflops:.1f} GFLOP/s; model parameters: {params:,}",
        "",
        "| tool | workload | requests | seconds | requests/s | kgprobe speed-up | "
        "fraction of floor |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("mc", "sentences"):
        if name not in tokens:
            continue
        floor = floor_rate(gflops, params, tokens[name])
        kg = results.get("kgprobe", {}).get("workloads", {}).get(name)
        kg_rate = kg["requests"] / kg["seconds"] if kg else None
        for tool, res in results.items():
            w = res["workloads"].get(name)
            if not w:
                continue
            rate = w["requests"] / w["seconds"]
            ratio = f"{kg_rate / rate:.2f}x" if kg_rate else "n/a"
            lines.append(f"| {tool} | {name} | {w['requests']} | {w['seconds']:.1f} | "
                         f"{rate:.1f} | {ratio} | {rate / floor:.0%} |")
        lines.append(f"| *floor* | {name} | | | {floor:.1f} | | 100% |")
    lines += ["", "Tokens processed per request (shared contexts once): "
              + ", ".join(f"{k} {v:.2f}" for k, v in tokens.items()), ""]
    lines += ["| workload | tool A | tool B | max abs score difference | at request |",
              "|---|---|---|---:|---:|"]
    for name in ("mc", "sentences"):
        for a, b, diff, idx in score_differences(results, name):
            lines.append(f"| {name} | {a} | {b} | {diff:.2e} | {idx} |")
    lines += ["", *check_targets(results, tokens, gflops, params)]
    return "\n".join(lines)


def check_targets(results: dict[str, dict], tokens: dict[str, float], gflops: float,
                  params: int) -> list[str]:
    """One line per target of issue 3 that this run can check."""
    out = ["Targets:"]
    kg = results.get("kgprobe", {}).get("workloads", {})
    for name, peers in TARGETS.items():
        if name not in kg:
            continue
        kg_rate = kg[name]["requests"] / kg[name]["seconds"]
        for peer, need in peers.items():
            w = results.get(peer, {}).get("workloads", {}).get(name)
            if w:
                got = kg_rate / (w["requests"] / w["seconds"])
                out.append(f"- {name}: kgprobe / {peer} = {got:.2f}x (target >= {need}x): "
                           + ("met" if got >= need else "NOT met"))
    for name, need in FLOOR_TARGET.items():
        if name in kg and name in tokens:
            frac = kg[name]["requests"] / kg[name]["seconds"] / floor_rate(
                gflops, params, tokens[name])
            out.append(f"- {name}: kgprobe at {frac:.0%} of the floor (target >= {need:.0%}): "
                       + ("met" if frac >= need else "NOT met"))
    for name in ("mc", "sentences"):
        for a, b, diff, _ in score_differences(results, name):
            if "kgprobe" in (a, b):
                out.append(f"- {name}: |kgprobe - {b if a == 'kgprobe' else a}| <= "
                           f"{diff:.1e} (target <= {SCORE_TOLERANCE:.0e}): "
                           + ("met" if diff <= SCORE_TOLERANCE else "NOT met"))
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m",
                        help="model alias, .gguf file or HF-format folder (default smollm2-135m)")
    parser.add_argument("--tools", default=",".join(TOOLS),
                        help=f"comma-separated subset of {', '.join(TOOLS)}")
    parser.add_argument("--only", choices=tuple(WORKLOAD_LABELS), action="append",
                        help="run only this request set (repeatable)")
    parser.add_argument("--quick", action="store_true",
                        help="small subset: {} instances, {} sentences".format(*QUICK_SIZES))
    parser.add_argument("--threads", type=int, default=2, help="torch threads for every tool")
    parser.add_argument("--batch-size", type=int, default=16,
                        help="batch size for lm-eval and minicons (kgprobe chooses its own)")
    parser.add_argument("--peers-venv", type=Path, default=default_peers_venv())
    parser.add_argument("--workload", type=Path, help="reuse this workload JSON")
    parser.add_argument("--seed", type=int, default=bench_workload.DEFAULT_SEED)
    parser.add_argument("--out", type=Path,
                        default=Path.home() / ".cache" / "kgprobe" / "bench",
                        help="folder for the workload, per-tool results and summary")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per tool")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return the exit code."""
    args = parse_args(argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        print(f"error: unknown tool(s) {', '.join(unknown)}; choose from {', '.join(TOOLS)}",
              file=sys.stderr)
        return 2
    peer_python = args.peers_venv / "bin" / "python"
    if any(TOOLS[t][1] for t in tools) and not peer_python.is_file():
        print(f"error: no peers venv at {args.peers_venv}; run scripts/setup_peers.sh "
              "(or set KGPROBE_PEERS_VENV / --peers-venv)", file=sys.stderr)
        return 2
    try:
        model = resolve_model(args.model)
        params = count_parameters(model)
        if args.workload:
            workload = json.loads(args.workload.read_text(encoding="utf-8"))
        else:
            workload = bench_workload.generate(model, args.seed)
    except (BenchError, bench_workload.WorkloadError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.quick:
        workload = bench_workload.subset(workload, *QUICK_SIZES)
    args.out.mkdir(parents=True, exist_ok=True)
    workload_file = args.out / "workload.json"
    workload_file.write_text(json.dumps(workload), encoding="utf-8")
    print(f"model: {model} ({params:,} parameters); workload: {workload_file} "
          f"({sum(len(i['candidates']) for i in workload['mc'])} multiple-choice requests, "
          f"{len(workload['sentences'])} sentences); threads: {args.threads}")
    gflops = gflops_before = measure_matmul_gflops(args.threads)
    print(f"fp32 matmul (2048x2048, {args.threads} threads): {gflops:.1f} GFLOP/s")

    results: dict[str, dict] = {}
    failed: list[str] = []
    for tool in tools:
        python = peer_python if TOOLS[tool][1] else Path(sys.executable)
        code, res = run_tool(tool, python, model, workload_file,
                             args.out / f"{tool}.json", args)
        if res is not None:
            results[tool] = res
        elif tool == "kgprobe" and code == NOT_INSTALLED:
            print("kgprobe: skipped (probes.backends.registry is not available in this checkout)",
                  file=sys.stderr)
            failed.append(tool)
        else:
            print(f"{tool}: failed (exit code {code}); see its output above", file=sys.stderr)
            failed.append(tool)
    gflops_after = measure_matmul_gflops(args.threads)
    print(f"\nfp32 matmul after the tools: {gflops_after:.1f} GFLOP/s")
    if abs(gflops_after - gflops) > NOISE * max(gflops, gflops_after):
        print(f"WARNING: the matmul rate changed by more than {NOISE:.0%} during the run "
              f"({gflops:.1f} -> {gflops_after:.1f} GFLOP/s): the machine is busy and the "
              "timings are noisy; rerun on a quiet machine", file=sys.stderr)
    gflops = max(gflops, gflops_after)
    if args.only:
        workload = {**workload, **{k: [] for k in WORKLOAD_LABELS if k not in args.only}}
    table = report(results, workload, gflops, params)
    print("\n" + table)
    summary = {
        "model": str(model), "parameters": params, "gflops": gflops, "threads": args.threads,
        "gflops_before_after": [gflops_before, gflops_after],
        "quick": args.quick, "tools": tools, "failed": failed,
        "tokens_per_request": tokens_per_request(workload),
        "results": {t: {k: {"requests": w["requests"], "seconds": w["seconds"]}
                        for k, w in r["workloads"].items()} for t, r in results.items()},
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (args.out / "table.md").write_text(table + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
