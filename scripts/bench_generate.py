"""Generation against lm-evaluation-harness 0.4.13, in one run: identical strings and speed.

The same model folder (SmolLM2-135M by default), the same prompts (knowledge questions in the
forms kgprobe's generate probes render: completions such as "A dog is a kind of" and
questions ending in "A:"), greedy, ``max_new_tokens`` and a newline stop:

* ``lm-eval``: ``HFLM.generate_until`` (its HF backend, the peers' venv,
  ``scripts/setup_peers.sh``) at each ``--lm-eval-batch-sizes``; its best is the reference;
* ``kgprobe``: ``load_scorer(folder).generate`` (probes/backends/causal_generate.py) at the
  same batch size as lm-eval's best and at ``--kgprobe-batch-size``.

It prints, and writes to ``--out`` (``report.md`` and each tool's JSON):

* the identity table: strings compared, identical, and every difference with both strings;
* with ``--few-shot K``: every prompt preceded by the same K solved examples (a long shared
  prefix, where kgprobe's prefix sharing shows, probes/backends/prefix_groups.py), and
  kgprobe timed once more without sharing (``prefix_mode=None``) at the same batch sizes;
* the speed table: seconds per tool and batch size, kgprobe's speed-up over lm-eval's best,
  and the floor: 2 x parameters FLOPs per prompt token (prefill) and per generated token
  (decode; counted with the tokenizer on kgprobe's answers, plus the stop token) at the fp32
  matmul rate measured before and after the tools in the same run.

Usage::

    scripts/setup_peers.sh                     # once
    .venv/bin/python scripts/bench_generate.py --out OUT_DIR
    .venv/bin/python scripts/bench_generate.py --out OUT_DIR --few-shot 8
    .venv/bin/python scripts/bench_generate.py --out OUT_DIR --smoke   # a tiny model, seconds
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import bench_peers

SCRIPTS = Path(__file__).resolve().parent
RUNNERS = SCRIPTS / "peers"

COUNTRIES = ["France", "Italy", "Spain", "Germany", "Japan", "Canada", "Egypt", "Peru",
             "Kenya", "Norway", "Chile", "India"]
WORDS = ["dog", "oak", "hammer", "violin", "salmon", "tulip", "sparrow", "carrot", "jacket",
         "truck", "granite", "whale"]
ADJECTIVES = ["hot", "tall", "happy", "early", "heavy", "loud", "wet", "rich", "young",
              "bright", "strong", "empty"]
PEOPLE = ["Albert Einstein", "Marie Curie", "Pablo Picasso", "Wolfgang Amadeus Mozart",
          "Frida Kahlo", "Isaac Newton", "Leo Tolstoy", "Nelson Mandela", "Ada Lovelace",
          "Charles Darwin", "Galileo Galilei", "Jane Austen"]


SOLVED = ["Q: What is the capital of Portugal?\nA: Lisbon", "A rose is a kind of flower",
          "The opposite of slow is fast", "Q: Where was William Shakespeare born?\nA: "
          "Stratford-upon-Avon", "Q: What is the capital of Greece?\nA: Athens",
          "An eagle is a kind of bird", "The opposite of dark is light",
          "Q: Where was Vincent van Gogh born?\nA: Zundert",
          "Q: What is the capital of Sweden?\nA: Stockholm", "A chair is a kind of furniture",
          "The opposite of short is long", "Q: Where was Johann Sebastian Bach born?\nA: "
          "Eisenach"]
"""The solved examples of ``--few-shot`` (the four forms in turn, fillers not in the set)."""


def prompts(few_shot: int = 0) -> list[str]:
    """The fixed prompt set (48): four forms x twelve fillers; with ``few_shot`` K each is
    preceded by the same first K solved examples, one blank line between examples."""
    if not 0 <= few_shot <= len(SOLVED):
        raise SystemExit(f"--few-shot {few_shot}: give 0 to {len(SOLVED)} solved examples")
    block = "".join(f"{example}\n\n" for example in SOLVED[:few_shot])
    return [block + p for p in
            [f"Q: What is the capital of {c}?\nA:" for c in COUNTRIES]
            + [f"A {w} is a kind of" for w in WORDS]
            + [f"The opposite of {a} is" for a in ADJECTIVES]
            + [f"Q: Where was {p} born?\nA:" for p in PEOPLE]]


def run_runner(script: str, python: Path, folder: Path, workload: Path, out: Path,
               threads: int, sizes: list[int]) -> dict:
    cmd = [str(python), str(RUNNERS / script), "--model", str(folder), "--workload",
           str(workload), "--out", str(out), "--threads", str(threads),
           "--batch-sizes", ",".join(map(str, sizes))]
    done = subprocess.run(cmd, cwd=str(RUNNERS), text=True, capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"{script} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return dict(json.loads(out.read_text(encoding="utf-8")))


def identity(ours: list[str], theirs: list[str], items: list[str]) -> list[str]:
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    lines = ["| strings compared | identical | different |", "|---:|---:|---:|",
             f"| {len(ours)} | {same} | {len(ours) - same} |"]
    diffs = [(p, a, b) for p, a, b in zip(items, ours, theirs, strict=True) if a != b]
    if diffs:
        lines += ["", "| prompt | kgprobe | lm-eval |", "|---|---|---|"]
        lines += [f"| {p!r} | {a!r} | {b!r} |" for p, a, b in diffs]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for the workload, outputs and the table")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--lm-eval-batch-sizes", default="1,8,16")
    parser.add_argument("--kgprobe-batch-size", type=int, default=48)
    parser.add_argument("--limit", type=int, default=None, help="the first N prompts only")
    parser.add_argument("--few-shot", type=int, default=0, metavar="K",
                        help=f"precede every prompt by the same K solved examples (0 to "
                             f"{len(SOLVED)}; a long shared prefix) and time kgprobe also "
                             "without prefix sharing")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny random Llama (bench_models) and 6 prompts: checks the "
                             "plumbing in seconds, measures nothing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    items = prompts(args.few_shot)[: 6 if args.smoke else args.limit]
    if args.smoke:
        folder = bench_models_tiny(args.out / "tiny-llama")
        args.max_new_tokens = min(args.max_new_tokens, 6)
    else:
        folder = bench_peers.resolve_model(args.model)
    workload = args.out / "workload.json"
    workload.write_text(json.dumps({"prompts": items, "max_new_tokens": args.max_new_tokens,
                                    "stop": ["\n"], "compare_plain": args.few_shot > 0}),
                        encoding="utf-8")
    peers = bench_peers.default_peers_venv() / "bin" / "python"
    if not peers.exists():
        raise SystemExit(f"no peers venv at {peers}: run scripts/setup_peers.sh first")
    gflops = bench_peers.measure_matmul_gflops(args.threads)
    sizes = [int(s) for s in args.lm_eval_batch_sizes.split(",") if s]
    lme = run_runner("lmeval_generate_runner.py", peers, folder, workload,
                     args.out / "lm-eval.json", args.threads, sizes)
    best = min(lme["runs"], key=lambda s: lme["runs"][s]["seconds"])
    kg_sizes = sorted({int(best), args.kgprobe_batch_size})
    kg = run_runner("kgprobe_generate_runner.py", Path(sys.executable), folder, workload,
                    args.out / "kgprobe.json", args.threads, kg_sizes)
    gflops_after = bench_peers.measure_matmul_gflops(args.threads)
    model = "a tiny Llama" if args.smoke else args.model
    lines = [f"# Generation: kgprobe and lm-eval on {model}",
             "", f"{len(items)} prompts ({args.few_shot} solved examples before each), "
             f"greedy, max_new_tokens {args.max_new_tokens}, stop "
             f"newline; {args.threads} threads; fp32 matmul {gflops:.1f} GFLOP/s before, "
             f"{gflops_after:.1f} after.", "", "## Identity (kgprobe at lm-eval's best batch "
             f"size {best} against lm-eval at {best})", ""]
    lines += identity(kg["runs"][best]["texts"], lme["runs"][best]["texts"], items)
    other = [s for s in lme["runs"] if s != best]
    for s in other:
        same = sum(a == b for a, b in zip(lme["runs"][s]["texts"], lme["runs"][best]["texts"],
                                          strict=True))
        lines.append(f"\nlm-eval at batch {s} against lm-eval at {best}: {same}/{len(items)} "
                     "identical")
    floor_s = floor_seconds(folder, items, kg["runs"][best]["texts"], max(gflops, gflops_after))
    ref = lme["runs"][best]["seconds"]
    lines += ["", "## Speed", "", "| tool | batch | seconds | speed-up over lm-eval's best | "
              "floor / seconds |", "|---|---:|---:|---:|---:|"]
    for tool, runs in (("lm-eval", lme["runs"]), ("kgprobe", kg["runs"]),
                       ("kgprobe, no prefix sharing", kg.get("plain_runs", {}))):
        for s, r in sorted(runs.items(), key=lambda kv: int(kv[0])):
            lines.append(f"| {tool} | {s} | {r['seconds']:.2f} | {ref / r['seconds']:.2f}x | "
                         f"{floor_s / r['seconds']:.1%} |")
    for s, r in sorted(kg.get("plain_runs", {}).items(), key=lambda kv: int(kv[0])):
        same = sum(a == b for a, b in zip(r["texts"], kg["runs"][s]["texts"], strict=True))
        lines.append(f"\nkgprobe without prefix sharing against with it, batch {s}: "
                     f"{same}/{len(items)} identical")
    lines.append(f"\nfloor: {floor_s:.2f} s (2 x parameters FLOPs per prompt and generated "
                 "token at the faster matmul rate)")
    if args.few_shot:
        block = items[0][: len(items[0]) - len(prompts()[0])]
        once = floor_seconds(folder, items, kg["runs"][best]["texts"],
                             max(gflops, gflops_after), shared=block)
        lines.append(f"\nfloor with the {args.few_shot} solved examples counted once: "
                     f"{once:.2f} s")
    report = "\n".join(lines) + "\n"
    (args.out / "report.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


def floor_seconds(folder: Path, items: list[str], texts: list[str], gflops: float,
                  shared: str = "") -> float:
    """The floor in seconds; ``shared``: a prefix of every prompt counted once."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    prefill = sum(len(tok(p, add_special_tokens=False)["input_ids"]) for p in items)
    if shared:
        n = len(tok(shared, add_special_tokens=False)["input_ids"])
        prefill -= (len(items) - 1) * n
    decode = sum(len(tok(t, add_special_tokens=False)["input_ids"]) + 1 for t in texts)
    return 2 * bench_peers.count_parameters(folder) * (prefill + decode) / (gflops * 1e9)


def bench_models_tiny(path: Path) -> Path:
    """A 2-layer Llama with the SmolLM2 tokenizer and random weights (the smoke model)."""
    if (path / "config.json").exists():
        return path
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from probes.engine.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


if __name__ == "__main__":
    sys.exit(main())
