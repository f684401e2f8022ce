"""lm-evaluation-harness 0.4.13 against an inference server, for ``scripts/bench_server.py``.

Runs in the peers' virtual environment (``scripts/setup_peers.sh``, which installs
``lm-eval[api]``: ``local-completions`` needs ``tenacity`` and ``aiohttp``). Usage::

    python lmeval_server_runner.py BACKEND URL PAIRS.json OUT.json [--tokenizer DIR]
        [--concurrency N] [--timeout S]

``BACKEND``:

* ``gguf``: ``lm_eval.models.gguf.GGUFLM``, one ``/v1/completions`` request per (context,
  continuation), one at a time, ``echo``, ``logprobs: 10``, ``max_tokens: 1``; the continuation
  is found by the echoed text offsets. No tokenizer.
* ``local-completions``: ``LocalCompletionsAPI`` with ``tokenizer_backend=huggingface`` and
  the tokenizer read from a local folder (``--tokenizer``, the dequantised model folder that
  holds ``tokenizer.json``; nothing from the hub), ``tokenized_requests=False`` (the text is
  sent; llama-cpp-python's server takes no token lists), ``batch_size=1`` (it takes one prompt
  per request) and ``num_concurrent=--concurrency``. lm-eval cuts the continuation by the
  token count of its own tokenisation of the context (``logprobs: 1``, ``echo``,
  ``max_tokens: 1``).

All pairs go to one ``loglikelihood`` call; the result file holds the scores and the seconds it
took (wall and this process's CPU).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import sys
import time
from typing import Any


def load(backend: str, url: str, tokenizer: str | None, concurrency: int,
         timeout: int) -> Any:
    """The lm-eval model object for ``backend`` against the server at ``url`` (ends in /v1)."""
    if backend == "gguf":
        from lm_eval.models.gguf import GGUFLM

        return GGUFLM(base_url=url.removesuffix("/v1"))
    if backend == "local-completions":
        if not tokenizer:
            raise SystemExit("local-completions needs --tokenizer DIR (a folder with "
                             "tokenizer.json: the served model's tokenizer)")
        from lm_eval.models.openai_completions import LocalCompletionsAPI

        return LocalCompletionsAPI(base_url=url + "/completions", model="served",
                                   tokenizer=tokenizer, tokenizer_backend="huggingface",
                                   tokenized_requests=False, batch_size=1,
                                   num_concurrent=concurrency, max_retries=3,
                                   timeout=timeout)
    raise SystemExit(f"backend {backend!r}: use gguf or local-completions")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("backend")
    p.add_argument("url")
    p.add_argument("pairs")
    p.add_argument("out")
    p.add_argument("--tokenizer", default=None)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--timeout", type=int, default=3600, help="seconds (local-completions)")
    args = p.parse_args()
    from lm_eval.api.instance import Instance

    with open(args.pairs, encoding="utf-8") as f:
        pairs = [tuple(x) for x in json.load(f)]
    lm = load(args.backend, args.url, args.tokenizer, args.concurrency, args.timeout)
    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=x, idx=i)
            for i, x in enumerate(pairs)]
    t0, c0 = time.perf_counter(), time.process_time()
    got = lm.loglikelihood(reqs, disable_tqdm=True)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if len(got) != len(pairs):
        raise SystemExit(f"lm-eval {args.backend} returned {len(got)} scores for "
                         f"{len(pairs)} pairs (a response without log-probabilities?)")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"tool": f"lm-eval {args.backend}", "version": md.version("lm_eval"),
                   "seconds": seconds, "cpu_seconds": cpu, "scores": [float(s) for s, _ in got]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
