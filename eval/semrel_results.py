"""What the semantic-relation report reads (Cao et al.): the paper's figures it prints beside
ours, the report's settings, and :func:`build`, which runs the metric files of ``eval/semrel/``
over a results file into :class:`Results` (tables: :mod:`eval.semrel_tables`; the report:
:mod:`eval.semrel_report`).

>>> from probes.results import connect
>>> build(connect(":memory:")).agents
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import yaml

from eval.report import Rows
from eval.sqlfile import MetricError, discover_metrics, run_metric, run_support
from eval.stats import compare_with_humans, entropy_tests, soundness_intervals
from kg.relations import RELATIONS

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
           "  python -m probes.engine.export -p 'semrel/*'\n"
           "  python -m probes.benchmarks.semrel humans\n"
           "  python -m probes.engine.run -m MODEL -p 'semrel/*'")


NO_VOCAB = ("the shared vocabulary of {label} ({declared}) limits every word and relatum, but "
            "the results file has no vocabulary (model_vocab) for {missing}, so every word "
            "would be left out and every figure, the humans' included, would print as –. "
            "Write it (tokenizers only, no weights) and run the report again:\n"
            "  python -m probes.benchmarks.semrel vocab")


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


