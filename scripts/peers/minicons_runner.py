"""Benchmark runner for minicons (``scorer.IncrementalLMScorer``).

Runs in the peers' virtual environment (``scripts/setup_peers.sh``); see ``common.py`` for the
request conventions. minicons has no request scheduler, so requests go in workload order in
batches of ``--batch-size`` (16): ``conditional_score(contexts, candidates, separator="")`` for
multiple choice and ``sequence_score(sentences, bos_token=True)`` for sentences, both with a
summing reduction. Masked (``--only masked``): ``scorer.MaskedLMScorer`` with
``PLL_metric="original"``, ``sequence_score`` in batches of ``--batch-size`` (sentences encoded
by ``tokenizer(batch, padding="longest")``, what minicons' own encode does).
"""

from __future__ import annotations

import sys

import common


def _total(x) -> float:
    return x.sum(0).item()


def main() -> int:
    """Command line entry point."""
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    import torch
    from minicons import scorer

    def load() -> scorer.IncrementalLMScorer:
        return scorer.IncrementalLMScorer(str(args.model), args.device,
                                          dtype=getattr(torch, args.dtype))

    def score_mc(lm: scorer.IncrementalLMScorer, pairs: list[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        for chunk in common.batches(pairs, args.batch_size):
            contexts = [c for c, _ in chunk]
            conts = [x for _, x in chunk]
            out.extend(lm.conditional_score(contexts, conts, separator="", reduction=_total))
        return out

    def score_sentences(lm: scorer.IncrementalLMScorer, texts: list[str]) -> list[float]:
        first = lm.encode(texts[:1], bos_token=True)["input_ids"][0].tolist()
        if first[0] != lm.tokenizer.bos_token_id or first[1] == lm.tokenizer.bos_token_id:
            raise SystemExit(f"minicons does not put exactly one BOS in front: {first[:3]}")
        out: list[float] = []
        for chunk in common.batches(texts, args.batch_size):
            out.extend(lm.sequence_score(list(chunk), reduction=_total, bos_token=True))
        return out

    def load_masked() -> scorer.MaskedLMScorer:
        return scorer.MaskedLMScorer(str(args.model), args.device, PLL_metric="original",
                                     dtype=getattr(torch, args.dtype))

    def score_masked(lm: scorer.MaskedLMScorer, texts: list[str]) -> list[float]:
        # minicons 0.3.39 encodes with tokenizer.batch_encode_plus, which transformers 5 no
        # longer has; the same call through tokenizer(...) gives the BatchEncoding that
        # sequence_score accepts as it is.
        out: list[float] = []
        for chunk in common.batches(texts, args.batch_size):
            encoded = lm.tokenizer(list(chunk), padding="longest", return_attention_mask=True)
            out.extend(lm.sequence_score(encoded, reduction=_total))
        return out

    versions = common.version_of("minicons", "torch", "transformers")
    if args.only == ["masked"]:
        return common.run("minicons", args, versions, load_masked, None, None,
                          score_masked=score_masked)
    return common.run("minicons", args, versions, load, score_mc, score_sentences)


if __name__ == "__main__":
    sys.exit(main())
