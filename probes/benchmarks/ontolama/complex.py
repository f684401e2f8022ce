"""Complex SI (He et al. 2023, §3.3): samples from equivalence axioms ``A ≡ C``.

The query ``<onto>-complex.rq`` returns the anchors (probe classes ``A`` with ``A ≡ C``, ``C``
complex). Positives are ``A' ⊑ C`` (``A'`` = ``A`` or an entailed subclass) and ``C ⊑ A'``
(``A`` or an entailed superclass), from the inferred graph. Negatives replace one named class
or property of the anchor axiom by another (seeded hash) and keep a pair only if it passes
*assumed disjointness* (no subsumption either way, no common named descendant, no common named
instance, satisfiable): deciding that for a new class expression needs a reasoner, so all
candidates of an ontology become fresh classes ``X ≡ C'`` in one HermiT run (:mod:`kg.reason`).
At most ``max_positives`` and ``max_negatives`` samples per anchor (4 + 4, L129), then
:func:`probes.benchmarks.ontolama.splits.balance_complex` balances and splits them per class and
sets the direction of each negative so that the side of the complex concept carries no label
information.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import polars as pl

from kg import owl_expressions, reason
from kg.owl_expressions import (
    Expr,
    Named,
    Unsupported,
    entities,
    functional,
    parse_expression,
    read_blank_triples,
    read_class_names,
    read_hierarchy,
    read_individual_types,
    read_property_names,
    replace,
)
from kg.store import KnowledgeStore, LocalStore
from kg.vocab import OWL, graph
from probes.benchmarks.ontolama.common import (
    DEFAULT_SEED,
    _settings,
    control,
    seeded_hash,
    split_proportions,
)
from probes.benchmarks.ontolama.splits import balance_complex, complex_on_premise
from probes.benchmarks.ontolama.verbalise import MissingName, PosLexicon, Verbaliser, article
from probes.engine.errors import ProbeError
from probes.engine.graph_checks import check_graphs
from probes.engine.instances import instance_id
from probes.engine.spec import Probe

_OWL = str(OWL)
_h = seeded_hash

# --- Complex SI: samples --------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One Complex SI sample: ``sub ⊑ sup`` with its anchor axiom ``anchor ≡ definition``."""

    anchor: str
    definition: Expr
    sub: Expr
    sup: Expr
    label: int
    split: str

    @property
    def axiom(self) -> str:
        return f"SubClassOf({functional(self.sub)} {functional(self.sup)})"

    @property
    def anchor_axiom(self) -> str:
        return f"EquivalentClasses(<{self.anchor}> {functional(self.definition)})"


@dataclass
class ComplexReport:
    """What the complex builder did with one ontology's anchors."""

    anchors: int = 0
    axioms: int = 0
    used: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    positives: int = 0
    negatives: int = 0
    candidates: int = 0
    reasoning_s: float = 0.0
    full_negatives: int = 0
    before_balance: tuple[int, int] = (0, 0)

    def notes(self) -> list[str]:
        out = [f"{self.used} of {self.axioms} anchor axioms ({self.anchors} anchors) used; "
               f"{self.candidates} negative candidates checked by HermiT in "
               f"{self.reasoning_s:.1f} s; {self.full_negatives} of {self.used} anchors "
               f"reached their negatives; {self.before_balance[0]} positives and "
               f"{self.before_balance[1]} negatives before the per-split balance"]
        for why, n in self.skipped.most_common():
            example = f" (e.g. {self.examples[why]})" if why in self.examples else ""
            out.append(f"skipped {n} anchor axiom(s): {why}{example}")
        return out

    def skip(self, why: str, example: str | None = None) -> None:
        self.skipped[why] += 1
        if example:
            self.examples.setdefault(why, example)


@dataclass
class _Ontology:
    """What the complex builder reads once per ontology."""

    source: str
    names: dict[str, str]
    properties: dict[str, str]
    supers: dict[str, set[str]]
    subs: dict[str, set[str]]
    verbaliser: Verbaliser

    @classmethod
    def read(cls, store: KnowledgeStore, source: str) -> _Ontology:
        names = read_class_names(store, source)
        props = read_property_names(store, source)
        supers, subs = read_hierarchy(store, source)
        return cls(source, names, props, supers, subs,
                   Verbaliser(names, props, PosLexicon.from_store(store)))


def anchor_definitions(store: KnowledgeStore, source: str, anchors: Iterable[str],
                       object_properties: set[str], report: ComplexReport
                       ) -> list[tuple[str, Expr]]:
    """(anchor, definition) for every usable equivalence axiom of the given anchors."""
    triples = read_blank_triples(store, source)
    wanted = set(anchors)
    out = []
    for a in sorted(wanted):
        for node in sorted(triples.get(a, {}).get(_OWL + "equivalentClass", [])):
            report.axioms += 1
            try:
                out.append((a, parse_expression(node, triples, object_properties)))
            except Unsupported as e:
                report.skip(f"uses {e}", f"<{a}>")
    return out


def positive_samples(anchor: str, definition: Expr, onto: _Ontology, split: str, k: int,
                     seed: int = DEFAULT_SEED) -> list[Sample]:
    """Up to ``k`` of ``A' ⊑ C`` (A' = A or a subclass) and ``C ⊑ A'`` (A or a superclass)."""
    cands = [(anchor, "sub")] + [(c, "sub") for c in onto.subs.get(anchor, ())]
    cands += [(anchor, "super")] + [(c, "super") for c in onto.supers.get(anchor, ())]
    cands = [(c, d) for c, d in cands if c in onto.names]
    cands.sort(key=lambda cd: (_h(anchor, cd[1], cd[0], seed), cd))
    out = []
    for c, direction in cands[:k]:
        sub, sup = (Named(c), definition) if direction == "sub" else (definition, Named(c))
        out.append(Sample(anchor, definition, sub, sup, 1, split))
    return out


def negative_candidates(anchor: str, definition: Expr, tries: int,
                        classes: list[str], properties: list[str],
                        seed: int = DEFAULT_SEED) -> list[tuple[str, Expr, str]]:
    """Corrupted versions of ``A ≡ C``: (named class, class expression, direction), where
    direction ``sub`` means ``named ⊑ expression``. Each try replaces one entity of the axiom
    (A, a class or a property of C) by another probe class or named property, by hash."""
    ents = list(dict.fromkeys([("class", anchor), *entities(definition)]))
    out: list[tuple[str, Expr, str]] = []
    seen = set()
    for t in range(tries):
        kind, old = ents[_h(anchor, "entity", t, seed) % len(ents)]
        pool = classes if kind == "class" else properties
        if not pool:
            continue
        new = pool[_h(anchor, "replacement", t, seed) % len(pool)]
        if new == old:
            continue
        if kind == "class" and old == anchor:
            named, expr = new, definition
        else:
            named, expr = anchor, replace(definition, old, new)
        direction = "sub" if _h(anchor, "direction", t, seed) % 2 == 0 else "super"
        key = (named, functional(expr))  # one direction per pair: balance_complex sets it
        if key not in seen:
            seen.add(key)
            out.append((named, expr, direction))
    return out


FRESH = "urn:kgprobe:ontolama:fresh:"


def classify_with_fresh(store: LocalStore, source: str, expressions: list[Expr],
                        timeout: float) -> reason.Hierarchy:
    """HermiT's hierarchy of the source graph plus fresh classes ``FRESH<i> ≡ expressions[i]``
    (:func:`kg.owl_expressions.classify_with_fresh`).

    Raises ProbeError when HermiT fails or times out."""
    try:
        return owl_expressions.classify_with_fresh(store.oxigraph, graph(source), expressions,
                                                   FRESH, timeout, source)
    except reason.ReasonerFailed as e:
        raise ProbeError(f"{source}: checking Complex SI negatives with HermiT failed: {e}. "
                         "Raise builder_params.ontolama.reasoner_timeout_s (or "
                         "KGPROBE_JAVA_MEMORY_MB), or lower negative_tries.") from e


class _Relations:
    """Subsumption, equivalence and descendants from a classified hierarchy."""

    def __init__(self, h: reason.Hierarchy, named: set[str],
                 types: Mapping[str, set[str]]) -> None:
        self.pairs = h.subsumptions
        self.unsat = h.unsatisfiable
        self.group: dict[str, set[str]] = {}
        for g in h.equivalents:
            for x in g:
                self.group[x] = g
        self.desc: dict[str, set[str]] = defaultdict(set)
        for c, d in h.subsumptions:
            self.desc[d].add(c)
        self.named = named
        self.types = types  # individual -> asserted named types

    def below(self, x: str) -> set[str]:
        """Named probe classes equal to or under ``x``."""
        return ({x} | self.desc.get(x, set()) | self.group.get(x, set())) & self.named

    def below_all(self, x: str) -> set[str]:
        return {x} | self.desc.get(x, set()) | self.group.get(x, set())

    def disjoint(self, a: str, b: str) -> bool:
        """Assumed disjointness of ``a`` and ``b`` (named or fresh classes)."""
        if a in self.unsat or b in self.unsat:
            return False
        if (a, b) in self.pairs or (b, a) in self.pairs or b in self.group.get(a, ()):
            return False
        if (self.below(a) - {a}) & (self.below(b) - {b}):
            return False
        under_a, under_b = self.below_all(a), self.below_all(b)
        return not any(ts & under_a and ts & under_b for ts in self.types.values())


def complex_samples(probe: Probe, store: KnowledgeStore
                    ) -> tuple[list[Sample], ComplexReport, Verbaliser]:
    """Every Complex SI sample of a complex probe, a report (see the module docstring), and
    the verbaliser with the ontology's names."""
    cfg = _settings(probe)
    source = str(cfg["ontology"])
    seed = int(probe.spec.seed if probe.spec.seed is not None else DEFAULT_SEED)
    k_pos, k_neg = int(cfg.get("max_positives", 4)), int(cfg.get("max_negatives", 4))
    tries = int(cfg.get("negative_tries", 24))
    if not isinstance(store, LocalStore):
        raise ProbeError(f"{probe.path}: Complex SI negatives are checked with HermiT over the "
                         "embedded store's triples; run it on the embedded store, not "
                         "--endpoint.")
    check_graphs([probe], store)
    report = ComplexReport()
    anchor_rows = store.query(probe.query)
    splits = {r["anchor"]: str(r["split"]) for r in anchor_rows}
    report.anchors = len(splits)
    onto = _Ontology.read(store, source)
    axioms = anchor_definitions(store, source, splits, set(onto.properties), report)
    classes, props = sorted(onto.names), sorted(onto.properties)
    samples: list[Sample] = []
    pending: list[tuple[str, Expr, list[tuple[str, Expr, str]]]] = []
    for a, definition in axioms:
        try:
            onto.verbaliser(definition)
        except MissingName as e:
            report.skip(f"a {e.kind} in it has no name (no label)", f"<{e.iri}>")
            continue
        report.used += 1
        samples += positive_samples(a, definition, onto, splits[a], k_pos, seed)
        pending.append((a, definition,
                        negative_candidates(a, definition, tries, classes, props, seed)))
    exprs: dict[str, int] = {}
    for _, _, cands in pending:
        for _, expr, _ in cands:
            exprs.setdefault(functional(expr), len(exprs))
    report.candidates = sum(len(c) for _, _, c in pending)
    if pending:
        t0 = time.perf_counter()
        order = sorted(exprs, key=exprs.__getitem__)
        by_text = {functional(e): e for _, _, cands in pending for _, e, _ in cands}
        timeout = float(cfg.get("reasoner_timeout_s", 600))
        hierarchy = classify_with_fresh(store, source, [by_text[t] for t in order], timeout)
        report.reasoning_s = time.perf_counter() - t0
        rel = _Relations(hierarchy, set(onto.names), read_individual_types(store, source))
        for a, definition, cands in pending:
            kept = 0
            for named, expr, direction in cands:
                if kept == k_neg:
                    break
                if not rel.disjoint(named, f"{FRESH}{exprs[functional(expr)]}"):
                    continue
                sub, sup = (Named(named), expr) if direction == "sub" else (expr, Named(named))
                samples.append(Sample(a, definition, sub, sup, 0, splits[a]))
                kept += 1
            report.full_negatives += kept == k_neg
    report.before_balance = (sum(s.label for s in samples),
                             sum(1 - s.label for s in samples))
    samples = balance_complex(samples, split_proportions(probe), seed,
                              control(probe, "complex_concept"))
    report.positives = sum(s.label for s in samples)
    report.negatives = len(samples) - report.positives
    return samples, report, onto.verbaliser


def complex_instances(probe: Probe, store: KnowledgeStore) -> tuple[pl.DataFrame, ComplexReport]:
    """A complex probe's samples as instances (the shape of
    probes.engine.instances.instances_for)."""
    samples, report, verbaliser = complex_samples(probe, store)
    return sample_instances(probe.spec.name, samples, verbaliser), report


def sample_instances(name: str, samples: list[Sample], verbalise: Verbaliser) -> pl.DataFrame:
    """Complex SI samples as rows of the ``instances`` table of probe ``name``."""
    records = []
    for s in samples:
        sub, sup = verbalise(s.sub), verbalise(s.sup)
        records.append({"sub": sub, "super": sup, "a_sub": _article_field(sub),
                        "a_super": _article_field(sup), "label": s.label,
                        "kind": "positive" if s.label else "negative", "split": s.split,
                        "anchor": s.anchor, "axiom": s.axiom, "anchor_axiom": s.anchor_axiom,
                        "complex_side": "premise" if complex_on_premise(s) else "hypothesis"})
    df = pl.DataFrame({
        "split": [r["split"] for r in records],
        "instance_id": [instance_id([r["anchor"], r["axiom"]]) for r in records],
        "target": [r["sub"] for r in records],
        "gold": [[str(r["label"])] for r in records],
        "candidates": [[] for _ in records],
        "fields": [json.dumps(r, ensure_ascii=False) for r in records],
    }, schema={"split": pl.String, "instance_id": pl.String, "target": pl.String,
               "gold": pl.List(pl.String), "candidates": pl.List(pl.String),
               "fields": pl.String})
    df = df.unique(subset=["split", "instance_id"], keep="first", maintain_order=True)
    return df.with_columns(pl.lit(name).alias("probe"))


def _article_field(text: str) -> str:
    a = article(text)
    return f"{a} " if a else ""
