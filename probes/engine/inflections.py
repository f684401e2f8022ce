"""Inflection-aware gold matching of relatum probes (``params: {inflections: noun}``).

With the option on, the export stores, beside each instance, the inflected forms of its gold
answers that WordNet's morphology leads back to them (:mod:`kg.morphology`: the exception lists
and morphy's rules of detachment): "fingers" and "fingered" for "finger", "teeth" for "tooth".
They go to the ``gold_forms`` table of the results file, and the relatum metrics
(``relatum_precision_at_1``, ``relatum_hits_at_10``) count a response that is one of them as a
hit. Off (the default), a response must equal a gold answer.

The same morphology tells ``[DET]`` which texts are plural nouns (:func:`mark_plurals`): a probe
whose prompts use ``[DET]`` gets, in each instance's fields, ``det_plural``: the instance's
target, candidates and field values that :meth:`kg.morphology.Morphology.is_plural` finds plural
("spectacles", "scissors", "feet"). :func:`probes.engine.render.render` puts no article before them.

>>> from kg.morphology import Morphology
>>> m = Morphology({"noun": frozenset({"finger", "tooth"})},
...                {"noun": {"teeth": frozenset({"tooth"})}})
>>> df = pl.DataFrame({"probe": ["p"], "split": ["test"], "instance_id": ["i1"],
...                    "gold": [["finger", "tooth", "nail"]]})
>>> [row[3:] for row in rows_for(df, m, "noun")]
[('fingers', 'finger'), ('teeth', 'tooth'), ('tooths', 'tooth')]
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import polars as pl

from kg.lexicon import LexiconError
from kg.morphology import Morphology, read_morphology
from kg.store import KnowledgeStore
from probes.engine.instances import FIELDS_JSON
from probes.engine.render import PLURAL_FIELD

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


def plural_texts(target: str | None, candidates: list[str] | None, fields: dict[str, Any],
                 morphology: Morphology | Callable[[str], bool]) -> list[str]:
    """The texts of one instance (target, candidates, string field values) that are plural
    nouns, sorted.

    >>> m = Morphology({"noun": frozenset({"scissors", "pair_of_scissors", "knife"})}, {})
    >>> plural_texts("knife", ["scissors", "knife"], {"tool": ["scissors"], "n": 2}, m)
    ['scissors']
    """
    texts: set[str] = set()
    for v in [target, *(candidates or []), *fields.values()]:
        for t in v if isinstance(v, list) else [v]:
            if isinstance(t, str) and t.strip():
                texts.add(t.strip())
    is_plural = morphology.is_plural if isinstance(morphology, Morphology) else morphology
    return sorted(t for t in texts if is_plural(t))


def mark_plurals(probe: Any, df: pl.DataFrame, store: KnowledgeStore) -> pl.DataFrame:
    """``df`` with ``det_plural`` (:data:`probes.engine.render.PLURAL_FIELD`) in the fields of each
    instance that has a plural text, when the probe's prompts use ``[DET]``. A store without
    WordNet's morphology keeps ``a``/``an`` everywhere, and says so in one line when a target
    or candidate ends in "s" (a possible plural)."""
    if df.is_empty() or not any("[DET]" in p for p in probe.spec.prompts):
        return df
    try:
        morphology = read_morphology(store)
    except LexiconError as e:
        maybe = {t for target, cands, raw in df.select("target", "candidates", "fields")
                 .iter_rows() for t in [target, *(cands or [])]
                 if isinstance(t, str) and t.strip().lower().endswith("s")}
        if maybe:
            print(f"{probe.spec.name}: {len(maybe):,} texts end in 's' and may be plural "
                  f"(e.g. {sorted(maybe)[0]!r}), but [DET] cannot tell ({e}); they get "
                  "'a'/'an'", file=sys.stderr)
        return df
    plural = functools.lru_cache(maxsize=None)(morphology.is_plural)  # texts repeat
    out: list[str] = []
    for target, cands, raw in df.select("target", "candidates", "fields").iter_rows():
        fields = json.loads(raw)
        found = plural_texts(target, cands, fields, plural) if isinstance(fields, dict) else []
        if found:
            fields[PLURAL_FIELD] = found
            raw = FIELDS_JSON(fields)
        out.append(raw)
    return df.with_columns(pl.Series("fields", out, dtype=pl.String))
