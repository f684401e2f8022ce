"""The OntoLAMA report: ``python -m eval.ontolama_report``.

Runs the metric files of ``eval/ontolama/`` over the results file and prints markdown:

1. **Datasets**: the shortcut panel (``ontolama_shortcuts``: model-free rules fitted on train
   only, docs/shortcuts.md) on the report's split, one column per dataset, and the shortcut
   ceiling (the best rule) of every split; every run's table row carries the ceiling on the
   instances it scored (``ontolama_shortcut_ceiling``);
2. **Zero-shot**: one row per model and dataset (ontology, Atomic or Complex SI), the accuracy
   (%) of every template x label-word set (T1 L1 ... T2 L3) with the paper's class score (the
   sum of the label words' probabilities), their mean ± population std, the number of test
   instances scored (``n``) and the split's size (a smaller ``n`` is a seeded class-balanced
   sample, ``--sample``: marked, with the 95 % Wilson interval of the mean accuracy), the
   majority-class baseline on those instances and their share of positives; then L3 under
   both class scorings (the paper's sum of probabilities and OpenPrompt's mean of
   log-probabilities);
3. **K-shot** (when ``python -m probes.ontolama.kshot`` runs exist): the paper's protocol, one
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
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import line_chart
from eval.report import (
    PAIRED_POINTS_HEAD,
    Render,
    Rendered,
    Rows,
    metric_rows,
    paired_points,
    report_command,
)
from eval.sqlfile import load_metric, run_metric
from eval.stats import paired_comparison
from kg import options

METRIC_DIR = Path(__file__).with_name("ontolama")
KIND_ORDER = {"atomic": 0, "complex": 1}
CONTROLLED = "-controlled"
"""The name suffix of a shortcut-controlled split (docs/shortcuts.md)."""
FULL_K = -1
"""``runs.k`` of the fully supervised setting (the results contract, docs/results.md)."""


@dataclass
class RunInfo:
    """One finished subsumption run."""

    run_id: str
    model: str
    probe: str
    kshot: dict[str, Any] | None
    limit: int | None
    wall_s: float | None
    requests: int | None
    cache_hits: int | None = None  # of the invocation that wall_s describes


@dataclass
class Results:
    """Metric rows by metric name and the runs they come from."""

    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    split: str = "test"
    sizes: dict[tuple[str, str], int] = field(default_factory=dict)  # (probe, split) -> n

    def rows(self, metric: str, scoring: str | None = "sum_prob") -> list[dict[str, Any]]:
        """The metric's rows of the report's split (of one class scoring, where the metric
        has several; ``None``: all)."""
        return [r for r in self.metrics.get(metric, []) if r["split"] == self.split
                and (scoring is None or r.get("scoring", scoring) == scoring)]


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` observed on ``n`` items (95 %).

    >>> [round(x, 3) for x in wilson(0.5, 100)]
    [0.404, 0.596]
    """
    if n <= 0:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def dataset(probe: str) -> str:
    """A probe's display name.

    >>> dataset("ontolama/go-complex"), dataset("other/x")
    ('go complex', 'other/x')
    >>> dataset("ontolama/schemaorg-atomic-controlled")
    'schemaorg atomic controlled'
    """
    name = probe.removeprefix("ontolama/")
    base = name.removesuffix(CONTROLLED)
    onto, _, kind = base.rpartition("-")
    if not (probe.startswith("ontolama/") and onto):
        return probe
    return f"{onto} {kind}" + (" controlled" if base != name else "")


def _order(probe: str) -> tuple[int, str]:
    kind = probe.removesuffix(CONTROLLED).rpartition("-")[2]
    return KIND_ORDER.get(kind, 2), probe


def _runs(con: duckdb.DuckDBPyConnection) -> dict[str, RunInfo]:
    rows = con.execute("""SELECT run_id, model, probe, config::VARCHAR, wall_s, requests,
                                 cache_hits
                          FROM runs WHERE task = 'subsumption' AND status = 'done'""").fetchall()
    out = {}
    for rid, model, probe, cfg, wall, requests, hits in rows:
        c = json.loads(cfg or "{}")
        out[rid] = RunInfo(rid, model, probe, c.get("kshot"), c.get("limit"), wall, requests,
                           hits)
    return out


def build(con: duckdb.DuckDBPyConnection, split: str = "test",
          metric_dir: Path = METRIC_DIR, rows: Rows | None = None) -> Results:
    """Collect what the tables need: the metric rows (``rows``, as the report runner hands
    them; None: run the metrics of ``metric_dir`` here), the runs and the split sizes."""
    res = Results(runs=_runs(con), split=split)
    res.sizes = {(p, s): n for p, s, n in con.execute(
        "SELECT probe, split, count(*) FROM instances GROUP BY ALL").fetchall()}
    res.metrics = metric_rows(con, [metric_dir]) if rows is None else rows
    return res


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _mean_std(mean: float | None, std: float | None, count: int) -> str:
    if mean is None:
        return "–"
    return _pct(mean) if count < 2 or std is None else f"{_pct(mean)} ± {_pct(std)}"


def _zero_shot_runs(res: Results) -> list[RunInfo]:
    runs = {r["run_id"] for r in res.rows("ontolama_zero_shot")}
    return sorted((res.runs[r] for r in runs if r in res.runs),
                  key=lambda i: (i.model, *_order(i.probe), i.limit or 0))


def combinations(res: Results) -> list[tuple[str, str]]:
    """The (template, label set) pairs of the zero-shot runs, sorted."""
    return sorted({(r["template"], r["label_set"]) for r in res.rows("ontolama_accuracy")
                   if r["run_id"] in res.runs and res.runs[r["run_id"]].kshot is None})


def _accuracy(res: Results) -> dict[tuple[str, str, str], float]:
    """(run_id, template, label set) -> accuracy."""
    return {(r["run_id"], r["template"], r["label_set"]): r["value"]
            for r in res.rows("ontolama_accuracy")}


def _baseline(res: Results) -> dict[str, dict[str, Any]]:
    return {r["run_id"]: r for r in res.rows("ontolama_majority_baseline")}


def zero_shot_table(res: Results) -> str:
    """Accuracy (%) per template x label set, mean ± std, n, majority baseline."""
    runs = _zero_shot_runs(res)
    if not runs:
        return "No zero-shot runs."
    combos = combinations(res)
    acc, base = _accuracy(res), _baseline(res)
    summary = {r["run_id"]: r for r in res.rows("ontolama_zero_shot")}
    models = {i.model for i in runs}
    head = (["model"] if len(models) > 1 else []) + ["dataset", "n", "of split"] + [
        f"{t} {s}" for t, s in combos] + ["mean ± std", "95% CI (sample)", "majority",
                                          "shortcut ceiling", "positives"]
    ceiling = _ceiling(res)
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * (len(head) - len(combos) - 7) + "---:|" * (len(combos) + 7)]
    for info in runs:
        z, b = summary[info.run_id], base.get(info.run_id, {})
        size = res.sizes.get((info.probe, res.split), 0)
        sampled = z["n"] < size
        low, high = wilson(z["value"], z["n"])
        cells = ([info.model] if len(models) > 1 else []) + [
            dataset(info.probe), f"{z['n']:,}" + (" (sample)" if sampled else ""), f"{size:,}"]
        cells += [_pct(acc.get((info.run_id, t, s))) for t, s in combos]
        cells += [_mean_std(z["value"], z["std"], z["combinations"]),
                  f"{_pct(low)}–{_pct(high)}" if sampled else "full split",
                  _pct(b.get("value")), _ceiling_cell(ceiling.get(info.run_id)),
                  _pct(b.get("positive_share"))]
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
    for probe in sorted({p for p, _ in best}, key=_order):
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


def _zero_shot_at(res: Results, model: str, probe: str, template: str, label_set: str
                  ) -> tuple[float, int] | None:
    """The zero-shot accuracy and n of one template x label set (the largest run)."""
    acc = [(r["n"], r["value"]) for r in res.rows("ontolama_accuracy")
           if (info := res.runs.get(r["run_id"])) and info.kshot is None
           and info.model == model and info.probe == probe
           and (r["template"], r["label_set"]) == (template, label_set)]
    if not acc:
        return None
    n, value = max(acc)
    return value, n


def _kshot_baseline(res: Results, row: dict[str, Any]) -> float | None:
    base = _baseline(res)
    for info in res.runs.values():
        k = info.kshot or {}
        if (info.model, info.probe, k.get("k"), k.get("template"), k.get("label_set")) == (
                row["model"], row["probe"], row["k"], row["template"], row["label_set"]) \
                and info.run_id in base:
            return base[info.run_id]["value"]
    return None


def _kshot_ceiling(res: Results, row: dict[str, Any]) -> dict[str, Any] | None:
    """The best shortcut ceiling among the K-shot runs of a row (model, probe, K and, where the
    row has them, template and label set); runs on the same test instances share one."""
    ceiling = _ceiling(res)
    found = [ceiling[i.run_id] for i in res.runs.values() if i.run_id in ceiling
             and (i.model, i.probe, (i.kshot or {}).get("k")) == (row["model"], row["probe"],
                                                                   row["k"])
             and all((i.kshot or {}).get(f) == row[f] for f in ("template", "label_set")
                     if f in row)]
    return max(found, key=lambda c: c["value"]) if found else None


def _kshot_rows(res: Results) -> list[dict[str, Any]]:
    return sorted(res.rows("ontolama_kshot"),
                  key=lambda r: (r["model"], *_order(r["probe"]), r["template"], r["label_set"],
                                 *_k_order(r["k"])))


def _k_order(k: int) -> tuple[bool, int]:
    """K ascending, the fully supervised setting (K = -1) last, as the paper's Table 7."""
    return k == FULL_K, k


def _k_label(k: int) -> str:
    return "full" if k == FULL_K else str(k)


def kshot_table(res: Results) -> str:
    """K-shot accuracy (%), mean ± std over seeds, beside zero-shot on the same prompt."""
    rows = _kshot_rows(res)
    if not rows:
        return "No K-shot runs."
    models = {r["model"] for r in rows}
    head = (["model"] if len(models) > 1 else []) + [
        "dataset", "K", "prompt", "accuracy", "seeds", "n", "zero-shot (n)", "majority",
        "shortcut ceiling"]
    align = ["---"] * (len(models) > 1) + ["---", "---:", "---"] + ["---:"] * 6
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        zs = _zero_shot_at(res, r["model"], r["probe"], r["template"], r["label_set"])
        cells = ([r["model"]] if len(models) > 1 else []) + [
            dataset(r["probe"]), _k_label(r["k"]), f"{r['template']} {r['label_set']}",
            _mean_std(r["value"], r["std"], r["seeds"]), str(r["seeds"]), f"{r['n']:,}",
            f"{_pct(zs[0])} ({zs[1]:,})" if zs else "–", _pct(_kshot_baseline(res, r)),
            _ceiling_cell(_kshot_ceiling(res, r))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
            cells += [_pct(acc.get((rid, t, "L3", sc))) for sc in ("sum_prob", "mean_logprob")]
        cells += [_pct(mean.get((rid, sc))) for sc in ("sum_prob", "mean_logprob")]
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
    """(probe, split) -> (the best rule's value, its name) of the panel's accuracy rows (ties:
    the name first in sort order).

    >>> ceilings([{"probe": "p", "split": "test", "rule": "b", "value": 0.7},
    ...           {"probe": "p", "split": "test", "rule": "a", "value": 0.7},
    ...           {"probe": "p", "split": "test", "rule": "c", "value": 0.6}])
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
    the shortcut ceiling (best rule) last; then the ceiling of every split."""
    rows = res.metrics.get("ontolama_shortcuts", [])
    if not rows:
        return "No OntoLAMA datasets in the results file."
    probes = sorted({r["probe"] for r in rows}, key=_order)
    mine = [r for r in rows if r["split"] == res.split]
    cell = {(r["probe"], r["rule"]): r["value"] for r in mine}
    rules = sorted({r["rule"] for r in mine},
                   key=lambda x: (RULE_ORDER.index(x) if x in RULE_ORDER else len(RULE_ORDER), x))
    best = ceilings(rows)
    lines = [f"Shortcut panel, {res.split} (accuracy %, rules fitted on train):", "",
             "| rule | " + " | ".join(dataset(p) for p in probes) + " |",
             "|---|" + "---:|" * len(probes)]
    for rule in rules:
        lines.append(f"| {rule} | " + " | ".join(_pct(cell.get((p, rule))) for p in probes)
                     + " |")
    lines.append("| **shortcut ceiling** | " + " | ".join(
        f"**{_pct(best[(p, res.split)][0])}**" if (p, res.split) in best else "–"
        for p in probes) + " |")
    n = {(r["probe"], r["split"]): r["n"] for r in rows if r["rule"] == "majority"}
    keys = sorted(best, key=lambda ps: (*_order(ps[0]), _split_order(ps[1])))
    lines += ["", "Shortcut ceiling of every split (train: in-sample):", "",
              "| dataset | split | n | ceiling | rule |", "|---|---|---:|---:|---|"]
    for probe, split in keys:
        value, rule = best[(probe, split)]
        lines.append(f"| {dataset(probe)} | {split} | {n.get((probe, split), 0):,} | "
                     f"{_pct(value)} | {rule} |")
    return "\n".join(lines)


def ceiling_lines(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The shortcut ceiling (docs/shortcuts.md) of every OntoLAMA dataset and split, standard
    and ``-controlled``: the best model-free rule fitted on train, its accuracy and name, and
    the super-class lookup beside it (``kgprobe ontolama stats``)."""
    con.execute("SET enable_progress_bar = false")
    cols, rows = run_metric(con, load_metric(METRIC_DIR / "ontolama_shortcuts.sql"))
    panel = [dict(zip(cols, r, strict=True)) for r in rows]
    best = ceilings(panel)
    lookup = {(r["probe"], r["split"]): r["value"] for r in panel if r["rule"] == "lookup_super"}
    n = {(r["probe"], r["split"]): r["n"] for r in panel if r["rule"] == "majority"}
    lines = ["Shortcut ceiling per split (accuracy %, rules fitted on train; train is "
             "in-sample; docs/shortcuts.md):", "",
             "| dataset | split | n | ceiling | rule | lookup super-class |",
             "|---|---|---:|---:|---|---:|"]
    for probe, split in sorted(best, key=lambda k: (k[0], _split_order(k[1]))):
        value, rule = best[(probe, split)]
        look = lookup.get((probe, split))
        lines.append(f"| {probe} | {split} | {n.get((probe, split), 0):,} | "
                     f"{100 * value:.1f} | {rule} | "
                     f"{'-' if look is None else f'{100 * look:.1f}'} |")
    return lines


def _ceiling(res: Results) -> dict[str, dict[str, Any]]:
    """run_id -> its shortcut ceiling row (the best rule on the instances it scored)."""
    return {r["run_id"]: r for r in res.rows("ontolama_shortcut_ceiling")}


def _ceiling_cell(row: dict[str, Any] | None) -> str:
    return "–" if not row else f"{_pct(row['value'])} ({row['rule']})"


def _protocol_rows(res: Results) -> list[dict[str, Any]]:
    return sorted(res.rows("ontolama_kshot_protocol"),
                  key=lambda r: (r["model"], *_order(r["probe"]), *_k_order(r["k"])))


def protocol_table(res: Results) -> str:
    """The paper's K-shot protocol: mean ± std over all runs per dataset and K."""
    rows = _protocol_rows(res)
    if not rows:
        return "No K-shot runs."
    lines = ["| model | dataset | K | accuracy (mean ± std over runs) | runs | test n | "
             "of split | zero-shot (mean of 6) | shortcut ceiling |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        zs = _zero_shot_mean(res, r["model"], r["probe"])
        size = res.sizes.get((r["probe"], res.split), 0)
        k = _k_label(r["k"])
        lines.append(f"| {r['model']} | {dataset(r['probe'])} | {k} | "
                     f"{_mean_std(r['value'], r['std'], r['runs'])} | {r['runs']} | "
                     f"{r['n']:,}{' (sample)' if r['n'] < size else ''} | {size:,} | "
                     f"{_pct(zs[0]) if zs else '–'} | "
                     f"{_ceiling_cell(_kshot_ceiling(res, r))} |")
    return "\n".join(lines)


def _zero_shot_mean(res: Results, model: str, probe: str) -> tuple[float, float] | None:
    """(mean, std) over the six prompts of the largest zero-shot run of a model on a probe."""
    rows = [(r["n"], r["value"], r["std"]) for r in res.rows("ontolama_zero_shot")
            if (info := res.runs.get(r["run_id"])) and info.model == model
            and info.probe == probe]
    if not rows:
        return None
    _, value, std = max(rows)
    return value, std


def kshot_curves(res: Results) -> dict[str, list[tuple[float, float, float | None]]]:
    """Per dataset (and model when there are several): (K, mean accuracy, std over runs), the
    zero-shot mean over the six prompts drawn as K = 0 (the fully supervised setting is left
    out of the curve)."""
    rows = [r for r in _protocol_rows(res) if r["k"] > 0]
    models = {r["model"] for r in rows}
    out: dict[str, list[tuple[float, float, float | None]]] = {}
    for r in rows:
        name = dataset(r["probe"]) if len(models) == 1 else f"{r['model']}: {dataset(r['probe'])}"
        if name not in out:
            zs = _zero_shot_mean(res, r["model"], r["probe"])
            out[name] = [(0, zs[0], zs[1])] if zs else []
        out[name].append((r["k"], r["value"], r["std"] if r["runs"] > 1 else None))
    return out


def kshot_baselines(res: Results) -> dict[str, float]:
    """The majority-class baseline of the K-shot test sets (balanced: 50 %)."""
    bases = {_kshot_baseline(res, r) for r in _kshot_rows(res)} - {None}
    if not bases:
        return {}
    return {"majority class": max(b for b in bases if b is not None)}


def kshot_ceilings(res: Results) -> dict[str, float]:
    """Per curve of :func:`kshot_curves`: the shortcut ceiling of its K-shot test instances
    (the best over its runs), drawn as a second dashed line in the curve's colour."""
    rows = [r for r in _protocol_rows(res) if r["k"] > 0]
    models = {r["model"] for r in rows}
    out: dict[str, float] = {}
    for r in rows:
        name = dataset(r["probe"]) if len(models) == 1 else f"{r['model']}: {dataset(r['probe'])}"
        c = _kshot_ceiling(res, r)
        if c is not None:
            out[name] = max(out.get(name, 0.0), float(c["value"]))
    return out


def kshot_plot(res: Results, path: Path) -> Path | None:
    """The K-shot curve PNG (None when there are no K-shot runs)."""
    curves = kshot_curves(res)
    if not curves:
        return None
    return line_chart(curves, f"OntoLAMA K-shot ({res.split}, mean ± std)",
                      path, xlabel="K (examples per class; 0 = zero-shot)", ylabel="accuracy",
                      baselines=kshot_baselines(res), series_baselines=kshot_ceilings(res),
                      series_baseline_label="shortcut ceiling")


def kshot_prompt_curves(res: Results) -> dict[str, list[tuple[float, float, float | None]]]:
    """Per dataset and prompt (template x label set) with runs at two or more K: (K, mean
    accuracy, std over seeds), that prompt's own zero-shot accuracy drawn as K = 0 (the fully
    supervised setting is left out). The like-for-like curve when the protocol is partial: a
    split run on one prompt at several K is compared with another split on the same prompt,
    where :func:`kshot_curves` would mix one prompt's runs at one K with all six at another."""
    rows = [r for r in _kshot_rows(res) if r["k"] > 0]
    models = {r["model"] for r in rows}
    keys = [(r["model"], r["probe"], r["template"], r["label_set"]) for r in rows]
    out: dict[str, list[tuple[float, float, float | None]]] = {}
    for key, r in zip(keys, rows, strict=True):
        if keys.count(key) < 2:
            continue
        name = (f"{dataset(r['probe'])} {r['template']} {r['label_set']}" if len(models) == 1
                else f"{r['model']}: {dataset(r['probe'])} {r['template']} {r['label_set']}")
        if name not in out:
            zs = _zero_shot_at(res, r["model"], r["probe"], r["template"], r["label_set"])
            out[name] = [(0, zs[0], None)] if zs else []
        out[name].append((r["k"], r["value"], r["std"] if r["seeds"] > 1 else None))
    return out


def kshot_prompt_ceilings(res: Results) -> dict[str, float]:
    """Per curve of :func:`kshot_prompt_curves`: the best shortcut ceiling of its runs' test
    instances."""
    names = kshot_prompt_curves(res)
    models = {r["model"] for r in _kshot_rows(res)}
    out: dict[str, float] = {}
    for r in _kshot_rows(res):
        name = (f"{dataset(r['probe'])} {r['template']} {r['label_set']}" if len(models) == 1
                else f"{r['model']}: {dataset(r['probe'])} {r['template']} {r['label_set']}")
        c = _kshot_ceiling(res, r)
        if name in names and r["k"] > 0 and c is not None:
            out[name] = max(out.get(name, 0.0), float(c["value"]))
    return out


def kshot_prompt_plot(res: Results, path: Path) -> Path | None:
    """The per-prompt K-shot curve PNG (None when no prompt has runs at two K)."""
    curves = kshot_prompt_curves(res)
    if not curves:
        return None
    return line_chart(curves, f"OntoLAMA K-shot per prompt ({res.split})", path,
                      xlabel="K (examples per class; 0 = zero-shot)",
                      ylabel="accuracy (mean ± std over seeds)",
                      baselines=kshot_baselines(res), series_baselines=kshot_prompt_ceilings(res),
                      series_baseline_label="shortcut ceiling")


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
                     "probes.export -p 'ontolama/*') and score them (python -m probes.run -p "
                     "ontolama/NAME) first.")
        return "\n".join(parts)
    parts += ["## Datasets: shortcut panel", "",
              "Model-free rules fitted on each dataset's train split only and scored on each "
              "split (docs/shortcuts.md): the best of them is the split's shortcut ceiling, the "
              "accuracy a model can reach without reading the question. The paper reports "
              "only the majority class (50 %, L190).", "", shortcuts_table(res), "",
              f"Accuracy (%) on {res.split}. A class's score is the paper's: the sum of its "
              "label words' probabilities (L149); a tie counts as wrong. mean ± std: over the "
              "template x label-word combinations (zero-shot) or over the runs (K-shot), "
              "population std. n: instances scored; \"(sample)\" marks a seeded "
              "class-balanced sample of the split (--sample), with the 95 % Wilson interval "
              "of the mean accuracy. majority: always answering the more frequent class on "
              "them; shortcut ceiling: the best rule of the panel on them (the rule in "
              "brackets); positives: their share of label 1.", "", "## Zero-shot", "",
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
