"""The prepared GPU check (scripts/gpu_check.py) runs end to end in its CPU mode, so the script is
known to work before a GPU is lent: every throughput row is written, and every agreement check
(kgprobe against a plain transformers loop, BEAR's prefix tree against plain forwards, the
out-of-memory back-off, --device-map, torchrun, greedy generation against transformers'
``generate``) passes on tiny models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_gpu_check_cpu_tiny_mode_runs_every_part(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--cpu", "--tiny",
         "--no-lm-eval", "--out", str(out), "--shapes", "llama-1b,bert-large,t5-large"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "check.json").read_text())
    rows = {(r["shape"], r["workload"], r["tool"]) for r in data["throughput"]}
    assert rows == {("llama-1b", "mc", "kgprobe"), ("llama-1b", "sentences", "kgprobe"),
                    ("llama-1b", "topk", "kgprobe"), ("llama-1b", "mc", "plain-hf"),
                    ("llama-1b", "bear", "kgprobe"), ("llama-1b", "generate", "kgprobe"),
                    ("bert-large", "pll", "kgprobe"), ("t5-large", "seq2seq", "kgprobe")}
    checks = {a["check"]: a for a in data["agreement"]}
    assert set(checks) == {
        "llama-1b kgprobe = plain transformers (mc)",
        "llama-1b BEAR prefix tree = plain forwards",
        "llama-1b generate = transformers generate (greedy strings)",
        "OOM back-off exercised (a batch limit halved)",
        "scores under OOM back-off = unconstrained",
        "llama-1b --device-map split = whole model",
        "torchrun (gloo) = plain run",
    }
    assert all(a["ok"] for a in checks.values()), checks
    # whole sentences (empty contexts) run through the shared-prefix statements path
    assert data["oom_backoff"]["after"]["statements"][0] < data["oom_backoff"]["rows_before"]
    assert data["torchrun"]["world_size"] == 1
    assert data["matmul_gflops"] > 0
    # BEAR's statements, made here from ../shared/data/bear (no --prepare): 120 in tiny mode,
    # against a floor of fewer positions than their tokens
    bear = next(r for r in data["throughput"] if r["workload"] == "bear")
    assert bear["requests"] == 120 and bear["floor_per_s"] > 0
    assert "BEAR statements: made here (5,706)" in data["notes"]
    assert "| llama-1b | mc | kgprobe |" in (out / "check.md").read_text()
