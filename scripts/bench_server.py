"""Benchmark (not a test): kgprobe's server backend against lm-evaluation-harness 0.4.13's
``gguf`` backend, on the same llama.cpp server and the same (context, continuation) workload,
in one run. Reports requests/s (scored pairs per second and HTTP requests sent) and agreement
(largest score difference; same pick per multiple-choice instance).

The server is ``python -m llama_cpp.server`` (llama-cpp-python, built by scripts/setup.sh) over a
packaged GGUF (``--model``: smollm2-135m or gemma3-270m), started and stopped here; lm-eval runs
in the peers' environment (scripts/setup_peers.sh). The workload is ``scripts/bench_workload.py``'s
``mc`` set (``--workload FILE``, cut to ``--mc`` instances)::

    .venv/bin/python scripts/bench_workload.py --model ~/.cache/kgprobe/models/<smollm2 folder> \\
        --out workload.json --mc 20 --candidates 5 --sentences 0
    .venv/bin/python scripts/bench_server.py --workload workload.json --mc 20

Each tool scores the workload once, cold (kgprobe's score cache is not used: the scorer is
called directly). Timings depend on the machine's load; say how loaded it was.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def start_server(gguf: Path, port: int, threads: int, log: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host",
            "127.0.0.1", "--port", str(port), "--n_threads", str(threads), "--n_threads_batch",
            str(threads), "--n_ctx", "512", "--logits_all", "true", "--cache", "false",
            "--verbose", "false",
            # SmolLM2's GGUF adds no BOS, and llama-cpp-python's echo is then shifted by one
            # token (docs/scale.md section 7); both tools get the aligned server
            "--kv_overrides", "tokenizer.ggml.add_bos_token=bool:true"]
    proc = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise SystemExit("llama_cpp.server exited: " + log.read_text()[-2000:])
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("llama_cpp.server did not start within 180 s") from None
            time.sleep(0.3)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m", help="packaged GGUF alias")
    p.add_argument("--workload", type=Path, required=True)
    p.add_argument("--mc", type=int, default=20, help="multiple-choice instances used")
    p.add_argument("--threads", type=int, default=1, help="server threads")
    p.add_argument("--concurrency", type=int, default=2, help="kgprobe's requests at once")
    p.add_argument("--port", type=int, default=18431)
    p.add_argument("--peers-venv", type=Path,
                   default=Path(os.environ.get("KGPROBE_PEERS_VENV",
                                               Path.home() / ".cache/kgprobe/peers-venv")))
    args = p.parse_args()

    from probes.backends.registry import load_scorer
    from probes.models import ALIASES

    work = json.loads(args.workload.read_text())["mc"][: args.mc]
    pairs = [(w["context"], c) for w in work for c in w["candidates"]]
    tmp = Path(tempfile.mkdtemp(prefix="kgp-bench-server-"))
    gguf, _, _ = ALIASES[args.model].locate(tmp)
    proc = start_server(Path(gguf), args.port, args.threads, tmp / "server.log")
    url = f"http://127.0.0.1:{args.port}/v1"
    try:
        scorer = load_scorer(f"server:{url}", num_concurrent=args.concurrency)
        sent = scorer.client.requests_sent
        t0 = time.perf_counter()
        ours = [s.logprob for s in scorer.loglik(pairs)]
        ours_s = time.perf_counter() - t0
        ours_http = scorer.client.requests_sent - sent
        (tmp / "pairs.json").write_text(json.dumps(pairs))
        runner = ROOT / "scripts/peers/lmeval_server_runner.py"
        subprocess.run([str(args.peers_venv / "bin/python"), str(runner), "gguf", url,
                        str(tmp / "pairs.json"), str(tmp / "lmeval.json")], check=True)
        peer = json.loads((tmp / "lmeval.json").read_text())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    theirs = peer["scores"]
    diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
    same = 0
    at = 0
    for w in work:
        n = len(w["candidates"])
        a, b = ours[at:at + n], theirs[at:at + n]
        same += a.index(max(a)) == b.index(max(b))
        at += n
    print(f"model {args.model} (llama-cpp-python server, {args.threads} thread), {len(work)} "
          f"instances, {len(pairs)} (context, continuation) pairs")
    print("| tool | pairs/s | HTTP requests | seconds |")
    print("|---|---:|---:|---:|")
    print(f"| kgprobe server backend (concurrency {args.concurrency}) | "
          f"{len(pairs) / ours_s:.2f} | {ours_http} | {ours_s:.1f} |")
    print(f"| {peer['tool']} {peer['version']} | {len(pairs) / peer['seconds']:.2f} | "
          f"{len(pairs)} | {peer['seconds']:.1f} |")
    print(f"agreement: max |score difference| {diff:.2e}; same pick on {same}/{len(work)} "
          "instances")
    return 0


if __name__ == "__main__":
    sys.exit(main())
