"""Side-by-side speed benchmark: kgprobe against a naive loop, lm-evaluation-harness and minicons.

One fixed, seeded workload (``scripts/bench_workload.py``) is scored by every tool, each in its
own process with the same model folder, fp32 on CPU and the same number of torch threads:

* ``kgprobe``  - ``probes.backends.registry.load_scorer(folder).loglik(requests)`` (``.pll``
  for the masked workload);
* ``naive``    - plain transformers, one forward pass and a full log-softmax per request;
* ``lm-eval``  - lm-evaluation-harness ``HFLM`` ``loglikelihood`` requests, batch 16 (also the
  seq2seq workload, ``backend="seq2seq"``);
* ``minicons`` - ``scorer.IncrementalLMScorer`` in batches of 16 (``MaskedLMScorer`` PLL for
  the masked workload).

Four request sets: multiple choice with shared contexts and independent sentences on the causal
model (``--model``, SmolLM2-135M by default); pseudo-log-likelihood of sentences on a
bert-base-shaped masked LM and (context, candidate) scoring on a t5-base-shaped seq2seq model,
both built from their configs with random weights (``scripts/bench_models.py``).

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

import bench_models
import bench_workload

SCRIPTS = Path(__file__).resolve().parent
RUNNERS = SCRIPTS / "peers"
TOOLS = {  # tool -> (runner script, runs in the peers' venv)
    "kgprobe": ("kgprobe_runner.py", False),
    "naive": ("naive_runner.py", False),
    "lm-eval": ("lmeval_runner.py", True),
    "minicons": ("minicons_runner.py", True),
}
WORKLOAD_LABELS = {"mc": "multiple choice (shared contexts)", "sentences": "independent sentences",
                   "masked": "masked-LM PLL of sentences (bert-base shape)",
                   "seq2seq": "seq2seq (context, candidate) (t5-base shape)"}
NAMES = tuple(WORKLOAD_LABELS)
GROUPS = {"causal": ("mc", "sentences"), "masked": ("masked",), "seq2seq": ("seq2seq",)}
SUPPORTS = {"kgprobe": set(NAMES), "naive": {"mc", "sentences"},
            "lm-eval": {"mc", "sentences", "seq2seq"}, "minicons": {"mc", "sentences", "masked"}}
QUICK_SIZES = (10, 50, 8, 4)  # multiple-choice instances, sentences, masked, seq2seq instances
NOT_INSTALLED = 3  # exit code of kgprobe_runner.py when the backends are missing
TARGETS = {"mc": {"lm-eval": 7.0, "minicons": 4.0}, "masked": {"minicons": 1.8}}  # issue 25
FLOOR_TARGET = {"sentences": 0.80, "seq2seq": 0.80, "masked": 0.90}
RATIOS = {"mc": ("lm-eval", "minicons"), "sentences": ("lm-eval", "minicons"),
          "masked": ("minicons",), "seq2seq": ("lm-eval",)}
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

    Aliases and GGUF files go through ``probes.engine.models.resolve``, which dequantises a GGUF
    once into the model cache; every tool then loads that same folder.
    """
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path.resolve()
    try:
        from probes.engine.models import resolve
    except ImportError as exc:
        raise BenchError(f"--model {name!r} is not a model folder and probes.engine.models is not "
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


def measure_matmul_gflops(threads: int, n: int = 2048, rounds: int = 5, device: str = "cpu",
                          dtype: str = "float32") -> float:
    """Best GFLOP/s of ``n x n`` matmuls with torch on ``threads`` CPU threads (or on the GPU,
    ``device="cuda"``, in ``dtype``; there ``n`` is raised to 8192 so the GPU is busy)."""
    import torch

    torch.set_num_threads(threads)
    gpu = device.startswith("cuda")
    n = max(n, 8192) if gpu else n
    a = torch.randn(n, n, dtype=getattr(torch, dtype), device=device)
    b = torch.randn(n, n, dtype=getattr(torch, dtype), device=device)

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize()

    for _ in range(2):
        torch.mm(a, b)
    sync()
    best = 0.0
    for _ in range(rounds):
        reps, t0 = 0, time.perf_counter()
        while True:
            torch.mm(a, b)
            reps += 1
            sync()
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


def add_model_workloads(workload: dict, n_masked: int, n_seq2seq: int, bert: Path | None,
                        t5: Path | None) -> dict:
    """Add the ``masked`` (the first ``n_masked`` sentences) and ``seq2seq`` (the first
    ``n_seq2seq`` multiple-choice instances) request sets, with token counts of the bert- and
    t5-shaped models' tokenizers (special tokens included)."""
    from transformers import AutoTokenizer

    out = dict(workload)
    out["masked"], out["seq2seq"] = [], []
    if bert is not None:
        tok = AutoTokenizer.from_pretrained(bert)
        out["masked"] = [{"text": s["text"], "tokens": len(tok(s["text"])["input_ids"])}
                         for s in workload["sentences"][:n_masked]]
    if t5 is not None:
        tok = AutoTokenizer.from_pretrained(t5)
        out["seq2seq"] = [{"context": i["context"], "candidates": i["candidates"],
                           "context_tokens": len(tok(i["context"])["input_ids"]),
                           "candidate_tokens": [len(tok(c)["input_ids"])
                                                for c in i["candidates"]]}
                          for i in workload["mc"][:n_seq2seq]]
    return out


def flops_per_request(workload: dict, params: dict[str, int]) -> dict[str, float]:
    """Arithmetic floor FLOPs per request: 2 FLOPs (one multiply-add) per parameter per token
    that the parameter must multiply; work that is the same for several requests counts once.

    Causal (``params["causal"]``): tokens as in :func:`tokens_per_request`.

    Masked PLL (``params["masked"]``: encoder layers, ``params["masked_head"]``: MLM head,
    :func:`bench_models.flop_parameters`): a sentence of n tokens ([CLS] and [SEP] included) has
    n - 2 masked copies; each copy runs its n tokens through the encoder layers and the head at
    its masked position only (the other positions' logits are not part of the score), so
    (n - 2) x (2 x masked x n + 2 x masked_head). (Until issue 25 the head was counted at all
    n positions of every copy, which made the floor about 20% too low.)

    Seq2seq (``encoder``, ``cross_kv``, ``decoder``; ``decoder`` holds the LM head): per
    instance, a context of C tokens and candidates of T_1 .. T_k target tokens. The encoder and
    the decoder's cross-attention key/value projections read the C context tokens once:
    2 x (encoder + cross_kv) x C. Every target starts from the same decoder start token, so the
    decoder position that reads it (and predicts every candidate's first token) is the same for
    all k candidates: 1 position; then candidate i runs its first T_i - 1 target tokens as
    decoder inputs: 2 x decoder x (1 + sum_i (T_i - 1)). (Until issue 25 the cross-attention
    keys/values and the start position were counted once per candidate, T_i positions each,
    the same as a per-candidate decoder pass; the multiple-choice floor already counted a
    shared context once.)

    >>> w = {"mc": [], "sentences": [], "masked": [{"tokens": 5}],
    ...      "seq2seq": [{"context_tokens": 10, "candidate_tokens": [2, 4]}]}
    >>> p = {"causal": 1, "masked": 1, "masked_head": 2, "encoder": 3, "cross_kv": 1,
    ...      "decoder": 5}
    >>> flops_per_request(w, p)
    {'masked': 42.0, 'seq2seq': 65.0}
    """
    out = {k: 2 * params["causal"] * v for k, v in tokens_per_request(workload).items()}
    if workload.get("masked"):
        total = bench_models.pll_flops(params, [s["tokens"] for s in workload["masked"]])
        out["masked"] = total / len(workload["masked"])
    if workload.get("seq2seq"):
        n = sum(len(i["candidate_tokens"]) for i in workload["seq2seq"])
        total = bench_models.seq2seq_flops(
            params, [(i["context_tokens"], i["candidate_tokens"]) for i in workload["seq2seq"]])
        out["seq2seq"] = total / n
    return out


def floor_rate(gflops: float, params: int, tokens: float) -> float:
    """Requests/s at the arithmetic floor: 2 x params FLOPs per processed token.

    >>> round(floor_rate(185.0, 134_515_008, 18.5), 1)
    37.2
    """
    return gflops * 1e9 / (2 * params * tokens)


def run_tool(tool: str, python: Path, model: Path, workload: Path, out: Path,
             args: argparse.Namespace, only: Sequence[str]) -> tuple[int, dict | None]:
    """Run one tool's runner on the request sets ``only`` in its own process; return (exit
    code, its result JSON)."""
    script, _ = TOOLS[tool]
    cmd = [str(python), str(RUNNERS / script), "--model", str(model), "--workload",
           str(workload), "--out", str(out), "--threads", str(args.threads),
           "--batch-size", str(args.batch_size), "--device", args.device, "--dtype", args.dtype]
    for name in only:
        cmd += ["--only", name]
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(args.threads)
    env["TOKENIZERS_PARALLELISM"] = "false"
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    print(f"\n== {tool} ({', '.join(only)}): {model.name} ({python})", flush=True)
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


def report(results: dict[str, dict], workload: dict, gflops: float,
           params: dict[str, int]) -> str:
    """The markdown tables: speed, floor, score differences and the issue's targets."""
    tokens = tokens_per_request(workload)
    flops = flops_per_request(workload, params)
    lines = [
        f"Machine matmul: {gflops:.1f} GFLOP/s; parameters: "
        + ", ".join(f"{k} {v:,}" for k, v in params.items()),
        "",
        "| tool | workload | requests | seconds | requests/s | kgprobe speed-up | "
        "fraction of floor |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name in NAMES:
        if name not in flops:
            continue
        floor = gflops * 1e9 / flops[name]
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
    for name in NAMES:
        for a, b, diff, idx in score_differences(results, name):
            lines.append(f"| {name} | {a} | {b} | {diff:.2e} | {idx} |")
    lines += ["", *ratio_lines(results), "", *check_targets(results, flops, gflops)]
    return "\n".join(lines)


def ratios(results: dict[str, dict]) -> dict[str, dict[str, float]]:
    """kgprobe's requests/s over each peer's, per workload (what RATIOS names).

    >>> r = {"kgprobe": {"workloads": {"masked": {"requests": 10, "seconds": 1.0}}},
    ...      "minicons": {"workloads": {"masked": {"requests": 10, "seconds": 4.0}}}}
    >>> ratios(r)
    {'masked': {'minicons': 4.0}}
    """
    kg = results.get("kgprobe", {}).get("workloads", {})
    out: dict[str, dict[str, float]] = {}
    for name, peers in RATIOS.items():
        for peer in peers:
            w = results.get(peer, {}).get("workloads", {}).get(name)
            if name in kg and w:
                rate = kg[name]["requests"] / kg[name]["seconds"]
                out.setdefault(name, {})[peer] = rate / (w["requests"] / w["seconds"])
    return out


def ratio_lines(results: dict[str, dict]) -> list[str]:
    """The causal, masked and seq2seq speed-ups of kgprobe, one line each."""
    got = ratios(results)
    kinds = {"causal": ("mc", "sentences"), "masked": ("masked",), "seq2seq": ("seq2seq",)}
    out = ["Ratios (kgprobe requests/s over the peer's, same run):"]
    for kind, names in kinds.items():
        parts = [f"{n} {v:.2f}x {peer}" for n in names for peer, v in got.get(n, {}).items()]
        out.append(f"- {kind}: " + ("; ".join(parts) if parts else "not run"))
    return out


def check_targets(results: dict[str, dict], flops: dict[str, float],
                  gflops: float) -> list[str]:
    """One line per target (issues 3, 16 and 25) that this run can check."""
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
        if name in kg and name in flops:
            frac = kg[name]["requests"] / kg[name]["seconds"] / (gflops * 1e9 / flops[name])
            out.append(f"- {name}: kgprobe at {frac:.0%} of the floor (target >= {need:.0%}): "
                       + ("met" if frac >= need else "NOT met"))
    for name in NAMES:
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
    parser.add_argument("--tools", default="kgprobe,lm-eval,minicons",
                        help=f"comma-separated subset of {', '.join(TOOLS)} (default: all "
                        "but the slow naive loop)")
    parser.add_argument("--only", choices=NAMES, action="append",
                        help="run only this request set (repeatable)")
    parser.add_argument("--quick", action="store_true",
                        help="small subset: {} instances, {} sentences, {} masked sentences, "
                        "{} seq2seq instances".format(*QUICK_SIZES))
    parser.add_argument("--sizes", metavar="MC,SENT",
                        help="reduced causal workload: the first MC multiple-choice instances "
                        "and SENT sentences (default: all, 200 and 1,000)")
    parser.add_argument("--masked-sentences", type=int, default=60,
                        help="sentences in the masked-LM PLL workload (default 60)")
    parser.add_argument("--seq2seq-instances", type=int, default=40,
                        help="multiple-choice instances (x 21 candidates) in the seq2seq "
                        "workload (default 40)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for every tool")
    parser.add_argument("--device", default="cpu",
                        help="cpu (default) or cuda: every tool runs on this device; on cuda the "
                        "floor is the GPU's measured matmul rate in --dtype")
    parser.add_argument("--dtype", default=None,
                        help="float32 or bfloat16 for every tool (default: float32 on the CPU, "
                        "bfloat16 on cuda)")
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
    args.dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
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
    wanted = list(args.only or NAMES)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        model = resolve_model(args.model)
        params = {"causal": count_parameters(model)}
        if args.workload:
            workload = json.loads(args.workload.read_text(encoding="utf-8"))
        else:
            workload = bench_workload.generate(model, args.seed)
        sizes = QUICK_SIZES if args.quick else None
        if args.sizes and not args.quick:
            mc, sent = (int(x) for x in args.sizes.split(","))
            sizes = (mc, sent, args.masked_sentences, args.seq2seq_instances)
        if sizes is None:
            sizes = (len(workload["mc"]), len(workload["sentences"]), args.masked_sentences,
                     args.seq2seq_instances)
        workload = bench_workload.subset(workload, *sizes[:2])
        folders = {"causal": model}
        if "masked" in wanted:
            folders["masked"] = bench_models.build_bert(args.out / "models" / bench_models.MASKED)
            params.update(bench_models.flop_parameters(folders["masked"]))
        if "seq2seq" in wanted:
            folders["seq2seq"] = bench_models.build_t5(args.out / "models" / bench_models.SEQ2SEQ)
            params.update(bench_models.flop_parameters(folders["seq2seq"]))
        full = bench_workload.subset(workload, len(workload["mc"]), len(workload["sentences"]))
        workload = add_model_workloads(full, sizes[2], sizes[3], folders.get("masked"),
                                       folders.get("seq2seq"))
    except (BenchError, bench_workload.WorkloadError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    workload_file = args.out / "workload.json"
    workload_file.write_text(json.dumps(workload), encoding="utf-8")
    print(f"model: {model} ({params['causal']:,} parameters); workload: {workload_file} "
          f"({sum(len(i['candidates']) for i in workload['mc'])} multiple-choice requests, "
          f"{len(workload['sentences'])} sentences, {len(workload['masked'])} masked-LM "
          f"sentences, {sum(len(i['candidates']) for i in workload['seq2seq'])} seq2seq "
          f"requests); threads: {args.threads}")
    gflops = gflops_before = measure_matmul_gflops(args.threads, device=args.device,
                                                   dtype=args.dtype)
    print(f"{args.dtype} matmul on {args.device} ({args.threads} threads): {gflops:.1f} GFLOP/s")

    results: dict[str, dict] = {}
    failed: list[str] = []
    for group, names in GROUPS.items():
        for tool in tools:
            only = [n for n in names if n in wanted and n in SUPPORTS[tool]]
            if not only or group not in folders:
                continue
            python = peer_python if TOOLS[tool][1] else Path(sys.executable)
            code, res = run_tool(tool, python, folders[group], workload_file,
                                 args.out / f"{tool}-{group}.json", args, only)
            if res is not None:
                entry = results.setdefault(tool, {**res, "workloads": {}})
                entry["workloads"].update(res["workloads"])
            elif tool == "kgprobe" and code == NOT_INSTALLED:
                print("kgprobe: skipped (probes.backends.registry is not available here)",
                      file=sys.stderr)
                failed.append(f"{tool} ({group})")
            else:
                print(f"{tool} ({group}): failed (exit code {code}); see its output above",
                      file=sys.stderr)
                failed.append(f"{tool} ({group})")
    gflops_after = measure_matmul_gflops(args.threads, device=args.device, dtype=args.dtype)
    print(f"\n{args.dtype} matmul after the tools: {gflops_after:.1f} GFLOP/s")
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
        "device": args.device, "dtype": args.dtype,
        "gflops_before_after": [gflops_before, gflops_after],
        "quick": args.quick, "tools": tools, "failed": failed,
        "tokens_per_request": tokens_per_request(workload),
        "flops_per_request": flops_per_request(workload, params), "ratios": ratios(results),
        "results": {t: {k: {"requests": w["requests"], "seconds": w["seconds"]}
                        for k, w in r["workloads"].items()} for t, r in results.items()},
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (args.out / "table.md").write_text(table + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
