"""The semantic-relation report (Cao et al.) laid out like the paper: ``python -m
eval.semrel_report``.

Runs the metric files of ``eval/semrel/`` over the results file (opened read-only) and prints
markdown:

1. one table per relation (HYP, HPO, HOL, MER, ANT, SYN), a row per agent (humans first, then
   the models): soundness S, completeness C, symmetry M_1/M_5/M_10 (ANT, SYN) or asymmetry
   A_1/A_5/A_10 (the others), prototypicality P, out-of-relatum (OOR) rate, mean rank of the
   first non-OOR answer, n (probes scored for S); below them the constant-answer baseline
   (``semrel_constant_answer``: S and C of the other words' most frequent relata, fitted
   leave-one-out) and a note on how it is fitted;
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
import yaml

from eval.plots import bar_chart, heat_map, line_panels
from eval.report import REPORT_ERRORS, Render, Rendered, Rows, report_folder, run_report
from eval.sqlfile import MetricError, discover_metrics, run_metric, run_support
from eval.stats import compare_with_humans, entropy_tests, soundness_intervals, spread
from kg import config, options
from kg.relations import RELATION_NAMES, RELATIONS, relation_probe

METRIC_DIR = Path(__file__).with_name("semrel")
SYMMETRIC = ("ANT", "SYN")
KS = (1, 5, 10)

# The paper's figures (Cao et al. 2025; line numbers of ../shared/papers/semrel-cao-2025.md).
PAPER_HUMAN_S: dict[str, tuple[float, float]] = {
    r: ((0.90, 0.90) if r == "ANT" else (0.63, 0.75)) for r in RELATIONS}   # section 8.1
PAPER_HUMAN_C = (0.38, 0.49)                       # section 8.2, relations other than ANT
PAPER_HUMAN_M: dict[str, float] = {"ANT": 0.88, "SYN": 0.65}               # section 8.3, k = 5
PAPER_HUMAN_AUDC = 21.3                                                     # section 8.5
PAPER_TABLE1 = {"HYP": (7, 692, 4844), "HPO": (4, 310, 1240), "HOL": (7, 186, 1302),
                "MER": (6, 144, 864), "ANT": (9, 91, 819), "SYN": (7, 211, 1477)}
PAPER_TABLE2 = {"HYP": ("1.2 ± 0.5", "8.4 ± 6.8"), "HPO": ("2.6 ± 4.0", "39.2 ± 54.9"),
                "HOL": ("1.3 ± 0.6", "2.9 ± 2.3"), "MER": ("1.7 ± 3.4", "3.9 ± 6.2"),
                "ANT": ("1.1 ± 0.3", "1.2 ± 0.5"), "SYN": ("1.1 ± 0.2", "3.5 ± 2.8")}
PAPER_TABLE3 = {"ANT": (50, 819, 4.28), "SYN": (36, 1477, 5.25), "HOL": (17, 1302, 5.93),
                "HYP": (55, 4844, 5.59), "HPO": (2, 1240, 7.46), "MER": (1, 864, 7.62)}
PAPER_R1 = {"HYP": 401, "HPO": 199, "SYN": 93, "HOL": 79, "MER": 65, "ANT": 15}
PAPER_R_MEAN = {"ANT": "0.83", "SYN": "0.90", "HPO": "> 0.95", "MER": "> 0.95"}
PAPER_PROTO = {"HYP": 2406, "HOL": 805, "ANT": 448, "SYN": 672, "all": 4331}
PAPER_OOR = {"tokens": 93120, "types": 7216, "oor_tokens": 10895, "oor_types": 3691,
             "all_oor_lists": 2106, "first_rank": 1.5}
PAPER_MW_NOT_SIGNIFICANT = {"HOL/HYP", "HOL/SYN"}                           # footnote 15
SHARED_VOCAB = Path(__file__).resolve().parent.parent / "queries" / "semrel" / "shared_vocab.yaml"
ABSENT = ("present", "one", "skip")
RANKS = ("zero", "one")
MODEL_LISTS = ("full", "shared")
TARGETS = ("answered", "tuples")
CONFLICTS = ("all", "keep-tuples")
ENTROPY_POPULATIONS = ("file", "targets")
CONSTANT = "constant answer (leave-one-out)"
CONSTANT_NOTE = (
    f"{CONSTANT}: no model; each word's answer list is the relata of the other words of W^r, "
    "most frequent first (ties alphabetical), so the word's own gold is never read "
    "(eval/semrel/semrel_constant_answer.sql; the paper reports no such baseline); S and C "
    "as for the agents, words = W^r with a non-empty set.")


@dataclass(frozen=True)
class Settings:
    """The readings the metric SQL takes as DuckDB variables (eval/semrel/_views.sql)."""

    vocab_models: tuple[str, ...] = ()
    vocab_label: str = ""
    absent: str = "present"
    rank: str = "zero"
    model_lists: str = "full"
    targets: str = "answered"
    conflicts: str = "all"
    entropy_population: str = "file"

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        # one thread: DuckDB's parallel sums and averages add in an order that follows its
        # threads, so the last digits (and the ties of the rank tests) could change between
        # two reports of the same file
        con.execute("SET threads = 1")
        if self.vocab_models:
            con.execute("SET VARIABLE semrel_vocab_models = ?::VARCHAR[]",
                        [list(self.vocab_models)])
        con.execute("SET VARIABLE semrel_absent = ?", [self.absent])
        con.execute("SET VARIABLE semrel_rank = ?", [self.rank])
        con.execute("SET VARIABLE semrel_model_lists = ?", [self.model_lists])
        con.execute("SET VARIABLE semrel_targets = ?", [self.targets])
        con.execute("SET VARIABLE semrel_conflicts = ?", [self.conflicts])
        con.execute("SET VARIABLE semrel_entropy_population = ?", [self.entropy_population])


def declared_models(path: Path = SHARED_VOCAB) -> tuple[str, tuple[str, ...]]:
    """The declared model list of queries/semrel/shared_vocab.yaml: (``name vN``, models)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return f"{data['name']} v{data['version']}", tuple(str(m) for m in data["models"])
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        raise MetricError(f"{path}: cannot read the declared model list ({e}); it needs name, "
                          "version and models: [...]") from e


NO_RUNS = ("no semrel runs in {path}. Export the probes, load the human answers and score a "
           "model first:\n"
           "  python -m probes.export -p 'semrel/*'\n"
           "  python -m probes.semrel humans\n"
           "  python -m probes.run -m MODEL -p 'semrel/*'")


NO_VOCAB = ("the shared vocabulary of {label} ({declared}) limits every word and relatum, but "
            "the results file has no vocabulary (model_vocab) for {missing}, so every word "
            "would be left out and every figure, the humans' included, would print as –. "
            "Write it (tokenizers only, no weights) and run the report again:\n"
            "  python -m probes.semrel vocab")


def check_vocab(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """A :class:`MetricError` naming the declared models whose vocabulary is missing from
    ``model_vocab`` (the shared vocabulary would be empty) and the command that writes it."""
    if not settings.vocab_models:
        return
    have = {r[0] for r in con.execute(
        "SELECT DISTINCT model FROM model_vocab WHERE vocab = 'lowercase'").fetchall()}
    missing = [m for m in settings.vocab_models if m not in have]
    if missing:
        raise MetricError(NO_VOCAB.format(label=settings.vocab_label or "the declared models",
                                          declared=", ".join(settings.vocab_models),
                                          missing=", ".join(missing)))


@dataclass
class Results:
    """Metric rows keyed by their grain values, the agents and the statistics."""

    metrics: dict[str, dict[tuple, dict[str, Any]]] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)       # humans first, then models
    humans: set[str] = field(default_factory=set)
    relations: dict[str, set[str]] = field(default_factory=dict)   # agent -> relations run
    stats: pl.DataFrame | None = None
    entropy: pl.DataFrame | None = None
    settings: Settings = field(default_factory=Settings)
    s_ci: dict[tuple[str, str], tuple[float, float] | None] = field(default_factory=dict)

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
          metric_dir: Path | None = None, settings: Settings | None = None,
          rows: Rows | None = None) -> Results:
    """Collect the semrel metric rows (``rows``, as the report runner hands them after
    ``settings.apply``; None: apply the settings and run the metrics here) and the statistics
    over ``con``; no semrel runs: no agents, nothing else computed. A failing metric raises
    :class:`MetricError` naming its file."""
    metric_dir = metric_dir or METRIC_DIR
    res = Results(settings=settings or Settings())
    if rows is None:
        res.settings.apply(con)
    _agents(con, metric_dir, res)
    if not res.agents:
        return res
    metrics = discover_metrics([metric_dir])
    if rows is None:
        rows = {}
        for metric in metrics:
            try:
                cols, got = run_metric(con, metric)
            except MetricError as e:
                if str(metric.path) in str(e):
                    raise
                raise MetricError(f"{metric.path} ({metric.name}): {e}") from e
            rows[metric.name] = [dict(zip(cols, r, strict=True)) for r in got]
    for metric in metrics:
        res.metrics[metric.name] = {tuple(d[g] for g in metric.grain): d
                                    for d in rows.get(metric.name, [])}
    res.s_ci = soundness_intervals(con)
    if stats:
        try:
            res.stats = compare_with_humans(con)
            res.entropy = entropy_tests(con)
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
        return "No human answers (human_responses): load them with `python -m probes.semrel " \
               "humans`."
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
        return "No human runs: load them with `python -m probes.semrel humans`."
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


# --- the report -----------------------------------------------------------------------------

def render(res: Results, images: list[Path] | None = None, stats: bool = True) -> str:
    """The whole report as markdown."""
    st = res.settings
    parts = ["# Semantic relations report (Cao et al.)", "",
             "Agents: " + ", ".join(res.agents) + f". Shared vocabulary: {st.vocab_label} "
             f"({', '.join(st.vocab_models) or 'none declared'}); model lists: "
             f"{st.model_lists}; W^r: {st.targets}; conflicting relata: {st.conflicts}; "
             f"human R (Table 3, footnote 15) over: {st.entropy_population}; "
             f"rho of an absent relatum: {st.absent}; rank base: {st.rank} "
             "(eval/semrel/_views.sql). S soundness, C completeness (eqs. 11-14, per word then "
             "per relation), M_k symmetry (ANT, SYN), A_k asymmetry (the others; models "
             "only), P prototypicality (models against humans), words = W^r scored for S; "
             "S 95% CI: percentile bootstrap over the words (1,000 seeded resamples). Chance "
             "is about 0 (a top answer drawn from the vocabulary); humans are the ceiling. "
             + CONSTANT_NOTE, ""]
    for r in RELATIONS:
        table = relation_table(res, r)
        parts += [f"## {r} ({RELATION_NAMES[r]})", "", table, ""]
        if table.startswith("|"):
            parts += [constant_note(res, r), ""]
    parts += ["## Soundness per prompt (Appendix F)", "",
              "S computed as if each prompt were the only one in the set (Appendix F): per "
              "prompt the mean over the words of its Precision@1; spread: min–max and the "
              "population sd across the relation's prompts (eval/semrel/"
              "semrel_soundness_per_prompt.sql, which also gives C per prompt).", "",
              prompt_table(res), ""]
    parts += ["## Averages", "",
              "macro = the mean over relations (n = relations), micro = the mean over "
              "per-word scores (section 9).", "", summary_table(res), "",
              "## AuDC (distinguishability, eqs. 24-28)", "", audc_table(res), "",
              *(line for a in res.agents if (line := d_lowest(res, a))), "",
              "## Out-of-relatum statistics (sections 6.1, 8)", "", oor_table(res), "",
              "## Tables 1 and 2 beside the paper's", "", tables_1_2(res), "",
              "## Table 3, response entropy and the prototypicality probe set", "",
              entropy_table(res), "",
              "## The paper's human figures beside ours", "", paper_table(res), "",
              "## Footnote 15: Mann-Whitney U between relations' R", "",
              entropy_test_table(res.entropy if stats else None), ""]
    parts += ["## Significance (section 7.3, Appendix F)", ""]
    if stats:
        parts += ["McNemar (S, M5 / A5), Wilcoxon (C; P between models), model against humans "
                  "and model against model; Levene across one agent's prompts (per-word S of "
                  "each prompt); * p < 0.05.", "",
                  stats_table(res.stats if res.stats is not None else pl.DataFrame()), ""]
    else:
        parts += ["Skipped (--no-stats).", ""]
    parts += ["## Bad inputs", "", bad_input_tables(res), ""]
    for p in images or []:
        parts += [f"![{p.stem}]({p.name})", ""]
    return "\n".join(parts).rstrip() + "\n"


def render_report(results: Path, stats: bool, settings: Settings) -> Render:
    """The render function of the report runner: tables, statistics and figures; no semrel
    runs is a :class:`MetricError` (nothing is written)."""

    def render_fn(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
        res = build(con, stats=stats, settings=settings, rows=rows)
        if not res.agents:
            raise MetricError(NO_RUNS.format(path=results))
        check_vocab(con, settings)
        images = plots(res, out)
        return Rendered(render(res, images, stats=stats), images)

    return render_fn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe semrel report`` / ``python -m eval.semrel_report``."""
    parser.description = " ".join(  # the whole first paragraph
        __doc__.split("\n\n")[0].split()).replace("``", "")
    options.add_results(parser, help="results DuckDB file, opened read-only (default: "
                        "$KGPROBE_RESULTS or .kgprobe/results.duckdb)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for semrel_report.md and the PNGs (default: a new folder "
                        "per call, $KGPROBE_HOME/reports/semrel-<time>-<hash>)")
    parser.add_argument("--no-stats", action="store_true",
                        help="skip the significance tests")
    parser.add_argument("--absent", choices=ABSENT, default="present",
                        help="rho of a relatum absent from L_k (eq. 24): present = the mean "
                        "over the relata in L_k, 1 if none (default); one = each absent "
                        "relatum counts 1; skip = absent relata left out")
    parser.add_argument("--rank", choices=RANKS, default="zero",
                        help="rho = (rank - 1) / k (zero, default) or rank / k (one)")
    parser.add_argument("--model-lists", choices=MODEL_LISTS, default="full",
                        help="full: a model's own ranking (default); shared: filtered to the "
                        "shared vocabulary and re-ranked")
    parser.add_argument("--targets", choices=TARGETS, default="answered",
                        help="W^r: the words the annotators answered (default; section 6.1), "
                        "or the targets of the reconstructed tuples")
    parser.add_argument("--conflicts", choices=CONFLICTS, default="all",
                        help="relationally ambiguous relata (section 4.3): removed from every "
                        "set, tuple relata included (all, default), or a tuple relatum kept in "
                        "its tuple's relation (keep-tuples)")
    parser.add_argument("--entropy-population", choices=ENTROPY_POPULATIONS, default="file",
                        help="the human answers of Table 3 and footnote 15: every loaded answer "
                        "of the response file (file, default: the population of section 6.1's "
                        "counts) or only those of W^r (targets)")
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.semrel_report", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``kgprobe semrel report``: the report printed and written."""
    results = Path(args.results or config.results_path())
    if not results.exists():
        print("error: " + NO_RUNS.format(path=f"{results} (no such file)"), file=sys.stderr)
        return 2
    out = report_folder(args.out, "semrel", argv)
    try:
        label, models = declared_models()
        settings = Settings(models, label, args.absent, args.rank, args.model_lists,
                            args.targets, args.conflicts, args.entropy_population)
        report, rendered = run_report(results, [METRIC_DIR],
                                      render_report(results, not args.no_stats, settings),
                                      out, "semrel_report.md", prepare=settings.apply)
    except REPORT_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(rendered.markdown)
    for path in [report, *rendered.figures]:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
