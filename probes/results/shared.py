"""Typed writers of the rows every run of a results file shares: a probe's export (instances,
``gold_forms``, ``probe_exports``), the human answers, the models' vocabularies, and the copy
of rows between a results file and its shard files.

Like :mod:`probes.results.writers` they write inside the caller's transaction (none of their
own), so that several writes land together.

>>> from probes.results import connect
>>> con = connect(":memory:")
>>> write_model_vocab(con, "m", "lowercase", ["dog", "cat"])
>>> write_model_vocab(con, "m", "lowercase", ["owl"], replace=True)
>>> con.execute("SELECT word FROM model_vocab").fetchall()
[('owl',)]
>>> replace_human_responses(con, "p", [HumanResponseRow("p", "i1", 0, 1, 1, "animal")])
>>> con.execute("SELECT instance_id, response FROM human_responses").fetchall()
[('i1', 'animal')]
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

import duckdb
import pyarrow as pa

from probes.results.writers import arrow_table


class GoldFormRow(NamedTuple):
    """One ``gold_forms`` row: an inflected form that counts as a gold answer."""

    probe: str
    split: str
    instance_id: str
    form: str
    gold: str


class ProvenanceRow(NamedTuple):
    """One ``instance_provenance`` row: an instance's bindings and linking triples (JSON text,
    probes.engine.provenance)."""

    probe: str
    split: str
    instance_id: str
    bindings: str
    triples: str


class ProbeExport(NamedTuple):
    """One ``probe_exports`` row, less the probe: the hash of the probe file its instances
    came from and when they were exported."""

    query_hash: str
    exported_at: datetime


class HumanResponseRow(NamedTuple):
    """One ``human_responses`` row: one answer word of one annotator."""

    probe: str
    instance_id: str
    prompt_id: int
    annotator: int
    position: int
    response: str


INSTANCE_COLUMNS = ("probe", "split", "instance_id", "target", "gold", "candidates", "fields",
                    "exported_at")
"""The columns of ``instances`` (the Arrow table :func:`replace_instances` takes has them)."""

HUMAN_SCHEMA = pa.schema([("probe", pa.string()), ("instance_id", pa.string()),
                          ("prompt_id", pa.int32()), ("annotator", pa.int32()),
                          ("position", pa.int32()), ("response", pa.string())])


def replace_instances(con: duckdb.DuckDBPyConnection, probe: str, rows: pa.Table) -> None:
    """Replace probe ``probe``'s ``instances`` rows by ``rows`` (an Arrow table with the
    columns :data:`INSTANCE_COLUMNS`; ``fields`` as JSON text)."""
    con.execute("DELETE FROM instances WHERE probe = ?", [probe])
    con.register("kgp_new_instances", rows.select(list(INSTANCE_COLUMNS)))
    try:
        con.execute("""INSERT INTO instances (probe, split, instance_id, target, gold, candidates,
                                              fields, exported_at)
            SELECT probe, split, instance_id, target, gold, candidates, fields::JSON, exported_at
            FROM kgp_new_instances""")
    finally:
        con.unregister("kgp_new_instances")


def replace_gold_forms(con: duckdb.DuckDBPyConnection, probe: str,
                       rows: Sequence[GoldFormRow]) -> None:
    """Replace probe ``probe``'s ``gold_forms`` rows by ``rows`` (a repeated row counts once)."""
    con.execute("DELETE FROM gold_forms WHERE probe = ?", [probe])
    if rows:
        con.executemany("INSERT OR IGNORE INTO gold_forms (probe, split, instance_id, form, "
                        "gold) VALUES (?, ?, ?, ?, ?)", [tuple(r) for r in rows])


def replace_provenance(con: duckdb.DuckDBPyConnection, probe: str,
                       rows: Sequence[ProvenanceRow]) -> None:
    """Replace probe ``probe``'s ``instance_provenance`` rows by ``rows``."""
    con.execute("DELETE FROM instance_provenance WHERE probe = ?", [probe])
    if rows:
        table = pa.table({name: [r[i] for r in rows]
                          for i, name in enumerate(ProvenanceRow._fields)})
        con.register("kgp_new_provenance", table)
        try:
            con.execute("""INSERT OR IGNORE INTO instance_provenance
                SELECT probe, split, instance_id, bindings::JSON, triples::JSON
                FROM kgp_new_provenance""")
        finally:
            con.unregister("kgp_new_provenance")


def replace_probe_export(con: duckdb.DuckDBPyConnection, probe: str,
                         export: ProbeExport | None) -> None:
    """Set probe ``probe``'s ``probe_exports`` row (None: remove it, instances written without
    a probe file)."""
    con.execute("DELETE FROM probe_exports WHERE probe = ?", [probe])
    if export is not None:
        con.execute("INSERT INTO probe_exports (probe, query_hash, exported_at) VALUES (?, ?, ?)",
                    [probe, export.query_hash, export.exported_at])


def replace_human_responses(con: duckdb.DuckDBPyConnection, probe: str,
                            rows: Sequence[HumanResponseRow]) -> None:
    """Replace probe ``probe``'s ``human_responses`` rows by ``rows``."""
    con.execute("DELETE FROM human_responses WHERE probe = ?", [probe])
    con.register("kgp_raw", arrow_table(HUMAN_SCHEMA, rows))
    try:
        con.execute("INSERT INTO human_responses (probe, instance_id, prompt_id, annotator, "
                    "position, response) SELECT * FROM kgp_raw")
    finally:
        con.unregister("kgp_raw")


def write_model_vocab(con: duckdb.DuckDBPyConnection, model: str, vocab: str, words: Sequence[str],
                replace: bool = False) -> None:
    """Add ``model``'s whole words of vocabulary ``vocab`` to ``model_vocab`` (``replace``:
    its earlier words of that vocabulary are removed first)."""
    if replace:
        con.execute("DELETE FROM model_vocab WHERE model = ? AND vocab = ?", [model, vocab])
    con.register("kgp_vocab", pa.table({"model": pa.array([model] * len(words), pa.string()),
                                        "vocab": pa.array([vocab] * len(words), pa.string()),
                                        "word": pa.array(list(words), pa.string())}))
    try:
        con.execute("INSERT OR IGNORE INTO model_vocab (model, vocab, word) "
                    "SELECT model, vocab, word FROM kgp_vocab")
    finally:
        con.unregister("kgp_vocab")


# --- copies between a results file and its shard files (probes.engine.shard)
# ---------------------------

def copy_model_rows(con: duckdb.DuckDBPyConnection, source: str,
                    model: str | None = None) -> None:
    """Copy the ``score_cache`` and ``model_vocab`` rows (of ``model``; None: all) of the
    attached file ``source`` that ``con``'s file lacks."""
    where, params = ("WHERE model = ?", [model]) if model is not None else ("", [])
    for table in ("score_cache", "model_vocab"):
        con.execute(f"INSERT OR IGNORE INTO {table} BY NAME SELECT * FROM {source}.{table} "
                    f"{where}", params)


def replace_run_rows(con: duckdb.DuckDBPyConnection, sources: Sequence[str],
                     run_ids: Sequence[str]) -> None:
    """Replace the ``scores``, ``responses``, ``generations`` and ``prompts`` rows of
    ``run_ids`` by the union of those of the attached files ``sources`` (a prompt row two
    sources share counts once)."""
    if not run_ids:
        return
    marks = ", ".join("?" for _ in run_ids)
    ids = list(run_ids)
    for table in ("scores", "responses", "generations", "prompts"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", ids)
        conflict = "OR IGNORE " if table == "prompts" else ""
        for source in sources:
            con.execute(f"INSERT {conflict}INTO {table} BY NAME SELECT * FROM {source}.{table} "
                        f"WHERE run_id IN ({marks})", ids)
