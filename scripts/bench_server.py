"""Benchmark (not a test): kgprobe's server backend against lm-evaluation-harness 0.4.13's
``gguf`` and ``local-completions`` backends, on the same llama.cpp server and the same
(context, continuation) workload, in one run. Reports requests/s (scored pairs per second and
HTTP requests sent) and agreement with kgprobe (largest |score difference|; instances whose
pick differs).

The server is ``python -m llama_cpp.server`` (llama-cpp-python, installed by scripts/setup.sh)
over a packaged GGUF (``--model``: smollm2-135m or gemma3-270m), started and stopped here;
lm-eval runs in the peers' environment (scripts/setup_peers.sh, with ``lm-eval[api]``).
``local-completions`` reads the tokenizer from the dequantised model folder
(``~/.cache/kgprobe/models/<alias>-*``, or ``--tokenizer DIR``). The workload is
``scripts/bench_workload.py``'s ``mc`` set (``--workload FILE``, cut to ``--mc`` instances)::

    .venv/bin/python scripts/bench_workload.py --model ~/.cache/kgprobe/models/<smollm2 folder> \\
        --out workload.json --mc 20 --candidates 5 --sentences 0
    nice -n 19 .venv/bin/python scripts/bench_server.py --workload workload.json --mc 20

Each tool scores the workload once, cold (kgprobe's score cache is not used: the scorer is
called directly; the server runs with ``--cache false``), one tool after the other, and
kgprobe a second time after the peers (the load of a shared machine moves between turns).

Cost: llama-cpp-python's server answers an echo with log-probabilities by sorting the whole
vocabulary in Python for every prompt token (``Llama._create_completion``), whatever ``logprobs``
asks; with SmolLM2's 49,152 tokens that is about 0.1-0.2 s per prompt token on one loaded core,
several seconds per pair, for every tool alike. The default workload (200 instances x 21
candidates) takes hours per tool: cut it with ``--mc`` (and ``bench_workload.py --candidates``),
or give ``--fast-top``: the server then does that sort with numpy
(``scripts/peers/llama_server_fast_top.py``; the same answers, the sort's cost gone), which
shows what the clients cost rather than what the sort costs.
Before the tools run, one pair is timed and the expected wall time printed. Wall times depend
on the machine's load (the load average is printed); the CPU seconds of the server and of the
client during each turn (``/proc``; the client's own ``process_time``) do much less, and are
printed per pair beside them.

Timeouts: llama-cpp-python's server computes one request at a time, so a request waits for
those before it. Under ``nice -n 19`` beside busy processes the server gets a few per cent of a
core (1.6 % measured here), a request then passes kgprobe's default 120 s timeout, and the
client gives up and sends it again while the server may still compute the abandoned one: the
earlier runs made no progress that way. Every client here gets ``--timeout`` (default an hour),
so none gives up; the run is slow, not wasted.
"""

from __future__ import annotations

import argparse
import glob
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


def start_server(gguf: Path, port: int, threads: int, log: Path,
                 fast_top: bool = False) -> subprocess.Popen[bytes]:
    server = ([str(ROOT / "scripts/peers/llama_server_fast_top.py")] if fast_top
              else ["-m", "llama_cpp.server"])
    args = [sys.executable, *server, "--model", str(gguf), "--host",
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


PEERS = ("gguf", "local-completions")


def tokenizer_dir(alias: str) -> str | None:
    """The dequantised folder of a packaged alias (it holds tokenizer.json), if there is one."""
    found = sorted(glob.glob(str(Path.home() / ".cache/kgprobe/models" / f"{alias}-*")))
    return next((f for f in found if Path(f, "tokenizer.json").exists()), None)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``): the server's work per
    turn, which the machine's load does not change as it changes wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def agreement(work: list[dict], ours: list[float], theirs: list[float]) -> tuple[float, int]:
    """Largest |score difference| over the pairs, and how many instances' picks differ."""
    diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
    differ, at = 0, 0
    for w in work:
        n = len(w["candidates"])
        a, b = ours[at:at + n], theirs[at:at + n]
        differ += a.index(max(a)) != b.index(max(b))
        at += n
    return diff, differ


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m", help="packaged GGUF alias")
    p.add_argument("--workload", type=Path, required=True)
    p.add_argument("--mc", type=int, default=20, help="multiple-choice instances used")
    p.add_argument("--threads", type=int, default=1, help="server threads")
    p.add_argument("--concurrency", type=int, default=2,
                   help="requests at once, for kgprobe and local-completions (gguf: 1)")
    p.add_argument("--peers", default=",".join(PEERS),
                   help="lm-eval backends, comma-separated (default: %(default)s)")
    p.add_argument("--tokenizer", default=None,
                   help="folder with the served model's tokenizer.json (local-completions)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds per request, kgprobe and local-completions (gguf has none)")
    p.add_argument("--fast-top", action="store_true",
                   help="serve with the top-log-probability sort done by numpy "
                        "(scripts/peers/llama_server_fast_top.py)")
    p.add_argument("--port", type=int, default=18431)
    p.add_argument("--peers-venv", type=Path,
                   default=Path(os.environ.get("KGPROBE_PEERS_VENV",
                                               Path.home() / ".cache/kgprobe/peers-venv")))
    args = p.parse_args()
    peers = [x for x in args.peers.split(",") if x]
    if unknown := sorted(set(peers) - set(PEERS)):
        p.error(f"--peers: unknown {', '.join(unknown)} (known: {', '.join(PEERS)})")
    tok = args.tokenizer or tokenizer_dir(args.model)
    if "local-completions" in peers and not tok:
        p.error(f"local-completions needs the tokenizer of {args.model}: no folder "
                f"~/.cache/kgprobe/models/{args.model}-* with tokenizer.json; pass --tokenizer")

    from probes.backends.registry import load_scorer
    from probes.engine.models import ALIASES

    work = json.loads(args.workload.read_text())["mc"][: args.mc]
    pairs = [(w["context"], c) for w in work for c in w["candidates"]]
    tmp = Path(tempfile.mkdtemp(prefix="kgp-bench-server-"))
    gguf, _, _ = ALIASES[args.model].locate(tmp)
    load_before = os.getloadavg()
    proc = start_server(Path(gguf), args.port, args.threads, tmp / "server.log", args.fast_top)
    url = f"http://127.0.0.1:{args.port}/v1"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    results = []
    try:
        scorer = load_scorer(f"server:{url}", num_concurrent=args.concurrency,
                             timeout=args.timeout)
        t0 = time.perf_counter()
        scorer.client.echo(["".join(pairs[0])])  # one pair, for the estimate (not timed below)
        one = time.perf_counter() - t0
        print(f"{len(pairs)} pairs; one pair took {one:.1f} s on the server: expect about "
              f"{one * len(pairs) / 60:.0f} min per tool, {len(peers) + 2} turns",
              file=sys.stderr, flush=True)
        sent, server0, client0 = scorer.client.requests_sent, cpu_seconds(proc.pid), \
            time.process_time()
        t0 = time.perf_counter()
        ours = [s.logprob for s in scorer.loglik(pairs)]
        ours_s = time.perf_counter() - t0
        results.append((f"kgprobe server backend (concurrency {args.concurrency})", ours_s,
                        scorer.client.requests_sent - sent, ours,
                        cpu_seconds(proc.pid) - server0, time.process_time() - client0))
        print(f"kgprobe: {ours_s:.0f} s", file=sys.stderr, flush=True)
        (tmp / "pairs.json").write_text(json.dumps(pairs))
        runner = ROOT / "scripts/peers/lmeval_server_runner.py"
        for peer in peers:
            out = tmp / f"{peer}.json"
            cmd = [str(args.peers_venv / "bin/python"), str(runner), peer, url,
                   str(tmp / "pairs.json"), str(out), "--concurrency", str(args.concurrency),
                   "--timeout", str(int(args.timeout))]
            if tok:
                cmd += ["--tokenizer", tok]
            server0 = cpu_seconds(proc.pid)
            subprocess.run(cmd, check=True, env=env)
            server_cpu = cpu_seconds(proc.pid) - server0
            got = json.loads(out.read_text())
            label = f"{got['tool']} {got['version']}"
            if peer == "local-completions":
                label += f" (num_concurrent {args.concurrency})"
            results.append((label, got["seconds"], len(pairs), got["scores"], server_cpu,
                            got["cpu_seconds"]))
            print(f"{label}: {got['seconds']:.0f} s", file=sys.stderr, flush=True)
        # kgprobe once more after the peers: on a shared machine the load moves between the
        # tools' turns, and the two kgprobe turns bracket the peers'
        sent, server0, client0 = scorer.client.requests_sent, cpu_seconds(proc.pid), \
            time.process_time()
        t0 = time.perf_counter()
        again = [s.logprob for s in scorer.loglik(pairs)]
        results.append(("kgprobe again, after the peers", time.perf_counter() - t0,
                        scorer.client.requests_sent - sent, again,
                        cpu_seconds(proc.pid) - server0, time.process_time() - client0))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    load_after = os.getloadavg()
    server = "llama-cpp-python server" + (", numpy top sort" if args.fast_top else "")
    print(f"model {args.model} ({server}, {args.threads} thread), {len(work)} "
          f"instances, {len(pairs)} (context, continuation) pairs; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after ({os.cpu_count()} CPUs)")
    print("| tool | pairs/s | seconds | HTTP requests | server CPU ms/pair | client CPU ms/pair "
          "| max abs score diff vs kgprobe | picks that differ |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, seconds, http, scores, server_cpu, client_cpu in results:
        diff, differ = agreement(work, ours, scores)
        print(f"| {label} | {len(pairs) / seconds:.3f} | {seconds:.1f} | {http} | "
              f"{1000 * server_cpu / len(pairs):.0f} | {1000 * client_cpu / len(pairs):.0f} | "
              f"{diff:.2e} | {differ}/{len(work)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
