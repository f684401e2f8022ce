"""The 95 % intervals over instances that every report table uses, on plain sequences (numpy
and scipy only, no other eval module, so that :mod:`eval.udf` can hand them to the metric
files): :func:`bootstrap_ci` (a seeded percentile bootstrap over instances),
:func:`cluster_bootstrap_ci` (the same over instances that each hold several values, one per
prompt), :func:`proportion_ci` (the Wilson interval of a share of k right out of n) and
:func:`instance_interval` (one value per instance: Wilson where each is 0 or 1, else the
bootstrap). Re-exported by :mod:`eval.stats`.

>>> instance_interval([1.0, 1.0, 1.0, 0.0])[1], instance_interval([0.5, 0.5])
('Wilson', ((0.5, 0.5), 'cluster bootstrap'))
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

WILSON = "Wilson"
CLUSTER = "cluster bootstrap"

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


def bootstrap_ci(values: Sequence[float], level: float = 0.95,
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                 ) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of ``values`` (one value per instance):
    ``resamples`` samples of ``len(values)`` drawn with replacement by numpy's generator seeded
    with ``seed`` (so a report is reproducible), the ``(1 - level) / 2`` and ``(1 + level) / 2``
    quantiles of their means. None for no values.

    >>> bootstrap_ci([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> bootstrap_ci([]) is None
    True
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie between 0 and 1 (got {level})")
    data = np.asarray([float(v) for v in values], dtype=float)
    if not data.size:
        return None
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def stratified_bootstrap_ci(groups: Sequence[Sequence[float]], level: float = 0.95,
                            resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                            ) -> tuple[float, float] | None:
    """The percentile bootstrap interval of a mean over groups of the groups' means (ParaRel's
    "mean over relations"): each resample draws every group's values with replacement within
    the group, so each group keeps its size and its weight of one. Empty groups are left out;
    None when none is left.

    >>> stratified_bootstrap_ci([[1.0, 1.0], [0.0, 0.0, 0.0]])  # every resample: (1 + 0) / 2
    (0.5, 0.5)
    >>> stratified_bootstrap_ci([[], []]) is None
    True
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie between 0 and 1 (got {level})")
    arrays = [np.asarray([float(v) for v in g], dtype=float) for g in groups if len(g)]
    if not arrays:
        return None
    rng = np.random.default_rng(seed)
    means = np.zeros(resamples)
    for data in arrays:
        means += data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    means /= len(arrays)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def proportion_ci(right: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of a share of ``right`` out of ``n`` (scipy's
    ``binomtest(...).proportion_ci(method="wilson")``, no continuity correction): the interval
    of an accuracy over ``n`` instances. Unlike a bootstrap it is never zero-width: 10/10 gives
    [n / (n + z^2), 1] = [0.722, 1]. None for n = 0.

    >>> [tuple(round(v, 3) for v in proportion_ci(k, 10)) for k in (0, 10)]
    [(0.0, 0.278), (0.722, 1.0)]
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie between 0 and 1 (got {level})")
    if not 0 <= right <= n:
        raise ValueError(f"right must lie between 0 and n (got {right} of {n})")
    if n == 0:
        return None
    ci = stats.binomtest(int(right), int(n)).proportion_ci(confidence_level=level,
                                                            method="wilson")
    return float(ci.low), float(ci.high)


def cluster_bootstrap_ci(clusters: Sequence[Sequence[float]], level: float = 0.95,
                         resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                         ) -> tuple[float, float] | None:
    """The percentile cluster bootstrap interval of the mean over all values, resampling whole
    clusters (one cluster per instance, its values one per prompt): each of ``resamples``
    samples draws ``len(clusters)`` clusters with replacement and takes the mean of every
    value they hold (sum / count). The values of one instance are not independent (the same
    word under two prompts), so the instances are the units: n = instances, not (instance,
    prompt) pairs. Clusters of one value each give :func:`bootstrap_ci`'s interval. None for
    no values.

    >>> cluster_bootstrap_ci([[1.0, 1.0], [1.0]])
    (1.0, 1.0)
    >>> cluster_bootstrap_ci([[], []]) is None
    True
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie between 0 and 1 (got {level})")
    kept = [[float(v) for v in c] for c in clusters if len(c)]
    if not kept:
        return None
    sums = np.asarray([sum(c) for c in kept])
    counts = np.asarray([len(c) for c in kept], dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(kept), size=(resamples, len(kept)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def instance_interval(values: Sequence[float], level: float = 0.95
                      ) -> tuple[tuple[float, float] | None, str | None]:
    """The 95 % interval of a mean over instances, from one value per instance (its own
    average over its prompts or prompt pairs: the values within an instance are not
    independent, so the instances are the units), and its method: where every value is 0 or
    1 the mean is a share of independent instances, so the Wilson interval
    (:func:`proportion_ci`, never zero-width); otherwise the seeded percentile bootstrap over
    instances (:func:`bootstrap_ci`: each instance resampled whole, with its value, which is
    the cluster bootstrap of the mean of per-instance values). (None, None) for no values.

    >>> [round(v, 3) for v in instance_interval([1.0, 0.0, 1.0, 1.0])[0]]
    [0.301, 0.954]
    >>> instance_interval([])
    (None, None)
    """
    data = [float(v) for v in values]
    if not data:
        return None, None
    if all(v in (0.0, 1.0) for v in data):
        return proportion_ci(int(sum(data)), len(data), level), WILSON
    return bootstrap_ci(data, level), CLUSTER
