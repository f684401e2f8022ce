"""The semantic-relation report (Cao et al.) laid out like the paper: ``python -m
eval.semrel_report``.

Runs the metric files of ``eval/semrel/`` over the results file (opened read-only) and prints
markdown:

1. one table per relation (HYP, HPO, HOL, MER, ANT, SYN), a row per agent (humans first, then
   the models): soundness S, completeness C, symmetry M_1/M_5/M_10 (ANT, SYN) or asymmetry
   A_1/A_5/A_10 (the others), prototypicality P, out-of-relatum (OOR) rate, mean rank of the
   first non-OOR answer, n (probes scored for S);
2. the macro / micro averages of the same measures, AuDC per agent and the humans' response
   entropy R per relation;
3. the humans' figures of the paper beside ours (:data:`PAPER_HUMAN_S`, ...);
4. the significance tests of :func:`eval.stats.compare_with_humans` (``--no-stats`` skips them);
5. the questionable inputs (``semrel_bad_inputs``, ``semrel_empty_sets``).

It writes ``semrel_report.md`` and PNGs into ``--out`` (default ``.kgprobe/reports/semrel``):
``soundness.png`` (relations x agents), and per agent ``distinguishability_<agent>.png`` (D_k(r,
s) over k, one panel per relation r) and ``d_matrix_<agent>.png`` (AuDC(r, s), 6 x 6).

>>> from probes.results import connect
>>> build(connect(":memory:")).agents
[]
>>> _p(0.0123), _p(0.5), _p(float("nan"))
('0.0123*', '0.5', '–')
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from eval.plots import bar_chart, heat_map, line_panels
from eval.sqlfile import MetricError, discover_metrics, run_metric, run_support
from eval.stats import compare_with_humans
from kg import config
from probes.errors import ProbeError
from probes.results import connect

METRIC_DIR = Path(__file__).with_name("semrel")
RELATIONS = ("HYP", "HPO", "HOL", "MER", "ANT", "SYN")
NAMES = {"HYP": "hypernymy", "HPO": "hyponymy", "HOL": "holonymy", "MER": "meronymy",
         "ANT": "antonymy", "SYN": "synonymy"}
SYMMETRIC = ("ANT", "SYN")
KS = (1, 5, 10)

# The humans' figures of Cao et al., from the paper's text as quoted in the semantic-relation
# issue: soundness 0.90 for antonymy and between 0.63 and 0.75 for the other relations;
# symmetry 0.88 for antonymy and 0.65 for synonymy (the quoted text names no k); AuDC 21.3
# (the sum over the 30 ordered relation pairs, at most 30).
PAPER_HUMAN_S: dict[str, tuple[float, float]] = {
    r: ((0.90, 0.90) if r == "ANT" else (0.63, 0.75)) for r in RELATIONS}
PAPER_HUMAN_M: dict[str, float] = {"ANT": 0.88, "SYN": 0.65}
PAPER_HUMAN_AUDC = 21.3

NO_RUNS = ("no semrel runs in {path}. Export the probes, load the human answers and score a "
           "model first:\n"
           "  python -m probes.export -p 'semrel/*'\n"
           "  python -m probes.semrel humans\n"
           "  python -m probes.run -m MODEL -p 'semrel/*'")


def probe_of(relation: str) -> str:
    """The probe of a relation code.

    >>> probe_of("HYP")
    'semrel/hyp'
    """
    return f"semrel/{relation.lower()}"


@dataclass
class Results:
    """Metric rows keyed by their grain values, the agents and the statistics."""

    metrics: dict[str, dict[tuple, dict[str, Any]]] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)       # humans first, then models
    humans: set[str] = field(default_factory=set)
    relations: dict[str, set[str]] = field(default_factory=dict)   # agent -> relations run
    stats: pl.DataFrame | None = None

    def row(self, metric: str, *key: Any) -> dict[str, Any] | None:
        return self.metrics.get(metric, {}).get(key)

    def value(self, metric: str, *key: Any) -> Any:
        row = self.row(metric, *key)
        return None if row is None else row["value"]


def _agents(con: duckdb.DuckDBPyConnection, metric_dir: Path, res: Results) -> None:
    run_support(con, [metric_dir / "_views.sql"])
    rows = con.execute("SELECT model, relation, is_human FROM semrel_runs").fetchall()
    for model, relation, is_human in rows:
        res.relations.setdefault(model, set()).add(relation)
        if is_human:
            res.humans.add(model)
    res.agents = sorted(res.relations, key=lambda a: (a not in res.humans, a))


def build(con: duckdb.DuckDBPyConnection, stats: bool = True,
          metric_dir: Path | None = None) -> Results:
    """Run the semrel metrics (and the statistics) over ``con``; no semrel runs: no agents,
    nothing else computed. A failing metric raises :class:`MetricError` naming its file."""
    metric_dir = metric_dir or METRIC_DIR
    res = Results()
    _agents(con, metric_dir, res)
    if not res.agents:
        return res
    for metric in discover_metrics([metric_dir]):
        try:
            cols, rows = run_metric(con, metric)
        except MetricError as e:
            if str(metric.path) in str(e):
                raise
            raise MetricError(f"{metric.path} ({metric.name}): {e}") from e
        index = res.metrics.setdefault(metric.name, {})
        for row in rows:
            d = dict(zip(cols, row, strict=True))
            index[tuple(d[g] for g in metric.grain)] = d
    if stats:
        try:
            res.stats = compare_with_humans(con)
        except (duckdb.Error, MetricError, ValueError) as e:
            raise MetricError(f"the statistics (eval/stats.py, compare_with_humans) fail: {e}; "
                              "run with --no-stats to skip them") from e
    return res


# --- formatting -----------------------------------------------------------------------------

def _num(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{float(v):.{digits}f}"


def _p(p: float | None) -> str:
    """A p-value, starred below 0.05."""
    if p is None or math.isnan(p):
        return "–"
    return f"{p:.3g}" + ("*" if p < 0.05 else "")


def _cell(v: Any) -> str:
    return str(v).replace("|", "\\|")


def _table(head: list[str], rows: list[list[str]], align: str = "lr") -> str:
    """A markdown table; ``align`` has a letter per column (``l`` left, ``r`` right), its last
    letter repeating.

    >>> print(_table(["a", "b", "c"], [["x", "1", "2"]]))
    | a | b | c |
    |---|---:|---:|
    | x | 1 | 2 |
    """
    align = align.ljust(len(head), align[-1])
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if a == "l" else "---:" for a in align[:len(head)]) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _trick(relation: str) -> tuple[str, str]:
    """(metric, column prefix) of a relation's trick probes."""
    if relation in SYMMETRIC:
        return "semrel_symmetry", "M"
    return "semrel_asymmetry", "A"


def _measures(res: Results, agent: str, probe: str, trick: list[tuple[str, str, int]]
              ) -> list[str]:
    """S, C, the trick columns, P, OOR rate, first non-OOR rank and n of one agent and probe."""
    sound = res.row("semrel_soundness", agent, probe)
    cells = [_num(res.value("semrel_soundness", agent, probe)),
             _num(res.value("semrel_completeness", agent, probe))]
    cells += [_num(res.value(metric, agent, probe, k)) for metric, _, k in trick]
    cells += [_num(res.value("semrel_prototypicality", agent, probe)),
              _num(res.value("semrel_oor_rate", agent, probe)),
              _num(res.value("semrel_oor_first_rank", agent, probe), 2),
              _num(None if sound is None else sound.get("n"))]
    return cells


def relation_table(res: Results, relation: str) -> str:
    """One row per agent with a run of the relation's probe."""
    metric, letter = _trick(relation)
    trick = [(metric, f"{letter}_{k}", k) for k in KS]
    agents = [a for a in res.agents if relation in res.relations[a]]
    if not agents:
        return f"No runs of {probe_of(relation)}."
    head = ["agent", "S", "C", *(c for _, c, _ in trick), "P", "OOR rate",
            "first non-OOR rank", "n"]
    rows = [[a, *_measures(res, a, probe_of(relation), trick)] for a in agents]
    return _table(head, rows)


def summary_table(res: Results) -> str:
    """Macro (mean over relations) and micro (pooled probes) rows per agent."""
    trick = [*(("semrel_symmetry", f"M_{k}", k) for k in KS),
             *(("semrel_asymmetry", f"A_{k}", k) for k in KS)]
    head = ["agent", "average", "S", "C", *(c for _, c, _ in trick), "P", "OOR rate",
            "first non-OOR rank", "n"]
    rows = [[a, avg, *_measures(res, a, avg, trick)]
            for a in res.agents for avg in ("macro", "micro")]
    return _table(head, rows, "llr")


def audc_table(res: Results) -> str:
    rows = []
    for a in res.agents:
        row = res.row("semrel_audc", a, "all", "all")
        if row is not None:
            rows.append([a, _num(row["value"], 2), _num(row["n"])])
    return _table(["agent", "AuDC", "pairs"], rows) if rows else "No distinguishability rows."


def entropy_table(res: Results) -> str:
    rows = []
    for probe in [*map(probe_of, RELATIONS), "macro", "micro"]:
        for human in sorted(res.humans):
            row = res.row("semrel_response_entropy", human, probe)
            if row is not None:
                rows.append([probe, _num(row["value"]), _num(row["n"]),
                             _num(row.get("agreeing"))])
    if not rows:
        return "No human answers (human_responses): load them with `python -m probes.semrel " \
               "humans`."
    return _table(["probe", "R", "probes", "agreeing (R < 1)"], rows)


def paper_table(res: Results) -> str:
    """The humans' figures of the paper beside ours (one column per human agent)."""
    humans = sorted(res.humans)
    if not humans:
        return "No human runs: load them with `python -m probes.semrel humans`."
    rows = []
    for r in RELATIONS:
        lo, hi = PAPER_HUMAN_S[r]
        paper = f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"
        rows.append([f"S {r}", paper, *(_num(res.value("semrel_soundness", h, probe_of(r)))
                                        for h in humans)])
    for r, m in PAPER_HUMAN_M.items():
        ours = [" / ".join(_num(res.value("semrel_symmetry", h, probe_of(r), k)) for k in KS)
                for h in humans]
        rows.append([f"M {r} (ours: M_1 / M_5 / M_10)", f"{m:.2f}", *ours])
    ours = []
    for h in humans:
        row = res.row("semrel_audc", h, "all", "all")
        ours.append("–" if row is None else f"{row['value']:.2f} ({row['n']} pairs)")
    rows.append(["AuDC (sum over pairs, at most 30)", f"{PAPER_HUMAN_AUDC:.1f}", *ours])
    return _table(["measure", "paper (humans)", *(f"ours ({h})" for h in humans)], rows)


MEASURE_ORDER = {"S": 0, "C": 1, "M10": 2, "A10": 2, "S_prompts": 3, "P": 4}


def stats_table(df: pl.DataFrame) -> str:
    """compare_with_humans as a table; p below 0.05 starred."""
    if df.height == 0:
        return "No model and human answers to compare."
    rel = {r: i for i, r in enumerate(RELATIONS)}
    rows = sorted(df.iter_rows(named=True), key=lambda r: (
        r["measure"] == "P", r["model"], r["other"], rel.get(r["relation"], 9),
        MEASURE_ORDER.get(r["measure"], 9)))
    return _table(["model", "vs", "relation", "measure", "test", "n", "statistic",
                   "model value", "other value", "p"],
                  [[r["model"], r["other"], r["relation"], r["measure"], r["test"],
                    _num(r["n"]), _num(r["statistic"], 2), _num(r["model_value"]),
                    _num(r["other_value"]), _p(r["pvalue"])] for r in rows], "lllllr")


def _short_probe(probe: str) -> str:
    """``semrel/hyp`` -> ``HYP``; other names unchanged."""
    return probe.removeprefix("semrel/").upper() if probe.startswith("semrel/") else probe


def bad_input_tables(res: Results) -> str:
    """Counts per agent and kind (semrel_bad_inputs), then the empty sets per probe."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (model, _, kind), row in res.metrics.get("semrel_bad_inputs", {}).items():
        groups.setdefault((model, kind), []).append(row)
    order = {a: i for i, a in enumerate(["(all)", *res.agents])}
    rows = []
    for (model, kind), rs in sorted(groups.items(),
                                    key=lambda kv: (order.get(kv[0][0], 99), kv[0])):
        by_probe = ", ".join(f"{_short_probe(r['probe'])} {r['value']}/{r['n']}"
                             for r in sorted(rs, key=lambda r: r["probe"]))
        rows.append([model, kind, _num(sum(r["value"] for r in rs)),
                     _num(sum(r["n"] for r in rs)), by_probe])
    parts = [_table(["agent", "kind", "count", "checked", "per probe"], rows, "llrrl")
             if rows else "No questionable inputs."]
    empty = res.metrics.get("semrel_empty_sets", {})
    if empty:
        parts.append(_table(["probe", "empty limited set", "empty before limiting", "instances"],
                            [[probe, _num(r["value"]), _num(r.get("raw_empty")), _num(r["n"])]
                             for (probe,), r in sorted(empty.items())]))
    return "\n\n".join(parts)


# --- plots ----------------------------------------------------------------------------------

def slug(agent: str) -> str:
    """A file-name-safe form of an agent's name.

    >>> slug("org/model-1.5B"), slug("/x/y/model")
    ('org_model-1.5B', 'x_y_model')
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "_", agent).strip("_") or "agent"


def plots(res: Results, out: Path) -> list[Path]:
    """soundness.png, and per agent with distinguishability rows its curves and AuDC matrix."""
    paths = []
    points = [(a, r, float(v)) for r in RELATIONS for a in res.agents
              if (v := res.value("semrel_soundness", a, probe_of(r))) is not None]
    if points:
        paths.append(bar_chart(points, "Soundness S by relation", out / "soundness.png",
                               ylabel="S"))
    d_rows = res.metrics.get("semrel_distinguishability", {})
    for agent in res.agents:
        panels: dict[str, dict[str, list[tuple[float, float]]]] = {r: {} for r in RELATIONS}
        for (model, probe, other, k), row in d_rows.items():
            if model == agent and row["value"] is not None:
                r = probe.removeprefix("semrel/").upper()
                panels.setdefault(r, {}).setdefault(other, []).append((k, float(row["value"])))
        if not any(panels.values()):
            continue
        name = slug(agent)
        paths.append(line_panels(panels, f"Distinguishability D_k(r, s), {agent}",
                                 out / f"distinguishability_{name}.png", xlabel="k",
                                 ylabel="D_k"))
        audc = {(r, s): res.value("semrel_audc", agent, probe_of(r), s)
                for r in RELATIONS for s in RELATIONS}
        matrix = [[None if r == s else math.nan if audc[r, s] is None else audc[r, s]
                   for s in RELATIONS] for r in RELATIONS]
        total = res.row("semrel_audc", agent, "all", "all")
        title = f"AuDC(r, s), {agent}" + (
            f": {total['value']:.2f} over {total['n']} pairs" if total else "")
        paths.append(heat_map(RELATIONS, RELATIONS, matrix, title,
                              out / f"d_matrix_{name}.png", xlabel="s (other relation)",
                              ylabel="r (probe)"))
    return paths


# --- the report -----------------------------------------------------------------------------

def render(res: Results, images: list[Path] | None = None, stats: bool = True) -> str:
    """The whole report as markdown."""
    parts = ["# Semantic relations report (Cao et al.)", "",
             "Agents: " + ", ".join(res.agents) + ". Sets are limited to the vocabulary shared "
             "by the compared models; model lists are filtered to it and re-ranked (see "
             "eval/semrel/_views.sql). S soundness, C completeness, M_k symmetry (ANT, SYN), "
             "A_k asymmetry (the others), P prototypicality (models against humans), OOR rate "
             "= top answer in none of the word's relatum sets, first non-OOR rank = mean rank "
             "of the first related answer, n = probes (instance x prompt) scored for S.", ""]
    for r in RELATIONS:
        parts += [f"## {r} ({NAMES[r]})", "", relation_table(res, r), ""]
    parts += ["## Averages", "",
              "macro = the mean over relations (n = relations), micro = pooled probes.", "",
              summary_table(res), "", "## AuDC (distinguishability)", "", audc_table(res), "",
              "## Human response entropy R", "", entropy_table(res), "",
              "## The paper's human figures beside ours", "", paper_table(res), ""]
    parts += ["## Models against humans (significance)", ""]
    if stats:
        parts += ["McNemar (S, M10 / A10), Wilcoxon (C; P between models), Levene (per-prompt "
                  "S); * p < 0.05.", "", stats_table(res.stats if res.stats is not None
                                                     else pl.DataFrame()), ""]
    else:
        parts += ["Skipped (--no-stats).", ""]
    parts += ["## Bad inputs", "", bad_input_tables(res), ""]
    for p in images or []:
        parts += [f"![{p.stem}]({p.name})", ""]
    return "\n".join(parts).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.semrel_report",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file, opened read-only (default: $KGPROBE_RESULTS "
                        "or .kgprobe/results.duckdb)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for semrel_report.md and the PNGs (default: "
                        "$KGPROBE_HOME/reports/semrel)")
    parser.add_argument("--no-stats", action="store_true",
                        help="skip the significance tests against the humans")
    args = parser.parse_args(argv)
    results = Path(args.results or config.results_path())
    if not results.exists():
        print("error: " + NO_RUNS.format(path=f"{results} (no such file)"), file=sys.stderr)
        return 2
    try:
        con = connect(results, read_only=True)
        try:
            res = build(con, stats=not args.no_stats)
        finally:
            con.close()
    except (MetricError, ProbeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not res.agents:
        print("error: " + NO_RUNS.format(path=results), file=sys.stderr)
        return 2
    out = args.out or config.home() / "reports" / "semrel"
    out.mkdir(parents=True, exist_ok=True)
    images = plots(res, out)
    text = render(res, images, stats=not args.no_stats)
    report = out / "semrel_report.md"
    report.write_text(text, encoding="utf-8")
    print(text)
    for path in [report, *images]:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
