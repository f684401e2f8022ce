"""The semantic-relation report's tables and plots (Cao et al.), laid out like the paper, from
:class:`eval.semrel_results.Results`.

>>> _p(0.0123), _p(0.5), _p(float("nan"))
('0.0123*', '0.5', '–')
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from eval.plots import bar_chart, heat_map, line_panels
from eval.semrel_results import (
    CONSTANT,
    KS,
    PAPER_HUMAN_AUDC,
    PAPER_HUMAN_C,
    PAPER_HUMAN_M,
    PAPER_HUMAN_S,
    PAPER_MW_NOT_SIGNIFICANT,
    PAPER_OOR,
    PAPER_PROTO,
    PAPER_R1,
    PAPER_R_MEAN,
    PAPER_TABLE1,
    PAPER_TABLE2,
    PAPER_TABLE3,
    SYMMETRIC,
    Results,
)
from eval.stats import spread
from kg.relations import RELATIONS, relation_probe

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
    """S, C, the trick columns, P and n (words scored for S) of one agent and probe."""
    sound = res.row("semrel_soundness", agent, probe)
    ci = res.s_ci.get((agent, probe))
    cells = [_num(res.value("semrel_soundness", agent, probe)),
             "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}",
             _num(res.value("semrel_completeness", agent, probe))]
    cells += [_num(res.value(metric, agent, probe, k)) for metric, _, k in trick]
    cells += [_num(res.value("semrel_prototypicality", agent, probe)),
              _num(None if sound is None else sound.get("n"))]
    return cells


def _constant(res: Results, probe: str, trick: list[tuple[str, str, int]]) -> list[str]:
    """The constant-answer baseline's cells (``semrel_constant_answer``): S, C and n; the other
    measures do not apply to one list per word."""
    row = res.row("semrel_constant_answer", probe)
    return [_num(None if row is None else row["value"]), "–",
            _num(None if row is None else row["c"]), *("–" for _ in trick), "–",
            _num(None if row is None else row["n"])]


def constant_note(res: Results, relation: str) -> str:
    """The note under a relation's table: how the constant list is fitted, its usual head and
    its hits@10."""
    row = res.row("semrel_constant_answer", relation_probe(relation)) or {}
    return (f"{CONSTANT}: the relata of the other words of W^{relation}, most frequent first "
            "(ties alphabetical), never the word's own; the most frequent relatum of all of "
            f"W^{relation}: {row.get('top') or '–'}; hits@10 of the list: "
            f"{_num(row.get('hits10'))}.")


def relation_table(res: Results, relation: str) -> str:
    """One row per agent with a run of the relation's probe, then the constant-answer
    baseline's row."""
    metric, letter = _trick(relation)
    trick = [(metric, f"{letter}_{k}", k) for k in KS]
    agents = [a for a in res.agents if relation in res.relations[a]]
    if not agents:
        return f"No runs of {relation_probe(relation)}."
    head = ["agent", "S", "S 95% CI", "C", *(c for _, c, _ in trick), "P", "words"]
    rows = [[a, *_measures(res, a, relation_probe(relation), trick)] for a in agents]
    rows.append([CONSTANT, *_constant(res, relation_probe(relation), trick)])
    return _table(head, rows)


def prompt_table(res: Results) -> str:
    """S under each prompt alone (Appendix F), one row per agent and relation: the per-prompt
    values in prompt order, their spread (min–max, population sd) and the words per prompt."""
    by_key: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for (agent, probe, prompt), row in res.metrics.get("semrel_soundness_per_prompt",
                                                        {}).items():
        by_key.setdefault((agent, probe), {})[int(prompt)] = row
    rows = []
    for r in RELATIONS:
        for a in res.agents:
            got = by_key.get((a, relation_probe(r)))
            if not got:
                continue
            values = [float(got[k]["value"]) for k in sorted(got)]
            lo, hi, sd = spread(values) or (0.0, 0.0, 0.0)
            rows.append([r, a, " / ".join(f"{v:.3f}" for v in values),
                         f"{lo:.3f}–{hi:.3f} (sd {sd:.3f})",
                         "–".join(sorted({str(got[k]["n"]) for k in got}, key=int))])
    if not rows:
        return "No per-prompt rows."
    return _table(["relation", "agent", "S per prompt (prompt 0, 1, ...)", "spread", "words"],
                  rows, "llllr")


def summary_table(res: Results) -> str:
    """Macro (mean over relations) and micro (mean over per-word scores) rows per agent."""
    trick = [*(("semrel_symmetry", f"M_{k}", k) for k in KS),
             *(("semrel_asymmetry", f"A_{k}", k) for k in KS)]
    head = ["agent", "average", "S", "S 95% CI", "C", *(c for _, c, _ in trick), "P", "n"]
    rows = [[a, avg, *_measures(res, a, avg, trick)]
            for a in res.agents for avg in ("macro", "micro")]
    rows += [[CONSTANT, avg, *_constant(res, avg, trick)] for avg in ("macro", "micro")]
    return _table(head, rows, "llr")


def audc_table(res: Results) -> str:
    rows = []
    for a in res.agents:
        row = res.row("semrel_audc", a)
        if row is not None:
            rows.append([a, _num(row["value"], 2), _num(row["n"])])
    return _table(["agent", "AuDC", "pairs"], rows) if rows else "No distinguishability rows."


def oor_table(res: Results) -> str:
    """Section 6.1 / 8: OOR statistics per agent, the paper's humans first."""
    o = PAPER_OOR
    rows = [["paper: humans", f"{o['tokens']:,}", f"{o['types']:,}",
             f"{o['oor_tokens'] / o['tokens']:.3f}", f"{o['oor_types'] / o['types']:.3f}",
             "0.200", f"{o['first_rank']:.1f}"]]
    for a in res.agents:
        r = res.row("semrel_oor", a)
        if r is not None and r.get("file_tokens") is not None:
            rows.append([f"{a}: every loaded answer (no vocabulary limit)",
                         _num(r["file_tokens"]), _num(r["file_types"]), "", "", "", ""])
        if r is not None:
            rows.append([a, _num(r["tokens"]), _num(r["types"]), _num(r["value"]),
                         _num(r["oor_type_share"]), _num(r["all_oor"]),
                         _num(r["first_rank"], 2)])
    return _table(["agent", "tokens", "types", "OOR token share", "OOR type share",
                   "lists all OOR", "first non-OOR rank"], rows)


def tables_1_2(res: Results) -> str:
    """Tables 1 and 2 of the paper beside ours."""
    rows = []
    for r in RELATIONS:
        t = res.row("semrel_tables", relation_probe(r)) or {}
        pp, pw, px = PAPER_TABLE1[r]
        b, af = PAPER_TABLE2[r]
        rows.append([r, f"{pp} / {_num(t.get('prompts'))}", f"{pw} / {_num(t.get('words'))}",
                     f"{px:,} / {_num(t.get('value'))}", _num(t.get("answered")),
                     f"{_num(t.get('source_tuples'))} / {_num(t.get('tuples'))}",
                     f"{b} / {_num(t.get('before_mean'), 1)} ± {_num(t.get('before_sd'), 1)}",
                     f"{af} / {_num(t.get('after_mean'), 1)} ± {_num(t.get('after_sd'), 1)}"])
    return _table(["relation", "prompts (paper / ours)", "words W^r", "probes X^r",
                   "words with human answers", "tuples before / after augmentation (ours)",
                   "relata before expansion", "relata after expansion"], rows)


def entropy_table(res: Results) -> str:
    """Table 3, the R = 1 counts, mean R without zeros and the prototypicality probes."""
    rows = []
    for r in RELATIONS:
        e = res.row("semrel_response_entropy", "human", relation_probe(r))
        if e is None:
            continue
        z, n, length = PAPER_TABLE3[r]
        proto = res.value("semrel_proto_probes", relation_probe(r))
        rows.append([r, f"{z}/{n} = {z / n:.2%}",
                     f"{e['r0']}/{e['n']} = {e['r0'] / e['n']:.2%}", f"{length:.2f}",
                     _num(e["length"], 2), str(PAPER_R1[r]), _num(e["r1"]),
                     PAPER_R_MEAN.get(r, "–"), f"{_num(e['mean_r_nonzero'])} ± "
                     f"{_num(e['sd_r_nonzero'])}", _num(PAPER_PROTO.get(r)), _num(proto)])
    if not rows:
        return ("No human answers (human_responses): load them with "
                "`python -m probes.benchmarks.semrel humans`.")
    rows.append(["all", "", "", "", "", "", "", "", "", _num(PAPER_PROTO["all"]),
                 _num(res.value("semrel_proto_probes", "all"))])
    return _table(["relation", "R = 0 (paper)", "R = 0 (ours)", "length (paper)",
                   "length (ours)", "R = 1 (paper)", "R = 1 (ours)", "mean R ≠ 0 (paper)",
                   "mean R ≠ 0 (ours)", "proto probes (paper)", "proto probes (ours)"], rows,
                  "l")


def paper_table(res: Results) -> str:
    """The humans' S, C, M_k and AuDC of the paper beside ours."""
    humans = sorted(res.humans)
    if not humans:
        return "No human runs: load them with `python -m probes.benchmarks.semrel humans`."
    rows = []
    for r in RELATIONS:
        lo, hi = PAPER_HUMAN_S[r]
        paper = f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f} (mean 0.66)"
        rows.append([f"S {r}", paper, *(_num(res.value("semrel_soundness", h, relation_probe(r)))
                                        for h in humans)])
    for r in RELATIONS:
        paper = "–" if r == "ANT" else f"{PAPER_HUMAN_C[0]:.2f}–{PAPER_HUMAN_C[1]:.2f}"
        rows.append([f"C {r}", paper, *(_num(res.value("semrel_completeness", h, relation_probe(r)))
                                        for h in humans)])
    for r, m in PAPER_HUMAN_M.items():
        ours = [" / ".join(_num(res.value("semrel_symmetry", h, relation_probe(r), k)) for k in KS)
                for h in humans]
        rows.append([f"M {r} (paper k = 5; ours M_1 / M_5 / M_10)", f"{m:.2f}", *ours])
    rows.append(["A (asymmetry)", "not scored for humans (section 5.2)", *("–" for _ in humans)])
    ours = []
    for h in humans:
        row = res.row("semrel_audc", h)
        ours.append("–" if row is None else f"{row['value']:.2f} ({row['n']} pairs)")
    rows.append([f"AuDC (absent = {res.settings.absent}, rank = {res.settings.rank})",
                 f"{PAPER_HUMAN_AUDC:.1f}", *ours])
    return _table(["measure", "paper (humans)", *(f"ours ({h})" for h in humans)], rows)


def d_lowest(res: Results, agent: str, n: int = 6) -> str:
    """The agent's lowest D cells and its highest row (the paper's Fig. 9 reading)."""
    cells = [(row["value"], r, o) for (m, r, o), row in
             res.metrics.get("semrel_distinguishability", {}).items() if m == agent]
    if not cells:
        return ""
    cells.sort()
    rows_mean: dict[str, list[float]] = {}
    for v, r, _ in cells:
        rows_mean.setdefault(r, []).append(v)
    best = max(rows_mean, key=lambda r: sum(rows_mean[r]) / len(rows_mean[r]))
    low = ", ".join(f"({_short_probe(r)}, {o}) {v:.2f}" for v, r, o in cells[:n])
    return (f"{agent}: lowest D: {low}; highest row: {_short_probe(best)} "
            f"(mean {sum(rows_mean[best]) / len(rows_mean[best]):.2f}).")


def entropy_test_table(df: pl.DataFrame | None) -> str:
    """Footnote 15: Mann-Whitney U between relations' R (paper: all pairs significant but
    HOL-HYP and HOL-SYN)."""
    if df is None or df.height == 0:
        return "No human answers to test."
    rows = [[r["relation"], _num(r["n"]), _num(r["statistic"], 1), _p(r["pvalue"]),
             "no" if r["relation"] in PAPER_MW_NOT_SIGNIFICANT else "yes"]
            for r in df.iter_rows(named=True)]
    return _table(["pair", "probes", "U", "p (ours)", "significant in the paper"], rows, "l")


MEASURE_ORDER = {"S": 0, "C": 1, "M5": 2, "A5": 2, "S_prompts": 3, "P": 4}


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


def eta_points(ds: list[float], steps: int = 100) -> list[tuple[float, float]]:
    """eta(p) (eq. 27) on a grid of p in [0, 1]: the number of D values above p.

    >>> eta_points([0.2, 0.6], steps=4)
    [(0.0, 2.0), (0.25, 1.0), (0.5, 1.0), (0.75, 0.0), (1.0, 0.0)]
    """
    return [(i / steps, float(sum(1 for d in ds if d > i / steps))) for i in range(steps + 1)]


def plots(res: Results, out: Path) -> list[Path]:
    """soundness.png; eta(p) curves of every agent (Fig. 8); per agent its 6 x 6 D matrix
    (Fig. 9: rows = the prompted relation r, columns = s)."""
    paths = []
    points = [(a, r, float(v)) for r in RELATIONS for a in res.agents
              if (v := res.value("semrel_soundness", a, relation_probe(r))) is not None]
    if points:
        paths.append(bar_chart(points, "Soundness S by relation", out / "soundness.png",
                               ylabel="S"))
    d_rows = res.metrics.get("semrel_distinguishability", {})
    curves: dict[str, list[tuple[float, float]]] = {}
    for agent in res.agents:
        d = {(probe.removeprefix("semrel/").upper(), other): float(row["value"])
             for (model, probe, other), row in d_rows.items() if model == agent}
        if not d:
            continue
        curves[agent] = eta_points(list(d.values()))
        matrix = [[None if r == s else d.get((r, s), math.nan) for s in RELATIONS]
                  for r in RELATIONS]
        total = res.row("semrel_audc", agent)
        title = f"D(r, s), {agent}" + (f": AuDC {total['value']:.2f}" if total else "")
        paths.append(heat_map(RELATIONS, RELATIONS, matrix, title,
                              out / f"d_matrix_{slug(agent)}.png", xlabel="s (responded)",
                              ylabel="r (prompted)"))
    if curves:
        paths.append(line_panels({"eta(p)": curves}, "Distinguishability curves eta(p)",
                                 out / "eta_curves.png", xlabel="p", ylabel="eta(p)", ncols=1,
                                 ylim=(0.0, 30.0)))
    return paths


