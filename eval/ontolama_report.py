"""The OntoLAMA report: ``python -m eval.ontolama_report``.

Runs the metric files of ``eval/ontolama/`` over the results file and prints markdown:

1. **Datasets**: the shortcut panel (``ontolama_shortcuts``: model-free rules fitted on train
   only, docs/shortcuts.md) on the report's split, one column per dataset, and the shortcut
   ceiling of every split: the accuracy of the rule chosen on the dataset's dev split (train
   where there is no dev), beside the best rule on the split itself (chosen on its labels);
   every run's table row carries the ceiling on the instances it scored
   (``ontolama_shortcut_ceiling``);
2. **Zero-shot**: one row per model and dataset (ontology, Atomic or Complex SI), the accuracy
   (%) of every template x label-word set (T1 L1 ... T2 L3) with the paper's class score (the
   sum of the label words' probabilities), their mean ± population std, the number of test
   instances scored (``n``) and the split's size (a smaller ``n`` is a seeded class-balanced
   sample, ``--sample``: marked, with the 95 % Wilson interval of the mean accuracy), the
   majority-class baseline on those instances and their share of positives; then L3 under
   both class scorings (the paper's sum of probabilities and OpenPrompt's mean of
   log-probabilities);
3. **K-shot** (when ``python -m probes.benchmarks.ontolama.kshot`` runs exist): the paper's
protocol, one
   row per model, dataset and K, the mean ± std over all runs (templates x label sets x seeds:
   18 when complete); one row per K and prompt (mean ± std over seeds) beside zero-shot on the
   same prompt; and a PNG of the protocol mean against K, one line per dataset (error bars: the
   std over runs), zero-shot (mean over the six prompts) drawn as K = 0, the majority class
   (50 %) dashed grey and each dataset's shortcut ceiling dashed in its colour, as the
   paper's Figure 3 with the ceiling added; and a second PNG per prompt (one line per dataset
   and prompt run at two or more K, its own zero-shot accuracy as K = 0), the like-for-like
   comparison when the protocol is partial;
4. **Runs**: wall time and throughput of each zero-shot run's latest invocation
   (``runs.wall_s``; requests/s counts the requests it scored, ``requests - cache_hits``;
   instances/s only when it scored them all: a re-run answered from the cache shows "–").

A dataset run more than once with different ``--limit`` values gets one row per run.

>>> from probes.results import connect
>>> render(build(connect(":memory:"))).splitlines()[2][:40]
'No OntoLAMA runs in the results file: ex'
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import duckdb

from eval.ontolama_kshot import (
    kshot_plot,
    kshot_prompt_plot,
    kshot_table,
    protocol_table,
)
from eval.ontolama_results import (
    METRIC_DIR,
    Results,
    RunInfo,
    baselines,
    build,
    ceiling_cell,
    ceiling_rows,
    dataset,
    mean_std,
    pct,
    probe_order,
    wilson,
)
from eval.report import (
    PAIRED_POINTS_HEAD,
    Render,
    Rendered,
    Rows,
    paired_points,
    report_command,
)
from eval.sqlfile import load_metric, run_metric
from eval.stats import paired_comparison
from kg import options


def _zero_shot_runs(res: Results) -> list[RunInfo]:
    runs = {r["run_id"] for r in res.rows("ontolama_zero_shot")}
    return sorted((res.runs[r] for r in runs if r in res.runs),
                  key=lambda i: (i.model, *probe_order(i.probe), i.limit or 0))


def combinations(res: Results) -> list[tuple[str, str]]:
    """The (template, label set) pairs of the zero-shot runs, sorted."""
    return sorted({(r["template"], r["label_set"]) for r in res.rows("ontolama_accuracy")
                   if r["run_id"] in res.runs and res.runs[r["run_id"]].kshot is None})


def _accuracy(res: Results) -> dict[tuple[str, str, str], float]:
    """(run_id, template, label set) -> accuracy."""
    return {(r["run_id"], r["template"], r["label_set"]): r["value"]
            for r in res.rows("ontolama_accuracy")}


def zero_shot_table(res: Results) -> str:
    """Accuracy (%) per template x label set, mean ± std, n, majority baseline."""
    runs = _zero_shot_runs(res)
    if not runs:
        return "No zero-shot runs."
    combos = combinations(res)
    acc, base = _accuracy(res), baselines(res)
    summary = {r["run_id"]: r for r in res.rows("ontolama_zero_shot")}
    models = {i.model for i in runs}
    head = (["model"] if len(models) > 1 else []) + ["dataset", "n", "of split"] + [
        f"{t} {s}" for t, s in combos] + ["mean ± std", "95% CI (sample)", "majority",
                                          "shortcut ceiling", "positives"]
    ceiling = ceiling_rows(res)
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * (len(head) - len(combos) - 7) + "---:|" * (len(combos) + 7)]
    for info in runs:
        z, b = summary[info.run_id], base.get(info.run_id, {})
        size = res.sizes.get((info.probe, res.split), 0)
        sampled = z["n"] < size
        low, high = wilson(z["value"], z["n"])
        cells = ([info.model] if len(models) > 1 else []) + [
            dataset(info.probe), f"{z['n']:,}" + (" (sample)" if sampled else ""), f"{size:,}"]
        cells += [pct(acc.get((info.run_id, t, s))) for t, s in combos]
        cells += [mean_std(z["value"], z["std"], z["combinations"]),
                  f"{pct(low)}–{pct(high)}" if sampled else "full split",
                  pct(b.get("value")), ceiling_cell(ceiling.get(info.run_id)),
                  pct(b.get("positive_share"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_table(res: Results) -> str:
    """Every two models' zero-shot runs of one dataset (per model its run over the most
    instances) compared on their shared instances: each instance's value is the share of its
    prompts right (``ontolama_instance_accuracy``); the mean difference with its paired
    bootstrap interval and Wilcoxon's signed-rank test (McNemar's when every value is 0 or 1,
    eval.stats.paired_comparison). Empty when no dataset has two models."""
    values: dict[str, dict[str, float]] = {}
    for r in res.rows("ontolama_instance_accuracy"):
        values.setdefault(r["run_id"], {})[r["instance_id"]] = float(r["value"])
    best: dict[tuple[str, str], str] = {}
    for info in _zero_shot_runs(res):
        key = (info.probe, info.model)
        if len(values.get(info.run_id, {})) > len(values.get(best.get(key, ""), {})):
            best[key] = info.run_id
    rows = []
    for probe in sorted({p for p, _ in best}, key=probe_order):
        models = sorted(m for p, m in best if p == probe)
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                va, vb = values[best[(probe, a)]], values[best[(probe, b)]]
                shared = sorted(set(va) & set(vb))
                c = paired_comparison([va[k] for k in shared], [vb[k] for k in shared])
                if c is not None:
                    rows.append(f"| {dataset(probe)} | {a} | {b} | " + paired_points(c))
    if not rows:
        return ""
    head, rule = PAIRED_POINTS_HEAD
    return "\n".join(["| dataset | a | b " + head, "|---|---|---" + rule, *rows])


def scoring_table(res: Results) -> str:
    """L3 (two words per class) under both class scorings, and the zero-shot mean of each."""
    runs = _zero_shot_runs(res)
    if not runs:
        return "No zero-shot runs."
    acc = {(r["run_id"], r["template"], r["label_set"], r["scoring"]): r["value"]
           for r in res.rows("ontolama_accuracy", None)}
    mean = {(r["run_id"], r["scoring"]): r["value"] for r in res.rows("ontolama_zero_shot", None)}
    lines = ["| dataset | n | T1 L3 sum | T1 L3 mean | T2 L3 sum | T2 L3 mean | "
             "mean of 6, sum | mean of 6, mean |", "|---|" + "---:|" * 7]
    for info in runs:
        rid = info.run_id
        cells = [dataset(info.probe), f"{_n(res, rid):,}"]
        for t in ("T1", "T2"):
            cells += [pct(acc.get((rid, t, "L3", sc))) for sc in ("sum_prob", "mean_logprob")]
        cells += [pct(mean.get((rid, sc))) for sc in ("sum_prob", "mean_logprob")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _n(res: Results, run_id: str) -> int:
    return next((r["n"] for r in res.rows("ontolama_zero_shot") if r["run_id"] == run_id), 0)


#: The panel's rules in the order the report lists them (others follow, sorted).
RULE_ORDER = ("majority", "lookup_super", "lookup_sub", "lookup_complex", "lookup_named",
              "seen_in_train_super", "seen_in_train_sub", "seen_in_train_complex",
              "seen_in_train_named", "frequent_in_split_super", "frequent_in_split_sub",
              "frequent_in_split_complex", "frequent_in_split_named",
              "frequent_in_dataset_super", "frequent_in_dataset_sub",
              "frequent_in_dataset_complex", "frequent_in_dataset_named", "shared_words",
              "head_word_match", "length_super", "length_sub", "length_complex",
              "length_named", "length_difference", "complex_side")


def _split_order(split: str) -> int:
    return ("train", "dev", "test").index(split) if split in ("train", "dev", "test") else 3


def ceilings(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, str]]:
    """(probe, split) -> (value, name) of the rule the panel marks ``chosen`` (chosen on the
    dataset's dev split, or train: the shortcut ceiling).

    >>> ceilings([{"probe": "p", "split": "test", "rule": "b", "value": 0.7, "chosen": False},
    ...           {"probe": "p", "split": "test", "rule": "c", "value": 0.6, "chosen": True}])
    {('p', 'test'): (0.6, 'c')}
    """
    return {(r["probe"], r["split"]): (float(r["value"]), str(r["rule"])) for r in rows
            if r.get("chosen") and r.get("measure", "accuracy") == "accuracy"
            and r["value"] is not None}


def best_rules(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, str]]:
    """(probe, split) -> (the best rule's value, its name) of the panel's accuracy rows (ties:
    the name first in sort order): chosen on the split's own labels, an upper bound.

    >>> best_rules([{"probe": "p", "split": "test", "rule": "b", "value": 0.7},
    ...             {"probe": "p", "split": "test", "rule": "a", "value": 0.7},
    ...             {"probe": "p", "split": "test", "rule": "c", "value": 0.6}])
    {('p', 'test'): (0.7, 'a')}
    """
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for r in rows:
        if r.get("measure", "accuracy") != "accuracy" or r["value"] is None:
            continue
        key, cand = (r["probe"], r["split"]), (float(r["value"]), str(r["rule"]))
        old = best.get(key)
        if old is None or cand[0] > old[0] or (cand[0] == old[0] and cand[1] < old[1]):
            best[key] = cand
    return best


def shortcuts_table(res: Results) -> str:
    """The shortcut panel on the report's split: one row per rule, one column per dataset,
    the shortcut ceiling (the rule chosen on dev or train) and the best rule on the split
    last; then both for every split."""
    rows = res.metrics.get("ontolama_shortcuts", [])
    if not rows:
        return "No OntoLAMA datasets in the results file."
    probes = sorted({r["probe"] for r in rows}, key=probe_order)
    mine = [r for r in rows if r["split"] == res.split]
    cell = {(r["probe"], r["rule"]): r["value"] for r in mine}
    rules = sorted({r["rule"] for r in mine},
                   key=lambda x: (RULE_ORDER.index(x) if x in RULE_ORDER else len(RULE_ORDER), x))
    best = ceilings(rows)
    top = best_rules(rows)
    chosen_on = {r["probe"]: r.get("chosen_on") for r in rows if r.get("chosen")}
    lines = [f"Shortcut panel, {res.split} (accuracy %, rules fitted on train):", "",
             "| rule | " + " | ".join(dataset(p) for p in probes) + " |",
             "|---|" + "---:|" * len(probes)]
    for rule in rules:
        lines.append(f"| {rule} | " + " | ".join(pct(cell.get((p, rule))) for p in probes)
                     + " |")
    lines.append("| **shortcut ceiling** (rule chosen on dev, else train) | " + " | ".join(
        f"**{pct(best[(p, res.split)][0])}** ({best[(p, res.split)][1]})"
        if (p, res.split) in best else "–" for p in probes) + " |")
    lines.append(f"| best rule on {res.split} (chosen on its labels: biased up) | " + " | ".join(
        f"{pct(top[(p, res.split)][0])} ({top[(p, res.split)][1]})"
        if (p, res.split) in top else "–" for p in probes) + " |")
    n = {(r["probe"], r["split"]): r["n"] for r in rows if r["rule"] == "majority"}
    keys = sorted(best, key=lambda ps: (*probe_order(ps[0]), _split_order(ps[1])))
    lines += ["", "Shortcut ceiling of every split: the rule chosen on dev (train where there "
              "is no dev; train is in-sample), and the best rule on the split itself:", "",
              "| dataset | split | n | ceiling | rule | chosen on | best on the split | "
              "its rule |", "|---|---|---:|---:|---|---|---:|---|"]
    for probe, split in keys:
        value, rule = best[(probe, split)]
        b = top.get((probe, split))
        lines.append(f"| {dataset(probe)} | {split} | {n.get((probe, split), 0):,} | "
                     f"{pct(value)} | {rule} | {chosen_on.get(probe) or '–'} | "
                     f"{pct(b[0]) if b else '–'} | {b[1] if b else '–'} |")
    return "\n".join(lines)


def ceiling_lines(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The shortcut ceiling (docs/shortcuts.md) of every OntoLAMA dataset and split, standard
    and ``-controlled``: the best model-free rule fitted on train, its accuracy and name, and
    the super-class lookup beside it (``kgprobe ontolama stats``)."""
    con.execute("SET enable_progress_bar = false")
    cols, rows = run_metric(con, load_metric(METRIC_DIR / "ontolama_shortcuts.sql"))
    panel = [dict(zip(cols, r, strict=True)) for r in rows]
    best = ceilings(panel)
    top = best_rules(panel)
    chosen_on = {r["probe"]: r.get("chosen_on") for r in panel if r.get("chosen")}
    lookup = {(r["probe"], r["split"]): r["value"] for r in panel if r["rule"] == "lookup_super"}
    n = {(r["probe"], r["split"]): r["n"] for r in panel if r["rule"] == "majority"}
    lines = ["Shortcut ceiling per split (accuracy %, rules fitted on train; the ceiling's rule "
             "is chosen on dev, else on train, which is in-sample; best on split: the best rule "
             "chosen on that split's own labels, biased up; docs/shortcuts.md):", "",
             "| dataset | split | n | ceiling | rule | chosen on | best on split | its rule | "
             "lookup super-class |",
             "|---|---|---:|---:|---|---|---:|---|---:|"]
    for probe, split in sorted(best, key=lambda k: (k[0], _split_order(k[1]))):
        value, rule = best[(probe, split)]
        b = top.get((probe, split))
        look = lookup.get((probe, split))
        lines.append(f"| {probe} | {split} | {n.get((probe, split), 0):,} | "
                     f"{100 * value:.1f} | {rule} | {chosen_on.get(probe) or '-'} | "
                     f"{'-' if b is None else f'{100 * b[0]:.1f}'} | "
                     f"{'-' if b is None else b[1]} | "
                     f"{'-' if look is None else f'{100 * look:.1f}'} |")
    return lines


def _rate(count: int | None, wall: float | None) -> str:
    return "–" if not wall or count is None else f"{count / wall:.2f}"


def runs_table(res: Results) -> str:
    """Wall time and throughput of the zero-shot runs."""
    runs = _zero_shot_runs(res)
    if not runs:
        return "No zero-shot runs."
    n = {r["run_id"]: r["n"] for r in res.rows("ontolama_zero_shot")}
    lines = ["| model | dataset | run | n | requests | wall s | requests/s | instances/s |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for i in runs:
        req, wall = i.requests, i.wall_s
        # the rates are the latest invocation's: what it scored, not what the cache answered
        scored = None if req is None else req - (i.cache_hits or 0)
        every = scored is not None and scored == req
        lines.append(f"| {i.model} | {dataset(i.probe)} | {i.run_id} | {n[i.run_id]:,} | "
                     f"{'–' if req is None else f'{req:,}'} | "
                     f"{'–' if wall is None else f'{wall:.1f}'} | {_rate(scored or None, wall)} "
                     f"| {_rate(n[i.run_id] if every else None, wall)} |")
    return "\n".join(lines)


def render(res: Results, plot: Path | None = None, prompt_plot: Path | None = None) -> str:
    """The whole report as markdown; ``plot`` is the K-shot PNG and ``prompt_plot`` the
    per-prompt one, when they were written."""
    parts = ["# OntoLAMA report", ""]
    if not res.runs and not res.metrics.get("ontolama_shortcuts"):
        parts.append("No OntoLAMA runs in the results file: export the probes (python -m "
                     "probes.engine.export -p 'ontolama/*') and score them (python -m "
                     "probes.engine.run -p "
                     "ontolama/NAME) first.")
        return "\n".join(parts)
    parts += ["## Datasets: shortcut panel", "",
              "Model-free rules fitted on each dataset's train split only and scored on each "
              "split (docs/shortcuts.md). The split's shortcut ceiling is the accuracy of the "
              "rule chosen on the dataset's dev split (train where there is none), what a "
              "model can reach there without reading the question; the best rule on the split "
              "itself is chosen on that split's labels and reads high. The paper reports "
              "only the majority class (50 %, L190).", "", shortcuts_table(res), "",
              f"Accuracy (%) on {res.split}. A class's score is the paper's: the sum of its "
              "label words' probabilities (L149); a tie counts as wrong. mean ± std: over the "
              "template x label-word combinations (zero-shot) or over the runs (K-shot), "
              "population std. n: instances scored; \"(sample)\" marks a seeded "
              "class-balanced sample of the split (--sample), with the 95 % Wilson interval "
              "of the mean accuracy. majority: always answering the more frequent class on "
              "them; shortcut ceiling: the accuracy on them of the panel's rule chosen on dev "
              "(or train; the rule and where in brackets), then the best rule on them (chosen "
              "on their labels) and its permutation null (median / 95th percentile of the best "
              "rule over 200 seeded shuffles of their labels: a best at or under the 95th "
              "percentile is chance); positives: their share of label 1.", "",
              "## Zero-shot", "",
              zero_shot_table(res), ""]
    paired = paired_table(res)
    if paired:
        parts += ["### Two models on the same instances", "",
                  "Per instance the share of its prompts right; a − b: the mean difference "
                  "(points) with its paired bootstrap 95 % interval over the shared instances "
                  "(1,000 seeded resamples); test: Wilcoxon's signed-rank test (McNemar's for "
                  "right/wrong values); * p < 0.05.", "", paired, ""]
    parts += ["### L3 under both class scorings", "",
              "sum: the paper's sum of the label words' probabilities (default); mean: "
              "OpenPrompt's mean of their log-probabilities. L1 and L2 have one word per "
              "class, so they do not change.", "", scoring_table(res), "",
              "## K-shot (the paper's protocol: 2 templates x 3 label sets x 3 seeds per K)", "",
              protocol_table(res), ""]
    if plot is not None:
        parts += [f"![K-shot accuracy]({plot.name})", ""]
    parts += ["### Per prompt (mean ± std over seeds)", ""]
    if prompt_plot is not None:
        parts += [f"![K-shot accuracy per prompt]({prompt_plot.name})", ""]
    parts += [kshot_table(res), ""]
    parts += ["## Runs", "", runs_table(res)]
    return "\n".join(parts)


def render_report(split: str = "test") -> Render:
    """The render function of the report runner: the tables and the K-shot curve."""

    def render_fn(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
        res = build(con, split, rows=rows)
        plot = kshot_plot(res, out / "ontolama_kshot.png")
        prompt_plot = kshot_prompt_plot(res, out / "ontolama_kshot_prompts.png")
        return Rendered(render(res, plot, prompt_plot),
                        [p for p in (plot, prompt_plot) if p is not None])

    return render_fn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe ontolama report`` / ``python -m eval.ontolama_report``."""
    parser.description = __doc__.split("\n")[0]
    options.add_results(parser)
    parser.add_argument("--split", default="test", help="evaluation split (default test)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for ontolama_report.md and ontolama_kshot.png (default: "
                        "a new folder per call, $KGPROBE_HOME/reports/ontolama-<time>-<hash>)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    return report_command(args.results, "ontolama", argv, args.out, [METRIC_DIR],
                          render_report(args.split), "ontolama_report.md")


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.ontolama_report", add_arguments, argv)


if __name__ == "__main__":
    raise SystemExit(main())
