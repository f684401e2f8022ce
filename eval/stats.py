"""Significance tests for the semantic-relation benchmark (Cao et al.): models against humans.

Three tests on plain Python sequences, and :func:`compare_with_humans`, which runs them over the
per-probe values of the semrel views (``eval/semrel/_views.sql``, ``_prototypicality.sql``):

- :func:`mcnemar_exact`: paired booleans (the same probes right / wrong for two agents); an exact
  binomial test on the discordant pairs.
- :func:`wilcoxon_signed_rank`: paired floats; zero differences are dropped (Wilcoxon's
  method) and a sample of only zero differences gives p = 1.
- :func:`levene`: equality of variances over groups (Brown-Forsythe: deviations from the
  median).

And intervals for every report table (defined in :mod:`eval.intervals`, which imports no
other eval module, and re-exported here): :func:`bootstrap_ci` (a seeded percentile bootstrap over
instances), :func:`cluster_bootstrap_ci` (the same over instances that each hold several
values, one per prompt), :func:`proportion_ci` (the Wilson interval of a share of k right out
of n), :func:`spread` (min, max, population sd over prompts), :func:`multi_prompt` (MaxP,
AvgP and CPS over prompts, Mizrahi et al. 2024) and :func:`paired_comparison` (two agents
on the same instances). COPEN's mean and population deviation over seeds is
``probes.results.copen.seed_summary``.

>>> r = mcnemar_exact([True] * 6 + [False], [False] * 6 + [False])
>>> r.statistic, r.n, math.isclose(r.pvalue, 2 * 0.5 ** 6)
(6.0, 6, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
from scipy import stats

from eval.intervals import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    bootstrap_ci,
)
from eval.intervals import cluster_bootstrap_ci as cluster_bootstrap_ci  # re-exported
from eval.intervals import proportion_ci as proportion_ci  # re-exported
from eval.sqlfile import run_support

SEMREL_DIR = Path(__file__).with_name("semrel")
SUPPORT = (SEMREL_DIR / "_views.sql", SEMREL_DIR / "_prototypicality.sql")



def spread(values: Sequence[float]) -> tuple[float, float, float] | None:
    """(min, max, population standard deviation (n in the denominator, as the OntoLAMA
    report's mean ± std over prompts and COPEN's over seeds)) of per-prompt values; None for
    none.

    >>> spread([0.0, 0.5, 1.0])[:2], round(spread([0.0, 0.5, 1.0])[2], 4)
    ((0.0, 1.0), 0.4082)
    >>> spread([0.5])
    (0.5, 0.5, 0.0)
    """
    data = [float(v) for v in values]
    if not data:
        return None
    return min(data), max(data), float(np.std(data))


@dataclass(frozen=True)
class MultiPrompt:
    """A metric's robustness over a probe's prompts (Mizrahi et al., "State of What Art? A
    Call for Multi-Prompt LLM Evaluation", TACL 2024; docs/report.md), for a
    metric where higher is better: ``maxp`` the value under the best prompt, ``avgp`` the mean
    over the prompts, ``shortfall`` = MaxP − AvgP (how far the average prompt falls short of
    the best: 1 minus the paper's saturation) and ``cps`` the combined performance score
    (1 − (MaxP − AvgP)) · MaxP."""

    maxp: float
    avgp: float
    shortfall: float
    cps: float


def multi_prompt(values: Sequence[float]) -> MultiPrompt | None:
    """:class:`MultiPrompt` of per-prompt values; None for none.

    >>> m = multi_prompt([0.5, 0.7, 0.9])
    >>> [round(v, 4) for v in (m.maxp, m.avgp, m.shortfall, m.cps)]
    [0.9, 0.7, 0.2, 0.72]
    """
    data = [float(v) for v in values]
    if not data:
        return None
    best, mean = max(data), sum(data) / len(data)
    return MultiPrompt(best, mean, best - mean, (1.0 - (best - mean)) * best)


@dataclass(frozen=True)
class Paired:
    """Two agents on the same instances: their means over the ``n`` shared instances, the
    mean difference a - b with its paired-bootstrap interval, and a paired test (McNemar's
    exact test for 0/1 values, else Wilcoxon's signed-rank test) with its p-value."""

    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci: tuple[float, float] | None
    test: str
    pvalue: float


def paired_comparison(a: Sequence[float], b: Sequence[float], level: float = 0.95,
                      resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                      ) -> Paired | None:
    """Compare paired per-instance values ``a`` and ``b`` (the same instances, in the same
    order): the paired bootstrap of the mean difference (the instances resampled, each
    keeping both its values) and a paired test (:func:`mcnemar_exact` when every value is 0
    or 1, else :func:`wilcoxon_signed_rank`). None for no pairs.

    >>> r = paired_comparison([1, 1, 1, 1], [0, 0, 0, 0])
    >>> r.diff, r.ci, r.test, round(r.pvalue, 3)
    (1.0, (1.0, 1.0), 'mcnemar', 0.125)
    """
    _paired(a, b)
    if not len(a):
        return None
    x = [float(v) for v in a]
    y = [float(v) for v in b]
    d = [p - q for p, q in zip(x, y, strict=True)]
    if all(v in (0.0, 1.0) for v in x + y):
        test, res = "mcnemar", mcnemar_exact([v == 1.0 for v in x], [v == 1.0 for v in y])
    else:
        test, res = "wilcoxon", wilcoxon_signed_rank(x, y)
    return Paired(len(x), sum(x) / len(x), sum(y) / len(y), sum(d) / len(d),
                  bootstrap_ci(d, level, resamples, seed), test, res.pvalue)


def soundness_intervals(con: duckdb.DuckDBPyConnection
                        ) -> dict[tuple[str, str], tuple[float, float] | None]:
    """The 95 % bootstrap interval of soundness S over the words (``semrel_word_sc``, the
    per-word S of eq. 11; the semrel views must have been run), per (agent, probe) and per
    (agent, 'micro') over all the agent's words."""
    words: dict[tuple[str, str], list[float]] = {}
    # ORDER BY: the bootstrap draws by position, so the rows come in a fixed order
    for model, probe, s in con.execute("SELECT model, probe, s FROM semrel_word_sc "
                                       "ORDER BY model, probe, word").fetchall():
        words.setdefault((model, probe), []).append(float(s))
        words.setdefault((model, "micro"), []).append(float(s))
    return {key: bootstrap_ci(values) for key, values in words.items()}


@dataclass(frozen=True)
class StatResult:
    """A test's statistic, two-sided p-value and the number of items it used."""

    statistic: float
    pvalue: float
    n: int


def _paired(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} vs {len(b)})")


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> StatResult:
    """McNemar's exact test: statistic = pairs where only ``a`` is true, n = discordant pairs,
    p = the two-sided binomial test (p = 1/2) of that count among them; p = 1 without
    discordant pairs.

    >>> mcnemar_exact([True, True, False], [True, False, False])
    StatResult(statistic=1.0, pvalue=1.0, n=1)
    >>> mcnemar_exact([], []).pvalue
    1.0
    """
    _paired(a, b)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    p = stats.binomtest(only_a, n, 0.5).pvalue if n else 1.0
    return StatResult(float(only_a), float(p), n)


def wilcoxon_signed_rank(x: Sequence[float], y: Sequence[float]) -> StatResult:
    """Wilcoxon's signed-rank test on paired floats (scipy.stats.wilcoxon, two-sided). Zero
    differences are dropped first; n = the non-zero differences; with none, statistic nan and
    p = 1 (nothing differs).

    >>> r = wilcoxon_signed_rank([1, 2, 3, 4, 5, 0], [0, 0, 0, 0, 0, 0])
    >>> r.n, math.isclose(r.pvalue, 2 / 2 ** 5)
    (5, True)
    >>> wilcoxon_signed_rank([1.0, 2.0], [1.0, 2.0])
    StatResult(statistic=nan, pvalue=1.0, n=0)
    """
    _paired(x, y)
    d = [float(a) - float(b) for a, b in zip(x, y, strict=True)]
    d = [v for v in d if v != 0]
    if not d:
        return StatResult(math.nan, 1.0, 0)
    res = stats.wilcoxon(d)
    return StatResult(float(res.statistic), float(res.pvalue), len(d))


def levene(*groups: Sequence[float]) -> StatResult:
    """Levene's test of equal variances (scipy.stats.levene, centred on the median); n = the
    values in all groups. Fewer than two non-empty groups give nan; so do groups whose absolute
    deviations from their median are all equal within each group (W = 0/0; inf, p = 0, when
    the groups' deviations differ).

    >>> round(levene([1, 2, 3], [1, 3, 5]).statistic, 6)
    0.8
    """
    groups = tuple(g for g in groups if len(g))
    n = sum(len(g) for g in groups)
    if len(groups) < 2:
        return StatResult(math.nan, math.nan, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = stats.levene(*[[float(v) for v in g] for g in groups])
    return StatResult(float(res.statistic), float(res.pvalue), n)


COLUMNS = {"model": pl.String, "other": pl.String, "relation": pl.String,
           "measure": pl.String, "test": pl.String, "n": pl.Int64, "statistic": pl.Float64,
           "pvalue": pl.Float64, "model_value": pl.Float64, "other_value": pl.Float64}


def _row(model: str, other: str, relation: str, measure: str, test: str, res: StatResult,
         mine: Sequence[float], theirs: Sequence[float]) -> dict:
    def mean(v: Sequence[float]) -> float | None:
        return sum(float(x) for x in v) / len(v) if len(v) else None
    return {"model": model, "other": other, "relation": relation, "measure": measure,
            "test": test, "n": res.n, "statistic": res.statistic, "pvalue": res.pvalue,
            "model_value": mean(mine), "other_value": mean(theirs)}


def _pairs(df: pl.DataFrame, keys: list[str], value: str, a: str, b: str) -> pl.DataFrame:
    """Rows of model ``a`` joined with those of ``b`` on ``keys``: columns x (a) and y (b)."""
    left = df.filter(pl.col("model") == a).select([*keys, pl.col(value).alias("x")])
    right = df.filter(pl.col("model") == b).select([*keys, pl.col(value).alias("y")])
    return left.join(right, on=keys, how="inner").sort(keys)


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> StatResult:
    """The two-sided Mann-Whitney U test (scipy.stats.mannwhitneyu); n = both samples.

    >>> r = mann_whitney([1, 2, 3], [4, 5, 6])
    >>> r.statistic, round(r.pvalue, 4), r.n
    (0.0, 0.1, 6)
    """
    if not len(x) or not len(y):
        return StatResult(math.nan, math.nan, len(x) + len(y))
    res = stats.mannwhitneyu([float(v) for v in x], [float(v) for v in y],
                             alternative="two-sided")
    return StatResult(float(res.statistic), float(res.pvalue), len(x) + len(y))


def entropy_tests(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Footnote 15: Mann-Whitney U between the human R distributions of every pair of
    relations (zeros included). Columns: see :data:`COLUMNS` (model 'human', relation = 'r/s')."""
    run_support(con, SUPPORT[:1])
    # a fixed row order (R itself is summed in a fixed order in the view): the same file gives
    # the same U and p, whatever DuckDB's threads do
    df = con.sql("""SELECT relation, r FROM semrel_probe_r
                     ORDER BY relation, probe, instance_id, prompt_id""").pl()
    rels = sorted(set(df["relation"].to_list()))
    rows = []
    for i, a in enumerate(rels):
        for b in rels[i + 1:]:
            x = df.filter(pl.col("relation") == a)["r"].to_list()
            y = df.filter(pl.col("relation") == b)["r"].to_list()
            rows.append(_row("human", "human", f"{a}/{b}", "R", "mann-whitney",
                             mann_whitney(x, y), x, y))
    return pl.DataFrame(rows, schema=COLUMNS)


def compare_with_humans(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per relation, each model agent against the humans (other = 'human'):

    - measure S, mcnemar: per-probe soundness hits on the probes both answered;
    - measure M10 (ANT, SYN) / A10 (the others), mcnemar: symmetry / asymmetry hits at k = 10
      on the (tuple, prompt) trick probes both have;
    - measure C, wilcoxon: per-probe completeness on the probes both answered;
    - measure S_prompts, levene: the model's per-prompt soundness (one value per prompt_id, the
      mean over its probes) against the humans';
    - measure P, wilcoxon: prototypicality is already model-vs-human, so here each ordered pair
      of models is compared (other = the second model) on the probes both have.

    model_value / other_value are the means of the compared values (for the McNemar rows over
    the paired items only). Columns: see :data:`COLUMNS`.
    """
    run_support(con, SUPPORT)
    # every read in a fixed row order, so two reports of one file give the same digits
    sc = con.sql("""SELECT model, is_human, relation, split, instance_id, prompt_id,
                               s_hit::DOUBLE AS s, c FROM semrel_probe_sc
                        ORDER BY model, relation, split, instance_id, prompt_id""").pl()
    trick = con.sql("""SELECT model, relation, kind, word, relatum, prompt_id,
                                  (CASE WHEN kind = 'symmetric' THEN mu ELSE alpha END)::DOUBLE
                                      AS hit
                           FROM semrel_trick WHERE k = 5
                           ORDER BY model, relation, word, relatum, prompt_id""").pl()
    proto = con.sql("""SELECT model, relation, split, instance_id, prompt_id, p
                           FROM semrel_probe_p
                           ORDER BY model, relation, split, instance_id, prompt_id""").pl()
    humans = con.execute("SELECT DISTINCT model FROM semrel_runs WHERE is_human").fetchall()
    models = [r[0] for r in con.execute("""SELECT DISTINCT model FROM semrel_runs
                                           WHERE NOT is_human ORDER BY model""").fetchall()]
    relations = [r[0] for r in con.execute(
        "SELECT relation FROM semrel_relations ORDER BY relation").fetchall()]
    probe_keys = ["split", "instance_id", "prompt_id"]
    rows = []
    human_names = sorted(h[0] for h in humans)
    for i, model in enumerate(models):
        for other in [*human_names, *models[i + 1:]]:
            for rel in relations:
                sc_rel = sc.filter(pl.col("relation") == rel)
                pair = _pairs(sc_rel, probe_keys, "s", model, other)
                if pair.height:
                    x, y = pair["x"].to_list(), pair["y"].to_list()
                    rows.append(_row(model, other, rel, "S", "mcnemar",
                                     mcnemar_exact([v > 0 for v in x], [v > 0 for v in y]),
                                     x, y))
                    pair = _pairs(sc_rel, probe_keys, "c", model, other)
                    x, y = pair["x"].to_list(), pair["y"].to_list()
                    rows.append(_row(model, other, rel, "C", "wilcoxon",
                                     wilcoxon_signed_rank(x, y), x, y))
                t_rel = trick.filter(pl.col("relation") == rel)
                pair = _pairs(t_rel, ["word", "relatum", "prompt_id"], "hit", model, other)
                kind = t_rel["kind"][0] if t_rel.height else ""
                if pair.height and not (kind == "asymmetric" and other in human_names):
                    x, y = pair["x"].to_list(), pair["y"].to_list()
                    rows.append(_row(model, other, rel,
                                     "M5" if kind == "symmetric" else "A5", "mcnemar",
                                     mcnemar_exact([v > 0 for v in x], [v > 0 for v in y]),
                                     x, y))
    for agent in [*human_names, *models]:
        for rel in relations:
            # Appendix F: the per-word S of each prompt (as if it were the only one) as groups
            sc_rel = sc.filter((pl.col("relation") == rel) & (pl.col("model") == agent))
            groups = [g["s"].to_list()
                      for _, g in sc_rel.group_by("prompt_id", maintain_order=True)]
            if len(groups) > 1:
                flat = [v for g in groups for v in g]
                rows.append(_row(agent, "(prompts)", rel, "S_prompts", "levene",
                                 levene(*groups), flat, flat))
    for a, b in permutations(models, 2):
        for rel in relations:
            pair = _pairs(proto.filter(pl.col("relation") == rel), probe_keys, "p", a, b)
            if pair.height:
                x, y = pair["x"].to_list(), pair["y"].to_list()
                rows.append(_row(a, b, rel, "P", "wilcoxon", wilcoxon_signed_rank(x, y), x, y))
    return pl.DataFrame(rows, schema=COLUMNS)
