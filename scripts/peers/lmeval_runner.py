"""Benchmark runner for lm-evaluation-harness (HF backend, ``loglikelihood`` requests).

Runs in the peers' virtual environment (``scripts/setup_peers.sh``); see ``common.py`` for the
request conventions. All requests of a set go to one ``HFLM.loglikelihood`` call, batch 16, so
the harness applies its own length sorting and one-token-continuation logits cache. Sentences
are sent with an empty context, which the harness conditions on ``prefix_token_id`` (the
tokenizer's BOS token).
"""

from __future__ import annotations

import sys

import common


def main() -> int:
    """Command line entry point."""
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    def load() -> HFLM:
        return HFLM(pretrained=str(args.model), batch_size=args.batch_size, device="cpu",
                    dtype="float32")

    def score(lm: HFLM, pairs: list[tuple[str, str]]) -> list[float]:
        reqs = [Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=i)
                for i, pair in enumerate(pairs)]
        return [logprob for logprob, _ in lm.loglikelihood(reqs, disable_tqdm=True)]

    def score_sentences(lm: HFLM, texts: list[str]) -> list[float]:
        bos = lm.tokenizer.bos_token_id
        if lm.prefix_token_id != bos:
            raise SystemExit(f"lm-eval prefix token {lm.prefix_token_id} is not BOS {bos}")
        return score(lm, [("", text) for text in texts])

    versions = common.version_of("lm_eval", "torch", "transformers")
    return common.run("lm-eval", args, versions, load, score, score_sentences)


if __name__ == "__main__":
    sys.exit(main())
