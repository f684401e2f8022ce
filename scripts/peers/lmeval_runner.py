"""Benchmark runner for lm-evaluation-harness (HF backend, ``loglikelihood`` requests).

Runs in the peers' virtual environment (``scripts/setup_peers.sh``); see ``common.py`` for the
request conventions. All requests of a set go to one ``HFLM.loglikelihood`` call, batch 16, so
the harness applies its own length sorting and one-token-continuation logits cache. Sentences
are sent with an empty context, which the harness conditions on ``prefix_token_id`` (the
tokenizer's BOS token). Seq2seq (``--only seq2seq``): ``HFLM(backend="seq2seq")``; the harness
encodes the continuation without special tokens, so each candidate is sent with the tokenizer's
``</s>`` appended, the same target as kgprobe's.
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

    seq2seq = args.only == ["seq2seq"]

    def load() -> HFLM:
        return HFLM(pretrained=str(args.model), batch_size=args.batch_size, device=args.device,
                    dtype=args.dtype, backend="seq2seq" if seq2seq else "default")

    def score(lm: HFLM, pairs: list[tuple[str, str]]) -> list[float]:
        reqs = [Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=i)
                for i, pair in enumerate(pairs)]
        return [logprob for logprob, _ in lm.loglikelihood(reqs, disable_tqdm=True)]

    def score_sentences(lm: HFLM, texts: list[str]) -> list[float]:
        bos = lm.tokenizer.bos_token_id
        if lm.prefix_token_id != bos:
            raise SystemExit(f"lm-eval prefix token {lm.prefix_token_id} is not BOS {bos}")
        return score(lm, [("", text) for text in texts])

    def score_seq2seq(lm: HFLM, pairs: list[tuple[str, str]]) -> list[float]:
        eos = lm.tokenizer.eos_token
        return score(lm, [(c, x + eos) for c, x in pairs])

    versions = common.version_of("lm_eval", "torch", "transformers")
    if seq2seq:
        return common.run("lm-eval", args, versions, load, None, None,
                          score_seq2seq=score_seq2seq)
    return common.run("lm-eval", args, versions, load, score, score_sentences)


if __name__ == "__main__":
    sys.exit(main())
