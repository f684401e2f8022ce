"""Progress lines of long exports and previews (issue 30 point 7; issue 46: each line names
what it counts): probe, step, its count and total, elapsed.

A real query on an in-memory store: 3,000 rows (values worked out here: one row per triple
written), counted by the store as they come (kg.store.QUERY_ROWS); and the real export steps of
a choice probe with drawn distractors, whose counts are worked out by hand below."""

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
    assert all(re.fullmatch(r"exporting t/long: query: [\d,]+ rows so far, \d+ s", x)
               for x in lines[:-1])
    assert re.fullmatch(r"exporting t/long: done, 3,000 rows, \d+ s", lines[-1])


def test_a_quick_probe_prints_nothing() -> None:
    out = io.StringIO()
    with Heartbeat("exporting", "t/quick", after=5.0, stream=out):
        store(10).query("SELECT ?s WHERE { ?s ?p ?o }")
    assert out.getvalue() == "" and QUERY_ROWS.rows == 10


class Recording(Heartbeat):
    """A heartbeat that also keeps what each step and tick would print."""

    def __init__(self) -> None:
        super().__init__("exporting", "t/choice", after=3600)
        self.seen: list[str] = []

    def step(self, what: str, total: int | None = None, unit: str = "") -> None:
        super().step(what, total, unit)
        self.seen.append(self.status())

    def tick(self, done: int, total: int | None = None) -> None:
        super().tick(done, total)
        self.seen.append(self.status())


CHOICE = """# name: t/choice
# task: choice
# split: test
# target: ?w
# gold: ?g
# candidates: ?c
# group_by: ?w
# prompts: ["[W] is a kind of [V]."]
# distractors: {pool: "?pool", n: 2, seed: 7}
SELECT ?w ?g ?pool WHERE {
  { VALUES (?w ?g) { ("dog" "animal") ("oak" "tree") ("oak" "plant") } }
  UNION { VALUES ?pool { "animal" "tree" "plant" "tool" "fish" } }
}
"""


def test_each_step_names_what_it_counts_and_its_total() -> None:
    """8 query rows (3 target rows, 5 pool rows); 2 instances (dog, oak) over a pool of 5
    words; provenance of plain literals: the values dog, animal, oak, tree, plant and the
    drawn distractors, in one batch of literals, so 1 store query (no IRIs: none for labels
    or links)."""
    from probes.engine.export import prepare
    from probes.engine.spec import parse_probe

    beat = Recording()
    with beat:
        exported = prepare(parse_probe(CHOICE), LocalStore.in_memory(), beat=beat)
    assert exported.instances.height == 2
    assert beat.seen == [
        "query: 0 rows so far",  # entering the block
        "query: 0 rows so far",  # the probe's query starts
        "shaping 8 query rows into instances",
        "drawing distractors from a pool of 5 words: 0 of 2 targets",
        "drawing distractors from a pool of 5 words: 2 of 2 targets",
        "shaping 2 instances",
        "checking 2 instances",
        "gold forms of 2 instances",
        "provenance lookups",  # its total is known once the values are read
        "provenance lookups: 1 of 1 store queries",
    ]
    assert QUERY_ROWS.rows != 8  # the store's tally moved on with the lookups: not the query's
