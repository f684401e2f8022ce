"""Generation runner for lm-evaluation-harness 0.4.13 (HF backend, ``generate_until``).

Runs in the peers' virtual environment (``scripts/setup_peers.sh``). Every prompt is one
``generate_until`` request with ``until`` = the stop strings, ``max_gen_toks`` and
``do_sample: False``; one ``HFLM.generate_until`` call per batch size, so the harness applies
its own length sorting, left padding and stopping criteria.
"""

from __future__ import annotations

import sys

import generate_common as common


def main() -> int:
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    def load() -> HFLM:
        return HFLM(pretrained=str(args.model), batch_size=1, device="cpu", dtype="float32")

    def generate(lm: HFLM, prompts: list[str], max_new: int, stop: list[str],
                 size: int) -> list[str]:
        lm.batch_size_per_gpu = size  # what generate_until batches by (one load for all)
        kwargs = {"until": list(stop), "max_gen_toks": max_new, "do_sample": False}
        reqs = [Instance(request_type="generate_until", doc={}, arguments=(p, dict(kwargs)),
                         idx=i) for i, p in enumerate(prompts)]
        return [str(t) for t in lm.generate_until(reqs, disable_tqdm=True)]

    return common.run("lm-eval", args, common.version_of("lm_eval", "torch", "transformers"),
                      load, generate)


if __name__ == "__main__":
    sys.exit(main())
