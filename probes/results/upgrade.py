"""Upgrading an older results file to the current schema, in place and without losing rows.

``schema.sql`` declares every column in its ``CREATE TABLE`` statements. A file written by an
older kgprobe has the tables but not every column: :func:`upgrade` adds what is missing (the
types come from the schema itself, so there is no second list to keep in step) and fills the
declared settings that older versions kept only inside ``runs.config`` (COPEN's method, part
and context; K-shot's k, seed and scoring; the family a run was scored as, from its recorded
capabilities; the subsumption prompts' templates and label-word sets, which the ``prompts``
table now declares).

A table the schema added later (``instance_provenance``) is created empty by the schema's own
``CREATE TABLE IF NOT EXISTS`` on the same connect; export the probes again to fill it.

Run it by hand with ``python -m probes.results upgrade PATH``; :func:`probes.results.connect`
runs it on every writable connection (a current file costs one catalogue query).
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

# Settings columns of runs filled from the old config JSON, with the path they were read from.
_RUN_SETTINGS = {
    "method": "coalesce(json_extract_string(config, '$.method'), "
              "CASE WHEN json_extract(config, '$.kshot') IS NOT NULL THEN 'kshot' END)",
    "part": "json_extract_string(config, '$.runtime.copen.part')",
    "context": "TRY_CAST(json_extract(config, '$.runtime.copen.context') AS BOOLEAN)",
    "k": "TRY_CAST(json_extract(config, '$.kshot.k') AS INTEGER)",
    "seed": "TRY_CAST(coalesce(json_extract(config, '$.kshot.seed'), "
            "json_extract(config, '$.runtime.copen.seed')) AS INTEGER)",
    "scoring": "CASE WHEN json_extract(config, '$.kshot') IS NOT NULL THEN "
               "coalesce(json_extract_string(config, '$.kshot.scoring'), 'sum_prob') END",
    # the family a run was scored as, from the capabilities its record declares
    # (probes.backends.protocol.family); before capabilities were recorded the backend's name
    # was the family (masked, causal, seq2seq, human)
    "family": "CASE WHEN json_extract_string(config, '$.capabilities.slot_scoring') = 'pll' "
              "THEN 'masked' WHEN json_extract_string(config, '$.capabilities.slot_scoring') "
              "IS NOT NULL THEN CASE WHEN TRY_CAST(json_extract(config, "
              "'$.capabilities.ends_at_slot') AS BOOLEAN) THEN 'causal' ELSE 'seq2seq' END "
              "ELSE coalesce(json_extract_string(config, '$.runtime.copen.kind'), backend) END",
}


ADDED: dict[str, list[str]] = {}
"""Per database path, the ``table.column`` names that :func:`upgrade` added in this process."""


def _columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for table, column, dtype in con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall():
        out.setdefault(table, {})[column] = dtype
    return out


def missing_columns(con: duckdb.DuckDBPyConnection, schema_sql: str
                    ) -> list[tuple[str, str, str]]:
    """(table, column, type) that the schema declares and the file lacks."""
    fresh = duckdb.connect(":memory:")
    try:
        fresh.execute(schema_sql)
        want = _columns(fresh)
    finally:
        fresh.close()
    have = _columns(con)
    return [(t, c, dtype) for t, cols in want.items() if t in have
            for c, dtype in cols.items() if c not in have[t]]


def upgrade(con: duckdb.DuckDBPyConnection, schema_sql: str) -> list[str]:
    """Bring ``con``'s tables (already created with ``CREATE TABLE IF NOT EXISTS``) up to
    ``schema_sql``, in one transaction; returns the ``table.column`` names it added."""
    missing = missing_columns(con, schema_sql)
    if not missing:
        return []
    con.execute("BEGIN TRANSACTION")
    try:
        for table, column, dtype in missing:
            con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {dtype}")
        added = {(t, c) for t, c, _ in missing}
        fill = [c for c in _RUN_SETTINGS if ("runs", c) in added]
        if fill:
            con.execute("UPDATE runs SET " + ", ".join(f"{c} = {_RUN_SETTINGS[c]}"
                                                        for c in fill))
        if ("runs", "method") in added:
            _fill_prompts(con)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    names = [f"{t}.{c}" for t, c, _ in missing]
    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = "
                       "current_database()").fetchone()
    ADDED.setdefault(str(path[0] if path else ""), []).extend(names)
    return names


def subsumption_prompts(templates: list[str], label_words: dict[str, Any]
                        ) -> list[tuple[int, str, str, str, Any]]:
    """(prompt_id, template name, template text, set name, the set's words) of every
    (template, label-word set) pair: ``prompt_id = template_index * n_sets + set_index`` with
    the sets sorted by name, as the subsumption task numbers them.

    >>> [r[:2] + r[3:4] for r in subsumption_prompts(["a [V]", "b [V]"],
    ...                                               {"L2": {}, "L1": {}})]
    [(0, 'T1', 'L1'), (1, 'T1', 'L2'), (2, 'T2', 'L1'), (3, 'T2', 'L2')]
    """
    words = {str(name): w for name, w in label_words.items()}
    names = sorted(words)
    return [(t * len(names) + s, f"T{t + 1}", text, name, words[name])
            for t, text in enumerate(templates) for s, name in enumerate(names)]


def _fill_prompts(con: duckdb.DuckDBPyConnection) -> None:
    """The prompts rows of the subsumption runs of an older file, from their config."""
    rows = []
    for run_id, cfg in con.execute(
            "SELECT run_id, config::VARCHAR FROM runs WHERE task = 'subsumption'").fetchall():
        c = json.loads(cfg) if cfg else {}
        words = (c.get("params") or {}).get("label_words") or {}
        templates = c.get("prompts") or []
        if isinstance(words, dict) and words and templates:
            rows += [(run_id, *r[:4], json.dumps(r[4], sort_keys=True))
                     for r in subsumption_prompts(list(templates), words)]
    if rows:
        con.executemany("""INSERT OR IGNORE INTO prompts (run_id, prompt_id, template, text,
                           label_set, label_words) VALUES (?, ?, ?, ?, ?, ?::JSON)""", rows)
