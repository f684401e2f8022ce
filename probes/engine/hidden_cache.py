"""Hidden states on disk: streamed shards, cached and resumable like scores.

An extraction is named by its key, a hash of what fixes its numbers: the model, its revision,
the scorer's cache-key options (dtype, tokenizer, ...), the layers, the positions and the
stored dtype (:func:`hidden_key`). Each text with its slot span is an item (:func:`item_key`).
:func:`extract_cached` runs only the items the results file does not hold under the key, and
writes them as they come: every ``shard_rows`` rows become one ``.npy`` file of shape
``[layers, positions, rows, dim]`` in the key's folder (``<results>.hidden/<key>/``), written
under a temporary name and renamed, then recorded in ``hidden_shards`` and ``hidden_items`` in
one transaction (:func:`probes.results.writers.write_hidden_shard`). An interrupted run loses
at most the rows of the shard it was filling; a rerun extracts only what is missing. Memory
stays bounded by one shard's buffer plus one batch, whatever the number of texts.

Values are stored as float16 (half the disk of float32; relative error below 1e-3); a shard
with a value beyond float16's range is stored as float32 instead (recorded in its row).
:class:`HiddenStates` reads one (layer, position) matrix at a time through memory maps.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from probes.backends.hidden import (
    HiddenRequest,
    extract,
    layer_count,
    resolve_layers,
    resolve_positions,
)
from probes.engine.errors import ProbeError
from probes.results import transaction
from probes.results.writers import HiddenShardRow, write_hidden_shard

HIDDEN_VERSION = 1
"""Bumped when a change alters the stored states (part of the key)."""
SHARD_ROWS = 1024
FLOAT16_MAX = float(np.finfo(np.float16).max)


def hidden_key(scorer: Any, layers: Sequence[int], positions: Sequence[str],
               dtype: str = "float16") -> str:
    """The extraction's key: a hash of everything that changes its stored numbers."""
    record = {"model": scorer.name, "revision": scorer.revision,
              "options": scorer.cache_key_options(), "layers": list(layers),
              "positions": list(positions), "dtype": dtype, "version": HIDDEN_VERSION}
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def item_key(request: HiddenRequest) -> str:
    """One text and its slot span, hashed.

    >>> item_key(HiddenRequest("a b", (2, 3))) == item_key(HiddenRequest("a b", (2, 3)))
    True
    """
    span = "" if request.slot is None else f"{request.slot[0]}:{request.slot[1]}"
    return hashlib.sha256(f"{request.text}\x00{span}".encode()).hexdigest()[:32]


def hidden_folder(results: str | Path | None) -> Path:
    """Where a results file's hidden states live: ``<results>.hidden`` beside it; ``None`` is
    the default results file, as for :func:`probes.results.connect` (a run without --results
    once wrote ``None.hidden`` in the working folder)."""
    if results is None:
        from kg import config

        results = config.results_path()
    if str(results) == ":memory:":
        raise ProbeError("hidden states need a folder on disk; give a results file "
                         "(--results PATH) rather than :memory:, or a hidden-state folder")
    return Path(str(results) + ".hidden")


class HiddenStates:
    """The stored states of one extraction key."""

    def __init__(self, con: duckdb.DuckDBPyConnection, folder: Path, key: str) -> None:
        self.con, self.folder, self.key = con, folder, key
        rows = con.execute("SELECT shard, path, layers, positions, dim FROM hidden_shards "
                           "WHERE key = ? ORDER BY shard", [key]).fetchall()
        self.shards = {int(s): (folder / p, list(la), list(po), int(d))
                       for s, p, la, po, d in rows}
        self.where: dict[str, tuple[int, int]] = {
            item: (int(s), int(r)) for item, s, r in con.execute(
                "SELECT item, shard, row FROM hidden_items WHERE key = ?", [key]).fetchall()}

    @property
    def layers(self) -> list[int]:
        return next(iter(self.shards.values()))[1] if self.shards else []

    @property
    def positions(self) -> list[str]:
        return next(iter(self.shards.values()))[2] if self.shards else []

    def matrix(self, items: Sequence[str], layer: int, position: str) -> np.ndarray:
        """``[len(items), dim]`` float32: the states of ``items`` at one layer and position."""
        if not items:
            return np.zeros((0, 0), dtype=np.float32)
        if layer not in self.layers or position not in self.positions:
            raise ProbeError(f"layer {layer} at {position!r} was not extracted (layers "
                             f"{self.layers}, positions {self.positions})")
        li, pi = self.layers.index(layer), self.positions.index(position)
        dim = next(iter(self.shards.values()))[3]
        out = np.empty((len(items), dim), dtype=np.float32)
        by_shard: dict[int, list[tuple[int, int]]] = {}
        for i, item in enumerate(items):
            if item not in self.where:
                raise ProbeError(f"item {item} has no stored hidden states under key "
                                 f"{self.key}; run the extraction again")
            shard, row = self.where[item]
            by_shard.setdefault(shard, []).append((i, row))
        for shard, pairs in by_shard.items():
            path = self.shards[shard][0]
            if not path.exists():
                raise ProbeError(f"hidden-state shard {path} is missing; delete the key's rows "
                                 "or run the extraction into a fresh results file")
            data = np.load(path, mmap_mode="r")[li, pi]
            targets, rows = zip(*pairs, strict=True)
            out[list(targets)] = data[list(rows)]
        return out


class _ShardSink:
    """Copies each finished batch into its rows of a shard buffer and writes the buffer every
    ``shard_rows`` rows.

    The buffer (``[layers, positions, shard_rows, dim]``, one per stored dtype) is allocated
    once per extraction and reused for every shard; a float16 key's batches are cast in the
    same pass that puts them in place. A batch with a value beyond float16's range ends the
    shard before it and starts a float32 one, so that no value is lost and the float16 rows
    stay float16. A batch larger than the rows left is split across two shards."""

    def __init__(self, con: duckdb.DuckDBPyConnection, folder: Path, key: str,
                 items: Sequence[str], layers: Sequence[int], positions: Sequence[str],
                 model: str, shard_rows: int, dtype: str) -> None:
        self.con, self.folder, self.key, self.items = con, folder, key, items
        self.layers, self.positions, self.model = list(layers), list(positions), model
        self.shard_rows, self.dtype = shard_rows, dtype
        self.buffers: dict[str, np.ndarray] = {}
        self.names: list[str] = []
        self.wide = dtype == "float32"  # the shard being filled is float32
        self.next = int(con.execute("SELECT coalesce(max(shard) + 1, 0) FROM hidden_shards "
                                    "WHERE key = ?", [key]).fetchone()[0])  # type: ignore[index]
        self.written = 0

    def _buffer(self, shape: tuple[int, ...]) -> np.ndarray:
        dtype = "float32" if self.wide else "float16"
        if dtype not in self.buffers:
            _, layers, positions, dim = shape
            self.buffers[dtype] = np.empty((layers, positions, self.shard_rows, dim), dtype)
        return self.buffers[dtype]

    def __call__(self, batch: list[int], states: np.ndarray) -> None:
        over = (not self.wide and states.size > 0
                and max(-float(states.min()), float(states.max())) > FLOAT16_MAX)
        if over:
            self.flush()  # the float16 rows so far are a shard of their own
        at = 0
        while at < len(batch):
            self.wide = self.wide or over
            row = len(self.names)
            take = min(len(batch) - at, self.shard_rows - row)
            buffer = self._buffer(states.shape)
            buffer[:, :, row:row + take] = states[at:at + take].transpose(1, 2, 0, 3)
            self.names.extend(self.items[b] for b in batch[at:at + take])
            at += take
            if len(self.names) >= self.shard_rows:
                self.flush()

    def flush(self) -> None:
        if not self.names:
            return
        dtype = "float32" if self.wide else "float16"
        data = self.buffers[dtype][:, :, :len(self.names)]
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"shard-{self.next:06d}.npy"
        tmp = self.folder / (name + ".tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, data)
        os.replace(tmp, self.folder / name)
        row = HiddenShardRow(self.key, self.next, f"{self.key}/{name}", len(self.names),
                             self.layers, self.positions, int(data.shape[-1]), dtype,
                             self.model, datetime.now())
        with transaction(self.con):
            write_hidden_shard(self.con, row, self.names)
        self.written += len(self.names)
        self.next += 1
        self.names, self.wide = [], self.dtype == "float32"


def extract_cached(con: duckdb.DuckDBPyConnection, scorer: Any,
                   requests: Sequence[HiddenRequest], folder: Path,
                   layers: Sequence[int] | None = None, positions: Sequence[str] | None = None,
                   *, shard_rows: int = SHARD_ROWS, dtype: str = "float16",
                   before: Callable[[int, int], None] | None = None
                   ) -> tuple[HiddenStates, list[str]]:
    """The states of every request, extracting only those not stored under the key; returns
    the stored states and each request's item key. ``before(done, todo)`` is told how many
    items were found and how many will run."""
    if dtype not in ("float16", "float32"):
        raise ProbeError(f"hidden-state dtype {dtype!r}: use float16 or float32")
    chosen = resolve_layers(layers, layer_count(scorer) - 1)
    where = resolve_positions(positions)
    key = hidden_key(scorer, chosen, where, dtype)
    items = [item_key(r) for r in requests]
    have = HiddenStates(con, folder, key)
    todo: dict[str, HiddenRequest] = {}
    for item, req in zip(items, requests, strict=True):
        if item not in have.where:
            todo.setdefault(item, req)
    if before is not None:
        before(len(set(items)) - len(todo), len(todo))
    if todo:
        names = list(todo)
        sink = _ShardSink(con, folder / key, key, names, chosen, where, scorer.name,
                          shard_rows, dtype)
        try:
            extract(scorer, list(todo.values()), chosen, where, sink)
        finally:
            sink.flush()  # what was computed is kept, even when a later batch fails
    return HiddenStates(con, folder, key), items
