"""Progress lines of long exports and previews (issue 30 point 7): probe, rows so far, elapsed.

A real query on an in-memory store: 3,000 rows (values worked out here: one row per triple
written), counted by the store as they come (kg.store.QUERY_ROWS)."""

from __future__ import annotations

import io
import re
import time

import pyoxigraph as ox

from kg.store import QUERY_ROWS, LocalStore
from kg.vocab import graph
from probes.engine.progress import Heartbeat


def store(n: int) -> LocalStore:
    s = LocalStore.in_memory()
    p = ox.NamedNode("http://example.org/p")
    s.oxigraph.extend(ox.Quad(ox.NamedNode(f"http://example.org/s{i}"), p, ox.Literal(i),
                              graph("norms")) for i in range(n))
    return s


def test_lines_name_the_probe_rows_so_far_and_time() -> None:
    out = io.StringIO()
    s = store(3000)
    with Heartbeat("exporting", "t/long", after=0.0, every=0.05, stream=out) as beat:
        rows = s.query("SELECT ?s ?o WHERE { ?s ?p ?o }", max_rows=None)
        time.sleep(0.2)
        beat.result = "3,000 rows"
    assert len(rows) == 3000 and QUERY_ROWS.rows == 3000
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3
    assert all(re.fullmatch(r"exporting t/long: [\d,]+ rows so far, \d+ s", x)
               for x in lines[:-1])
    assert re.fullmatch(r"exporting t/long: done, 3,000 rows, \d+ s", lines[-1])


def test_a_quick_probe_prints_nothing() -> None:
    out = io.StringIO()
    with Heartbeat("exporting", "t/quick", after=5.0, stream=out):
        store(10).query("SELECT ?s WHERE { ?s ?p ?o }")
    assert out.getvalue() == "" and QUERY_ROWS.rows == 10
