"""lm-evaluation-harness 0.4.13 against an inference server, for ``scripts/bench_server.py``.

Runs in the peers' virtual environment (``scripts/setup_peers.sh``). Usage::

    python lmeval_server_runner.py BACKEND URL PAIRS.json OUT.json

``BACKEND`` is ``gguf`` (``lm_eval.models.gguf.GGUFLM``: one ``/v1/completions`` request per
(context, continuation), ``echo``, ``logprobs: 10``, ``max_tokens: 1``; the continuation is
found by the echoed text offsets) or ``local-completions`` (``LocalCompletionsAPI`` with
``tokenized_requests=False``, needs a tokenizer: not used here). All pairs go to one
``loglikelihood`` call; the result file holds the scores and the seconds it took.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    backend, url, pairs_path, out_path = sys.argv[1:5]
    from lm_eval.api.instance import Instance

    with open(pairs_path, encoding="utf-8") as f:
        pairs = [tuple(p) for p in json.load(f)]
    if backend != "gguf":
        raise SystemExit(f"backend {backend!r}: only gguf is wired up")
    from lm_eval.models.gguf import GGUFLM

    lm = GGUFLM(base_url=url.removesuffix("/v1"))
    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i)
            for i, p in enumerate(pairs)]
    t0 = time.perf_counter()
    got = lm.loglikelihood(reqs, disable_tqdm=True)
    seconds = time.perf_counter() - t0
    import importlib.metadata as md

    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"tool": f"lm-eval {backend}", "version": md.version("lm_eval"),
                   "seconds": seconds, "scores": [float(s) for s, _ in got]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
