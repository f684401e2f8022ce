"""The first steps of an export: a probe's query, its rows, its instances.

One export is a pipeline of steps run in order by one entry, :func:`probes.engine.export.export`
(and :func:`probes.engine.export.print_preview` for ``--preview``):

1. **query** (:func:`run_query`): the probe's SPARQL within its :class:`QueryLimits`;
2. **rows** (:func:`checked_rows`): the pool rows of ``distractors:`` set apart, the split
   variable checked in every row;
3. **instances** (:func:`grouped_records`, :func:`probes.engine.distractors.add_candidates`,
   :func:`instance_frame`): rows grouped by ``group_by`` (with per-instance templates), the
   drawn distractors, then one DataFrame row per instance with its stable id;
4. **checks** (probes.engine.export.build_instances): templates against the fields, the task's
   own checks, ``[DET]``'s plural texts;
5. **write** (probes.engine.export): gold forms, provenance, DuckDB and Parquet together.

This module holds steps 1 to 3; each step takes what the previous one made and hands nothing
back to the entry but its result. :func:`instances_for` runs them for one probe.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from kg.sparql import keyword_line
from kg.store import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    KnowledgeStore,
    QueryLimitError,
    TaggedStr,
)
from probes.engine.distractors import add_candidates, split_pool
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.graph_checks import check_graphs
from probes.engine.instance_templates import indexed_prompt_vars, indexed_prompts
from probes.engine.progress import QUERY_STEP, Heartbeat, Quiet
from probes.engine.spec import Probe

_SPLIT_NAME = re.compile(r"[A-Za-z0-9_\-]{1,64}")

SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "split": pl.String, "instance_id": pl.String, "target": pl.String,
    "gold": pl.List(pl.String), "candidates": pl.List(pl.String), "fields": pl.String}
"""The columns of a probe's instances (with ``probe`` added last)."""
_ARROW = {k: pa.list_(pa.string()) if k in ("gold", "candidates") else pa.string()
          for k in SCHEMA}

FIELDS_JSON = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""An instance's fields as the ``fields`` column holds them (one encoder for every row:
``json.dumps`` with options makes a new one per call)."""
_ID_JSON = json.JSONEncoder(sort_keys=True, default=str).encode


@dataclass(frozen=True)
class QueryLimits:
    """Bounds on one probe query: total seconds and rows (None: no bound), and whether
    ``SERVICE`` clauses may call other endpoints (``--allow-service``)."""

    timeout_s: float | None = DEFAULT_TIMEOUT_S
    max_rows: int | None = DEFAULT_MAX_ROWS
    allow_service: bool = False


def instance_id(values: list[Any]) -> str:
    """A stable 16-hex-digit id for an instance from its id values.

    >>> instance_id(["dog"]) == hashlib.md5(b'"dog"').hexdigest()[:16]
    True
    >>> instance_id(["dog", "animal"]) != instance_id(["animal", "dog"])
    True
    """
    raw = "\x1f".join(_ID_JSON(_identity(v)) for v in values)
    return hashlib.md5(raw.encode("utf-8")).hexdigest()[:16]


def _identity(v: Any) -> Any:
    """What makes a value distinct: a tagged literal's text with its tag (``"bank"@en`` and
    ``"bank"@de`` differ); a plain value as it is (so ids of untagged values never change)."""
    if isinstance(v, TaggedStr):
        return {"@value": str(v), "@language": v.language, "@type": v.datatype}
    if isinstance(v, list):
        return [_identity(x) for x in v]
    return v


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, list):
        return [str(x) for x in v if x is not None]
    return [str(v)]


def _scalar(v: Any) -> str | None:
    if isinstance(v, list):
        return str(v[0]) if v else None
    return None if v is None else str(v)


def run_query(probe: Probe, store: KnowledgeStore, limits: QueryLimits | None = None,
              sparql: str | None = None) -> list[dict[str, Any]]:
    """Step 1: run the probe's query (or ``sparql`` on its behalf) within ``limits``; errors
    name the probe and the option that bounds it."""
    limits = limits or QueryLimits()
    if probe.services and not limits.allow_service:
        raise ProbeFileError(probe.query_file or probe.path, keyword_line(probe.query, "SERVICE"),
                             f"probe {probe.spec.name!r} calls other SPARQL endpoints with "
                             f"SERVICE ({', '.join(probe.services)}); a probe file is data and "
                             "does not contact servers unless you pass --allow-service (its "
                             "queries are then bounded by --query-timeout)")
    try:
        return store.query(sparql or probe.query, timeout=limits.timeout_s,
                           max_rows=limits.max_rows)
    except QueryLimitError as e:
        option = "--max-rows" if "rows" in str(e) else "--query-timeout"
        raise ProbeError(f"probe {probe.spec.name!r} ({probe.path}): {e}; add a LIMIT or a "
                         f"narrower pattern to its query, or raise {option}. "
                         "Nothing was written for it.") from e


def checked_rows(probe: Probe, rows: list[dict[str, Any]]
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """Step 2: the query's rows without the ``distractors:`` pool's rows, and the pool; the
    split variable (when the header names one) bound to a split name in every row."""
    spec = probe.spec
    pool: list[str] = []
    if spec.distractors is not None:
        rows, pool = split_pool(rows, spec.distractors.pool)
    split_var = spec.split_variable
    if split_var:
        unbound = sum(1 for r in rows if r[split_var] is None)
        if unbound:
            raise ProbeFileError(probe.path, probe.header_lines.get("split"),
                                 f"split variable ?{split_var} is unbound in {unbound} row(s); "
                                 "bind it in every row (e.g. with BIND or COALESCE)")
        bad = sorted({str(r[split_var]) for r in rows
                      if not _SPLIT_NAME.fullmatch(str(r[split_var]))})
        if bad:
            raise ProbeFileError(probe.path, probe.header_lines.get("split"),
                                 f"split variable ?{split_var} holds {bad[0]!r}, which is not a "
                                 "split name (letters, digits, '_' and '-', at most 64); split "
                                 "names become file names, so map the values to names like "
                                 "'train'/'test' with BIND")
    return rows, pool


def grouped_records(probe: Probe, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Step 3a: one record per instance. Without ``group_by`` a row is an instance; with it,
    the rows sharing the key (and the split variable) are one, each other variable a list of
    its distinct values, and ``prompts_from``'s templates set per instance."""
    spec = probe.spec
    keys = [v[1:] for v in spec.group_by]
    if not keys:
        return rows
    # An instance belongs to one split: the split variable is always part of the group key.
    split_var = spec.split_variable
    group_keys = [*keys, split_var] if split_var and split_var not in keys else keys
    indexed = indexed_prompt_vars(spec)
    listed = [c for c in probe.variables if c not in group_keys and c not in indexed]
    grouped: dict[tuple[Any, ...], dict[str, Any]] = {}
    seen: dict[tuple[Any, ...], dict[str, set[Any]]] = {}
    pairs: dict[tuple[Any, ...], dict[tuple[Any, Any], None]] = {}
    for row in rows:
        k = tuple(row[c] for c in group_keys)
        inst = grouped.get(k)
        if inst is None:
            inst = grouped[k] = {c: row[c] if c in group_keys else [] for c in probe.variables}
            seen[k] = {c: set() for c in listed}
        have = seen[k]
        for c in listed:
            v = row[c]
            if v is not None and v not in have[c]:
                have[c].add(v)
                inst[c].append(v)
        if indexed and row[indexed[0]] is not None:
            pairs.setdefault(k, {})[(row[indexed[1]], row[indexed[0]])] = None
    if indexed:
        for k, inst in grouped.items():
            indexed_prompts(probe, inst, list(pairs.get(k, {})), indexed)
    return list(grouped.values())


def with_distractors(probe: Probe, records: list[dict[str, Any]], pool: list[str],
                     tick: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Step 3b: the records with their drawn distractors (header ``distractors:``; a line on
    stderr when some target got fewer than asked); ``tick(done)`` hears of the targets drawn
    for."""
    spec = probe.spec
    if spec.distractors is None:
        return records
    short = add_candidates(records, pool, spec, tick)
    if short:
        print(f"{spec.name}: {short} target(s) got fewer than {spec.distractors.n} "
              f"distractors: the pool ({len(pool)} words) has too few words that are not "
              "their gold; widen the pool or lower n", file=sys.stderr)
    return records


def instance_frame(probe: Probe, records: list[dict[str, Any]]) -> pl.DataFrame:
    """Step 3c: the instances as a DataFrame (columns :data:`SCHEMA` and ``probe``), each with
    its id from the header's ``id:`` (or the group key, or every variable); two instances
    sharing an id are an error on the ``id:`` line."""
    spec = probe.spec
    split_var = spec.split_variable
    id_vars = [v[1:] for v in spec.id] or [v[1:] for v in spec.group_by] or probe.variables
    target = None if spec.target is None else spec.target[1:]
    gold = [g[1:] for g in spec.gold]
    candidates = None if spec.candidates is None else spec.candidates[1:]
    out = {
        "split": [str(r[split_var]) if split_var else spec.split for r in records],
        "instance_id": [instance_id([r.get(c) for c in id_vars]) for r in records],
        "target": [None if target is None else _scalar(r[target]) for r in records],
        "gold": [[x for g in gold for x in _as_list(r[g])] for r in records],
        "candidates": [_as_list(r[candidates]) if candidates else [] for r in records],
        "fields": [FIELDS_JSON(r) for r in records],
    }
    # through Arrow: polars builds list columns from Python lists four times slower
    df = pl.from_arrow(pa.table({k: pa.array(v, type=_ARROW[k]) for k, v in out.items()}))
    assert isinstance(df, pl.DataFrame)
    dupes = df.select(pl.struct("split", "instance_id").is_duplicated().sum()).item()
    if dupes:
        raise ProbeFileError(probe.path, probe.header_lines.get("id"),
                             f"{dupes} rows share an instance id; name the variables that identify "
                             "an instance in 'id:' or group rows with 'group_by:'")
    return df.with_columns(pl.lit(spec.name).alias("probe"))


def instances_for(probe: Probe, store: KnowledgeStore, limits: QueryLimits | None = None,
                  beat: Heartbeat | None = None) -> pl.DataFrame:
    """Steps 1 to 3 for one probe: run its query and shape its rows into instances (one
    DataFrame row each); ``beat`` hears of each step (progress lines).

    >>> from kg.store import LocalStore
    >>> from probes.engine.spec import parse_probe
    >>> probe = parse_probe('''# name: demo/pairs
    ... # task: relatum
    ... # split: test
    ... # target: ?w
    ... # gold: ?v
    ... # group_by: ?w
    ... SELECT ?w ?v WHERE { VALUES (?w ?v) { ("dog" "animal") ("dog" "canine") ("cat" "feline") } }
    ... ''')
    >>> instances_for(probe, LocalStore.in_memory()).select("target", "gold").rows()
    [('dog', ['animal', 'canine']), ('cat', ['feline'])]
    """
    beat = beat or Quiet()
    check_graphs([probe], store)
    beat.step(QUERY_STEP)
    got = run_query(probe, store, limits)
    beat.step(f"shaping {len(got):,} query rows into instances")
    rows, pool = checked_rows(probe, got)
    records = grouped_records(probe, rows)
    if pool:
        beat.step(f"drawing distractors from a pool of {len(pool):,} words",
                  total=len({str(r.get(probe.spec.target[1:] if probe.spec.target else ""))
                             for r in records}), unit="targets")
    records = with_distractors(probe, records, pool, beat.tick)
    beat.step(f"shaping {len(records):,} instances")
    return instance_frame(probe, records)
