"""BEAR parity and speed: kgprobe against lm-pub-quiz 0.3.3 on the same model folder and the
same statements, in one run.

The workload is BEAR in lm-pub-quiz's format (``../shared/data/bear/BEAR``): for each chosen
relation its first ``--instances`` instances, every template, every answer of the relation's
answer space (one item = instance x template). Each tool runs in its own process:
``scripts/peers/bear_kgprobe_runner.py`` with kgprobe's Python and
``scripts/peers/lmpq_runner.py`` with lm-pub-quiz's virtual environment
(``scripts/setup_lmpq.sh``; ``KGPROBE_LMPQ_VENV``, default ``~/.cache/kgprobe/lmpq-venv``).

Printed side by side (markdown; also ``--out``/summary.json):

- the per-statement largest |score difference| (and where), and statements whose scored-token
  counts differ;
- per item, the agreement of the predictions (first maximum of the answer space's scores):
  items where either tool has an exact tie at the top are counted apart; near-ties (the top two
  answers closer than the largest score difference between the tools) are counted and listed;
  any other disagreement is a parity failure;
- per-relation accuracy (P@1 over instance x template items) of both tools;
- speed: statements/s of kgprobe, of lm-pub-quiz at each ``--lmpq-batch-size`` (its default is
  1), each the median of ``--repeat`` timed passes after an untimed warm-up pass over the first
  item (so that no tool's time holds its first call's one-off costs), with the passes' range,
  and the arithmetic floor: 2 FLOPs per parameter per token position that must run, an
  item's shared token prefix (BOS and the template text up to the answer) counted once.

Usage::

    scripts/setup_lmpq.sh                                     # once
    .venv/bin/python scripts/bench_bear.py --model smollm2-135m --instances 10   # full parity
    .venv/bin/python scripts/bench_bear.py --instances 10 --groups 5 --out runs/p  # resumable
    .venv/bin/python scripts/bench_bear.py --relations P19,P30 --instances 2     # a quick look
    .venv/bin/python scripts/bench_bear.py --kind masked --relations P19 --pll-metric original
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import bench_models
import bench_peers

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent
RUNNERS = SCRIPTS / "peers"
DATA = ROOT.parent / "shared" / "data" / "bear" / "BEAR"
OUT = Path.home() / ".cache" / "kgprobe" / "bench-bear"


class BenchError(Exception):
    """The benchmark cannot run (missing data, model or venv)."""


def default_lmpq_venv() -> Path:
    """``$KGPROBE_LMPQ_VENV`` or ``~/.cache/kgprobe/lmpq-venv``."""
    env = os.environ.get("KGPROBE_LMPQ_VENV")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kgprobe" / "lmpq-venv"


def build_workload(data: Path, relations: Sequence[str] | None, instances: int) -> dict:
    """Items (instance x template) of the chosen relations, in lm-pub-quiz's order."""
    meta_file = data / "metadata_relations.json"
    if not meta_file.is_file():
        raise BenchError(f"{meta_file} not found; pass --data <folder of BEAR in lm-pub-quiz's "
                         "format> (../shared/data/bear/BEAR)")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    wanted = list(relations) if relations else sorted(meta, key=lambda r: int(r[1:]))
    unknown = [r for r in wanted if r not in meta]
    if unknown:
        raise BenchError(f"unknown relation(s) {', '.join(unknown)}; BEAR has "
                         f"{', '.join(sorted(meta)[:5])} ...")
    items = []
    for rel in wanted:
        answers = list(meta[rel]["answer_space_labels"])
        lines = (data / f"{rel}.jsonl").read_text(encoding="utf-8").splitlines()
        for k, line in enumerate(lines[:instances]):
            inst = json.loads(line)
            for t, template in enumerate(meta[rel]["templates"]):
                items.append({"relation": rel, "instance": k, "template_index": t,
                              "template": template, "subject": inst["sub_label"],
                              "answers": answers, "gold": int(inst["answer_idx"])})
    return {"items": items}


def run_runner(script: str, python: Path, args: argparse.Namespace, model: Path,
               workload: Path, out: Path, extra: Sequence[str]) -> dict:
    cmd = [str(python), str(RUNNERS / script), "--model", str(model), "--workload",
           str(workload), "--out", str(out), "--threads", str(args.threads), "--kind",
           args.kind, "--scoring", args.scoring, "--repeat", str(args.repeat), *extra]
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(args.threads)
    env.update(TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    print(f"\n== {script}: {model.name} ({python})", flush=True)
    out.unlink(missing_ok=True)
    proc = subprocess.run(cmd, env=env, timeout=args.timeout, check=False)
    if proc.returncode != 0 or not out.is_file():
        raise BenchError(f"{script} failed (exit {proc.returncode}); see its output above")
    return dict(json.loads(out.read_text(encoding="utf-8")))


def top(scores: Sequence[float]) -> tuple[int, float, bool]:
    """(first maximum, gap to the runner-up, exact tie at the top).

    >>> top([-3.0, -1.0, -1.0]), top([-2.0, -1.5])
    ((1, 0.0, True), (1, 0.5, False))
    """
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    rest = [s for i, s in enumerate(scores) if i != best]
    gap = scores[best] - max(rest) if rest else float("inf")
    return best, gap, gap == 0.0


def compare(items: list[dict], ours: dict, theirs: dict) -> dict:
    """Score differences, prediction agreement and per-relation accuracy (see the module)."""
    worst, where, count_diff = 0.0, None, 0
    for k, item in enumerate(items):
        if ours["texts"][k] != theirs["texts"][k]:
            raise BenchError(f"item {k} ({item['relation']}): the tools templated different "
                             f"statements: {ours['texts'][k][0]!r} vs {theirs['texts'][k][0]!r}")
        for j, (a, b) in enumerate(zip(ours["scores"][k], theirs["scores"][k], strict=True)):
            if abs(a - b) > worst:
                worst, where = abs(a - b), (k, j)
        count_diff += sum(x != y for x, y in zip(ours["n_tokens"][k], theirs["n_tokens"][k],
                                                  strict=True))
    agree, ties, near, failures = 0, [], [], []
    accuracy: dict[str, list[int]] = {}
    for k, item in enumerate(items):
        pa, gap_a, tie_a = top(ours["scores"][k])
        pb, gap_b, tie_b = top(theirs["scores"][k])
        acc = accuracy.setdefault(item["relation"], [0, 0, 0])
        acc[0] += pa == item["gold"]
        acc[1] += pb == item["gold"]
        acc[2] += 1
        label = f"{item['relation']} instance {item['instance']} template {item['template_index']}"
        if tie_a or tie_b:
            ties.append(label)
        elif pa == pb:
            agree += 1
        elif min(gap_a, gap_b) <= worst:
            near.append(f"{label}: {item['answers'][pa]!r} vs {item['answers'][pb]!r} "
                        f"(gap {min(gap_a, gap_b):.2e})")
        else:
            failures.append(f"{label}: {item['answers'][pa]!r} vs {item['answers'][pb]!r}")
    return {"largest_difference": worst, "where": where, "token_count_differences": count_diff,
            "bos_text_items": sum(bool(b) for b in theirs.get("bos_text", [])),
            "items": len(items), "agree": agree, "exact_ties": ties, "near_ties": near,
            "failures": failures, "accuracy": accuracy}


def distinct_prefixes(seqs: Sequence[Sequence[int]]) -> int:
    """Token positions a causal LM must run to score every sequence after its first token: one
    per distinct proper prefix (its last state predicts the next token), however the
    sequences are grouped.

    >>> distinct_prefixes([[1, 2, 3], [1, 2, 4], [1, 5]])  # (1,) and (1, 2)
    2
    >>> distinct_prefixes([[1, 2, 3], [9, 2, 3]])
    4
    """
    from probes.backends.causal_statements import common_length

    # sorted, a sequence's already-counted prefixes are those it shares with its predecessor
    # (up to the predecessor's own proper prefixes): no set of every prefix is built
    ordered = sorted(tuple(q) for q in seqs)
    total, prev = 0, ()
    for seq in ordered:
        seen = min(common_length(prev, seq), len(prev) - 1) if prev else 0
        total += max(0, len(seq) - 1 - max(0, seen))
        prev = seq
    return total


def floor_positions(texts: list[list[str]], model: Path) -> float:
    """Token positions that must run per statement: the distinct proper prefixes (BOS
    included) of all the workload's statements, over the number of statements. Statements
    share a prefix within an item (BOS and the template text before the answer) and across
    items (the subject across an instance's templates; ``"Paris is the capital of"`` across
    the instances of an answer-first template), and kgprobe's fast path shares both."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    flat = [t for row in texts for t in row]
    seqs = [[tok.bos_token_id, *ids] for ids in tok(flat, add_special_tokens=False)["input_ids"]]
    return distinct_prefixes(seqs) / max(1, len(seqs))


def whole_bear_estimate(args: argparse.Namespace, model: Path, summary: dict) -> dict:
    """The floor's token positions over the whole of BEAR (tokenised here, nothing scored), the
    floor time at this run's matmul rate and the wall time at this run's fraction of the floor
    (kgprobe's statements/s over the floor's, on this run's workload)."""
    sys.path.insert(0, str(RUNNERS))
    import bear_common

    everything = build_workload(args.data, None, 10**9)["items"]
    texts = [[bear_common.statement(i["template"], i["subject"], a)[0] for a in i["answers"]]
             for i in everything]
    statements = sum(len(t) for t in texts)
    per_statement = floor_positions(texts, model)
    floor_seconds = statements * per_statement * 2 * summary["params"] / (summary["gflops"] * 1e9)
    fraction = summary["speed"]["kgprobe"] / summary["floor"]
    return {"statements": statements, "positions_per_statement": per_statement,
            "floor_seconds": floor_seconds, "fraction_of_floor": fraction,
            "estimated_seconds": floor_seconds / fraction}


def report(summary: dict) -> str:
    c = summary["comparison"]
    lines = [f"## BEAR parity: {summary['model']} ({summary['kind']}, {summary['scoring']}"
             f"{', ' + summary['variant'] if summary['variant'] else ''}"
             f"{', lm-pub-quiz ensure_bos_token_added=False' if summary['no_ensure_bos'] else ''})",
             "",
             f"{c['items']} items (instance x template), {summary['statements']} statements.", "",
             "| check | result |", "| --- | --- |",
             f"| largest per-statement abs(difference) | {c['largest_difference']:.2e} nats "
             f"(item, answer {c['where']}) |",
             f"| statements with different scored-token counts | {c['token_count_differences']} |",
             "| items whose first padded row lacks BOS (lm-pub-quiz's BOS-text branch when on) "
             f"| {c['bos_text_items']} |",
             f"| items with the same prediction | {c['agree']} of {c['items']} |",
             f"| items with an exact tie at the top (apart) | {len(c['exact_ties'])} |",
             f"| near-ties (top two closer than the largest difference) | {len(c['near_ties'])} |",
             f"| other disagreements (failures) | {len(c['failures'])} |", "",
             "| relation | items | kgprobe acc | lm-pub-quiz acc | equal |",
             "| --- | ---: | ---: | ---: | --- |"]
    for rel, (a, b, n) in c["accuracy"].items():
        lines.append(f"| {rel} | {n} | {a / n:.3f} | {b / n:.3f} | {'yes' if a == b else 'NO'} |")
    lines += ["", *(f"- near-tie: {x}" for x in c["near_ties"]),
              *(f"- FAILURE: {x}" for x in c["failures"]), "",
              "| tool | statements/s (median pass) | passes (range) | x lm-pub-quiz fastest "
              "| of floor |", "| --- | ---: | ---: | ---: | ---: |"]
    speed = summary["speed"]
    ranges = summary.get("pass_ranges", {})
    fastest = max(v for k, v in speed.items() if k.startswith("lm-pub-quiz"))
    floor = summary.get("floor")
    for tool, rate in speed.items():
        of_floor = f"{rate / floor:.0%}" if floor else "-"
        got = ranges.get(tool)
        spread = f"{got[0]} passes: {got[1]:.1f}-{got[2]:.1f}" if got else "-"
        lines.append(f"| {tool} | {rate:.1f} | {spread} | {rate / fastest:.2f} | {of_floor} |")
    if floor:
        lines.append(f"| *floor* ({summary['gflops']:.0f} GFLOP/s, {summary['params']:,} "
                     f"parameters, {summary['positions']:.2f} positions/statement) | "
                     f"{floor:.1f} | | | 100% |")
    whole = summary.get("whole_bear")
    if whole:
        lines += ["", f"Whole of BEAR: {whole['statements']:,} statements, "
                  f"{whole['positions_per_statement']:.2f} floor positions per statement; floor "
                  f"{whole['floor_seconds'] / 3600:.2f} h at this run's matmul rate, estimated "
                  f"{whole['estimated_seconds'] / 3600:.2f} h at this run's "
                  f"{whole['fraction_of_floor']:.0%} of the floor."]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m",
                   help="alias, GGUF or model folder (masked: default a bert-base-shaped "
                        "random-weight model, scripts/bench_models.py)")
    p.add_argument("--kind", choices=("causal", "masked"), default="causal")
    p.add_argument("--scoring", choices=("whole", "conditional"), default="whole")
    p.add_argument("--quirk", action="store_true",
                   help="kgprobe reproduces lm-pub-quiz's BOS-text quirk (boundary=lm-pub-quiz)")
    p.add_argument("--pll-metric", default="within_word_l2r",
                   help="masked: original, within_word_l2r, sentence_l2r, answer_l2r+word_l2r")
    p.add_argument("--no-ensure-bos", action="store_true",
                   help="lm-pub-quiz with ensure_bos_token_added=False (docs/bear_parity.md: "
                        "with a left-padding tokenizer such as Gemma's its BOS-text branch puts "
                        "a second, scored BOS before some instances' statements)")
    p.add_argument("--relations", help="comma-separated, e.g. P19,P30 (default: all)")
    p.add_argument("--instances", type=int, default=10, help="per relation (first N)")
    p.add_argument("--lmpq-batch-size", default="1",
                   help="comma-separated lm-pub-quiz batch sizes to time, e.g. 1,4,16,64")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="timed passes per tool and batch size, after an untimed warm-up on "
                        "the first item; the median pass is the time (use 3 or more for speed)")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--lmpq-venv", type=Path, default=default_lmpq_venv())
    p.add_argument("--no-floor", action="store_true", help="skip the matmul-rate measurement")
    p.add_argument("--whole-bear", action="store_true",
                   help="also count the floor's token positions over the whole of BEAR (every "
                        "relation, instance and template) and estimate its wall time")
    p.add_argument("--timeout", type=int, default=6 * 3600)
    p.add_argument("--groups", type=int, default=1, metavar="N",
                   help="run the relations in N groups (sorted by number, in order), each in "
                        "--out/group<k>, skipping groups already finished, then report them as "
                        "one run (--merge): a run cut off keeps its finished groups")
    p.add_argument("--merge", type=Path, nargs="+", metavar="DIR",
                   help="run nothing: join the --out folders of earlier runs (e.g. one per "
                        "group of relations, same model and options) and report them as one run")
    return p.parse_args(argv)


def run_groups(args: argparse.Namespace, argv: list[str]) -> int:
    """``--groups N``: one run per group of relations in ``--out/group<k>``, then ``--merge``."""
    meta_file = args.data / "metadata_relations.json"
    if not meta_file.is_file():
        print(f"bench_bear: {meta_file} not found; pass --data", file=sys.stderr)
        return 2
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    wanted = (args.relations.split(",") if args.relations
              else sorted(meta, key=lambda r: int(r[1:])))
    size = -(-len(wanted) // args.groups)
    base = drop_options(argv, ("--groups", "--relations", "--out"))
    dirs = []
    for k in range(0, len(wanted), size):
        out = args.out / f"group{k // size}"
        dirs.append(out)
        if (out / "summary.json").is_file():
            print(f"== group {k // size}: done ({out})", flush=True)
            continue
        print(f"== group {k // size}: {','.join(wanted[k:k + size])}", flush=True)
        code = main([*base, "--relations", ",".join(wanted[k:k + size]), "--out", str(out)])
        if code == 2:
            return code
    return main(["--merge", *map(str, dirs), "--out", str(args.out)])


def drop_options(argv: Sequence[str], names: Sequence[str]) -> list[str]:
    """``argv`` without the named options and their values (``--x v`` or ``--x=v``).

    >>> drop_options(["--groups", "5", "--model", "m", "--out=o"], ["--groups", "--out"])
    ['--model', 'm']
    """
    kept: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in names:
            skip = True
        elif not a.startswith(tuple(f"{n}=" for n in names)):
            kept.append(a)
    return kept


def merge_runs(dirs: Sequence[Path]) -> tuple[dict, dict, dict, dict]:
    """The workloads, both tools' outputs and the first summary of earlier ``--out`` folders,
    joined item by item (seconds added); options must agree."""
    items: list[dict] = []
    ours: dict = {"texts": [], "scores": [], "n_tokens": [], "statements": 0,
                  "seconds": {"kgprobe": 0.0}}
    theirs: dict = {"texts": [], "scores": [], "n_tokens": [], "bos_text": [], "seconds": {}}
    first: dict = {}
    for d in dirs:
        files = {name: d / f"{name}.json" for name in ("workload", "kgprobe", "lmpq", "summary")}
        missing = [str(f) for f in files.values() if not f.is_file()]
        if missing:
            raise BenchError(f"{', '.join(missing)} not found: --merge takes the --out folders "
                             "of finished runs")
        got = {name: json.loads(f.read_text(encoding="utf-8")) for name, f in files.items()}
        keys = ("model", "kind", "scoring", "variant", "no_ensure_bos")
        if first and any(first[k] != got["summary"][k] for k in keys):
            raise BenchError(f"{d}: another model or options than {dirs[0]}; merge runs of one "
                             "model and one set of options")
        first = first or got["summary"]
        items += got["workload"]["items"]
        for key in ("texts", "scores", "n_tokens"):
            ours[key] += got["kgprobe"][key]
            theirs[key] += got["lmpq"][key]
        theirs["bos_text"] += got["lmpq"].get("bos_text", [])
        ours["statements"] += got["kgprobe"]["statements"]
        ours["seconds"]["kgprobe"] += got["kgprobe"]["seconds"]["kgprobe"]
        for size, sec in got["lmpq"]["seconds"].items():
            theirs["seconds"][size] = theirs["seconds"].get(size, 0.0) + sec
        ours["versions"], theirs["versions"] = got["kgprobe"]["versions"], got["lmpq"]["versions"]
    return {"items": items}, ours, theirs, first


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.groups > 1:
        return run_groups(args, list(argv if argv is not None else sys.argv[1:]))
    if args.merge:
        try:
            workload, ours, theirs, first = merge_runs(args.merge)
        except BenchError as exc:
            print(f"bench_bear: {exc}", file=sys.stderr)
            return 2
        args.kind, args.scoring = first["kind"], first["scoring"]
        args.no_ensure_bos = first["no_ensure_bos"]
        args.no_floor, model, t0 = True, Path(first["model"]), time.perf_counter()
        args.pll_metric = first["variant"] if args.kind == "masked" else args.pll_metric
        args.quirk = first["variant"] == "BOS-text quirk"
        return finish(args, model, workload, ours, theirs, t0)
    try:
        python = args.lmpq_venv / "bin" / "python"
        if not python.is_file():
            raise BenchError(f"no lm-pub-quiz venv at {args.lmpq_venv}; run scripts/setup_lmpq.sh")
        if args.kind == "masked" and args.model == "smollm2-135m":
            model = bench_models.build_bert(args.out / "bert-base-random")
        else:
            model = bench_peers.resolve_model(args.model)
        workload = build_workload(args.data, args.relations.split(",") if args.relations
                                  else None, args.instances)
        args.out.mkdir(parents=True, exist_ok=True)
        wfile = args.out / "workload.json"
        wfile.write_text(json.dumps(workload), encoding="utf-8")
        extra = ["--pll-metric", args.pll_metric] + (["--quirk"] if args.quirk else [])
        t0 = time.perf_counter()
        ours = run_runner("bear_kgprobe_runner.py", Path(sys.executable), args, model, wfile,
                          args.out / "kgprobe.json", extra)
        sizes = [s for x in args.lmpq_batch_size.split(",") for s in ("--batch-size", x)]
        theirs = run_runner("lmpq_runner.py", python, args, model, wfile, args.out / "lmpq.json",
                            [*extra, *sizes, *(["--no-ensure-bos"] if args.no_ensure_bos else [])])
    except (BenchError, subprocess.TimeoutExpired) as exc:
        print(f"bench_bear: {exc}", file=sys.stderr)
        return 2
    return finish(args, model, workload, ours, theirs, t0)


def finish(args: argparse.Namespace, model: Path, workload: dict, ours: dict, theirs: dict,
           t0: float) -> int:
    """Compare, report, write summary.json and report.md; exit 1 on a parity failure."""
    n = ours["statements"]
    speed = {"kgprobe": n / ours["seconds"]["kgprobe"]}
    speed.update({f"lm-pub-quiz (batch {b})": n / s for b, s in theirs["seconds"].items()})
    passes = {"kgprobe": ours.get("passes", {}).get("kgprobe", [])}
    passes.update({f"lm-pub-quiz (batch {b})": v for b, v in theirs.get("passes", {}).items()})
    summary: dict = {"model": str(model), "kind": args.kind, "scoring": args.scoring,
                     "variant": (args.pll_metric if args.kind == "masked"
                                 else "BOS-text quirk" if args.quirk else ""),
                     "no_ensure_bos": args.no_ensure_bos, "statements": n, "speed": speed,
                     "pass_ranges": {tool: (len(v), n / max(v), n / min(v))
                                     for tool, v in passes.items() if v},
                     "wall_seconds": time.perf_counter() - t0,
                     "versions": {"kgprobe": ours["versions"], "lm-pub-quiz": theirs["versions"]},
                     "comparison": compare(workload["items"], ours, theirs)}
    if args.kind == "causal" and not args.no_floor:
        summary["gflops"] = bench_peers.measure_matmul_gflops(args.threads)
        summary["params"] = bench_peers.count_parameters(model)
        summary["positions"] = floor_positions(ours["texts"], model)
        summary["floor"] = bench_peers.floor_rate(summary["gflops"], summary["params"],
                                                  summary["positions"])
        if args.whole_bear:
            summary["whole_bear"] = whole_bear_estimate(args, model, summary)
    text = report(summary)
    print("\n" + text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (args.out / "report.md").write_text(text + "\n", encoding="utf-8")
    return 1 if summary["comparison"]["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
