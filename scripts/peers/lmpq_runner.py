"""BEAR parity runner for lm-pub-quiz 0.3.3 (its own virtual environment, scripts/setup_lmpq.sh).

Every item (instance x template) is scored the way ``Evaluator.evaluate_relation`` scores it:
``evaluator.score_answers(template=..., answers=<the answer space>, subject=<sub_label>,
reduction="sum", batch_size=...)``, with ``Evaluator.from_model(folder, model_type="CLM"|"MLM",
conditional_score=..., pll_metric=...)`` and its defaults otherwise (``ensure_bos_token_added
=True`` unless ``--no-ensure-bos``). The scored-token counts are read from the scoring masks of
``evaluator.encode`` (the causal mask from its second position on, as ``score_statements``
reads it). With several ``--batch-size`` values the whole workload is timed at each
(``--repeat`` passes after an untimed warm-up on the first item; the median counts); the scores
of the first are kept. ``bos_text`` says per item whether ``encode`` takes its BOS-text branch
(the first padded row does not start with BOS after ``add_bos_token``).
"""

from __future__ import annotations

import sys
import time

import bear_common as common


def main() -> int:
    """Command line entry point."""
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    from lm_pub_quiz import Evaluator

    items = common.load_workload(args.workload)
    options: dict = {"conditional_score": args.scoring == "conditional",
                     "ensure_bos_token_added": not args.no_ensure_bos}
    if args.kind == "masked":
        options["pll_metric"] = args.pll_metric
    t0 = time.perf_counter()
    evaluator = Evaluator.from_model(str(args.model), model_type="CLM" if args.kind == "causal"
                                     else "MLM", device=args.device, **options)
    load = time.perf_counter() - t0
    n = sum(len(item["answers"]) for item in items)
    timings: dict[str, float] = {}
    passes: dict[str, list[float]] = {}
    scores: list[list[float]] = []

    def score(part: list[dict], size: int) -> list:
        return [evaluator.score_answers(template=item["template"], answers=item["answers"],
                                        subject=item["subject"], reduction="sum",
                                        batch_size=size) for item in part]

    for size in args.batch_size or [1]:
        score(items[:1], size)  # warm-up, untimed
        for k in range(max(1, args.repeat)):
            print(f"[lm-pub-quiz] {n} statements, batch size {size}, pass {k + 1} ...",
                  file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            got = score(items, size)
            seconds = time.perf_counter() - t0
            passes.setdefault(str(size), []).append(seconds)
            print(f"[lm-pub-quiz] batch size {size}: {seconds:.1f} s, {n / seconds:.1f} "
                  "statements/s", file=sys.stderr, flush=True)
        timings[str(size)] = common.median(passes[str(size)])
        if not scores:
            scores = [[float(s) for s in row] for row in got]
    statements = [[evaluator.replace_placeholders(template=item["template"],
                                                  subject=item["subject"], answer=a)
                   for a in item["answers"]] for item in items]
    shift = 1 if args.kind == "causal" else 0  # the causal mask is read from position 1 on
    counts = [[sum(mask[shift:]) for mask in evaluator.encode(
        statements=[t for t, _ in row], span_roles=[r for _, r in row])[1]] for row in statements]
    texts = [[t for t, _ in row] for row in statements]
    tok = evaluator.tokenizer
    bos_text = []
    for row in texts if args.kind == "causal" else []:
        with evaluator.add_bos_token():
            first = tok(row, padding=True, add_special_tokens=True)["input_ids"][0][0]
        bos_text.append(first != tok.bos_token_id)
    common.write(args.out, {
        "tool": "lm-pub-quiz", "versions": common.version_of("lm-pub-quiz", "torch",
                                                              "transformers"),
        "threads": args.threads, "load_seconds": load, "statements": n,
        "seconds": timings, "passes": passes, "scores": scores, "n_tokens": counts, "texts": texts,
        "bos_text": bos_text})
    return 0


if __name__ == "__main__":
    sys.exit(main())
