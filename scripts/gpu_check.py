"""The prepared GPU check: kgprobe's scoring paths on full-size model shapes, in one command.

No weights travel to the GPU machine, so every model is built from its config with random
weights (timing does not depend on the weights; scores are compared between paths on the same
random model). Shapes (``--tiny`` replaces each by a 2-layer model of the same family):

* ``llama-1b``  Llama-3.2-1B shape (hidden 2048, 16 layers, 32/8 heads, FFN 8192, 128,256 tokens,
  tied head);
* ``llama-8b``  Llama-3-8B shape (hidden 4096, 32 layers, 32/8 heads, FFN 14336, 128,256 tokens);
* ``bert-large`` (24 layers, hidden 1024, 16 heads, FFN 4096, 30,522 tokens), masked PLL;
* ``t5-large``  (24 + 24 layers, d_model 1024, 16 heads, FFN 4096, 32,128 tokens), seq2seq.

What it measures, each written to ``check.json`` and ``check.md`` under ``--out`` (default
``$OUT``, else ``./gpu_check_out``):

1. the card's matmul rate in the scoring dtype (bf16 on a GPU; an 8192-cube product);
2. kgprobe's throughput on multiple choice (shared contexts), independent sentences, next-word
   top-k, BEAR's whole statements as lm-pub-quiz scores them (``boundary="whole"``: every
   relation x its first instance x every template x the whole answer space, 5,706 statements,
   saved by ``--prepare`` from ``../shared/data/bear``; their floor counts each distinct token
   prefix once, and the whole of BEAR's time follows from the rate), masked PLL and seq2seq
   (context, candidate) pairs, each as a fraction of its
   arithmetic floor: 2 x matmul parameters FLOPs per processed token (each shared context
   once; the input embedding is a lookup and is not counted; a PLL sentence of n tokens is n-2
   masked copies of n tokens with the MLM head at the masked position only; seq2seq: the
   encoder and the cross-attention keys/values over each context once, the decoder and LM head
   over the start position once per context and over each later target token:
   ``bench_models.pll_flops`` / ``seq2seq_flops``) at the measured matmul rate;
3. a plain transformers loop (padded batches of 32, full logits) and lm-evaluation-harness's HF
   backend (``HFLM`` with the same model object; skipped with the reason when ``lm_eval`` is
   not importable) on the same requests, and the largest score difference between the tools;
4. bf16 against fp32 scores of the same requests (``llama-1b``; largest difference in nats per
   token), the batch limits the automatic batching ended with, peak GPU memory, and the
   out-of-memory back-off exercised under a forced memory cap (on the CPU an injected
   out-of-memory error stands in for the cap);
5. hidden states of every layer (``gpu_check_hidden.py``, each causal shape): throughput
   against the same forwards without them, the stored states against
   ``output_hidden_states=True`` (``check.json`` ``hidden``, and the notes);
6. ``--device-map`` (accelerate; GPU + CPU, on the CPU memory + disk) equal to the whole model on
   one device, and the scorer under ``torchrun --nproc-per-node 1`` (NCCL on a GPU, gloo on the
   CPU) equal to a plain run. This last check is at the scorer level: the worker loads the saved
   model folder through ``load_scorer`` as a ``probes.engine.run`` rank does, without a store.

Usage (see docs/gpu.md)::

    bash scripts/gpu_check.sh --prepare          # here: tokenizers + wheels into .gpu_carry/
    bash scripts/gpu_check.sh                    # on the GPU machine (about 5 minutes on an H100)
    .venv/bin/python scripts/gpu_check.py --cpu --tiny --out gc_out   # seconds, what CI runs
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bench_models  # a sibling script: this script's folder is on the path
import torch
from bench_scoring import FRAMES, OPENERS, SUBJECTS  # the same sentence frames
from gpu_check_hidden import hidden_step  # the hidden-state step (issue 49)

SCRIPTS = Path(__file__).resolve().parent
TOKENIZER_DIRS = ("causal", "masked", "seq2seq")
FULL_SIZES = {"mc": (500, 21), "sentences": 8000, "topk": 4000, "pll": 400, "seq2seq": 400,
              "plain": 0.25, "bear": 10**9, "bear_plain": 400, "generate": (256, 32, 16)}
TINY_SIZES = {"mc": (12, 5), "sentences": 40, "topk": 30, "pll": 8, "seq2seq": 8, "plain": 1.0,
              "bear": 120, "bear_plain": 120, "generate": (12, 8, 12)}
# generate: (prompts, max_new_tokens, prompts checked against transformers' generate)


# --- model shapes ---------------------------------------------------------------------------


def shape_config(name: str, tiny: bool, vocab: int) -> Any:
    """The transformers config of a named shape (``tiny``: 2 layers, hidden 64)."""
    from transformers import BertConfig, LlamaConfig, T5Config

    if name.startswith("llama"):
        big = name == "llama-8b"
        full = dict(hidden_size=4096 if big else 2048, intermediate_size=14336 if big else 8192,
                    num_hidden_layers=32 if big else 16, num_attention_heads=32,
                    num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=not big,
                    rope_theta=500000.0, max_position_embeddings=8192)
        small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab,
                     tie_word_embeddings=True, max_position_embeddings=512)
        return LlamaConfig(**(small if tiny else full), architectures=["LlamaForCausalLM"])
    if name == "bert-large":
        size = (dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128) if tiny else
                dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                     intermediate_size=4096))
        return BertConfig(vocab_size=vocab, architectures=["BertForMaskedLM"], **size)
    if name == "t5-large":
        size = (dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                     num_heads=4) if tiny else
                dict(d_model=1024, d_kv=64, d_ff=4096, num_layers=24, num_decoder_layers=24,
                     num_heads=16))
        return T5Config(vocab_size=max(vocab, 32128 if not tiny else vocab),
                        architectures=["T5ForConditionalGeneration"], **size)
    raise SystemExit(f"unknown shape {name!r}")


def build_model(name: str, tiny: bool, tokenizer: Any, device: torch.device,
                dtype: torch.dtype) -> Any:
    """A seeded random-weight model of the shape, built directly on ``device`` in ``dtype``."""
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForSeq2SeqLM,
    )

    config = shape_config(name, tiny, len(tokenizer))
    if name == "t5-large":
        config.decoder_start_token_id = config.pad_token_id = tokenizer.pad_token_id
        config.eos_token_id = tokenizer.eos_token_id
    auto = {"llama": AutoModelForCausalLM, "bert": AutoModelForMaskedLM,
            "t5": AutoModelForSeq2SeqLM}[name.split("-")[0]]
    torch.manual_seed(0)
    with torch.device(device):
        model = auto.from_config(config, dtype=dtype)
    return model.eval()


def matmul_params(model: Any) -> dict[str, int]:
    """Parameters that do arithmetic per token: all but the input embedding (a lookup), the LM
    head counted once (tied or not). Seq2seq: ``encoder`` and ``decoder`` (with the head)."""
    seen: set[int] = set()
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    head_w = head.weight if head is not None else None
    total = enc = 0
    for pname, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen.add(id(p))
        if p is embed and p is not head_w:
            continue
        total += p.numel()
        if pname.startswith("encoder."):
            enc += p.numel()
    return {"total": total, "encoder": enc, "decoder": total - enc}


def flop_groups(model: Any) -> dict[str, int]:
    """``bench_models.flop_groups`` of an in-memory masked or seq2seq model (tied weights
    once)."""
    return bench_models.flop_groups({n: p.numel() for n, p in model.named_parameters()})


def make_scorer(kind: str, model: Any, tokenizer: Any, name: str, device: torch.device,
                **options: Any) -> Any:
    """kgprobe's scorer around an in-memory model, finished as ``load_scorer`` finishes one
    (``options``: the backend's scoring options, e.g. ``boundary="whole"``)."""
    from probes.backends.registry import backend

    cls = backend(kind)
    scorer = cls.create(model, tokenizer, has_head=True, name=name, revision="random-weights",
                        device=device, max_length=512)
    scorer.configure(cls.check_options(options), verify=True)
    return scorer


# --- tokenizers -----------------------------------------------------------------------------


def local_tokenizers() -> dict[str, Any]:
    """The tokenizers that ship offline here: SmolLM2's (causal), all-MiniLM-L6-v2's WordPiece
    (masked) and a T5-style Unigram built from that vocabulary (``bench_models``)."""
    from transformers import AutoTokenizer

    from probes.engine.models import load_tokenizer

    return {"causal": load_tokenizer("smollm2-135m"),
            "masked": AutoTokenizer.from_pretrained(bench_models.minilm_dir()),
            "seq2seq": bench_models.t5_tokenizer()}


def load_tokenizers(folder: Path | None) -> dict[str, Any]:
    """Tokenizers saved by ``--prepare`` (the GPU machine), else built from local packages."""
    if folder is None:
        return local_tokenizers()
    from transformers import AutoTokenizer

    missing = [k for k in TOKENIZER_DIRS if not (folder / k).is_dir()]
    if missing:
        raise SystemExit(f"{folder}: no tokenizer folder {', '.join(missing)}; make them here "
                         "with `bash scripts/gpu_check.sh --prepare`")
    return {k: AutoTokenizer.from_pretrained(folder / k) for k in TOKENIZER_DIRS}


# --- BEAR statements --------------------------------------------------------------------------

BEAR_FILE = "bear.json"


def bear_statements(data: Path, tokenizer: Any, instances: int = 1, whole: bool = True) -> dict:
    """BEAR's statements for the check, templated as lm-pub-quiz templates them: every relation
    x its first ``instances`` instances x every template x the relation's whole answer space
    (5,706 statements for one instance), and (``whole``) the whole of BEAR's statement count and
    floor positions (its distinct token prefixes, BOS included, with ``tokenizer``)."""
    import bench_bear

    sys.path.insert(0, str(SCRIPTS / "peers"))
    import bear_common

    def texts(items: list[dict]) -> list[str]:
        return [bear_common.statement(i["template"], i["subject"], a)[0] for i in items
                for a in i["answers"]]

    out: dict[str, Any] = {"statements": texts(bench_bear.build_workload(data, None, instances)
                                                ["items"])}
    if whole:
        everything = texts(bench_bear.build_workload(data, None, 10**9)["items"])
        out["whole_statements"] = len(everything)
        out["whole_positions"] = bear_positions(tokenizer, everything)
    return out


def bear_positions(tokenizer: Any, statements: Sequence[str]) -> int:
    """The floor's token positions: the statements' distinct proper token prefixes (BOS first),
    counted by ``bench_bear.distinct_prefixes``."""
    import bench_bear

    ids = tokenizer(list(statements), add_special_tokens=False)["input_ids"]
    return bench_bear.distinct_prefixes([[tokenizer.bos_token_id, *x] for x in ids])


def load_bear(folder: Path | None, tokenizer: Any) -> tuple[dict | None, str]:
    """The BEAR statements saved by ``--prepare`` (the GPU machine), else made here from
    ``../shared/data/bear`` (without the whole-of-BEAR counts), else None and why."""
    if folder is not None and (folder / BEAR_FILE).is_file():
        return json.loads((folder / BEAR_FILE).read_text(encoding="utf-8")), "prepared"
    import bench_bear

    if (bench_bear.DATA / "metadata_relations.json").is_file():
        return bear_statements(bench_bear.DATA, tokenizer, whole=False), "made here"
    return None, (f"no {BEAR_FILE} (bash scripts/gpu_check.sh --prepare makes it) and no "
                  f"{bench_bear.DATA}")


# --- workloads ------------------------------------------------------------------------------

WORDS = ["apple", "bird", "table", "river", "stone", "music", "garden", "window", "winter",
         "animal", "flower", "cheese", "violin", "hammer", "forest", "mountain", "kitchen",
         "letter", "market", "island", "engine", "pencil", "doctor", "planet", "bottle", "castle",
         "desert", "feather", "ladder", "mirror", "needle", "ocean", "pocket", "rabbit", "saddle",
         "silver", "summer", "ticket", "tunnel", "valley", "wagon", "yellow"]


def workload(sizes: dict[str, Any], seed: int = 13) -> dict[str, list[Any]]:
    """Seeded request sets: multiple choice (contexts x candidates), sentences, top-k prompts,
    PLL sentences and seq2seq (context, candidate) pairs."""
    rng = random.Random(seed)

    def context() -> str:
        return " ".join(x for x in (rng.choice(OPENERS), rng.choice(SUBJECTS),
                                    rng.choice(FRAMES)) if x)  # fmt: skip

    def phrase() -> str:
        return " ".join(rng.sample(WORDS, rng.choice((1, 1, 2, 3))))

    n_ctx, n_cand = sizes["mc"]
    mc = [(ctx, " " + phrase()) for ctx in (context() for _ in range(n_ctx))
          for _ in range(n_cand)]
    sentences = [f"{rng.choice(SUBJECTS)} {rng.choice(FRAMES)} "
                 + " ".join(rng.sample(WORDS, rng.randint(2, 9))) + "."
                 for _ in range(sizes["sentences"])]
    topk = [context() + " [MASK]" for _ in range(sizes["topk"])]
    pll = [(s, (0, len(s))) for s in sentences[: sizes["pll"]]]
    seq2seq = [(ctx + " <extra_id_0> .", "<extra_id_0> " + phrase())
               for ctx in (context() for _ in range(sizes["seq2seq"] // 4)) for _ in range(4)]
    return {"mc": mc, "sentences": [("", s) for s in sentences], "topk": topk, "pll": pll,
            "seq2seq": seq2seq}


def processed_tokens(scorer: Any, requests: Sequence[tuple[str, str]], shared: bool) -> int:
    """Tokens the model must process: each distinct context once when ``shared``."""
    pairs = scorer.encode_pairs(requests)
    if shared:
        return sum(len(c) for c in {ctx for ctx, _ in pairs}) + sum(len(x) for _, x in pairs)
    return sum(len(c) + len(x) for c, x in pairs)


# --- timing helpers -------------------------------------------------------------------------


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, fn: Callable[[], Any]) -> tuple[float, Any]:
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def matmul_rate(device: torch.device, dtype: torch.dtype, n: int, seconds: float = 1.0) -> float:
    """Measured GFLOP/s of an n-cube matrix product (mean over ``seconds`` after warm-up)."""
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    for _ in range(3):
        a @ b
    sync(device)
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        reps += 1
        if device.type == "cuda" and reps % 10 == 0:
            sync(device)
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e9


def peak_memory(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None


def largest_difference(a: Sequence[float], b: Sequence[float]) -> float:
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)


# --- peers ----------------------------------------------------------------------------------


@torch.inference_mode()
def plain_loglik(model: Any, tokenizer: Any, requests: Sequence[tuple[str, str]],
                 lead: Sequence[int], start: Sequence[int], device: torch.device,
                 batch: int = 32) -> list[float]:
    """A plain transformers loop: requests in right-padded batches of ``batch``, the full
    [batch, length, vocab] log-softmax, the continuation's tokens gathered. Token boundary as
    lm-eval's: the context encoded alone (after the tokenizer's leading special tokens
    ``lead``; an empty context is ``start``, the BOS token), the continuation's extra tokens
    scored."""
    rows = []
    for ctx, cont in requests:
        first = list(lead) if ctx else list(start)
        c = first + tokenizer(ctx, add_special_tokens=False)["input_ids"]
        whole = first + tokenizer(ctx + cont, add_special_tokens=False)["input_ids"]
        rows.append((whole, len(c)))
    out: list[float] = []
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        width = max(len(w) for w, _ in chunk)
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, (w, _) in enumerate(chunk):
            ids[r, : len(w)] = torch.tensor(w)
            mask[r, : len(w)] = 1
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        logp = torch.log_softmax(logits.float(), -1)
        for r, (w, n_ctx) in enumerate(chunk):
            pos = torch.arange(n_ctx - 1, len(w) - 1, device=device)
            tgt = torch.tensor(w[n_ctx:], device=device)
            out.append(float(logp[r, pos, tgt].sum()))
    return out


def lm_eval_loglik(model: Any, tokenizer: Any, requests: Sequence[tuple[str, str]],
                   device: torch.device, batch: str) -> tuple[list[float] | None, str]:
    """lm-evaluation-harness's HF backend on the same model object; (None, why) if missing."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError as exc:
        return None, f"lm_eval not importable ({exc})"
    import lm_eval

    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch, device=str(device))
    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=r, idx=i)
            for i, r in enumerate(requests)]
    return ([lp for lp, _ in lm.loglikelihood(reqs, disable_tqdm=True)],
            f"lm_eval {getattr(lm_eval, '__version__', '?')}, batch {batch}")


# --- the checks -----------------------------------------------------------------------------


class Check:
    """Collects the figures (JSON) and the markdown lines of one run."""

    def __init__(self, out: Path, args: argparse.Namespace, device: torch.device,
                 dtype: torch.dtype) -> None:
        self.out, self.args, self.device, self.dtype = out, args, device, dtype
        self.data: dict[str, Any] = {"started": datetime.datetime.now(datetime.UTC).isoformat(),
                                     "throughput": [], "agreement": [], "notes": []}
        self.sizes = TINY_SIZES if args.tiny else FULL_SIZES
        self.work = workload(self.sizes)
        self.bear_data: dict | None = None
        self.gflops = 0.0
        self.deadline = time.monotonic() + args.budget_s

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def note(self, text: str) -> None:
        print(text, flush=True)
        self.data["notes"].append(text)

    def throughput(self, shape: str, workload_name: str, tool: str, n: int, seconds: float,
                   floor_flops: float | None) -> None:
        rate = n / seconds
        row = {"shape": shape, "workload": workload_name, "tool": tool, "requests": n,
               "seconds": round(seconds, 4), "per_s": round(rate, 2)}
        if floor_flops:
            floor_rate = self.gflops * 1e9 / (floor_flops / n)
            row |= {"floor_per_s": round(floor_rate, 2), "of_floor": round(rate / floor_rate, 4)}
        self.data["throughput"].append(row)
        print(f"  {shape:10} {workload_name:10} {tool:8} {rate:10.1f}/s"
              + (f"  {row['of_floor']:.0%} of floor" if floor_flops else ""), flush=True)

    def agree(self, name: str, difference: float, tolerance: float, unit: str) -> None:
        ok = difference <= tolerance
        self.data["agreement"].append({"check": name, "difference": difference,
                                       "tolerance": tolerance, "unit": unit, "ok": ok})
        print(f"  {'ok ' if ok else 'FAIL'} {name}: {difference:.3g} {unit} "
              f"(tolerance {tolerance:g})", flush=True)

    # causal: multiple choice, sentences, top-k, peers, bf16 vs fp32, OOM back-off
    def causal(self, shape: str, tokenizer: Any) -> Any:
        model = build_model(shape, self.args.tiny, tokenizer, self.device, self.dtype)
        scorer = make_scorer("causal", model, tokenizer, shape, self.device)
        params = matmul_params(model)["total"]
        mc, sentences, topk = self.work["mc"], self.work["sentences"], self.work["topk"]
        scorer.loglik(mc[:64] + sentences[:32])  # warm-up (kernels, allocator)
        results: dict[str, list[float]] = {}
        for label, reqs, shared in (("mc", mc, True), ("sentences", sentences, False)):
            seconds, scores = timed(self.device, lambda r=reqs: scorer.loglik(r))
            results[label] = [s.logprob for s in scores]
            flops = 2 * params * processed_tokens(scorer, reqs, shared)
            self.throughput(shape, label, "kgprobe", len(reqs), seconds, flops)
        seconds, _ = timed(self.device, lambda: scorer.topk(topk, 10))
        n_tok = sum(len(scorer._prompt_ids(p)) for p in topk)
        self.throughput(shape, "topk", "kgprobe", len(topk), seconds, 2 * params * n_tok)
        self.data.setdefault("batching", {})[shape] = {
            op: {"rows": b.rows, "tokens": b.tokens} for op, b in scorer._batchers.items()}
        self.data.setdefault("peak_gib", {})[shape] = peak_memory(self.device)
        self.peers(shape, model, tokenizer, scorer, results)
        self.bear(shape, model, tokenizer, params)
        self.generation(shape, model, tokenizer, scorer, params)
        hidden_step(self, shape, model, tokenizer, scorer)
        return scorer

    def generation(self, shape: str, model: Any, tokenizer: Any, scorer: Any,
                   params: int) -> None:
        """``generate`` (greedy, batched over the KV cache) on the top-k prompts: its rate
        against the floor (prefill and decode tokens), and its strings against transformers'
        own greedy ``generate`` one prompt at a time. Random weights give near-tied logits, so
        in bf16 a few strings may differ by one flipped arg-max: counted in a note there, a
        check in fp32."""
        from probes.backends.generation import GenerateSettings

        n, max_new, n_check = self.sizes["generate"]
        prompts = [p.replace(" [MASK]", "") for p in self.work["topk"][:n]]
        settings = GenerateSettings(max_new_tokens=max_new, stop=())
        scorer.generate(prompts[:4], GenerateSettings(max_new_tokens=2, stop=()))  # warm-up
        seconds, got = timed(self.device, lambda: scorer.generate(prompts, settings))
        prefill = sum(len(scorer.generation_ids(p)) for p in prompts)
        decode = sum(g.n_tokens for g in got)
        self.throughput(shape, "generate", "kgprobe", len(prompts), seconds,
                        2 * params * (prefill + decode))
        same = 0
        for prompt, g in zip(prompts[:n_check], got[:n_check], strict=True):
            ids = torch.tensor([scorer.generation_ids(prompt)], device=self.device)
            with torch.inference_mode():
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     max_new_tokens=max_new, do_sample=False,
                                     pad_token_id=scorer._pad_id())
            want = tokenizer.decode(out[0, ids.shape[1]:].tolist(), skip_special_tokens=True)
            same += int(want == g.text)
        differ = min(n_check, len(prompts)) - same
        label = f"{shape} generate = transformers generate (greedy strings)"
        if self.dtype == torch.float32:
            self.agree(label, float(differ), 0.0, "strings differ")
        else:
            self.note(f"{label}: {same} of {same + differ} identical ({self.dtype})")

    def bear(self, shape: str, model: Any, tokenizer: Any, params: int) -> None:
        """BEAR's whole statements as lm-pub-quiz scores them (``boundary="whole"``, the prefix
        tree), against the floor of their distinct token prefixes, and a slice of them against
        plain forwards; with the prepared whole-of-BEAR counts, the whole of BEAR's time."""
        if self.bear_data is None:
            return
        texts = self.bear_data["statements"][: self.sizes["bear"]]
        reqs = [("", t) for t in texts]
        scorer = make_scorer("causal", model, tokenizer, shape, self.device, boundary="whole")
        scorer.loglik(reqs[:64])  # warm-up
        seconds, scores = timed(self.device, lambda s=scorer: s.loglik(reqs))
        positions = bear_positions(tokenizer, texts)
        self.throughput(shape, "bear", "kgprobe", len(reqs), seconds, 2 * params * positions)
        plain = make_scorer("causal", model, tokenizer, shape, self.device, boundary="whole",
                            prefix_mode=None)
        k = min(len(reqs), self.sizes["bear_plain"])
        want = [s.logprob for s in plain.loglik(reqs[:k])]
        self.agree(f"{shape} BEAR prefix tree = plain forwards",
                   largest_difference([s.logprob for s in scores[:k]], want), self.tolerance(),
                   "nats")
        if "whole_positions" in self.bear_data:
            rate = positions / seconds
            minutes = self.bear_data["whole_positions"] / rate / 60
            self.data.setdefault("bear_whole", {})[shape] = {
                "statements": self.bear_data["whole_statements"],
                "positions": self.bear_data["whole_positions"], "minutes": round(minutes, 2)}
            self.note(f"{shape}: the whole of BEAR ({self.bear_data['whole_statements']:,} "
                      f"statements, {self.bear_data['whole_positions']:,} floor positions with "
                      f"SmolLM2's tokenizer) at this run's {rate:,.0f} positions/s: "
                      f"{minutes:.1f} min")
        del scorer, plain

    def peers(self, shape: str, model: Any, tokenizer: Any, scorer: Any,
              results: dict[str, list[float]]) -> None:
        mc = self.work["mc"]
        n_plain = max(1, int(len(mc) * self.sizes["plain"]))
        seconds, plain = timed(self.device, lambda: plain_loglik(
            model, tokenizer, mc[:n_plain], scorer._lead, scorer._start, self.device))
        self.throughput(shape, "mc", "plain-hf", n_plain, seconds, None)
        self.agree(f"{shape} kgprobe = plain transformers (mc)",
                   largest_difference(results["mc"][:n_plain], plain), self.tolerance(), "nats")
        if self.args.no_lm_eval:
            self.note(f"{shape}: lm-eval skipped (--no-lm-eval)")
            return
        seconds, (scores, how) = timed(self.device, lambda: lm_eval_loglik(
            model, tokenizer, mc, self.device, self.args.lm_eval_batch))
        if scores is None:
            self.note(f"{shape}: lm-eval not run: {how}")
            return
        self.throughput(shape, "mc", "lm-eval", len(mc), seconds, None)
        self.data.setdefault("lm_eval", {})[shape] = how
        self.agree(f"{shape} kgprobe = lm-eval (mc)", largest_difference(results["mc"], scores),
                   self.tolerance(), "nats")

    def tolerance(self) -> float:
        """Scores of one model in one dtype, two batchings: bf16 rounding differs by batch."""
        return 0.25 if self.dtype != torch.float32 else 1e-3

    def bf16_vs_fp32(self, shape: str, tokenizer: Any) -> None:
        fp32 = build_model(shape, self.args.tiny, tokenizer, self.device, torch.float32)
        reqs = self.work["mc"][:200] + self.work["sentences"][:200]
        ref = make_scorer("causal", fp32, tokenizer, shape, self.device).loglik(reqs)
        half = make_scorer("causal", fp32.to(torch.bfloat16), tokenizer, shape, self.device)
        got = half.loglik(reqs)
        worst = max(abs(a.logprob - b.logprob) / max(1, a.n_tokens)
                    for a, b in zip(got, ref, strict=True))
        self.agree(f"{shape} bf16 vs fp32, per token", worst, 0.05, "nats/token")
        del fp32, half
        self.free()

    def oom_backoff(self, scorer: Any) -> None:
        """Force out-of-memory: a memory cap on a GPU, an injected error on the CPU."""
        reqs = self.work["sentences"]
        want = [s.logprob for s in scorer.loglik(reqs)]
        before = 1 << 22
        scorer.set_batch_size(None, max_batch_tokens=before)
        scorer._rows = len(reqs)  # one batch of everything: the cap must force the back-off
        for label in ("loglik", "packed", "statements"):  # uncut where the length drops (Batcher)
            scorer.batcher(label, cut=False)
        undo: Callable[[], None]
        if self.device.type == "cuda":
            self.free()
            used = torch.cuda.memory_allocated(self.device)
            total = torch.cuda.get_device_properties(self.device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, (used + (1 << 30)) / total))
            undo = lambda: torch.cuda.set_per_process_memory_fraction(1.0)  # noqa: E731
        else:
            body = scorer._body
            original = body.forward

            def capped(*a: Any, **kw: Any) -> Any:
                ids = kw.get("input_ids", a[0] if a else None)
                if ids is not None and ids.numel() > 256:
                    raise torch.cuda.OutOfMemoryError("injected: out of memory")
                return original(*a, **kw)

            body.forward = capped
            undo = lambda: setattr(body, "forward", original)  # noqa: E731
        try:
            got = [s.logprob for s in scorer.loglik(reqs)]
        finally:
            undo()
        limits = {op: (b.rows, b.tokens) for op, b in scorer._batchers.items()}
        self.data["oom_backoff"] = {"tokens_before": before, "rows_before": len(reqs),
                                    "after": limits}
        self.note(f"OOM back-off: from {len(reqs)} rows / {before} tokens to "
                  + ", ".join(f"{op} {r} rows / {t} tokens" for op, (r, t) in limits.items()))
        halved = any(r < len(reqs) for r, _ in limits.values())
        self.agree("OOM back-off exercised (a batch limit halved)", 0.0 if halved else 1.0, 0.0,
                   "")
        self.agree("scores under OOM back-off = unconstrained", largest_difference(got, want),
                   self.tolerance(), "nats")
        scorer.set_batch_size(None)

    def masked(self, tokenizer: Any) -> None:
        model = build_model("bert-large", self.args.tiny, tokenizer, self.device, self.dtype)
        scorer = make_scorer("masked", model, tokenizer, "bert-large", self.device)
        reqs = self.work["pll"]
        scorer.pll(reqs[:4])
        seconds, _ = timed(self.device, lambda: scorer.pll(reqs))
        lengths = [len(tokenizer(t)["input_ids"]) for t, _ in reqs]
        flops = bench_models.pll_flops(flop_groups(model), lengths)
        self.throughput("bert-large", "pll", "kgprobe", len(reqs), seconds, flops)

    def seq2seq(self, tokenizer: Any) -> None:
        model = build_model("t5-large", self.args.tiny, tokenizer, self.device, self.dtype)
        scorer = make_scorer("seq2seq", model, tokenizer, "t5-large", self.device)
        reqs = self.work["seq2seq"]
        scorer.loglik(reqs[:4])
        seconds, _ = timed(self.device, lambda: scorer.loglik(reqs))
        targets: dict[str, list[int]] = {}
        for context, target in reqs:
            targets.setdefault(context, []).append(len(tokenizer(target)["input_ids"]))
        flops = bench_models.seq2seq_flops(
            flop_groups(model),
            [(len(tokenizer(c)["input_ids"]), t) for c, t in targets.items()])
        self.throughput("t5-large", "seq2seq", "kgprobe", len(reqs), seconds, flops)
        if not self.args.no_lm_eval and self.time_left() > 60:
            eos = tokenizer.eos_token
            try:
                from lm_eval.api.instance import Instance
                from lm_eval.models.huggingface import HFLM
            except ImportError as exc:
                self.note(f"t5-large: lm-eval not run: {exc}")
            else:
                lm = HFLM(pretrained=model, tokenizer=tokenizer, backend="seq2seq",
                          batch_size=self.args.lm_eval_batch, device=str(self.device))
                inst = [Instance(request_type="loglikelihood", doc={}, arguments=(c, x + eos),
                                 idx=i) for i, (c, x) in enumerate(reqs)]
                seconds, _ = timed(self.device,
                                   lambda: lm.loglikelihood(inst, disable_tqdm=True))
                self.throughput("t5-large", "seq2seq", "lm-eval", len(reqs), seconds, None)

    def placement(self, shape: str, tokenizer: Any, folder: Path) -> list[float]:
        """Save the shape, load it whole and split by --device-map; compare. Returns the whole
        model's scores of the check's requests (the torchrun comparison reuses them)."""
        from probes.backends import load_scorer

        model = build_model(shape, self.args.tiny, tokenizer, self.device, self.dtype)
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
        size = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
        del model
        self.free()
        reqs = self.work["mc"][:100]
        dtype = str(self.dtype).removeprefix("torch.")
        whole = load_scorer(str(folder), device=str(self.device), dtype=dtype)
        want = [s.logprob for s in whole.loglik(reqs)]
        del whole
        self.free()
        if self.device.type == "cuda":
            budget: dict[int | str, int | str] = {0: int(size * 0.5), "cpu": "200GiB"}
        else:
            budget = {"cpu": int(size * 0.6)}
        split = load_scorer(str(folder), device=str(self.device), dtype=dtype,
                            device_map="auto", max_memory=budget,
                            offload_folder=str(folder.parent / "offload"))
        placed = sorted({str(v) for v in split.describe().get("device_map", {}).values()})
        got = [s.logprob for s in split.loglik(reqs)]
        self.data["device_map"] = {"shape": shape, "placed_on": placed}
        self.note(f"--device-map {shape}: layers on {', '.join(placed)}")
        self.agree(f"{shape} --device-map split = whole model", largest_difference(got, want),
                   self.tolerance() if self.device.type == "cuda" else 1e-3, "nats")
        del split
        self.free()
        return want

    def torchrun(self, folder: Path, want: list[float]) -> None:
        reqs = self.work["mc"][:100]
        req_file, res_file = folder.parent / "requests.json", folder.parent / "torchrun.json"
        req_file.write_text(json.dumps(reqs))
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1",
               "--master-addr", "127.0.0.1", "--master-port", str(29500 + os.getpid() % 1000),
               str(Path(__file__).resolve()),
               "--worker", str(folder), str(req_file), str(res_file),
               "--dtype", str(self.dtype).removeprefix("torch.")]
        if self.device.type != "cuda":
            cmd.append("--cpu")
        path = os.pathsep.join(filter(None, [str(SCRIPTS.parent), os.environ.get("PYTHONPATH")]))
        # one machine: the rendezvous and gloo stay on the loopback interface
        env = {**os.environ, "PYTHONPATH": path, "MASTER_ADDR": "127.0.0.1",
               "GLOO_SOCKET_IFNAME": "lo"}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        if proc.returncode != 0:
            self.note("torchrun worker failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
            self.agree("torchrun --nproc-per-node 1 ran", 1.0, 0.0, "(failed)")
            return
        result = json.loads(res_file.read_text())
        self.data["torchrun"] = {k: v for k, v in result.items() if k != "scores"}
        self.agree(f"torchrun ({result['backend']}) = plain run",
                   largest_difference(result["scores"], want),
                   self.tolerance() if self.device.type == "cuda" else 1e-3, "nats")

    def free(self) -> None:
        import gc

        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def write(self) -> None:
        self.data["finished"] = datetime.datetime.now(datetime.UTC).isoformat()
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "check.json").write_text(json.dumps(self.data, indent=1))
        (self.out / "check.md").write_text(markdown(self.data))
        print(f"wrote {self.out / 'check.json'} and {self.out / 'check.md'}", flush=True)


def markdown(data: dict[str, Any]) -> str:
    """The check's tables: environment, throughput against the floor and peers, agreement."""
    env = data["environment"]
    lines = [f"# GPU check, {data['started'][:10]}", "",
             f"- device: {env['device']}; torch {env['torch']}, transformers "
             f"{env['transformers']}; dtype {env['dtype']}",
             f"- measured matmul rate ({env['dtype']}): {data['matmul_gflops']:,.0f} GFLOP/s", "",
             "| shape | workload | tool | requests | requests/s | floor/s | of floor |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in data["throughput"]:
        lines.append(f"| {r['shape']} | {r['workload']} | {r['tool']} | {r['requests']} | "
                     f"{r['per_s']:,.1f} | {r.get('floor_per_s', '–')} | "
                     + (f"{r['of_floor']:.0%}" if "of_floor" in r else "–") + " |")
    lines += ["", "| check | difference | tolerance | ok |", "|---|---:|---:|---|"]
    for a in data["agreement"]:
        lines.append(f"| {a['check']} | {a['difference']:.3g} {a['unit']} | {a['tolerance']:g} "
                     f"| {'yes' if a['ok'] else '**no**'} |")
    peaks = {k: v for k, v in data.get("peak_gib", {}).items() if v is not None}
    if peaks:
        lines += ["", "Peak GPU memory (GiB): " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                            peaks.items())]
    if data["environment"].get("tiny"):
        lines += ["", "Tiny 2-layer models: the floor fractions say nothing about speed (the "
                  "embedding and head dominate the parameter count); this run checks the paths."]
    if data.get("batching"):
        lines += ["", "Automatic batch limits at the end (rows, padded tokens): " + "; ".join(
            f"{shape} {op} {b['rows']}/{b['tokens']}" for shape, ops in data["batching"].items()
            for op, b in ops.items())]
    if data["notes"]:
        lines += ["", *[f"- {n}" for n in data["notes"]]]
    return "\n".join(lines) + "\n"


def worker(folder: str, requests: str, result: str, cpu: bool, dtype: str) -> int:
    """One torchrun rank: NCCL (gloo on the CPU), load the folder, score, report."""
    import torch.distributed as dist

    from probes.backends import load_scorer

    backend = "gloo" if cpu else "nccl"
    dist.init_process_group(backend=backend)
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = "cpu" if cpu else f"cuda:{rank}"
    if not cpu:
        torch.cuda.set_device(rank)
    scorer = load_scorer(folder, device=device, dtype=dtype)
    reqs = [tuple(r) for r in json.loads(Path(requests).read_text())]
    scores = [s.logprob for s in scorer.loglik(reqs)]  # type: ignore[arg-type]
    total = torch.tensor([sum(scores)], device=device)
    dist.all_reduce(total)
    Path(result).write_text(json.dumps({"backend": backend, "world_size": dist.get_world_size(),
                                        "all_reduce": float(total[0]), "scores": scores}))
    dist.destroy_process_group()
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=None,
                   help="folder for check.json and check.md (default $OUT, else gpu_check_out)")
    p.add_argument("--cpu", action="store_true", help="run on the CPU (fp32)")
    p.add_argument("--tiny", action="store_true", help="2-layer models and small request sets")
    p.add_argument("--tokenizers", type=Path, default=None,
                   help="tokenizer folders saved by --prepare (default: build them here)")
    p.add_argument("--prepare", type=Path, default=None, metavar="DIR",
                   help="save the tokenizers the check needs into DIR and exit")
    p.add_argument("--shapes", default="llama-1b,llama-8b,bert-large,t5-large")
    p.add_argument("--no-lm-eval", action="store_true", help="skip lm-evaluation-harness")
    p.add_argument("--lm-eval-batch", default="64", help="HFLM batch_size (a number or auto)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="skip the optional parts once this many seconds have passed")
    p.add_argument("--worker", nargs=3, metavar=("FOLDER", "REQUESTS", "RESULT"),
                   help=argparse.SUPPRESS)
    p.add_argument("--dtype", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker(*args.worker, cpu=args.cpu, dtype=args.dtype or "bfloat16")
    if args.prepare:
        import bench_bear

        tokenizers = local_tokenizers()
        for kind, tok in tokenizers.items():
            tok.save_pretrained(args.prepare / kind)
        print(f"saved tokenizers {', '.join(TOKENIZER_DIRS)} under {args.prepare}")
        if not (bench_bear.DATA / "metadata_relations.json").is_file():
            raise SystemExit(f"{bench_bear.DATA} not found: the BEAR statements come from "
                             "../shared/data/bear (clone kgprobe beside ../shared)")
        bear = bear_statements(bench_bear.DATA, tokenizers["causal"])
        (args.prepare / BEAR_FILE).write_text(json.dumps(bear), encoding="utf-8")
        print(f"saved {len(bear['statements']):,} BEAR statements (whole of BEAR: "
              f"{bear['whole_statements']:,} statements, {bear['whole_positions']:,} floor "
              f"positions) to {args.prepare / BEAR_FILE}")
        return 0
    if not args.cpu and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on the GPU machine, or use --cpu --tiny here")
    device = torch.device("cpu" if args.cpu else "cuda")
    dtype = torch.float32 if args.cpu else torch.bfloat16
    out = args.out or Path(os.environ.get("OUT") or "gpu_check_out")
    import transformers

    check = Check(out, args, device, dtype)
    check.data["environment"] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda"
        else f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} "
             "threads)",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "dtype": str(dtype).removeprefix("torch."), "tiny": args.tiny}
    check.gflops = matmul_rate(device, dtype, 512 if args.cpu else 8192)
    check.data["matmul_gflops"] = round(check.gflops, 1)
    print(f"matmul {check.gflops:,.0f} GFLOP/s on {check.data['environment']['device']}",
          flush=True)
    toks = load_tokenizers(args.tokenizers)
    check.bear_data, how = load_bear(args.tokenizers, toks["causal"])
    check.note(f"BEAR statements: {how}" + (f" ({len(check.bear_data['statements']):,})"
                                            if check.bear_data else ""))
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    try:
        first = None
        for shape in (s for s in shapes if s.startswith("llama")):
            scorer = check.causal(shape, toks["causal"])
            if first is None:
                check.oom_backoff(scorer)
                first = shape
            del scorer
            check.free()
        if "bert-large" in shapes:
            check.masked(toks["masked"])
            check.free()
        if "t5-large" in shapes:
            check.seq2seq(toks["seq2seq"])
            check.free()
        if first is not None:
            if dtype == torch.float32:
                check.note("bf16 vs fp32: not compared (the run is fp32)")
            else:
                check.bf16_vs_fp32(first, toks["causal"])
            with tempfile.TemporaryDirectory(prefix="kgprobe-gpu-check-") as tmp:
                folder = Path(tmp) / first
                want = check.placement(first, toks["causal"], folder)
                check.torchrun(folder, want)
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        check.write()
    failed = [a["check"] for a in check.data["agreement"] if not a["ok"]]
    if failed:
        print("FAILED: " + "; ".join(failed), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
