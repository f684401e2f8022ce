"""The GPU check's hidden-state step (``scripts/gpu_check.py`` calls :func:`hidden_step` for
each causal shape): kgprobe's extraction of every layer against the same forwards without
hidden states, and its stored states against plain transformers.

On the check's random-weight model: ``n`` texts (BEAR's statements when the check has them,
else its sentences; 4,000 on a GPU, 40 in ``--tiny``) go

1. through the body's forwards with the last layer only (the baseline, nothing kept);
2. through :func:`probes.engine.hidden_cache.extract_cached`: every layer at the last token and
   the mean, float16 shards written to a temporary results folder.

The throughput ratio (2) / (1) is recorded (target >= 0.90), and the stored last-layer state at
the last token of the first texts is compared with ``model(..., output_hidden_states=True)`` run
on each text alone: the largest difference relative to the row's largest magnitude, within
float16 storage plus the dtype's batching noise. Results go to ``check.json`` under
``hidden`` and into the notes; a failed agreement is an agreement row, so the check fails.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

SIZES = {"tiny": 40, "full": 4000}
COMPARED = 16


def timed(device: torch.device, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of ``fn()`` (the device synchronised before and after) and its result."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0, out


def hidden_texts(check: Any) -> list[str]:
    n = SIZES["tiny" if check.args.tiny else "full"]
    if check.bear_data is not None:
        texts = list(check.bear_data["statements"])
    else:
        texts = [s for _, s in check.work["sentences"]]
    while len(texts) < n:
        texts += [f"{t} ({len(texts)})" for t in texts[: n - len(texts)]]
    return texts[:n]


def hidden_step(check: Any, shape: str, model: Any, tokenizer: Any, scorer: Any) -> None:
    """Time and check the hidden-state extraction on one causal shape (see the module)."""
    from probes.backends.hidden import HiddenRequest, extract, layer_count
    from probes.engine.hidden_cache import extract_cached
    from probes.results import connect

    texts = hidden_texts(check)
    reqs = [HiddenRequest(t) for t in texts]
    positions = ["last", "mean"]
    extract(scorer, reqs[:32], [], positions, lambda b, a: None, hidden=False)  # warm-up
    plain_s, _ = timed(check.device, lambda: extract(scorer, reqs, [], positions,
                                                     lambda b, a: None, hidden=False))
    with tempfile.TemporaryDirectory(prefix="kgprobe-hidden-") as tmp:
        con = connect(Path(tmp) / "r.duckdb")
        hidden_s, (states, items) = timed(check.device, lambda: extract_cached(
            con, scorer, reqs, Path(tmp) / "r.duckdb.hidden", positions=positions))
        last = layer_count(scorer) - 1
        stored = torch.from_numpy(states.matrix(items[:COMPARED], last, "last"))
        worst = 0.0
        for i, text in enumerate(texts[:COMPARED]):
            ids = torch.tensor([scorer._lead + tokenizer(text, add_special_tokens=False)
                                ["input_ids"]], device=check.device)
            with torch.no_grad():
                out = model(input_ids=ids, output_hidden_states=True)
            want = out.hidden_states[-1][0, -1].float().cpu()
            worst = max(worst, float((stored[i] - want).abs().max() / want.abs().max()))
        con.close()
    tolerance = 2e-3 if check.dtype == torch.float32 else 3e-2
    ratio = plain_s / hidden_s
    check.data.setdefault("hidden", {})[shape] = {
        "texts": len(texts), "layers": last + 1, "positions": positions,
        "plain_s": round(plain_s, 4), "hidden_s": round(hidden_s, 4),
        "plain_per_s": round(len(texts) / plain_s, 2),
        "hidden_per_s": round(len(texts) / hidden_s, 2), "ratio": round(ratio, 4),
        "agreement": worst, "tolerance": tolerance, "ok": worst <= tolerance}
    check.note(f"{shape} hidden states: {len(texts)} texts, {last + 1} layers x "
               f"{len(positions)} positions to float16 shards at {len(texts) / hidden_s:,.1f}/s "
               f"against {len(texts) / plain_s:,.1f}/s for the same forwards without them "
               f"(ratio {ratio:.2f}, target >= 0.90); last layer = output_hidden_states to "
               f"{worst:.2g} of the row's magnitude (tolerance {tolerance:g})")
    if worst > tolerance:
        check.agree(f"{shape} stored hidden states = output_hidden_states", worst, tolerance,
                    "relative")
