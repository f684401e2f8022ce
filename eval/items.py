"""A metric's items: per-prompt values beside the mean, their spread, the 95 % interval over
instances and paired comparisons of runs on the same instances.

A metric file may name an items file (header ``items:``, see :mod:`eval.sqlfile`): a metric
file of its own, one row per (instance, prompt) of each metric row, with ``value`` the item's
value under that prompt alone and, where the metric does not average the prompts' values
(choice accuracy scores the mean over prompts, then picks), ``instance_value``: the
instance's value in the metric. From those rows, per metric row (:class:`Summary`):

- **per prompt**: the mean of ``value`` over the instances of each ``prompt_id``, and the
  spread across prompts: min, max and the population standard deviation
  (:func:`eval.stats.spread`);
- **the interval over instances**: instances are the units (n = instances, not (instance,
  prompt) pairs). A share with one 0/1 value per instance (``instance_value``, or one prompt;
  in every row of the metric) gets the Wilson interval (:func:`eval.stats.proportion_ci`,
  never zero-width); otherwise the cluster bootstrap
  (:func:`eval.stats.cluster_bootstrap_ci`): the instances are resampled, each with all its
  prompts' values;
- **per-instance values** (``instance_value``, else the mean over its prompts) for
  :func:`paired`: two runs of one probe and split compared on their shared instances.

>>> s = summarise_items([("i1", 0, 1.0, None), ("i1", 1, 0.0, None),
...                      ("i2", 0, 1.0, None), ("i2", 1, 1.0, None)])
>>> s.prompts, s.spread
({0: (1.0, 2), 1: (0.5, 2)}, (0.5, 1.0, 0.25))
>>> s.ci_method, s.instances
('cluster bootstrap', {'i1': 0.5, 'i2': 1.0})
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import duckdb

from eval.intervals import CLUSTER, WILSON
from eval.sqlfile import MetricFile, MetricFileError, load_metric, run_metric
from eval.stats import (
    cluster_bootstrap_ci,
    multi_prompt,
    paired_comparison,
    proportion_ci,
    spread,
)

ITEM_GRAIN = ("instance_id", "prompt_id")


@dataclass(frozen=True)
class Summary:
    """One metric row's items summarised (see the module docstring)."""

    prompts: dict[int, tuple[float, int]]          # prompt_id -> (mean, instances)
    spread: tuple[float, float, float] | None
    ci: tuple[float, float] | None
    ci_method: str | None
    instances: dict[str, float]                    # instance_id -> its value in the metric

    def columns(self) -> dict[str, Any]:
        """The summary as columns of a metric row (for the JSON results and the API):
        ``ci_low``, ``ci_high``, ``ci_method``, ``instances``, ``n_prompts``, ``prompt_min``,
        ``prompt_max``, ``prompt_sd``, the multi-prompt robustness of
        :func:`eval.stats.multi_prompt` (``prompt_maxp``, ``prompt_avgp``,
        ``prompt_shortfall`` = MaxP − AvgP, ``prompt_cps``) and ``per_prompt`` (a list of
        {prompt_id, value, n})."""
        low, high, sd = self.spread if self.spread else (None, None, None)
        robust = multi_prompt([v for v, _ in self.prompts.values()])
        return {"ci_low": self.ci[0] if self.ci else None,
                "ci_high": self.ci[1] if self.ci else None,
                "ci_method": self.ci_method, "instances": len(self.instances),
                "n_prompts": len(self.prompts), "prompt_min": low, "prompt_max": high,
                "prompt_sd": sd,
                "prompt_maxp": robust.maxp if robust else None,
                "prompt_avgp": robust.avgp if robust else None,
                "prompt_shortfall": robust.shortfall if robust else None,
                "prompt_cps": robust.cps if robust else None,
                "per_prompt": [{"prompt_id": p, "value": v, "n": n}
                               for p, (v, n) in sorted(self.prompts.items())]}


Item = tuple[str, int, float, float | None]   # instance_id, prompt_id, value, instance_value


def _share(clusters: Sequence[Sequence[float]]) -> bool:
    return all(len(c) == 1 and c[0] in (0.0, 1.0) for c in clusters)


def _clusters(items: Sequence[Item]) -> list[list[float]]:
    """Per instance its value in the metric (``instance_value``) or its prompts' values."""
    by_instance: dict[str, list[float]] = {}
    own: dict[str, float] = {}
    for iid, _, value, instance_value in items:
        by_instance.setdefault(str(iid), []).append(float(value))
        if instance_value is not None:
            own[str(iid)] = float(instance_value)
    return [[own[i]] if i in own else v for i, v in by_instance.items()]


def summarise_items(items: Sequence[Item], level: float = 0.95, share: bool | None = None
                    ) -> Summary:
    """The :class:`Summary` of one metric row's items. ``share``: the metric is a share of
    instances (one 0/1 value each: the Wilson interval); None decides from these items."""
    by_prompt: dict[int, list[float]] = {}
    by_instance: dict[str, list[float]] = {}
    own: dict[str, float] = {}
    for iid, pid, value, instance_value in items:
        by_prompt.setdefault(int(pid), []).append(float(value))
        by_instance.setdefault(str(iid), []).append(float(value))
        if instance_value is not None:
            own[str(iid)] = float(instance_value)
    prompts = {p: (sum(v) / len(v), len(v)) for p, v in sorted(by_prompt.items())}
    instances = {i: own.get(i, sum(v) / len(v)) for i, v in by_instance.items()}
    clusters = _clusters(items)
    ci: tuple[float, float] | None
    if clusters and (_share(clusters) if share is None else share):
        ci, method = proportion_ci(int(sum(c[0] for c in clusters)), len(clusters), level), WILSON
    else:
        ci, method = cluster_bootstrap_ci(clusters, level), CLUSTER
    return Summary(prompts, spread([v for v, _ in prompts.values()]), ci,
                   method if ci else None, instances)


def items_file(metric: MetricFile) -> MetricFile | None:
    """The metric's items file, parsed and checked (its grain is the metric's plus
    ``instance_id`` and ``prompt_id``); None when the metric names none."""
    if metric.items is None:
        return None
    items = load_metric(metric.items)
    want = [*metric.grain, *ITEM_GRAIN]
    if sorted(items.grain) != sorted(want):
        raise MetricFileError(items.path, items.header_lines.get("grain"),
                              f"the items of {metric.name} need the grain "
                              f"[{', '.join(want)}] (got [{', '.join(items.grain)}])")
    return items


def summarise(con: duckdb.DuckDBPyConnection, metric: MetricFile, level: float = 0.95
              ) -> dict[tuple[Any, ...], Summary]:
    """Run the metric's items file; its :class:`Summary` per metric row, keyed by the row's
    grain values (empty when the metric names no items file)."""
    items = items_file(metric)
    if items is None:
        return {}
    cols, rows = run_metric(con, items)
    key_at = [cols.index(g) for g in metric.grain]
    at = {c: cols.index(c) for c in (*ITEM_GRAIN, "value")}
    own = cols.index("instance_value") if "instance_value" in cols else None
    grouped: dict[tuple[Any, ...], list[Item]] = {}
    for r in rows:
        if r[at["value"]] is None:
            continue
        grouped.setdefault(tuple(r[i] for i in key_at), []).append(
            (r[at["instance_id"]], r[at["prompt_id"]], r[at["value"]],
             None if own is None else r[own]))
    # one method for all the metric's rows: Wilson only when every row is a share of instances
    share = all(_share(_clusters(v)) for v in grouped.values())
    return {k: summarise_items(v, level, share) for k, v in grouped.items()}


def with_items(con: duckdb.DuckDBPyConnection, metric: MetricFile,
               rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], Summary]:
    """Add :meth:`Summary.columns` to each of the metric's ``rows`` (dicts with the grain
    columns) that has items; a row's own ``ci_low`` / ``ci_high`` are kept. Returns the
    summaries by grain key."""
    summaries = summarise(con, metric)
    for row in rows:
        s = summaries.get(tuple(row.get(g) for g in metric.grain))
        if s is None:
            continue
        own_ci = row.get("ci_low") is not None and row.get("ci_high") is not None
        extra = s.columns()
        if own_ci:
            extra = {k: v for k, v in extra.items() if k not in ("ci_low", "ci_high",
                                                                  "ci_method")}
        row.update(extra)
    return summaries


def paired(metric: MetricFile, summaries: dict[tuple[Any, ...], Summary],
           label: dict[tuple[Any, ...], str]) -> list[dict[str, Any]]:
    """Every two runs of one probe and split (the other grain columns equal, ``run_id``
    differing) compared on their shared instances (:func:`eval.stats.paired_comparison`):
    one dict per pair with the group's grain columns, ``a`` and ``b`` (``label`` of each
    grain key, e.g. model and run), n, their means, the difference a - b with its paired
    bootstrap interval, the test and its p-value. Only for grains with ``run_id``."""
    if "run_id" not in metric.grain:
        return []
    at = metric.grain.index("run_id")
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for key in summaries:
        if key in label:
            groups.setdefault(key[:at] + key[at + 1:], []).append(key)
    out = []
    for group, keys in sorted(groups.items(), key=lambda kv: str(kv[0])):
        for ka, kb in combinations(sorted(keys, key=lambda k: label[k]), 2):
            a, b = summaries[ka].instances, summaries[kb].instances
            shared = sorted(set(a) & set(b))
            res = paired_comparison([a[i] for i in shared], [b[i] for i in shared])
            if res is None:
                continue
            cols = dict(zip([g for g in metric.grain if g != "run_id"], group, strict=True))
            out.append({"metric": metric.name, **cols, "a": label[ka], "b": label[kb],
                        "n": res.n, "mean_a": res.mean_a, "mean_b": res.mean_b,
                        "diff": res.diff, "ci": res.ci, "test": res.test,
                        "pvalue": res.pvalue})
    return out
