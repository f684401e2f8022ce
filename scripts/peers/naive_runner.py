"""Benchmark runner for the naive baseline: plain transformers, one prompt at a time.

Runs with kgprobe's Python. One forward pass per request, no batching, no prefix reuse, a full
log-softmax over the vocabulary at every position: the honest "obvious loop" baseline.
Tokenisation follows lm-evaluation-harness: the context+continuation string is encoded whole and
split after the context's tokens; sentences get the tokenizer's BOS token in front.
"""

from __future__ import annotations

import sys

import common


def main() -> int:
    """Command line entry point."""
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def load():
        tok = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
        return tok, model.to(args.device).eval()

    @torch.inference_mode()
    def logprob(model, ids: list[int], n_prefix: int) -> float:
        logits = model(torch.tensor([ids], device=args.device)).logits[0].cpu()
        logp = torch.log_softmax(logits.float(), dim=-1)
        targets = torch.tensor(ids[n_prefix:])
        return logp[n_prefix - 1:-1].gather(1, targets[:, None]).sum().item()

    def score_mc(loaded, pairs: list[tuple[str, str]]) -> list[float]:
        tok, model = loaded
        out = []
        for context, cont in pairs:
            whole = tok.encode(context + cont, add_special_tokens=False)
            n_ctx = len(tok.encode(context, add_special_tokens=False))
            out.append(logprob(model, whole, n_ctx))
        return out

    def score_sentences(loaded, texts: list[str]) -> list[float]:
        tok, model = loaded
        return [logprob(model, [tok.bos_token_id, *tok.encode(t, add_special_tokens=False)], 1)
                for t in texts]

    versions = common.version_of("torch", "transformers")
    return common.run("naive", args, versions, load, score_mc, score_sentences)


if __name__ == "__main__":
    sys.exit(main())
