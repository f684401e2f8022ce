"""The offline HTML report: ``kgprobe report --html FILE`` and ``python -m eval.profile --html
FILE``.

One self-contained file (eval.html_page) that opens from disk: the leaderboard (every metric
row with n, its 95 % interval, chance, the shortcut ceiling, the human value where there is one,
and the multi-prompt robustness MaxP, AvgP and MaxP − AvgP beside the per-prompt sd), per probe
the per-prompt values and the paired comparisons of runs, the charts of the markdown report,
and the instance browser (eval.html_data): every prediction, filtered by probe, prompt, model
and right or wrong, each with its prompt, candidates, gold, answer and provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from eval.html_agreement import agreement_sections
from eval.html_data import browser_data, pack
from eval.html_layers import layer_sections
from eval.html_page import Html, Section, browser_section, figure, join, note, page, table, tag
from eval.report_format import CALIBRATION_HEAD, CALIBRATION_NOTE, NOTES, PAIRED_NOTE
from eval.report_model import (
    BASELINE_OF,
    CEILING_OF,
    Report,
    calibration_rows,
    comparisons,
    interval,
    report_runs,
    values_of,
)

LEADER_HEAD = ["model", "probe", "split", "metric", "value", "n", "95% CI", "chance",
               "shortcut ceiling", "human", "prompts", "sd", "MaxP", "AvgP", "MaxP − AvgP"]
LEADER_NOTE = ("n: instances; 95% CI: the Wilson interval for a share, else the cluster "
               "bootstrap over instances; chance: a uniformly random pick (binary: the "
               "majority class); shortcut ceiling: the best model-free rule fitted on train "
               "(docs/shortcuts.md); human: the human run's value of the same metric, probe "
               "and split (the human answers, e.g. Cao et al.'s; – where there is none). "
               "Multi-prompt robustness over the probe's prompts (Mizrahi et al., "
               "TACL 2024, docs/report.md): MaxP the best prompt's value, AvgP the mean "
               "over prompts, MaxP − AvgP how far the average falls short of the best; sd the "
               "population sd across prompts.")


def leaderboard(report: Report) -> list[list[Any]]:
    """One row per metric row that has a model (the markdown tables' numbers, side by side)."""
    rows = []
    for r in report.results:
        if not r.metric.plot or r.metric.name in ("chance_accuracy", "shortcut_ceiling"):
            continue
        chance = values_of(report, BASELINE_OF.get(r.metric.name, ""))
        ceiling = values_of(report, CEILING_OF.get(r.metric.name, ""))
        human = {(row.get("probe"), row.get("split")): row["value"] for row in r.rows
                 if row.get("model") == "human" and row.get("value") is not None}
        for row in r.rows:
            if row.get("model") == "human":
                continue
            ci = interval(r.metric.name, row)
            several = (row.get("n_prompts") or 0) > 1
            rows.append([row.get("model"), row.get("probe"), row.get("split"), r.metric.name,
                         row.get("value"), row.get("n"),
                         "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}",
                         chance(row), ceiling(row),
                         human.get((row.get("probe"), row.get("split"))), row.get("n_prompts"),
                         row.get("prompt_sd") if several else None,
                         row.get("prompt_maxp") if several else None,
                         row.get("prompt_avgp") if several else None,
                         row.get("prompt_shortfall") if several else None])
    return sorted(rows, key=lambda x: tuple("" if v is None else str(v) for v in x[:4]))


def probe_sections(report: Report) -> Html:
    """Per probe: each metric under each prompt, and the paired comparisons of its runs."""
    per_probe: dict[str, list[list[Any]]] = {}
    for r in report.results:
        for row in r.rows:
            templates = report.prompts.get(str(row.get("run_id")), [])
            for p in row.get("per_prompt") or []:
                pid = p["prompt_id"]
                per_probe.setdefault(str(row.get("probe")), []).append(
                    [row.get("model"), row.get("split"), r.metric.name, pid,
                     templates[pid] if 0 <= pid < len(templates) else "–", p["n"], p["value"]])
    pairs: dict[str, list[list[Any]]] = {}
    for c in comparisons(report):
        ci = c["ci"]
        pairs.setdefault(str(c.get("probe")), []).append(
            [c["metric"], c.get("split"), c["a"], c["b"], c["n"], c["mean_a"], c["mean_b"],
             c["diff"], "–" if ci is None else f"{ci[0]:+.3f} to {ci[1]:+.3f}", c["test"],
             f"{c['pvalue']:.3g}" + ("*" if c["pvalue"] < 0.05 else "")])
    parts = []
    for probe in sorted(set(per_probe) | set(pairs)):
        body = []
        if probe in per_probe:
            body += [tag("h3", "Per prompt"), table(
                ["model", "split", "metric", "prompt", "template", "n", "value"],
                sorted(per_probe[probe], key=lambda x: tuple(str(v) for v in x[:4])))]
        if probe in pairs:
            body += [tag("h3", "Paired comparisons"), note(PAIRED_NOTE), table(
                ["metric", "split", "a", "b", "n", "mean a", "mean b", "a − b",
                 "95% CI of a − b", "test", "p"], pairs[probe])]
        parts.append(tag("details", tag("summary", probe), *body, open=True))
    return join(parts)


def write_html(path: Path, title: str, subtitle: str, sections: Sequence[Section],
               con: duckdb.DuckDBPyConnection, runs: dict[str, dict[str, Any]]) -> Path:
    """The page with ``sections`` and the instance browser over ``runs``, written to ``path``
    (folders made)."""
    browser = browser_section(pack(browser_data(con, runs)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(title, [*sections, browser], subtitle), encoding="utf-8")
    return path


def calibration_section(report: Report, images: Sequence[Path]) -> Section | None:
    """Brier score and ECE per run, and the reliability diagram; None without them."""
    rows = calibration_rows(report)
    if not rows:
        return None
    charts = join(figure(p) for p in images if p.name == "reliability_diagram.png")
    return Section("calibration", "Calibration",
                   note(CALIBRATION_NOTE) + table(CALIBRATION_HEAD, rows) + charts)


def report_sections(report: Report, images: Sequence[Path]) -> list[Section]:
    """The generic report's sections: leaderboard, per probe, calibration, charts."""
    calibration = calibration_section(report, images)
    sections = [Section("leaderboard", "Leaderboard",
                        note(LEADER_NOTE) + table(LEADER_HEAD, leaderboard(report))),
                Section("probes", "Per probe", probe_sections(report)
                        or note("No metric has per-prompt values."))]
    if calibration is not None:
        sections.append(calibration)
    if images:
        sections.append(Section("charts", "Charts", note(NOTES) + join(
            figure(p) for p in images if p.name != "reliability_diagram.png")))
    if report.warnings:
        sections.insert(0, Section("warnings", "Warnings", join(
            tag("p", line, cls="warning") for line in report.warnings)))
    if report.skipped:
        sections.append(Section("skipped", "Skipped",
                                note("; ".join(report.skipped))))
    return sections


def write_report_html(path: Path, report: Report, images: Sequence[Path], results: str,
                      args: Any) -> Path:
    """``kgprobe report --html FILE``: the generic report's sections and the browser over the
    runs of the chosen probes and models."""
    from probes.results import connect

    con = connect(results, read_only=True)
    try:
        runs = report_runs(con, args.probe, args.model)
        sections = [*report_sections(report, images),
                    *agreement_sections(report, con, runs),
                    *layer_sections(con, runs)]
        return write_html(path, "kgprobe report", f"Results file: {results}", sections, con,
                          runs)
    finally:
        con.close()


PROFILE_HEAD = ["benchmark", "measure", "n", "value", "95% CI", "chance", "ceiling", "human",
                "human 95% CI"]


def write_profile_html(path: Path, con: duckdb.DuckDBPyConnection, lines: Sequence[Any],
                       model: str, chart: Path, results: str) -> Path:
    """``python -m eval.profile --html FILE``: the profile's rows (eval.profile.ProfileLine:
    n, interval, chance, the model-free ceiling, human) and chart, and the browser over the
    model's runs."""
    def ci(v: tuple[float, float] | None) -> str:
        return "–" if v is None else f"{v[0]:.3f}–{v[1]:.3f}"

    rows = [[p.benchmark, p.measure + (" †" if p.too_few else ""), p.n, p.value, ci(p.ci),
             p.chance, p.ceiling, p.human, ci(p.human_ci)] for p in lines]
    sections = [Section("leaderboard", f"Knowledge profile: {model}",
                        note("ceiling: the shortcut ceiling (the best model-free rule fitted "
                             "on train, docs/shortcuts.md); for the semrel rows the "
                             "leave-one-out constant-answer baseline. †: too few items for a "
                             "figure.") + table(PROFILE_HEAD, rows)),
                Section("charts", "Chart", figure(chart))]
    return write_html(path, f"Knowledge profile: {model}", f"Results file: {results}",
                      sections, con, report_runs(con, models=[model]))
