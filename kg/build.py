"""Build the store: ``python -m kg.build [--source NAME ...]``.

Each source is loaded by its loader (``kg/sources.toml`` names the module) into its own named
graph; a source's reasoner output goes to ``<graph>/inferred``. Rebuilding a source replaces only
that source's graphs. The build works on a copy of the store and swaps it in at the end, so a
failed build leaves the previous store as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib
import os
import resource
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox
from tqdm import tqdm

from kg import config, derived, options
from kg.benchmark import sources_of
from kg.errors import SourceError, StoreError, disk_error
from kg.manifest import Source, load_manifest, pick
from kg.pids import pid_alive
from kg.vocab import DCTERMS, GRAPH_BASE, KGP, PROV, graph, inferred_graph

Triple = tuple[Any, Any, Any]


@dataclass
class LoadContext:
    """What a loader gets: its source entry, its checked files, and a way to write triples.

    A loader is a module with ``def load(ctx: LoadContext) -> None``. It writes into
    ``ctx.graph`` (the source graph) and, for inferences, ``ctx.inferred``.
    """

    source: Source
    files: list[Path]
    store: ox.Store
    data_dir: Path
    stats: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def graph(self) -> ox.NamedNode:
        return graph(self.source.name)

    @property
    def inferred(self) -> ox.NamedNode:
        return inferred_graph(self.source.name)

    @property
    def options(self) -> dict[str, Any]:
        return self.source.options

    def add(self, triples: Iterable[Triple], to: ox.NamedNode | None = None) -> int:
        """Bulk-add (subject, predicate, object) triples of pyoxigraph terms; returns the count."""
        g = to or self.graph
        n = 0

        def quads() -> Iterator[ox.Quad]:
            nonlocal n
            for s, p, o in triples:
                n += 1
                yield ox.Quad(s, p, o, g)

        self.store.bulk_extend(quads())
        return n

    def load_rdf(self, data: bytes | str | IO[bytes], fmt: ox.RdfFormat,
                 to: ox.NamedNode | None = None, base_iri: str | None = None) -> None:
        """Parse an RDF serialisation straight into a graph (fast path for RDF files)."""
        try:
            self.store.bulk_load(data, format=fmt, to_graph=to or self.graph, base_iri=base_iri)
        except SyntaxError as e:
            raise SourceError(
                f"source {self.source.name!r}: {self.files[0]} is not valid {fmt}: {e}. The file "
                f"is corrupt; download it again from {self.source.url}."
            ) from e

    def warn(self, message: str) -> None:
        """Record something a user should know (shown in the build summary)."""
        self.warnings.append(message)


@dataclass
class SourceReport:
    name: str
    triples: int
    inferred: int
    seconds: float
    reasoning_s: float | None
    warnings: list[str]

    @property
    def triples_per_s(self) -> float:
        return (self.triples + self.inferred) / self.seconds if self.seconds else 0.0


def source_graphs(store: ox.Store, name: str) -> list[ox.NamedNode]:
    base = GRAPH_BASE + name
    return [g for g in store.named_graphs()
            if isinstance(g, ox.NamedNode) and (g.value == base or g.value.startswith(base + "/"))]


def _count(store: ox.Store, g: ox.NamedNode) -> int:
    res = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{g.value}> {{ ?s ?p ?o }} }}")
    assert isinstance(res, ox.QuerySolutions)  # a SELECT query
    return int(next(iter(res))["n"].value)


def load_source(store: ox.Store, source: Source, files: list[Path], data_dir: Path) -> SourceReport:
    """Replace one source's graphs in ``store`` with a fresh load."""
    t0 = time.perf_counter()
    for g in source_graphs(store, source.name):
        store.remove_graph(g)
    ctx = LoadContext(source=source, files=files, store=store, data_dir=data_dir)
    module = importlib.import_module(source.loader)
    module.load(ctx)
    seconds = time.perf_counter() - t0
    ctx.add([
        (ctx.graph, DCTERMS.title, ox.Literal(source.title)),
        (ctx.graph, DCTERMS.license, ox.Literal(source.license)),
        (ctx.graph, PROV.wasDerivedFrom, ox.NamedNode(source.url)),
        (ctx.graph, KGP.loadSeconds, ox.Literal(f"{seconds:.3f}", datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#decimal"))),
    ])
    return SourceReport(
        name=source.name,
        triples=_count(store, ctx.graph),
        inferred=_count(store, ctx.inferred),
        seconds=seconds,
        reasoning_s=ctx.stats.get("reasoning_s"),
        warnings=ctx.warnings,
    )


def clean_stale(store_path: Path) -> list[Path]:
    """Remove the staging and old folders that builds killed before their end left beside the
    store (their process is gone); if such a build died between moving the old store aside and
    moving the new one in, the old store is put back first. Call with the build lock held."""
    removed = []
    for kind in ("old", "staging"):
        for folder in sorted(store_path.parent.glob(f"{store_path.name}.{kind}-*")):
            pid = folder.name.rsplit("-", 1)[-1]
            if not pid.isdigit() or pid_alive(int(pid)):
                continue
            if kind == "old" and not store_path.exists():
                folder.rename(store_path)
                continue
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _keep_others(store_path: Path, staging: Path, rebuilt: list[str]) -> ox.Store:
    """A new store at ``staging`` holding the current store's graphs that this build does not
    make anew: every graph but those of the ``rebuilt`` sources and the derived graphs (which
    the build materialises again). Copying what is kept into an empty store, instead of copying
    everything and then deleting the rebuilt graphs, leaves no deleted quads behind: a rebuild
    costs what a fresh build of those sources costs. A damaged store is a clear error."""
    try:
        old = ox.Store.read_only(str(store_path))
        graphs = list(old.named_graphs())
    except (OSError, RuntimeError) as e:
        raise StoreError(
            f"the store at {store_path} is damaged or not a store ({e}); rebuild it from "
            "scratch with `python -m kg.build --force-new` (every chosen source is loaded "
            "anew, the damaged folder is replaced). Nothing was changed.") from e
    skip = {g for name in rebuilt for g in source_graphs(old, name)}
    made_again = graph("derived").value  # derived/<name>, and derived-staging/ of a killed run
    kept = [g for g in graphs if g not in skip
            and not (isinstance(g, ox.NamedNode) and g.value.startswith(made_again))]
    new = ox.Store(str(staging))
    for g in [*kept, ox.DefaultGraph()]:
        new.bulk_extend(old.quads_for_pattern(None, None, None, g))
    return new


@contextlib.contextmanager
def _build_lock(store_path: Path) -> Iterator[None]:
    store_path.parent.mkdir(parents=True, exist_ok=True)
    lock = store_path.with_name(store_path.name + ".lock")
    with lock.open("w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise StoreError(
                f"another `python -m kg.build` is writing {store_path} (lock {lock}); wait for it."
            ) from e
        yield


def build(names: list[str] | None = None, store_path: Path | None = None,
          data_dir: Path | None = None, verify: bool = True,
          progress: bool = True, force_new: bool = False,
          derived_reports: list[derived.DerivedReport] | None = None) -> list[SourceReport]:
    """Load the named sources (all by default) and swap the new store in atomically.

    The lock, the staging store and the swap work on the store's resolved path, so a symlink
    to the store keeps pointing at it. Over an existing store, the staging store starts with
    the current store's other graphs (:func:`_keep_others`). ``force_new``: start from an empty
    store (for a damaged store). ``derived_reports``: a list that receives each derived graph's
    triples and seconds."""
    # The resolved path: two spellings of one store (a symlink) share one lock.
    store_path = Path(store_path or config.store_path()).resolve()
    data_dir = Path(data_dir or config.data_dir())
    sources = pick(names)
    # Check every file before touching anything: a missing or corrupt file fails fast.
    files = {s.name: s.resolve(data_dir, verify=verify) for s in sources}
    reports: list[SourceReport] = []
    with _build_lock(store_path):
        clean_stale(store_path)
        staging = store_path.with_name(f"{store_path.name}.staging-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            if store_path.exists() and not force_new:
                store = _keep_others(store_path, staging, [s.name for s in sources])
            else:
                store = ox.Store(str(staging))
            bar = tqdm(sources, desc="building", unit="source", disable=not progress)
            for s in bar:
                bar.set_postfix_str(s.name)
                reports.append(load_source(store, s, files[s.name], data_dir))
            # queries/derived/*.rq (kg/derived.py); the staging store is swapped in whole below
            got = derived.materialise(store, swap=False, progress=progress)
            if derived_reports is not None:
                derived_reports.extend(got)
            with _stage("compacting the store (once per build)", progress):
                store.flush()
                store.optimize()
            del store
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        old = store_path.with_name(f"{store_path.name}.old-{os.getpid()}")
        if store_path.exists():
            store_path.rename(old)
        staging.rename(store_path)
        shutil.rmtree(old, ignore_errors=True)
        warm_caches(store_path, progress)
    return reports


def warm_caches(store_path: Path, progress: bool = True) -> None:
    """Work out, once per store, what exports would otherwise read from it on first use
    (kg.storecache): WordNet's morphology, which every probe with ``[DET]`` reads."""
    from kg.lexicon import LexiconError
    from kg.morphology import read_morphology
    from kg.store import LocalStore

    store = LocalStore.open(store_path)
    try:
        if graph("wordnet").value in set(store.graphs()):
            with _stage("reading WordNet's morphology for [DET] (once per store)", progress):
                read_morphology(store)
    except LexiconError:
        pass  # a WordNet built before its exception lists: the export says how to rebuild
    finally:
        read_morphology.cache_clear()
        del store


@contextlib.contextmanager
def _stage(what: str, progress: bool) -> Iterator[None]:
    """A line on stderr when a silent stage of the build starts, and its seconds when it ends
    (``progress``: not with --quiet)."""
    t0 = time.perf_counter()
    if progress:
        print(f"{what} ...", file=sys.stderr, flush=True)
    yield
    if progress:
        print(f"{what}: done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)


def write_failed(store_path: Path, error: OSError) -> str:
    """One line for a build that failed writing its staging copy (a full disk, a quota, a
    folder it may not write): what the disk says, and that the store is as it was (the copy
    is removed before the store would be swapped, :func:`build`).

    >>> import errno
    >>> write_failed(Path("/d/store"), OSError(errno.ENOSPC, "No space left on device"))[:64]
    'the disk is full where the store is built (/d: [Errno 28] No spa'
    """
    what = disk_error(error) or "writing failed"
    detail = " ".join(str(error).split())
    detail = detail if len(detail) <= 160 else detail[:157] + "..."
    kept = (f"the store at {store_path} is intact (the partial copy was removed)"
            if store_path.exists() else f"no store was created at {store_path}")
    return (f"{what} where the store is built ({store_path.parent}: {detail}); {kept}; free "
            "space (or point --store at another disk) and run the command again")


def peak_memory_mb() -> tuple[float, float]:
    """Peak resident memory of this process and of its finished children (e.g. the reasoner)."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def format_reports(reports: list[SourceReport]) -> str:
    lines = ["| source | triples | inferred | seconds | triples/s | reasoning s |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in reports:
        rs = f"{r.reasoning_s:.1f}" if r.reasoning_s is not None else "-"
        lines.append(f"| {r.name} | {r.triples:,} | {r.inferred:,} | {r.seconds:.1f} | "
                     f"{r.triples_per_s:,.0f} | {rs} |")
    warnings = [f"- {r.name}: {w}" for r in reports for w in r.warnings]
    if warnings:
        lines += ["", "Warnings:", *warnings]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe build`` / ``python -m kg.build``."""
    parser.description = (
        "Build (or rebuild sources of) the kgprobe knowledge store. Each source goes "
        "to its own named graph; rebuilding a source replaces only its graphs. A failed build "
        "leaves the previous store untouched.")
    parser.set_defaults(handler=run)
    parser.add_argument("--source", "-s", action="append", metavar="NAME",
                        help="source to (re)build; repeat for several; default: all in "
                        "kg/sources.toml but the optional ones (bear-big)")
    parser.add_argument("--benchmark", "-b", action="append", metavar="NAME",
                        help="(re)build the sources of this benchmark (its record's sources "
                        "but the optional ones, which need -s); repeatable; adds to --source")
    options.add_store(parser)
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder with the source data (default: $KGPROBE_DATA_DIR or "
                        "../shared/data)")
    parser.add_argument("--no-verify", action="store_true",
                        help="skip the sha256 check of source files")
    parser.add_argument("--list", action="store_true",
                        help="list the sources of the manifest and exit")
    parser.add_argument("--force-new", action="store_true",
                        help="build into an empty store instead of a copy of the current one "
                        "(for a damaged store); only the chosen sources (default: all) are in "
                        "the result")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def benchmark_sources(names: list[str], sources: list[str] | None = None) -> list[str]:
    """The sources ``-s`` names, then those of the benchmarks named (their records,
    :mod:`kg.benchmark`) but the optional ones, each once.

    >>> benchmark_sources(["bear"], ["wordnet"])
    ['wordnet', 'bear']
    """
    manifest = load_manifest()
    wanted = [s for s in sources_of(names) if not (s in manifest and manifest[s].optional)]
    return list(dict.fromkeys([*(sources or []), *wanted]))


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m kg.build", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Build the chosen sources (or list them)."""
    if args.list:
        for s in pick(None) + [s for s in load_manifest().values() if s.optional]:
            opt = " (optional: built only with -s)" if s.optional else ""
            print(f"{s.name:10} {s.title}{opt}  [{s.license}]  {s.url}")
        return 0
    t0 = time.perf_counter()
    if args.benchmark:
        args.source = benchmark_sources(args.benchmark, args.source)
    try:
        reports = build(args.source, args.store, args.data_dir, verify=not args.no_verify,
                        progress=not args.quiet, force_new=args.force_new)
    except KeyboardInterrupt:
        print("interrupted: the store was not changed (the partial copy was removed)",
              file=sys.stderr)
        return 130
    except OSError as e:  # a full disk (or another write error) while the copy was written
        return options.error_line(write_failed(Path(args.store or config.store_path()).resolve(),
                                               e))
    print(format_reports(reports))
    me, kids = peak_memory_mb()
    print(f"\nbuilt {len(reports)} source(s) in {time.perf_counter() - t0:.1f} s; "
          f"peak memory {me:.0f} MB (python), {kids:.0f} MB (reasoner)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
