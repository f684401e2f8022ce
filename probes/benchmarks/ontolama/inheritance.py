"""How much of an ontology's Atomic SI positives comes from multiple inheritance
(``python -m probes.benchmarks.ontolama inheritance -s doid``; docs/ontolama.md, "Why DOID 2024 has
92,314 positives").

Counts, over the source's probe classes and its asserted named ``rdfs:subClassOf`` hierarchy:
the positives of the full closure (each class's strict ancestors that are probe classes), the
classes with more than one asserted parent, and the positives of a single-parent tree (each
class keeps only its first parent by IRI).

>>> h = {"c": {"a", "b"}, "b": {"a"}}
>>> closure_positives({"a", "b", "c"}, h), closure_positives({"a", "b", "c"}, h, single=True)
(3, 2)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from kg.store import KnowledgeStore
from kg.vocab import KGP, RDFS, graph, inferred_graph


def closure_positives(named: set[str], parents: Mapping[str, set[str]],
                      single: bool = False) -> int:
    """Strict (class, ancestor) pairs between named classes; ``single``: one parent each."""
    memo: dict[str, frozenset[str]] = {}

    def ancestors(c: str) -> frozenset[str]:
        if c in memo:
            return memo[c]
        memo[c] = frozenset()  # guards against cycles
        ps = sorted(parents.get(c, ()))
        ps = ps[:1] if single else ps
        out: set[str] = set()
        for p in ps:
            out.add(p)
            out |= ancestors(p)
        memo[c] = frozenset(out)
        return memo[c]

    return sum(len((ancestors(c) & named) - {c}) for c in named)


def inheritance_report(store: KnowledgeStore, source: str) -> str:
    """A Markdown table of the counts (module docstring)."""
    g, gi = graph(source).value, inferred_graph(source).value
    named = {r["c"] for r in store.query(
        f"SELECT ?c WHERE {{ GRAPH <{g}> {{ ?c a <{KGP.NamedClass.value}> }} }}")}
    parents: dict[str, set[str]] = defaultdict(set)
    for r in store.query(f"SELECT ?c ?d WHERE {{ GRAPH <{g}> {{ ?c <{RDFS.subClassOf.value}> ?d "
                         "FILTER(isIRI(?d)) } }"):
        parents[r["c"]].add(r["d"])
    entailed = sum(1 for r in store.query(
        f"SELECT ?c ?d WHERE {{ GRAPH <{gi}> {{ ?c <{RDFS.subClassOf.value}> ?d }} }}")
        if r["c"] in named and r["d"] in named)
    full = closure_positives(named, parents)
    tree = closure_positives(named, parents, single=True)
    multi = sum(1 for c in named if len(parents.get(c, set())) > 1)
    n = max(1, len(named))
    rows = [("probe classes", f"{len(named):,}"),
            ("entailed positives (inferred graph)", f"{entailed:,}"),
            ("positives of the asserted closure", f"{full:,} ({full / n:.2f} per class)"),
            ("classes with more than one asserted parent", f"{multi:,} ({100 * multi / n:.1f} %)"),
            ("positives with one parent per class (first by IRI)",
             f"{tree:,} ({tree / n:.2f} per class)"),
            ("positives only through further parents", f"{full - tree:,}")]
    return "\n".join([f"| {source} | count |", "|---|---:|"]
                     + [f"| {a} | {b} |" for a, b in rows])
