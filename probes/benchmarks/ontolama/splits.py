"""Class balance and splits: every split of every OntoLAMA dataset holds exactly as many
negatives as positives (He et al. 2023, L129: "we purposely keep the number of negative samples
the same as the positive samples in each data split").

- :func:`balance` (Atomic SI) cuts the query's negative candidates to the number of positives,
  half soft and half hard (L75).
- :func:`split_counts` and :func:`split_per_class` split each class on its own by exact counts
  in a seeded hash order: ``floor(train · n)`` and ``floor(dev · n)`` of the ``n`` samples of a
  class go to train and dev, the rest to test. Both classes have the same ``n``, so every split
  is exactly 50 % positive; for Schema.org (2,021 positives, 2:1:7) this gives the paper's
  808/404/2,830, for DOID's 56,563 (8:1:1) its 90,500/11,312/11,314.
- :func:`balance_complex` (Complex SI) does the same for samples, and then sets the direction
  of each negative (``A ⊑ C'`` or ``C' ⊑ A``: both are negatives, L113) so that, in each split,
  as many negatives as positives have the complex concept on the premise side: the side of the
  complex concept then carries no information about the label.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction
from math import floor
from typing import TYPE_CHECKING

import polars as pl

from kg.owl_expressions import functional
from probes.benchmarks.ontolama.common import SPLITS, seeded_hash
from probes.benchmarks.ontolama.verbalise import Named
from probes.engine.errors import ProbeFileError
from probes.engine.spec import Probe

if TYPE_CHECKING:
    from probes.benchmarks.ontolama.complex import Sample


def split_counts(n: int, proportions: Sequence[Fraction]) -> tuple[int, int, int]:
    """Exact (train, dev, test) sizes of one class of ``n`` samples: train and dev rounded
    down, test the rest.

    >>> split_counts(2021, (Fraction(2, 10), Fraction(1, 10), Fraction(7, 10)))
    (404, 202, 1415)
    >>> split_counts(56563, (Fraction(8, 10), Fraction(1, 10), Fraction(1, 10)))
    (45250, 5656, 5657)
    """
    train = floor(proportions[0] * n)
    dev = floor(proportions[1] * n)
    return train, dev, n - train - dev


def split_per_class(df: pl.DataFrame, proportions: Sequence[Fraction], seed: int
                    ) -> pl.DataFrame:
    """``df`` (instance rows) with its ``split`` column replaced: each gold class is ordered by
    a seeded hash of the instance id and cut by :func:`split_counts`. The ``split`` field in
    ``fields`` is updated too."""
    ids = df["instance_id"].to_list()
    labels = [str(g[0]) if len(g) else "" for g in df["gold"].to_list()]
    by_class: dict[str, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        by_class[label].append(i)
    split = [""] * len(ids)
    for members in by_class.values():
        members.sort(key=lambda i: (seeded_hash(seed, "split", ids[i]), ids[i]))
        counts = split_counts(len(members), proportions)
        start = 0
        for name, count in zip(SPLITS, counts, strict=True):
            for i in members[start:start + count]:
                split[i] = name
            start += count
    fields = []
    for f, s in zip(df["fields"].to_list(), split, strict=True):
        record = json.loads(f)
        if "split" in record:
            record["split"] = s
        fields.append(json.dumps(record, ensure_ascii=False))
    return df.with_columns(pl.Series("split", split, dtype=pl.String),
                           pl.Series("fields", fields, dtype=pl.String))


def group_splits(groups: dict[str, Counter[str]], proportions: Sequence[Fraction], seed: int
                 ) -> dict[str, str]:
    """Each group (name -> its samples per class) assigned to one split. Groups go largest
    first (ties: by a seeded hash) to the split whose classes are furthest below their targets
    (:func:`split_counts` of each class's total), relative to those targets.

    >>> from collections import Counter
    >>> g = {"a": Counter({"1": 6}), "b": Counter({"0": 5}), "c": Counter({"1": 2, "0": 2}),
    ...      "d": Counter({"1": 1, "0": 2})}
    >>> sorted(group_splits(g, (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), 42).items())
    [('a', 'train'), ('b', 'dev'), ('c', 'test'), ('d', 'test')]

    (9 per class: targets 4/2/3. a: every split 2 below, the first wins; b: train is at
    -2/4 + 4/4, dev and test at 2 -> dev; c: train 0.5, dev 1 - 3/2, test 2 -> test; d: train
    0.5, dev -0.5, test 1/3 + 1/3 -> test.)
    """
    totals: Counter[str] = Counter()
    for counts in groups.values():
        totals.update(counts)
    targets = {c: dict(zip(SPLITS, split_counts(n, proportions), strict=True))
               for c, n in totals.items()}
    have: dict[str, Counter[str]] = {s: Counter() for s in SPLITS}
    out: dict[str, str] = {}
    for g in sorted(groups, key=lambda g: (-sum(groups[g].values()),
                                           seeded_hash(seed, "group", g), g)):
        def gap(split: str) -> Fraction:
            return sum((Fraction(targets[c][split] - have[split][c], targets[c][split])
                        for c in totals if targets[c][split]), Fraction(0))
        best = max(SPLITS, key=lambda sp: (gap(sp), -SPLITS.index(sp)))
        out[g] = best
        have[best].update(groups[g])
    return out


def split_by_group(df: pl.DataFrame, proportions: Sequence[Fraction], seed: int, field: str
                   ) -> pl.DataFrame:
    """``df`` split so that no value of ``fields[field]`` is in two splits (:func:`group_splits`),
    then each split cut to as many samples of each class as its smallest class has (by a seeded
    hash of the instance id): every split stays exactly balanced; the sizes are near, not at,
    the proportions (whole groups move), and the larger class of a split loses its excess."""
    fields = [json.loads(f) for f in df["fields"].to_list()]
    labels = [str(g[0]) if len(g) else "" for g in df["gold"].to_list()]
    keys = [str(f.get(field)) for f in fields]
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for k, label in zip(keys, labels, strict=True):
        groups[k][label] += 1
    where = group_splits(groups, proportions, seed)
    ids = df["instance_id"].to_list()
    split = [where[k] for k in keys]
    keep: set[int] = set()
    for name in SPLITS:
        by_class: dict[str, list[int]] = defaultdict(list)
        for i, (sp, label) in enumerate(zip(split, labels, strict=True)):
            if sp == name:
                by_class[label].append(i)
        n = min((len(v) for v in by_class.values()), default=0) if len(by_class) > 1 else 0
        for members in by_class.values():
            members.sort(key=lambda i: (seeded_hash(seed, "split", ids[i]), ids[i]))
            keep.update(members[:n])
    out_fields = []
    for f, sp in zip(fields, split, strict=True):
        if "split" in f:
            f["split"] = sp
        out_fields.append(json.dumps(f, ensure_ascii=False))
    mask = pl.Series([i in keep for i in range(len(ids))])
    return df.with_columns(pl.Series("split", split, dtype=pl.String),
                           pl.Series("fields", out_fields, dtype=pl.String)).filter(mask)


def equalise(df: pl.DataFrame, seed: int) -> pl.DataFrame:
    """``df`` with its larger gold class cut (by a seeded hash of the instance id) to the size
    of the smaller: a no-op when :func:`balance` found enough negatives."""
    labels = [str(g[0]) if len(g) else "" for g in df["gold"].to_list()]
    counts = {label: labels.count(label) for label in set(labels)}
    if len(counts) < 2 or len(set(counts.values())) == 1:
        return df
    n = min(counts.values())
    ids = df["instance_id"].to_list()
    keep: set[int] = set()
    for label in counts:
        members = sorted((i for i, x in enumerate(labels) if x == label),
                         key=lambda i: (seeded_hash(seed, "keep", ids[i]), ids[i]))
        keep.update(members[:n])
    return df.filter(pl.Series([i in keep for i in range(len(ids))]))


def complex_on_premise(sample: Sample) -> bool:
    """Whether the complex concept of a Complex SI sample is its premise (``C ⊑ A``)."""
    return not isinstance(sample.sub, Named)


def complex_concept(sample: Sample) -> str:
    """The complex concept of a Complex SI sample, in OWL functional syntax (the key of the
    ``complex_concept`` control)."""
    return functional(sample.sub if complex_on_premise(sample) else sample.sup)


def balance_complex(samples: list[Sample], proportions: Sequence[Fraction], seed: int,
                    control: str | None = None) -> list[Sample]:
    """Complex SI samples cut to as many negatives as positives, split per class by exact
    counts, and each negative's direction chosen so that each split has as many negatives as
    positives with the complex concept on the premise side (module docstring). With
    ``control = "complex_concept"`` the split keeps each complex concept in one split
    (:func:`group_splits`) and cuts each split to its smaller class."""
    by_label: dict[int, list[Sample]] = {1: [], 0: []}
    for s in samples:
        by_label[s.label].append(s)
    for group in by_label.values():
        group.sort(key=lambda s: (seeded_hash(seed, "keep", s.anchor, s.axiom), s.axiom))
    n = min(len(by_label[1]), len(by_label[0]))
    parts: dict[tuple[int, str], list[Sample]] = {}
    if control is None:
        for label in (1, 0):
            start = 0
            for name, count in zip(SPLITS, split_counts(n, proportions), strict=True):
                parts[(label, name)] = by_label[label][start:start + count]  # hash order
                start += count
    else:
        kept = by_label[1][:n] + by_label[0][:n]
        groups: dict[str, Counter[str]] = defaultdict(Counter)
        for s in kept:
            groups[complex_concept(s)][str(s.label)] += 1
        where = group_splits(groups, proportions, seed)
        for name in SPLITS:
            mine = {label: [s for s in by_label[label][:n] if where[complex_concept(s)] == name]
                    for label in (1, 0)}
            m = min(len(v) for v in mine.values())
            for label in (1, 0):
                parts[(label, name)] = mine[label][:m]  # hash order
    out: list[Sample] = []
    for label in (1, 0):
        for name in SPLITS:
            part = [dataclasses.replace(s, split=name) for s in parts[(label, name)]]
            if label == 0:
                premise = sum(complex_on_premise(s) for s in out
                              if s.label == 1 and s.split == name)
                part = [_direct(s, i < premise) for i, s in enumerate(part)]
            out.extend(part)
    return out


def _direct(sample: Sample, complex_first: bool) -> Sample:
    """A negative with its complex concept on the premise side (or not)."""
    if complex_on_premise(sample) == complex_first:
        return sample
    return dataclasses.replace(sample, sub=sample.sup, sup=sample.sub)



def balance(df: pl.DataFrame, probe: Probe) -> tuple[pl.DataFrame, dict[str, int]]:
    """Cut the negatives to the number of positives, equally from each negative kind.

    ``builder_params.balance`` names the kind and order variables, the positive kind and the
    negative kinds. Each of the ``k`` negative kinds gets ``P // k`` rows (the first ``P % k`` kinds
    one more), the first by ``?order`` then instance id; a kind with too few candidates gives
    what it has and the other kinds make up the difference.

    >>> from probes.engine.spec import parse_probe
    >>> p = parse_probe('''# name: d/b
    ... # task: records
    ... # split: test
    ... # id: ?x
    ... # builder_params: {balance: {kind: "?k", order: "?o", positive: pos, negatives: [a, b]}}
    ... SELECT ?x ?k ?o WHERE { VALUES (?x ?k ?o) { (1 "pos" 0) (2 "pos" 0) (3 "pos" 0)
    ...   (4 "a" 5) (5 "a" 1) (6 "a" 3) (7 "b" 2) } }''')
    >>> from kg.store import LocalStore
    >>> from probes.engine.export import instances_for
    >>> out, counts = balance(instances_for(p, LocalStore.in_memory()), p)
    >>> counts
    {'pos': 3, 'a': 2, 'b': 1}
    >>> sorted(json.loads(f)["x"] for f in out["fields"])
    [1, 2, 3, 5, 6, 7]
    """
    cfg = probe.spec.builder_params.get("balance")
    if not isinstance(cfg, dict) or not {"kind", "order", "positive", "negatives"} <= set(cfg):
        raise ProbeFileError(probe.path, probe.header_lines.get("builder_params"),
                             "builder_params.balance needs kind, order, positive and negatives, "
                             'e.g. {kind: "?kind", order: "?order", positive: positive, '
                             "negatives: [soft, hard]}")
    kind_var, order_var = str(cfg["kind"]).lstrip("?"), str(cfg["order"]).lstrip("?")
    fields = [json.loads(f) for f in df["fields"]]
    kinds = [str(f.get(kind_var)) for f in fields]
    orders = [float(f.get(order_var) or 0) for f in fields]
    frame = df.with_columns(pl.Series("_kind", kinds), pl.Series("_order", orders))
    n_pos = kinds.count(str(cfg["positive"]))
    negatives = [str(k) for k in cfg["negatives"]]
    available = {k: kinds.count(k) for k in negatives}
    quota = {k: min(n_pos // len(negatives) + (i < n_pos % len(negatives)), available[k])
             for i, k in enumerate(negatives)}
    short = n_pos - sum(quota.values())
    for k in negatives:  # a kind with too few candidates: the others make up the difference
        extra = min(short, available[k] - quota[k])
        quota[k] += extra
        short -= extra
    pairs = [f"{f.get('sub_class')}\x1f{f.get('super_class')}" if "sub_class" in f
             else iid for f, iid in zip(fields, df["instance_id"].to_list(), strict=True)]
    frame = frame.with_columns(pl.Series("_pair", pairs))
    parts = [frame.filter(pl.col("_kind") == str(cfg["positive"]))]
    taken: set[str] = set()
    for k in negatives:  # a pair drawn by two kinds (a sibling pair is also random) is used once
        part = (frame.filter((pl.col("_kind") == k) & ~pl.col("_pair").is_in(list(taken)))
                .sort(["_order", "instance_id"]).head(quota[k]))
        taken.update(part["_pair"].to_list())
        parts.append(part)
    out = pl.concat(parts).drop("_kind", "_order", "_pair")
    return out, {str(cfg["positive"]): n_pos, **quota}
