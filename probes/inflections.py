"""Inflection-aware gold matching of relatum probes (``params: {inflections: noun}``).

With the option on, the export stores, beside each instance, the inflected forms of its gold
answers that WordNet's morphology leads back to them (:mod:`kg.morphology`: the exception lists
and morphy's rules of detachment): "fingers" and "fingered" for "finger", "teeth" for "tooth".
They go to the ``gold_forms`` table of the results file, and the relatum metrics
(``relatum_precision_at_1``, ``relatum_hits_at_10``) count a response that is one of them as a
hit. Off (the default), a response must equal a gold answer.

>>> from kg.morphology import Morphology
>>> m = Morphology({"noun": frozenset({"finger", "tooth"})},
...                {"noun": {"teeth": frozenset({"tooth"})}})
>>> df = pl.DataFrame({"probe": ["p"], "split": ["test"], "instance_id": ["i1"],
...                    "gold": [["finger", "tooth", "nail"]]})
>>> [row[3:] for row in rows_for(df, m, "noun")]
[('fingers', 'finger'), ('teeth', 'tooth'), ('tooths', 'tooth')]
"""

from __future__ import annotations

from typing import Any

import polars as pl

from kg.morphology import Morphology, read_morphology
from kg.store import KnowledgeStore

GoldForm = tuple[str, str, str, str, str]
"""(probe, split, instance_id, form, gold): one ``gold_forms`` row."""


def rows_for(df: pl.DataFrame, morphology: Morphology, pos: str) -> list[GoldForm]:
    """The ``gold_forms`` rows of the instances ``df``: every inflected form of part of speech
    ``pos`` (or ``any``) of every gold answer, that is not itself a gold answer of the
    instance."""
    out: list[GoldForm] = []
    for r in df.select("probe", "split", "instance_id", "gold").iter_rows(named=True):
        gold = list(r["gold"] or [])
        for g in dict.fromkeys(gold):
            for form in sorted(morphology.inflected_forms(g, pos)):
                if form not in gold:
                    out.append((r["probe"], r["split"], r["instance_id"], form, g))
    return out


def gold_form_rows(spec: Any, df: pl.DataFrame, store: KnowledgeStore) -> list[GoldForm]:
    """The ``gold_forms`` rows of a probe's instances: none unless it is a relatum probe with
    ``params: {inflections: ...}``. Reads the store's WordNet morphology (a store without it is
    a :class:`kg.lexicon.LexiconError` naming the rebuild)."""
    pos = spec.params.get("inflections") if spec.task == "relatum" else None
    if pos is None or df.is_empty():
        return []
    return rows_for(df, read_morphology(store), str(pos))
