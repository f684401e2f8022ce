"""Build CSJ instances and CiC concept chains from Wikidata with the SPARQL of ``queries/copen/``.

The taxonomy and Wikidata live in different stores, so the driver moves data between them:

1. ``copen/splits`` on the taxonomy store (the kgprobe store, or any endpoint holding the
   ``copen`` graph): every concept with its split side, parent, depth, words and QIDs;
2. ``construct/wd-members`` on the Wikidata endpoint, with (concept, class QID) rows in
   its VALUES block, batch by batch: the member entities of each concept (50 per concept);
3. a working store in memory gets the taxonomy (``skos:broader``, ``kgp:split``, ``kgp:depth``)
   and the members (``rdf:type`` their concepts and ``wikibase:Item``, ``rdfs:label``,
   ``schema:description``); ``construct/csj-queries`` picks the query entities and
   ``construct/csj-assemble`` (one run per query entity, its VALUES filled) the answer and the 5
   hard and 15 easy distractors;
4. the instances are written in COPEN's released format (``task1/data/{split}.json``; each
   candidate also carries ``type``: answer, hard or easy), which
   :mod:`probes.benchmarks.copen.released` loads like the downloaded files.

CiC: ``construct/wd-types`` gives the concepts of given entities, ``construct/cic-chains`` (on
the working store) their concept chains. Contexts and gold concepts of CiC need annotation and
are not constructed.

Every choice is made in SPARQL by hash order with the seed written in the files (42), never by
``RAND()``, so the same store and endpoint give the same instances. The default endpoint is the
public Wikidata service (``https://query.wikidata.org/sparql``); there, members of very large
classes (``human``) can exceed its 60 s limit: a failing batch is reported and skipped.

>>> bind_values("SELECT * { VALUES (?a ?b) { } }", ["a", "b"], [["x", 3]])
'SELECT * { VALUES (?a ?b) { ("x" 3) } }'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kg.errors import KgError
from kg.store import KnowledgeStore, LocalStore
from kg.vocab import KGP, RDF, RDFS, SKOS, Namespace, data_ns
from probes.benchmarks.copen import CSJ_CANDIDATES
from probes.engine.errors import ProbeError
from probes.engine.spec import Probe, default_query_dirs, load_probe

WIKIDATA = "https://query.wikidata.org/sparql"
USER_AGENT = "kgprobe/0.1 (COPEN instance construction; https://github.com/THU-KEG/COPEN)"
WD = Namespace("http://www.wikidata.org/entity/")
WIKIBASE = Namespace("http://wikiba.se/ontology#")
SCHEMA = Namespace("http://schema.org/")
NS = data_ns("copen")
SCHEME = NS["scheme"]
HARD, EASY = 5, 15


class IRI(str):
    """A string that :func:`sparql_term` writes as an IRI."""


def sparql_term(value: Any) -> str:
    """A Python value as a SPARQL term for a VALUES block.

    >>> sparql_term(IRI("http://www.wikidata.org/entity/Q5")), sparql_term('say "hi"')
    ('<http://www.wikidata.org/entity/Q5>', '"say \\\\"hi\\\\""')
    >>> sparql_term(None), sparql_term(2)
    ('UNDEF', '2')
    """
    if value is None:
        return "UNDEF"
    if isinstance(value, IRI):
        if re.search(r'[\s<>"{}|^`\\]', value):
            raise ProbeError(f"not an IRI: {value!r}")
        return f"<{value}>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return f'"{text}"'


def bind_values(query: str, variables: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Fill every ``VALUES`` block over exactly ``variables`` with ``rows`` (its old data goes).

    A query without such a block is an error (the query file and the driver disagree).
    """
    names = [v.lstrip("?") for v in variables]
    var_list = r"\s+".join(rf"\?{re.escape(n)}" for n in names)
    head = rf"\(\s*{var_list}\s*\)" if len(names) > 1 else rf"(?:\(\s*{var_list}\s*\)|{var_list})"
    pattern = re.compile(rf"(VALUES\s+{head}\s*\{{)[^{{}}]*(\}})", re.IGNORECASE)
    if len(names) > 1:
        data = " ".join("(" + " ".join(sparql_term(v) for v in row) + ")" for row in rows)
    else:
        data = " ".join(sparql_term(row[0]) for row in rows)
    out, n = pattern.subn(lambda m: f"{m.group(1)} {data} {m.group(2)}", query)
    if n == 0:
        raise ProbeError(f"the query has no VALUES block over {' '.join('?' + v for v in names)}"
                         " for the driver to fill")
    return out


def construct_query(name: str, folder: Path | None = None) -> Probe:
    """A query file of ``queries/copen/`` (``splits``) or ``queries/copen/construct/``."""
    base = folder or default_query_dirs()[0] / "copen"
    path = base / f"{name}.rq"
    if not path.is_file():
        path = base / "construct" / f"{name}.rq"
    return load_probe(path)


@dataclass
class Concept:
    name: str
    split: str
    parent: str | None
    depth: int
    words: str
    qids: list[str]


def taxonomy(store: KnowledgeStore, folder: Path | None = None) -> dict[str, Concept]:
    """The concepts with their split side, from ``copen/splits`` on the taxonomy store."""
    probe = construct_query("splits", folder)
    out: dict[str, Concept] = {}
    for row in store.query(probe.query):
        c = out.get(row["concept"])
        if c is None:
            c = out[row["concept"]] = Concept(row["concept"], row["split"], row["parent"],
                                               int(row["depth"]), row["words"], [])
        qid = _qid(row["qid"]) if row["qid"] else None
        if qid and qid not in c.qids:
            c.qids.append(qid)
    if not out:
        raise ProbeError("copen/splits returned no concepts: build the taxonomy first with "
                         "`python -m kg.build -s copen` (or point --store at a store with it)")
    return out


def working_store(concepts: dict[str, Concept]) -> LocalStore:
    """An in-memory store with the taxonomy (broader, split, depth, labels)."""
    store = LocalStore.in_memory()
    quads = []
    for c in concepts.values():
        iri = NS[c.name]
        quads += [ox.Quad(iri, RDF.type, KGP.CopenConcept), ox.Quad(iri, RDFS.label,
                                                                   ox.Literal(c.name)),
                  ox.Quad(iri, KGP["split"], ox.Literal(c.split)),
                  ox.Quad(iri, KGP.depth, ox.Literal(c.depth))]
        if c.parent:
            quads.append(ox.Quad(iri, SKOS.broader, NS[c.parent]))
        else:
            quads.append(ox.Quad(iri, SKOS.topConceptOf, SCHEME))
    store.oxigraph.extend(quads)
    return store


def _remote_agent(store: KnowledgeStore) -> None:
    client = getattr(store, "_client", None)  # RemoteStore's SPARQLWrapper
    if client is not None and hasattr(client, "agent"):
        client.agent = USER_AGENT


@dataclass
class ConstructReport:
    """What the construction did (counts, and the batches or queries that failed)."""

    concepts: int = 0
    members: int = 0
    queries: int = 0
    instances: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"concepts with a Wikidata class: {self.concepts}",
               f"member entities (at most 50 per concept): {self.members}",
               f"query entities: {self.queries}",
               "CSJ instances: " + (", ".join(f"{k} {v}" for k, v in
                                              sorted(self.instances.items())) or "none")]
        if self.skipped:
            out.append("skipped query entities: " + ", ".join(
                f"{v} ({k})" for k, v in sorted(self.skipped.items())))
        out += [f"failed: {f}" for f in self.failures]
        return out


MEMBERS_PER_CONCEPT = 50
"""Entities kept per concept (section 2.2: "we retrieve 50 Wikidata entities most frequently
showing up in the Wikipedia corpus for each concept"), in the query's order (sitelinks)."""


def add_members(work: LocalStore, remote: KnowledgeStore, concepts: dict[str, Concept],
                report: ConstructReport, batch: int = 20, folder: Path | None = None,
                per_concept: int = MEMBERS_PER_CONCEPT) -> None:
    """Run ``wd-members`` for every concept with QIDs (``batch`` concepts per request) and add
    the first ``per_concept`` members of each concept to the working store."""
    probe = construct_query("wd-members", folder)
    rows = [(c.name, IRI(WD[q].value)) for c in concepts.values() for q in c.qids]
    report.concepts = len({r[0] for r in rows})
    _remote_agent(remote)
    seen: set[str] = set()
    names = sorted({r[0] for r in rows})
    for start in range(0, len(names), batch):
        chunk = set(names[start:start + batch])
        query = bind_values(probe.query, ["concept", "class"],
                            [r for r in rows if r[0] in chunk])
        try:
            found = remote.query(query)
        except KgError as e:
            report.failures.append(f"members of {', '.join(sorted(chunk))}: {e}")
            continue
        quads = []
        kept: dict[str, set[str]] = {}
        for r in found:
            mine = kept.setdefault(r["concept"], set())
            if r["item"] not in mine and len(mine) >= per_concept:
                continue
            mine.add(r["item"])
            item = ox.NamedNode(r["item"])
            quads.append(ox.Quad(item, RDF.type, NS[r["concept"]]))
            if r["item"] not in seen:
                seen.add(r["item"])
                quads += [ox.Quad(item, RDF.type, WIKIBASE.Item),
                          ox.Quad(item, RDFS.label, ox.Literal(r["label"], language="en"))]
                if r.get("description"):
                    quads.append(ox.Quad(item, SCHEMA.description,
                                         ox.Literal(r["description"], language="en")))
        work.oxigraph.extend(quads)
    report.members = len(seen)


def _qid(iri: str) -> str:
    return iri.rsplit("/", 1)[-1]


def assemble_csj(work: LocalStore, report: ConstructReport, per_concept: int = 2,
                 folder: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """CSJ instances in the released format, by split (``csj-queries`` + ``csj-assemble``)."""
    picks = bind_values(construct_query("csj-queries", folder).query, ["perConcept"],
                        [[per_concept]])
    chosen = work.query(picks)
    report.queries = len(chosen)
    assemble = construct_query("csj-assemble", folder).query
    out: dict[str, list[dict[str, Any]]] = {}
    for pick in chosen:
        query = bind_values(assemble, ["query", "c"], [[IRI(pick["query"]), IRI(pick["c"])]])
        rows = work.query(query)
        by_role: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_role.setdefault(r["role"], []).append(r)
        need = {"answer": 1, "hard": HARD, "easy": EASY}
        short = [role for role, n in need.items() if len(by_role.get(role, [])) < n]
        if short:
            key = "no " + "/".join(short) if len(short) > 1 else f"too few {short[0]}"
            key = key.replace("too few answer", "no answer")
            report.skipped[key] = report.skipped.get(key, 0) + 1
            continue
        cands = [r for role in need for r in by_role[role]]
        assert len(cands) == CSJ_CANDIDATES
        split = rows[0]["split"]
        answer = by_role["answer"][0]
        item = {"query": {"id": _qid(pick["query"]), "name": rows[0]["queryLabel"]},
                "concept": pick["concept"],
                "candidates": [{"id": _qid(r["item"]), "name": r["itemLabel"],
                                "type": r["role"]} for r in cands],
                "label": _qid(answer["item"])}
        # candidates in hash order (the files' ORDER BY role, hash): answer not always first
        item["candidates"].sort(key=lambda c: _order_key(item["query"]["id"], c["id"]))
        out.setdefault(split, []).append(item)
        report.instances[split] = report.instances.get(split, 0) + 1
    return out


def _order_key(query: str, candidate: str) -> str:
    import hashlib

    return hashlib.md5(f"{query}|{candidate}|42".encode()).hexdigest()


def cic_chains(work: LocalStore, remote: KnowledgeStore, concepts: dict[str, Concept],
               items: Sequence[str], folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """Entity QID -> ``{"name", "concept_chains"}``: its concept chains, nearest concept first
    (``wd-types`` on Wikidata, then ``cic-chains`` on the working store)."""
    iris = [IRI(WD[q].value if not q.startswith("http") else q) for q in items]
    classes = [(c.name, IRI(WD[q].value)) for c in concepts.values() for q in c.qids]
    types = bind_values(construct_query("wd-types", folder).query, ["item"], [[i] for i in iris])
    types = bind_values(types, ["concept", "class"], classes)
    _remote_agent(remote)
    names: dict[str, str] = {}
    quads = []
    for r in remote.query(types):
        node = ox.NamedNode(r["item"])
        quads.append(ox.Quad(node, RDF.type, NS[r["concept"]]))
        if r.get("label"):
            names[r["item"]] = r["label"]
    work.oxigraph.extend(quads)
    chains_q = bind_values(construct_query("cic-chains", folder).query, ["item"],
                           [[i] for i in iris])
    out: dict[str, dict[str, Any]] = {}
    for r in work.query(chains_q):
        entry = out.setdefault(_qid(r["item"]), {"name": names.get(r["item"]), "chains": {}})
        entry["chains"].setdefault(r["leaf"], []).append(r["concept"])
    return {q: {"name": e["name"], "concept_chains": list(e["chains"].values())}
            for q, e in out.items()}


def write_released(out_dir: Path, csj: dict[str, list[dict[str, Any]]]) -> list[Path]:
    """Write CSJ instances as ``<out>/task1/data/<split>.json`` (the released layout)."""
    paths = []
    for split, items in sorted(csj.items()):
        path = out_dir / "task1" / "data" / f"{split}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def build_csj(taxonomy_store: KnowledgeStore, remote: KnowledgeStore, out_dir: Path | None,
              per_concept: int = 2, batch: int = 20, folder: Path | None = None
              ) -> tuple[dict[str, list[dict[str, Any]]], ConstructReport, LocalStore]:
    """The whole CSJ construction; writes the files when ``out_dir`` is given."""
    report = ConstructReport()
    concepts = taxonomy(taxonomy_store, folder)
    work = working_store(concepts)
    add_members(work, remote, concepts, report, batch=batch, folder=folder)
    csj = assemble_csj(work, report, per_concept=per_concept, folder=folder)
    if out_dir is not None:
        write_released(out_dir, csj)
    return csj, report, work
