"""Materialise the class hierarchy an ontology entails: HermiT, or the asserted closure as fallback.

``reason(ctx)`` classifies the ontology in ``ctx.graph`` and writes into ``ctx.inferred``:

- ``C rdfs:subClassOf D`` for every entailed strict subsumption between named classes: the full
  transitive closure of the inferred hierarchy, without reflexive pairs, without ``owl:Thing``
  and ``owl:Nothing``, and without pairs of equivalent classes. This matches OntoLAMA's positive
  atomic subsumptions (the OWL API's ``getSuperClasses(C, direct=false)``).
- ``C owl:equivalentClass D`` (both directions) for named classes the reasoner finds equivalent,
  e.g. an asserted subclass cycle ``A ⊑ B ⊑ A``.
- ``C kgp:unsatisfiable true`` for classes equivalent to ``owl:Nothing``. An unsatisfiable class
  is trivially subsumed by every class, so it gets no ``rdfs:subClassOf`` triple at all; the
  loaders also leave it out of ``kgp:NamedClass`` so it never enters a probe.
- ``<inferred graph> kgp:reasoner "HermiT"`` (or ``"asserted-closure"``, see below).

How HermiT runs: the HermiT jar bundled with owlready2 (``owlready2/hermit``) is started with
``owlready2.JAVA_EXE`` as a child process in its own process group, reading an N-Triples copy of
the graph (annotation triples and ``owl:imports`` left out: annotations carry no logic, and an
import would make the OWL API go to the network). Its ``--classify`` output (the direct
hierarchy, in functional syntax) is parsed here and closed transitively in Python. Owlready2's
own quadstore is not used: it would copy the ontology into Python first and gains nothing for a
pure classification. The Java heap is ``java_memory_mb`` (source option), else
``$KGPROBE_JAVA_MEMORY_MB``, else ``owlready2.reasoning.JAVA_MEMORY``; the JVM runs with the
serial GC and the C1 compiler only, which halves HermiT's CPU time and memory on these
ontologies. The time limit is the source option ``reasoner_timeout_s`` (default 120 s); when it
is reached the whole process group is killed.

Fallback: when reasoning is switched off (``reason = false``), Java is missing, HermiT fails
(parse error, inconsistent ontology, out of memory) or times out, the inferred graph gets the
transitive closure of the *asserted* ``rdfs:subClassOf`` edges between IRIs (one SPARQL
property-path update over ``ctx.graph``), the graph is marked
``kgp:reasoner "asserted-closure"`` and ``ctx.warn`` says which ontology, why, and that
entailments from complex axioms (equivalences with restrictions, domains, ...) are missing.

``ctx.stats["reasoning_s"]`` is the wall time of all of this.

>>> pairs = transitive_pairs({"a": {"b"}, "b": {"c"}, "c": set()})
>>> sorted(pairs)
[('a', 'b'), ('a', 'c'), ('b', 'c')]
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox

from kg.pids import pid_alive, pid_from
from kg.vocab import KGP, OWL, RDFS, XSD

if TYPE_CHECKING:
    from kg.build import LoadContext

THING = OWL.Thing.value
NOTHING = OWL.Nothing.value
DEFAULT_TIMEOUT_S = 120.0
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
HERMIT_MAIN = "org.semanticweb.HermiT.cli.CommandLine"

# Annotation properties that OWL 2 builds in; with those a graph declares, they carry no logic.
_BUILTIN_ANNOTATIONS = [RDFS.label, RDFS.comment, RDFS.seeAlso, RDFS.isDefinedBy, OWL.deprecated,
                        OWL.versionInfo, OWL.priorVersion, OWL.backwardCompatibleWith,
                        OWL.incompatibleWith]
_AXIOM_LINE = re.compile(r"^(SubClassOf|EquivalentClasses)\(((?:\s*<[^>\s]+>)+)\s*\)\s*$")
_IRI = re.compile(r"<([^>\s]+)>")
Term = ox.NamedNode | ox.BlankNode | ox.Literal
TRUE = ox.Literal("true", datatype=XSD.boolean)


class ReasonerFailed(Exception):
    """HermiT could not classify the ontology; the message says why."""


@dataclass
class Hierarchy:
    """A classified hierarchy: strict subsumptions, equivalence groups, unsatisfiable classes."""

    subsumptions: set[tuple[str, str]] = field(default_factory=set)
    equivalents: list[set[str]] = field(default_factory=list)
    unsatisfiable: set[str] = field(default_factory=set)


def reason(ctx: LoadContext) -> Hierarchy:
    """Classify ``ctx.graph`` and write the entailed hierarchy into ``ctx.inferred``."""
    t0 = time.perf_counter()
    name = ctx.source.name
    _warn_self_loops(ctx)
    hierarchy: Hierarchy | None = None
    why = "reasoning is switched off for it (option reason = false)"
    if ctx.options.get("reason", True):
        try:
            hierarchy = classify_with_hermit(ctx)
        except ReasonerFailed as e:
            why = str(e)
    if hierarchy is not None:
        method = "HermiT"
        ctx.add(_hierarchy_triples(hierarchy), to=ctx.inferred)
        n = len(hierarchy.subsumptions)
        _warn_about(ctx, hierarchy)
    else:
        method = "asserted-closure"
        ctx.warn(
            f"{name}: no reasoner result: {why}. The inferred graph holds the transitive "
            "closure of the asserted rdfs:subClassOf hierarchy instead "
            "(kgp:reasoner \"asserted-closure\"); "
            "subsumptions entailed by complex axioms (equivalences with restrictions, "
            "intersections, domains and ranges) are missing from it."
        )
        hierarchy = Hierarchy()
        n = asserted_closure(ctx)
    ctx.add([(ctx.inferred, KGP.reasoner, ox.Literal(method))], to=ctx.inferred)
    ctx.stats.update(reasoner=method, inferred_subsumptions=n,
                     unsatisfiable=len(hierarchy.unsatisfiable),
                     reasoning_s=time.perf_counter() - t0)
    return hierarchy


# --- HermiT -------------------------------------------------------------------------------


def hermit_command(input_file: Path, java_memory_mb: int) -> list[str]:
    """The java command line that classifies ``input_file`` with owlready2's bundled HermiT."""
    import owlready2

    here = Path(owlready2.__file__).parent / "hermit"
    classpath = os.pathsep.join([str(here), str(here / "HermiT.jar")])
    return [owlready2.JAVA_EXE, f"-Xmx{int(java_memory_mb)}M", *JVM_OPTIONS, "-cp", classpath,
            HERMIT_MAIN, "--classify", input_file.resolve().as_uri()]


def java_memory_mb(option: object = None) -> int:
    """Java heap for HermiT in MB: ``option`` (a source's ``java_memory_mb``) when given, else
    ``$KGPROBE_JAVA_MEMORY_MB``, else owlready2's ``JAVA_MEMORY``. The one reader of the
    setting, for the build and for OntoLAMA's fresh-class classification."""
    value = option or os.environ.get("KGPROBE_JAVA_MEMORY_MB")
    if value:
        return int(str(value))
    import owlready2.reasoning

    return int(owlready2.reasoning.JAVA_MEMORY)


REASON_PREFIX = "kgprobe-reason-"


def clean_dead_reason_dirs(root: Path | None = None) -> list[Path]:
    """Remove the temporary folders ``kgprobe-reason-<pid>-*`` (under ``root``, default the
    system's temporary folder) of processes that are gone: a build killed while HermiT ran
    (``kill -9`` gives no chance to clean up). A folder of a running process is kept."""
    removed = []
    for folder in sorted(Path(root or tempfile.gettempdir()).glob(REASON_PREFIX + "*")):
        pid = pid_from(REASON_PREFIX, folder.name)
        if pid is None or pid_alive(pid) or not folder.is_dir() or folder.is_symlink():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@contextlib.contextmanager
def reason_dir() -> Iterator[str]:
    """A temporary folder for HermiT's input, named with this process's id so that the next
    run can remove it if this one is killed; folders of dead runs are removed first."""
    clean_dead_reason_dirs()
    with tempfile.TemporaryDirectory(prefix=f"{REASON_PREFIX}{os.getpid()}-") as tmp:
        yield tmp


def classify_with_hermit(ctx: LoadContext) -> Hierarchy:
    """Run HermiT on the logical triples of ``ctx.graph``; raises ReasonerFailed."""
    timeout = float(ctx.options.get("reasoner_timeout_s", DEFAULT_TIMEOUT_S))
    with reason_dir() as tmp:
        path = Path(tmp) / f"{ctx.source.name}.nt"
        write_logical_triples(ctx.store, ctx.graph, path)
        output = run_java(hermit_command(path, java_memory_mb(ctx.options.get("java_memory_mb"))),
                          timeout)
    hierarchy = parse_hermit(output)
    asserted = ctx.store.query(f"ASK {{ GRAPH <{ctx.graph.value}> {{ ?a <{RDFS.subClassOf.value}> "
                               "?b FILTER(isIRI(?a) && isIRI(?b) && ?a != ?b) } }")
    if not hierarchy.subsumptions and bool(asserted):
        raise ReasonerFailed("HermiT returned no class hierarchy although subclass axioms are "
                             "asserted")
    return hierarchy


def classify_with_extra_triples(store: ox.Store, graph: ox.NamedNode, extra: Iterable[str],
                                timeout: float, name: str = "ontology") -> Hierarchy:
    """HermiT's hierarchy of the logical triples of ``graph`` plus the N-Triples lines
    ``extra`` (e.g. fresh classes defined by class expressions), written to ``<name>.nt``;
    raises ReasonerFailed."""
    with reason_dir() as tmp:
        path = Path(tmp) / f"{name}.nt"
        write_logical_triples(store, graph, path)
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(extra) + "\n")
        output = run_java(hermit_command(path, java_memory_mb()), timeout)
    return parse_hermit(output)


def _die_with_parent(libc: ctypes.CDLL | None, parent: int) -> None:
    """In the child before exec: ask Linux to SIGKILL it when the parent dies (even by
    ``kill -9``, which no handler of the parent can catch); elsewhere nothing."""
    if libc is not None and hasattr(libc, "prctl"):
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def run_java(command: list[str], timeout: float) -> str:
    """Run ``command`` in its own process group; kill the whole group on timeout or interrupt,
    and (Linux) kill the JVM when this process dies, even by ``kill -9``."""
    parent, libc = os.getpid(), _libc()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True,
                                preexec_fn=lambda: _die_with_parent(libc, parent))
    except OSError as e:
        raise ReasonerFailed(f"cannot start Java ({command[0]}): {e}; install Java 11+ or set "
                             "owlready2.JAVA_EXE") from e
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ReasonerFailed(f"HermiT did not finish within reasoner_timeout_s = {timeout:g} s"
                             ) from e
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    text = err.decode("utf-8", "replace")
    if proc.returncode != 0:
        if "Inconsistent" in text or "inconsistent" in text:
            raise ReasonerFailed("HermiT found the ontology inconsistent")
        if "OutOfMemoryError" in text:
            raise ReasonerFailed("HermiT ran out of Java heap; raise java_memory_mb")
        tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:])
        raise ReasonerFailed(f"HermiT exited with status {proc.returncode}: {tail[:400]}")
    return out.decode("utf-8", "replace")


def write_logical_triples(store: ox.Store, graph: ox.NamedNode, path: Path) -> None:
    """Write the graph to N-Triples without annotations, owl:imports and kgprobe's own terms."""
    skip = ", ".join(f"<{p.value}>" for p in [*_BUILTIN_ANNOTATIONS, OWL.imports])
    query = f"""
        CONSTRUCT {{ ?s ?p ?o }} WHERE {{
          GRAPH <{graph.value}> {{ ?s ?p ?o }}
          FILTER(?p NOT IN ({skip}))
          FILTER(!STRSTARTS(STR(?p), "{KGP}") && !(isIRI(?o) && STRSTARTS(STR(?o), "{KGP}")))
          FILTER NOT EXISTS {{ GRAPH <{graph.value}> {{ ?p a <{OWL.AnnotationProperty.value}> }} }}
        }}"""
    triples = store.query(query)
    assert isinstance(triples, ox.QueryTriples)  # a CONSTRUCT query
    with path.open("wb") as fh:
        triples.serialize(fh, format=ox.RdfFormat.N_TRIPLES)


def parse_hermit(output: str) -> Hierarchy:
    """Close HermiT's direct hierarchy (``--classify`` output) transitively.

    >>> out = '''SubClassOf( <a> <b> )
    ... SubClassOf( <b> <c> )
    ... EquivalentClasses( <b> <b2> )
    ... EquivalentClasses( <http://www.w3.org/2002/07/owl#Nothing> <x> )'''
    >>> h = parse_hermit(out)
    >>> sorted(h.subsumptions)
    [('a', 'b'), ('a', 'b2'), ('a', 'c'), ('b', 'c'), ('b2', 'c')]
    >>> [sorted(g) for g in h.equivalents], h.unsatisfiable
    ([['b', 'b2']], {'x'})
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    direct: list[tuple[str, str]] = []
    for line in output.splitlines():
        m = _AXIOM_LINE.match(line.strip())
        if not m:
            continue
        iris = _IRI.findall(m.group(2))
        if m.group(1) == "SubClassOf" and len(iris) == 2:
            direct.append((iris[0], iris[1]))
        elif m.group(1) == "EquivalentClasses":
            for other in iris[1:]:
                parent[find(other)] = find(iris[0])
    for a, b in direct:
        find(a), find(b)
    nothing, thing = find(NOTHING), find(THING)
    groups: dict[str, set[str]] = {}
    for x in list(parent):
        groups.setdefault(find(x), set()).add(x)
    unsatisfiable = groups.get(nothing, set()) - {NOTHING}
    supers: dict[str, set[str]] = {root: set() for root in groups}
    for a, b in direct:
        ra, rb = find(a), find(b)
        if ra != rb and nothing not in (ra, rb) and rb != thing:
            supers[ra].add(rb)
    node_pairs = transitive_pairs(supers)
    subsumptions = {(c, d) for ra, rb in node_pairs for c in groups[ra] for d in groups[rb]
                    if c not in (THING, NOTHING) and d not in (THING, NOTHING)}
    equivalents = [g - {THING, NOTHING} for root, g in groups.items()
                   if root not in (nothing, thing) and len(g - {THING, NOTHING}) > 1]
    return Hierarchy(subsumptions, sorted(equivalents, key=sorted), unsatisfiable)


def transitive_pairs(supers: dict[str, set[str]]) -> set[tuple[str, str]]:
    """All (x, y) with y reachable from x over ``supers`` edges, x != y; cycles are tolerated."""
    ancestors: dict[str, frozenset[str]] = {}
    for start in supers:
        if start in ancestors:
            continue
        # iterative post-order DFS; a node met again while open is a cycle and contributes
        # what is known so far (the caller merges equivalent classes before, so this is rare)
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(supers.get(start, ())))]
        open_nodes = {start}
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                open_nodes.discard(node)
                acc: set[str] = set()
                for p in supers.get(node, ()):
                    acc.add(p)
                    acc |= ancestors.get(p, frozenset())
                ancestors[node] = frozenset(acc)
            elif nxt not in ancestors and nxt not in open_nodes:
                open_nodes.add(nxt)
                stack.append((nxt, iter(supers.get(nxt, ()))))
    return {(x, y) for x, ys in ancestors.items() for y in ys if x != y}


# --- writing --------------------------------------------------------------------------------


def _hierarchy_triples(h: Hierarchy) -> Iterable[tuple[ox.NamedNode, ox.NamedNode, Term]]:
    for c, d in sorted(h.subsumptions):
        yield ox.NamedNode(c), RDFS.subClassOf, ox.NamedNode(d)
    for group in h.equivalents:
        for c in sorted(group):
            for d in sorted(group - {c}):
                yield ox.NamedNode(c), OWL.equivalentClass, ox.NamedNode(d)
    for c in sorted(h.unsatisfiable):
        yield ox.NamedNode(c), KGP.unsatisfiable, TRUE


def asserted_closure(ctx: LoadContext) -> int:
    """Write the transitive closure of asserted named subClassOf edges; returns the pair count."""
    g, inf = ctx.graph.value, ctx.inferred.value
    ctx.store.update(f"""
        INSERT {{ GRAPH <{inf}> {{ ?a <{RDFS.subClassOf.value}> ?b }} }}
        WHERE {{
          {{ SELECT DISTINCT ?a ?b WHERE {{
            GRAPH <{g}> {{ ?a <{RDFS.subClassOf.value}>+ ?b }}
            FILTER(isIRI(?a) && isIRI(?b) && ?a != ?b)
            FILTER(?a NOT IN (<{THING}>, <{NOTHING}>) && ?b NOT IN (<{THING}>, <{NOTHING}>))
          }} }}
        }}""")
    res = ctx.store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{inf}> "
                          f"{{ ?a <{RDFS.subClassOf.value}> ?b }} }}")
    assert isinstance(res, ox.QuerySolutions)  # a SELECT query
    n = int(next(iter(res))["n"].value)
    sub = RDFS.subClassOf.value
    cyc = ctx.store.query(f"""SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{inf}> {{
        ?a <{sub}> ?b . ?b <{sub}> ?a }} FILTER(STR(?a) < STR(?b)) }}""")
    assert isinstance(cyc, ox.QuerySolutions)  # a SELECT query
    n_cyc = int(next(iter(cyc))["n"].value)
    if n_cyc:
        ctx.warn(f"{n_cyc} pairs of classes subsume each other through an "
                 "asserted subClassOf cycle; both directions are in the inferred graph.")
    return n


# --- warnings -------------------------------------------------------------------------------


def _short(iri: str) -> str:
    return re.split(r"[#/]", iri)[-1] or iri


def _warn_self_loops(ctx: LoadContext) -> None:
    loops = sorted(q.subject.value for q in ctx.store.quads_for_pattern(None, RDFS.subClassOf,
                                                                          None, ctx.graph)
                   if q.subject == q.object and isinstance(q.subject, ox.NamedNode))
    if loops:
        ctx.warn(f"{len(loops)} asserted subclass self-loops (X rdfs:subClassOf "
                 f"X), e.g. {', '.join(_short(x) for x in loops[:4])}; they are trivially true "
                 "and ignored.")


def _warn_about(ctx: LoadContext, h: Hierarchy) -> None:
    if h.unsatisfiable:
        some = ", ".join(sorted(_short(x) for x in h.unsatisfiable)[:6])
        ctx.warn(f"HermiT found {len(h.unsatisfiable)} unsatisfiable classes (equivalent "
                 f"to owl:Nothing): {some}. They are marked kgp:unsatisfiable true in the inferred "
                 "graph and left out of kgp:NamedClass and of the inferred subsumptions.")
    if h.equivalents:
        some = "; ".join(" = ".join(sorted(_short(x) for x in g)) for g in h.equivalents[:3])
        ctx.warn(f"{len(h.equivalents)} groups of equivalent named classes ({some}); "
                 "they are linked by owl:equivalentClass in the inferred graph, with no "
                 "rdfs:subClassOf between members of a group.")
