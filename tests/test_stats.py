"""eval.stats: the three tests against closed forms, and compare_with_humans on the semrel file
of tests/semrel_fixtures.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from eval.stats import (
    COLUMNS,
    bootstrap_ci,
    cluster_bootstrap_ci,
    compare_with_humans,
    entropy_tests,
    levene,
    mcnemar_exact,
    paired_comparison,
    proportion_ci,
    spread,
    wilcoxon_signed_rank,
)
from probes.results import connect
from probes.results.copen import seed_summary
from tests.semrel_fixtures import DECLARED, build


def test_mcnemar_exact() -> None:
    # b = 0 (only a right), c = 6 (only b right), plus 3 concordant pairs:
    # p = 2 * P(X <= 0 | n = 6, 1/2) = 2 * 0.5^6.
    a = [False] * 6 + [True, True, False]
    b = [True] * 6 + [True, True, False]
    r = mcnemar_exact(a, b)
    assert (r.statistic, r.n) == (0.0, 6) and r.pvalue == pytest.approx(2 * 0.5 ** 6)
    # b = 2, c = 8: p = 2 * (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 2 * 56 / 1024.
    r = mcnemar_exact([True] * 2 + [False] * 8, [False] * 2 + [True] * 8)
    assert (r.statistic, r.n) == (2.0, 10) and r.pvalue == pytest.approx(112 / 1024)
    # b = c: p = 1; no discordant pair: p = 1.
    assert mcnemar_exact([True, False], [False, True]).pvalue == pytest.approx(1.0)
    assert mcnemar_exact([True, False], [True, False]).pvalue == 1.0
    with pytest.raises(ValueError, match="length"):
        mcnemar_exact([True], [True, False])


def test_wilcoxon_signed_rank() -> None:
    # Differences 1, -2, 3, 4, 5 (ranks 1..5): W+ = 13, W- = 2, statistic min = 2. Exact
    # two-sided p = 2 * #{subsets of 1..5 with sum <= 2} / 2^5 = 2 * 3 / 32 ({}, {1}, {2}).
    r = wilcoxon_signed_rank([1, 0, 3, 4, 5], [0, 2, 0, 0, 0])
    assert (r.statistic, r.n) == (2.0, 5) and r.pvalue == pytest.approx(6 / 32)
    # Zero differences are dropped: the same test.
    r0 = wilcoxon_signed_rank([1, 0, 3, 4, 5, 7, 7], [0, 2, 0, 0, 0, 7, 7])
    assert (r0.statistic, r0.n) == (2.0, 5) and r0.pvalue == pytest.approx(6 / 32)
    # All positive: p = 2 / 2^5.
    assert wilcoxon_signed_rank([1, 2, 3, 4, 5], [0] * 5).pvalue == pytest.approx(2 / 32)
    # Only zero differences: nothing differs.
    r = wilcoxon_signed_rank([0.5, 0.25], [0.5, 0.25])
    assert math.isnan(r.statistic) and (r.pvalue, r.n) == (1.0, 0)


def test_levene() -> None:
    # [1, 2, 3] and [1, 3, 5]: medians 2, 3; |deviations| z = [1, 0, 1], [2, 0, 2]; means 2/3,
    # 4/3, grand mean 1. SSB = 3 (1/3)^2 * 2 = 2/3, SSW = 6/9 + 24/9 = 10/3;
    # W = (2/3 / 1) / (10/3 / 4) = 0.8 with (1, 4) df. P(F(1, 4) > w) = P(|T_4| > sqrt w)
    # = 1 - t (t^2 + 6) / (t^2 + 4)^(3/2), t = sqrt(0.8).
    r = levene([1, 2, 3], [1, 3, 5])
    t = math.sqrt(0.8)
    assert r.statistic == pytest.approx(0.8) and r.n == 6
    assert r.pvalue == pytest.approx(1 - t * (t * t + 6) / (t * t + 4) ** 1.5)
    assert math.isnan(levene([1, 2, 3], []).pvalue)


def test_compare_with_humans(tmp_path: Path) -> None:
    build(tmp_path / "r.duckdb")
    con = connect(tmp_path / "r.duckdb", read_only=True)
    con.execute("SET VARIABLE semrel_vocab_models = ?::VARCHAR[]", [DECLARED])
    df = compare_with_humans(con)
    assert df.schema == COLUMNS
    rows = {(r["model"], r["other"], r["relation"], r["measure"]): r
            for r in df.iter_rows(named=True)}
    # Model against humans and model against model (each pair once): S, C per relation; M5 /
    # A5 only model against model (no human list of "large"; humans get no asymmetry);
    # Levene across one agent's prompts; P for the ordered model pairs.
    assert set(rows) == {
        *((m, o, rel, meas) for m, o in (("mA", "human"), ("mB", "human"), ("mA", "mB"))
          for rel in ("HYP", "SYN") for meas in ("S", "C")),
        ("mA", "mB", "HYP", "A5"), ("mA", "mB", "SYN", "M5"),
        *((a, "(prompts)", rel, "S_prompts") for a in ("human", "mA", "mB")
          for rel in ("HYP", "SYN")),
        *((a, b, rel, "P") for a, b in (("mA", "mB"), ("mB", "mA")) for rel in ("HYP", "SYN"))}
    # S, mB vs humans on hyp: dog p0 both right, dog p1 mB right ([animal]) and humans wrong
    # (mammal): b = 1, c = 0 -> p = 1.
    r = rows[("mB", "human", "HYP", "S")]
    assert (r["n"], r["statistic"], r["pvalue"], r["model_value"], r["other_value"]) == (
        1, 1.0, pytest.approx(1.0), 1.0, 0.5)
    # A5, mA vs mB: alpha at p0 (0, 1), p1 (1, 0): two discordant pairs, one each way, p = 1.
    r = rows[("mA", "mB", "HYP", "A5")]
    assert (r["n"], r["statistic"], r["pvalue"]) == (2, 1.0, pytest.approx(1.0))
    # M5, mA vs mB: mA 1 on all four (tuple, prompt) pairs, mB 1, 0, 1, 0: b = 2, c = 0.
    r = rows[("mA", "mB", "SYN", "M5")]
    assert (r["n"], r["statistic"], r["pvalue"]) == (2, 2.0, pytest.approx(0.5))
    # Levene across mA's syn prompts: p0 S per word [1, 1], p1 [0, 0]: 2 groups, 4 values.
    assert rows[("mA", "(prompts)", "SYN", "S_prompts")]["n"] == 4
    con.close()


def test_entropy_tests_footnote_15(tmp_path: Path) -> None:
    # human R: HYP (0.971, 0), SYN (0, 1): U(HYP) = [.971 > 0] + [0 = 0] / 2 = 1.5 of 4 pairs
    build(tmp_path / "r.duckdb")
    con = connect(tmp_path / "r.duckdb", read_only=True)
    df = entropy_tests(con)
    (row,) = df.iter_rows(named=True)
    assert (row["relation"], row["n"], row["statistic"]) == ("HYP/SYN", 4, 1.5)
    assert row["pvalue"] > 0.5


def test_compare_with_humans_on_an_empty_file() -> None:
    df = compare_with_humans(connect(":memory:"))
    assert df.height == 0 and df.schema == COLUMNS


def test_bootstrap_interval_of_a_constant_has_zero_width() -> None:
    # every resample of [0.7, 0.7, 0.7, 0.7] has mean 0.7
    assert bootstrap_ci([0.7] * 4) == pytest.approx((0.7, 0.7))
    # ... which is why a share is not bootstrapped: its Wilson interval is never zero-width
    assert proportion_ci(5, 5)[0] < 1.0 and proportion_ci(0, 5)[1] > 0.0


def test_bootstrap_interval_of_two_values_by_hand() -> None:
    # Values [0, 1]: a resample of 2 has mean 0 (p 1/4), 0.5 (p 1/2) or 1 (p 1/4). With 1,000
    # resamples the 2.5 % quantile is 0 and the 97.5 % quantile is 1 (each tail holds ~250
    # resamples, far more than 25), and the 40 % / 60 % quantiles of a 20 % interval are 0.5
    # (the means below 0.5 hold ~25 % of the resamples, those up to 0.5 ~75 %).
    assert bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)
    assert bootstrap_ci([0.0, 1.0], level=0.2) == (0.5, 0.5)


def test_bootstrap_is_seeded_and_covers_the_mean() -> None:
    values = [1.0] * 30 + [0.0] * 70
    low, high = bootstrap_ci(values)
    assert bootstrap_ci(values) == (low, high)           # same seed, same interval
    # the normal approximation of the interval: 0.3 +- 1.96 * sqrt(0.3 * 0.7 / 100) = 0.21..0.39
    assert low == pytest.approx(0.21, abs=0.03) and high == pytest.approx(0.39, abs=0.03)
    # the Wilson interval of the same 30 ones and 70 zeros lies close to it
    w_low, w_high = proportion_ci(30, 100)
    assert w_low == pytest.approx(low, abs=0.02) and w_high == pytest.approx(high, abs=0.02)


Z = 1.959964   # the 97.5 % quantile of the standard normal


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    # Wilson (1927): (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_wilson_at_ten_of_ten_is_the_textbook_value() -> None:
    # p = 1: the interval is [n / (n + z^2), 1]; 10 / (10 + 3.841459) = 0.72247
    low, high = proportion_ci(10, 10)
    assert low == pytest.approx(10 / (10 + Z * Z), abs=1e-6)
    assert low == pytest.approx(0.72247, abs=1e-5) and high == pytest.approx(1.0, abs=1e-12)
    # p = 0 mirrors it: [0, z^2 / (n + z^2)]
    low, high = proportion_ci(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12)
    assert high == pytest.approx(Z * Z / (10 + Z * Z), abs=1e-6)
    for k, n in ((3, 10), (30, 100), (1, 7)):
        assert proportion_ci(k, n) == pytest.approx(wilson_by_hand(k, n), abs=1e-6)
    assert proportion_ci(0, 0) is None


def test_cluster_bootstrap_is_wider_than_the_pair_bootstrap_when_prompts_agree() -> None:
    # 20 instances, 2 prompts each; both prompts of an instance give the same outcome (hit or
    # miss), 8 of the 20 instances hit. The 40 pairs are 20 independent draws counted twice:
    # the pair bootstrap treats them as 40 and is too narrow by about sqrt(2); resampling the
    # instances with both their prompts gives the honest interval (n = 20).
    clusters = [[1.0, 1.0]] * 8 + [[0.0, 0.0]] * 12
    pairs = [v for c in clusters for v in c]
    c_low, c_high = cluster_bootstrap_ci(clusters)
    p_low, p_high = bootstrap_ci(pairs)
    assert c_high - c_low > p_high - p_low
    assert (c_high - c_low) / (p_high - p_low) == pytest.approx(math.sqrt(2), rel=0.2)
    # the cluster bootstrap over these 20 instances is the bootstrap of their 20 means
    assert (c_low, c_high) == bootstrap_ci([1.0] * 8 + [0.0] * 12)
    # the normal approximation: 0.4 +- 1.96 sqrt(0.4 * 0.6 / 20) = 0.185..0.615
    assert c_low == pytest.approx(0.185, abs=0.05) and c_high == pytest.approx(0.615, abs=0.05)


def test_spread_and_paired_comparison_by_hand() -> None:
    # prompts 0.0, 0.3, 0.6: mean 0.3, squared deviations 0.09 + 0 + 0.09, / 3 = 0.06
    # (population sd, as the OntoLAMA report's mean ± std over prompts)
    low, high, sd = spread([0.0, 0.3, 0.6])
    assert (low, high) == (0.0, 0.6) and sd == pytest.approx(0.06 ** 0.5)
    # a right on 6 instances, b on 1 of them: 5 discordant pairs all for a;
    # McNemar p = 2 * 0.5 ** 5 = 0.0625; mean difference (6 - 1) / 8 = 0.625
    a = [1, 1, 1, 1, 1, 1, 0, 0]
    b = [1, 0, 0, 0, 0, 0, 0, 0]
    r = paired_comparison(a, b)
    assert r is not None and (r.n, r.mean_a, r.mean_b, r.test) == (8, 0.75, 0.125, "mcnemar")
    assert r.diff == pytest.approx(0.625) and r.pvalue == pytest.approx(0.0625)
    assert r.ci is not None and r.ci[0] <= 0.625 <= r.ci[1]
    # floats: Wilcoxon on the differences 0.5, 0.25, 0.25 (all positive: p = 2 / 2^3 = 0.25)
    w = paired_comparison([0.5, 0.5, 0.75], [0.0, 0.25, 0.5])
    assert w is not None and w.test == "wilcoxon" and w.pvalue == pytest.approx(0.25)
    assert paired_comparison([], []) is None


def test_bootstrap_rejects_bad_input() -> None:
    assert bootstrap_ci([]) is None
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([1.0], level=95)
    with pytest.raises(ValueError, match="right"):
        proportion_ci(6, 5)


def test_seed_summary_is_the_population_deviation() -> None:
    # 28.5, 26.6, 26.9: mean 27.333..., deviations 1.1667, -0.7333, -0.4333;
    # squares 1.3611 + 0.5378 + 0.1878 = 2.0867, / 3 = 0.6956, sqrt = 0.834
    mean, std = seed_summary([28.5, 26.6, 26.9])
    assert mean == pytest.approx(27.3333333, abs=1e-6) and std == pytest.approx(0.834, abs=1e-3)
