"""Markdown cells and the paired-comparison tables of the reports (re-exported by
:mod:`eval.report`, whose tables and the benchmark reports use them).

>>> _fmt(0.5), _fmt(1200), _fmt(None)
('0.500', '1,200', '–')
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from eval.stats import Paired


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v).replace("|", "\\|")


def _fmt_ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _fmt_spread(row: dict[str, Any]) -> str:
    """A row's spread across prompts: ``min–max (sd, MaxP, AvgP)`` (MaxP = max, AvgP the mean
    over the prompts, Mizrahi et al. 2024; eval.stats.multi_prompt); – with fewer than two
    prompts.

    >>> _fmt_spread({"n_prompts": 2, "prompt_min": 0.0, "prompt_max": 0.2, "prompt_sd": 0.1,
    ...              "prompt_maxp": 0.2, "prompt_avgp": 0.1})
    '0.000–0.200 (sd 0.100, MaxP 0.200, AvgP 0.100)'
    """
    if (row.get("n_prompts") or 0) < 2:
        return "–"
    robust = (f", MaxP {row['prompt_maxp']:.3f}, AvgP {row['prompt_avgp']:.3f}"
              if row.get("prompt_avgp") is not None else "")
    return (f"{row['prompt_min']:.3f}–{row['prompt_max']:.3f} (sd {row['prompt_sd']:.3f}"
            f"{robust})")


PAIRED_POINTS_HEAD = ("| n | a | b | a − b | 95% CI of a − b | test | p |",
                      "|---:|---:|---:|---:|---:|---|---:|")
"""The columns :func:`paired_points` fills, after a table's own key columns."""


def paired_points(c: Paired) -> str:
    """A paired comparison of two shares as the cells of :data:`PAIRED_POINTS_HEAD`, in
    percentage points (the benchmark reports' unit; p below 0.05 starred).

    >>> paired_points(Paired(3, 0.5, 0.75, -0.25, (-0.5, 0.0), "McNemar", 0.5))
    '3 | 50.0 | 75.0 | -25.0 | -50.0 to 0.0 | McNemar | 0.5 |'
    """
    def pct(v: float) -> str:
        return f"{100 * v:.1f}"

    ci = "–" if c.ci is None else f"{pct(c.ci[0])} to {pct(c.ci[1])}"
    diff = round(100 * c.diff, 9) + 0.0  # no "-0.0"
    return (f"{c.n:,} | {pct(c.mean_a)} | {pct(c.mean_b)} | {diff:+.1f} | {ci} | {c.test} | "
            f"{c.pvalue:.3g}{'*' if c.pvalue < 0.05 else ''} |")


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """:func:`comparisons` as a markdown table (a - b, its paired-bootstrap 95 % interval,
    the paired test; p below 0.05 starred)."""
    head = ["metric", "probe", "split", "a", "b", "n", "mean a", "mean b", "a − b",
            "95% CI of a − b", "test", "p"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i < 5 or i == 10 else "---:"
                            for i in range(len(head))) + "|"]
    for c in rows:
        p = c["pvalue"]
        lines.append("| " + " | ".join([
            c["metric"], _fmt(c.get("probe")), _fmt(c.get("split")), _fmt(c["a"]),
            _fmt(c["b"]), _fmt(c["n"]), _fmt(c["mean_a"]), _fmt(c["mean_b"]),
            f"{round(c['diff'], 12) + 0.0:+.3f}", _fmt_ci(c["ci"]), c["test"],
            f"{p:.3g}" + ("*" if p < 0.05 else "")]) + " |")
    return "\n".join(lines)


NOTES = ("n: instances (the units every interval resamples; relatum metrics average "
         "(instance, prompt) pairs, but the pairs of one instance are not independent). 95% CI: "
         "for a share with one right/wrong outcome per instance the Wilson score interval "
         "(never zero-width: 10/10 gives 0.722–1.000); otherwise the percentile cluster "
         "bootstrap over instances, each resampled with all its prompts (1,000 seeded "
         "resamples). prompts: the spread of the metric across the probe's prompts, each "
         "scored alone: min–max (population sd; MaxP, the best prompt's value, and AvgP, the "
         "mean over the prompts: Mizrahi et al., TACL 2024); the values are under Per prompt. "
         "chance_accuracy: the chance baseline over the same instances (multiple choice: a "
         "uniformly random pick; binary: the majority class); for the relatum metrics chance is "
         "about 0 (a word drawn from the vocabulary). shortcut_ceiling: on the same instances, the "
         "accuracy of the model-free rule of the shortcut panel (shortcut_panel; fitted on train "
         "only, docs/shortcuts.md) chosen on the probe's dev split, or on train where there is no "
         "dev (the metric's rule and chosen_on columns), never on the labels it is scored on; "
         "the metric also gives the best rule on these instances (best_value, chosen on their "
         "labels: biased up) and that best's permutation null (null_median, null_p95); the "
         "charts draw the ceiling as an orange dashed tick beside chance's black one.")


PAIRED_NOTE = ("Every two runs of one probe and split on the instances both scored: a − b is "
               "the mean difference of their per-instance values, its 95% CI the paired "
               "bootstrap over those instances (1,000 seeded resamples); test: McNemar's exact "
               "test for right/wrong outcomes, else Wilcoxon's signed-rank test; * p < 0.05.")


CALIBRATION_HEAD = ["model", "probe", "split", "n", "Brier", "95% CI", "ECE", "95% CI"]
CALIBRATION_NOTE = ("Calibration of the choice and binary runs (docs/report.md): the "
                    "probabilities are the softmax over each instance's answers of their "
                    "mean-over-prompts scores. Brier score: per instance the sum over its "
                    "answers of (p − y)², averaged (0 is perfect). ECE: the instances binned "
                    "by their top answer's probability into 10 equal-width bins ((m−1)/10, "
                    "m/10]; the |bin|/n-weighted mean of |accuracy − mean confidence|. 95% CI: "
                    "the percentile bootstrap over instances (1,000 seeded resamples). Lower "
                    "is better for both.")


def calibration_table(rows: list[list[Any]]) -> str:
    """The calibration rows (:data:`CALIBRATION_HEAD`) as a markdown table.

    >>> print(calibration_table([["m", "p", "test", 5, 0.5, "0.1–0.9", None, "–"]]))
    | model | probe | split | n | Brier | 95% CI | ECE | 95% CI |
    |---|---|---|---:|---:|---:|---:|---:|
    | m | p | test | 5 | 0.500 | 0.1–0.9 | – | – |
    """
    lines = ["| " + " | ".join(CALIBRATION_HEAD) + " |",
             "|" + "|".join("---" if i < 3 else "---:" for i in range(len(CALIBRATION_HEAD)))
             + "|"]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


SHIFT_NOTE = ("Shortcut rules across the splits (shortcut_shift; docs/shortcuts.md): each "
              "model-free rule fitted on train, its accuracy on train (in-sample), dev and test; "
              "the test null is the rule's accuracy with the test labels shuffled (median ± the "
              "band that allows for the choice among the rules). **moved**: test lies beyond "
              "the band on the other side from train: the split reversed the cue the rule "
              "reads, so a figure on test is measured against a moved shortcut.")


def shift_table(rows: list[dict[str, Any]]) -> str | None:
    """The shortcut rules side by side over train, dev and test (metric shortcut_shift's
    rows), the moved ones first; None without rows.

    >>> print(shift_table([{"probe": "p", "rule": "r", "train": 0.6, "dev": 0.6, "test": 0.24,
    ...                     "test_null_median": 0.5, "test_band": 0.15, "test_moved": True,
    ...                     "dev_moved": False}]))
    | probe | rule | train | dev | test | test null | moved |
    |---|---|---:|---:|---:|---:|---|
    | p | r | 0.600 | 0.600 | 0.240 | 0.500 ± 0.150 | **test** |
    """
    if not rows:
        return None
    lines = ["| probe | rule | train | dev | test | test null | moved |",
             "|---|---|---:|---:|---:|---:|---|"]
    order = sorted(rows, key=lambda r: (not (r.get("test_moved") or r.get("dev_moved")),
                                        str(r.get("probe")), str(r.get("rule"))))
    for r in order:
        null = ("–" if r.get("test_null_median") is None else
                f"{r['test_null_median']:.3f} ± {r['test_band']:.3f}")
        moved = ", ".join(s for s in ("dev", "test") if r.get(f"{s}_moved"))
        lines.append(f"| {r.get('probe')} | {r.get('rule')} | {_fmt(r.get('train'))} | "
                     f"{_fmt(r.get('dev'))} | {_fmt(r.get('test'))} | {null} | "
                     f"{f'**{moved}**' if moved else ''} |")
    return "\n".join(lines)


def shift_section(results: list[Any]) -> list[str]:
    """The markdown lines of :func:`shift_table` under its heading and note, from a report's
    metric results (empty without shortcut_shift rows)."""
    rows: list[dict[str, Any]] = next(
        (r.rows for r in results if r.metric.name == "shortcut_shift"), [])
    table = shift_table(rows)
    return [] if table is None else ["## Shortcut rules across the splits", "", SHIFT_NOTE, "",
                                     table, ""]


def templates(config: str | None) -> list[str]:
    """The prompt templates a run's config names (``prompts``), else none.

    >>> templates('{"prompts": ["A [W] is a [V]."]}'), templates(None)
    (['A [W] is a [V].'], [])
    """
    try:
        cfg = json.loads(config) if config else {}
    except ValueError:
        return []
    prompts = cfg.get("prompts") if isinstance(cfg, dict) else None
    return [str(p) for p in prompts] if isinstance(prompts, list) else []


def run_label(run_id: str, config: str | None, finished_at: Any) -> str:
    """How a run is told apart from other runs of the same model and probe: its id's first
    8 digits, its ``--limit``, ``--sample`` and ``--split`` choices, whether its prompts were
    wrapped in the model's chat template (``--apply-chat-template``: the scorer options in
    ``runs.config`` name a ``chat_template``), and the day it finished.

    >>> run_label("0123456789abcdef", '{"limit": 20, "splits": ["test"]}', None)
    '01234567 (limit 20, split test)'
    >>> run_label("0123456789abcdef", '{"limit": null}', datetime(2026, 1, 2, 3, 4))
    '01234567 (all instances, 2026-01-02 03:04)'
    >>> run_label("0123456789abcdef", '{"sample": 50, "scorer": {"chat_template": "9f"}}', None)
    '01234567 (sample 50, chat template)'
    """
    try:
        cfg = json.loads(config) if config else {}
    except ValueError:
        cfg = {}
    cfg = cfg if isinstance(cfg, dict) else {}
    parts = [f"limit {cfg['limit']}" if cfg.get("limit")
             else f"sample {cfg['sample']}" if cfg.get("sample") else "all instances"]
    if cfg.get("splits"):
        parts.append("split " + "+".join(map(str, cfg["splits"])))
    scorer, runtime = cfg.get("scorer"), cfg.get("runtime")
    if ((isinstance(scorer, dict) and scorer.get("chat_template"))
            or (isinstance(runtime, dict) and runtime.get("apply_chat_template"))):
        parts.append("chat template")
    if isinstance(finished_at, datetime):
        parts.append(finished_at.strftime("%Y-%m-%d %H:%M"))
    return f"{run_id[:8]} ({', '.join(parts)})"
