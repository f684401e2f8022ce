"""Benchmark runner for kgprobe: ``probes.backends.registry.load_scorer(...).loglik(requests)``.

Runs with kgprobe's Python. Each request set goes to one ``Scorer.loglik`` call, so kgprobe's
own length sorting, batching and shared-prefix reuse apply. Sentences are sent as
``(bos_token, sentence)`` pairs: the score of the sentence tokens given the BOS token. Masked:
one ``Scorer.pll`` call over ``(text, (0, len(text)))``; seq2seq: one ``Scorer.loglik`` call
(kgprobe's seq2seq target convention appends the tokenizer's ``</s>``).
"""

from __future__ import annotations

import inspect
import sys

import common


def main() -> int:
    """Command line entry point."""
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    try:
        from probes.backends.registry import load_scorer
    except ImportError as exc:
        print(f"kgprobe: cannot import probes.backends.registry.load_scorer ({exc}); "
              "the scoring backends are not installed in this checkout yet.", file=sys.stderr)
        return 3
    from transformers import AutoTokenizer

    def load():
        wanted = {"device": args.device, "dtype": args.dtype, "threads": args.threads}
        accepted = inspect.signature(load_scorer).parameters
        return load_scorer(str(args.model), **{k: v for k, v in wanted.items() if k in accepted})

    def score_mc(scorer, pairs: list[tuple[str, str]]) -> list[float]:
        return [s.logprob for s in scorer.loglik(pairs)]

    bos = AutoTokenizer.from_pretrained(args.model).bos_token

    def score_sentences(scorer, texts: list[str]) -> list[float]:
        scores = scorer.loglik([(bos, t) for t in texts])
        return [s.logprob for s in scores]

    def score_masked(scorer, texts: list[str]) -> list[float]:
        return [s.logprob for s in scorer.pll([(t, (0, len(t))) for t in texts])]

    versions = common.version_of("kgprobe", "torch", "transformers")
    return common.run("kgprobe", args, versions, load, score_mc, score_sentences,
                      score_masked=score_masked, score_seq2seq=score_mc)


if __name__ == "__main__":
    sys.exit(main())
