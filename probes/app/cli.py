"""The ``kgprobe`` command: one entry point for every step, dispatching to the ``main(argv)`` of
the ``python -m`` tools (which keep working on their own).

    kgprobe build                      # python -m kg.build
    kgprobe list                       # the probes found (as probes.export --list)
    kgprobe list --what metrics        # ... or tasks, metrics, model_args, all, described
    kgprobe query my/probe.rq          # a probe's SELECT: first rows, row count, seconds
    kgprobe export --preview 3         # rendered prompts, nothing written
    kgprobe export -p 'mine/*'         # python -m probes.export
    kgprobe run -m smollm2-135m -p 'mine/*'
    kgprobe report                     # python -m eval.report
    kgprobe semrel humans | ontolama build | copen zero-shot | kshot ...
    kgprobe semrel report              # python -m eval.semrel_report (likewise ontolama, copen)

The shared options ``--results FILE``, ``--store DIR``, ``--endpoint URL`` and ``--queries DIR``
are defined once and may come before or after the command. ``--results``, ``--store`` and
``--queries`` set ``KGPROBE_RESULTS``, ``KGPROBE_STORE`` and ``KGPROBE_QUERIES`` for the step, so
every step reads them (``export KGPROBE_QUERIES=DIR`` once does the same across commands).
Before the command ``-q`` means ``--queries``; after it, ``-q`` is the command's own.

Modules are imported only when their command runs, so ``kgprobe --help`` loads no torch.

>>> split_shared(["run", "-m", "x", "--results=r.duckdb", "--queries", "mine"])[0]
Namespace(results=PosixPath('r.duckdb'), store=None, endpoint=None, queries=[PosixPath('mine')])
>>> split_shared(["run", "-m", "x", "--results=r.duckdb", "--queries", "mine"])[1]
['run', '-m', 'x']
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probes.spec import Probe

#: command -> (module whose ``main(argv)`` runs it, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("kg.build", "build the RDF store from the sources (python -m kg.build)"),
    "derived": ("kg.derived", "rebuild only the derived graphs (python -m kg.derived)"),
    "list": ("probes.app.cli", "list the probes found (--what: tasks, metrics, model_args, all), "
             "with descriptions"),
    "query": ("probes.app.cli", "run a probe file's SELECT and print its first rows"),
    "export": ("probes.export", "export probe instances; --preview N shows rendered prompts "
               "(python -m probes.export)"),
    "run": ("probes.app.run", "score exported probes with a model (python -m probes.run)"),
    "report": ("eval.report", "metric tables and plots (python -m eval.report)"),
    "results": ("probes.results.__main__", "results files: upgrade an older one, combine "
                "several into one (python -m probes.results)"),
    "semrel": ("probes.semrel", "semantic relations (Cao et al.): humans, vocab, report"),
    "ontolama": ("probes.app.ontolama", "OntoLAMA: build, stats, inheritance, export, "
                 "report"),
    "copen": ("probes.copen.__main__", "COPEN: load, zero-shot, submission, construct, report"),
    "kshot": ("probes.kshot", "OntoLAMA K-shot prompt-based fine-tuning (python -m probes.kshot)"),
    "linear": ("probes.linear", "COPEN linear probing (python -m probes.linear)"),
    "finetune": ("probes.finetune", "COPEN fine-tuning (python -m probes.finetune)"),
}

#: ``kgprobe <benchmark> report`` runs the benchmark's report module.
BENCHMARK_REPORTS = {"semrel": "eval.semrel_report", "ontolama": "eval.ontolama_report",
                     "copen": "eval.copen_report"}

#: the commands (and benchmark sub-commands) that take ``--endpoint``; it is passed on to them.
ENDPOINT_COMMANDS = {("export",), ("query",), ("semrel", "humans")}

ENV = {"results": "KGPROBE_RESULTS", "store": "KGPROBE_STORE", "queries": "KGPROBE_QUERIES"}


def shared_parser(short_queries: bool = True) -> argparse.ArgumentParser:
    """The options every command shares (a parent parser)."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    g = p.add_argument_group("shared options (before or after the command)")
    g.add_argument("--results", type=Path, metavar="FILE",
                   help="results DuckDB file (default: $KGPROBE_RESULTS or "
                   ".kgprobe/results.duckdb)")
    g.add_argument("--store", type=Path, metavar="DIR",
                   help="store folder (default: $KGPROBE_STORE or .kgprobe/store)")
    g.add_argument("--endpoint", metavar="URL",
                   help="query this SPARQL 1.1 endpoint instead of the store (export, query, "
                   "semrel humans)")
    flags = ("--queries", "-q") if short_queries else ("--queries",)
    g.add_argument(*flags, action="append", type=Path, metavar="DIR", dest="queries",
                   help="extra folder of probe files, for every step (sets KGPROBE_QUERIES); "
                   "repeatable")
    return p


def build_parser() -> argparse.ArgumentParser:
    """``kgprobe [shared options] COMMAND [arguments]``."""
    p = argparse.ArgumentParser(
        prog="kgprobe", parents=[shared_parser()], allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Probe language models for conceptual and lexical-semantic knowledge: "
        "SPARQL probe files over an RDF store, results in DuckDB.",
        epilog="commands:\n" + "\n".join(f"  {name:10} {text}"
                                         for name, (_, text) in COMMANDS.items())
        + "\n\n`kgprobe COMMAND --help` shows a command's own options.")
    p.add_argument("command", choices=list(COMMANDS), metavar="COMMAND",
                   help="one of the commands below")
    p.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def split_shared(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Take the shared options (long forms) out of a command's arguments; the rest in order."""
    return shared_parser(short_queries=False).parse_known_args(argv)


def _merge(first: argparse.Namespace, later: argparse.Namespace) -> argparse.Namespace:
    """Shared options given before the command, overridden (or, for --queries, added to) by
    those given after it."""
    out = argparse.Namespace()
    for key in ("results", "store", "endpoint"):
        setattr(out, key, getattr(later, key) or getattr(first, key))
    out.queries = [*(first.queries or []), *(later.queries or [])]
    return out


@contextmanager
def shared_environment(shared: argparse.Namespace) -> Iterator[None]:
    """Set KGPROBE_RESULTS/STORE/QUERIES from the shared options while a step runs."""
    saved = {k: os.environ.get(k) for k in ENV.values()}
    try:
        if shared.results:
            os.environ[ENV["results"]] = str(shared.results)
        if shared.store:
            os.environ[ENV["store"]] = str(shared.store)
        if shared.queries:
            before = [p for p in os.environ.get(ENV["queries"], "").split(os.pathsep) if p]
            os.environ[ENV["queries"]] = os.pathsep.join([*map(str, shared.queries), *before])
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _entry(command: str, args: list[str]) -> tuple[Callable[[list[str]], int], list[str]]:
    """The ``main`` that runs a command, and its arguments."""
    if command in BENCHMARK_REPORTS and args[:1] == ["report"]:
        return importlib.import_module(BENCHMARK_REPORTS[command]).main, args[1:]
    if command == "list":
        return list_main, args
    if command == "query":
        return query_main, args
    return importlib.import_module(COMMANDS[command][0]).main, args


def main(argv: list[str] | None = None) -> int:
    """Run ``kgprobe``; returns the command's exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    top = build_parser().parse_args(argv)
    later, rest = split_shared(top.args)
    shared = _merge(top, later)
    if shared.endpoint:
        if (top.command,) in ENDPOINT_COMMANDS or (top.command, *rest[:1]) in ENDPOINT_COMMANDS:
            rest = [*rest, "--endpoint", shared.endpoint]
        else:
            where = ", ".join(" ".join(c) for c in sorted(ENDPOINT_COMMANDS))
            print(f"error: kgprobe {top.command} does not query a SPARQL endpoint; --endpoint "
                  f"applies to: {where}", file=sys.stderr)
            return 2
    func, args = _entry(top.command, rest)
    with shared_environment(shared):
        return int(func(args) or 0)


#: what ``kgprobe list --what`` may list; ``all`` is every one of them in this order.
LIST_WHAT = ("probes", "tasks", "metrics", "model_args")


def list_main(argv: list[str]) -> int:
    """``kgprobe list``: the probes found (the same list as ``probes.export --list``), or with
    ``--what`` the task kinds, the metrics or the ``--model-args`` keys, each with its
    description (:func:`probes.app.api.listing`), or all of them."""
    from probes.errors import ProbeError, ProbeFileError
    from probes.export import format_probe_list, list_probes

    p = argparse.ArgumentParser(prog="kgprobe list", description="List the probes found under "
                                "queries/ and the --queries folders (name, task, file, "
                                "description), or with --what the tasks, metrics or model args "
                                "with their descriptions.")
    p.add_argument("--what", choices=[*LIST_WHAT, "all"], default="probes",
                   help="what to list (default: probes; all: probes, tasks, metrics and "
                   "model_args)")
    p.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="only probes matching this name or glob pattern; repeatable")
    p.add_argument("--only-extra", action="store_true",
                   help="do not read the default queries/ folder, only --queries folders")
    args = p.parse_args(argv)
    if args.probe and args.what not in ("probes", "all"):
        p.error(f"--probe selects probes; it does not apply to --what {args.what}")
    parts = LIST_WHAT if args.what == "all" else (args.what,)
    problems: list[ProbeFileError] = []  # files that cannot be read: after the list
    try:
        for part in parts:
            if part == "probes":
                probes = format_probe_list(list_probes(None, args.probe, not args.only_extra,
                                                       problems))
                print(probes if args.what == "probes"
                      else "probes:\n" + "\n".join(f"  {ln}" for ln in probes.splitlines())
                      + "\n")
            else:
                from probes.app.api import listing

                print(listing(part, include_default=not args.only_extra), end="")
                if part != parts[-1]:
                    print()
    except ProbeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 2 if problems else 0


def _find_probe(ref: str) -> Probe:
    """A probe by file path, else by name among the probes found."""
    from probes.spec import discover, load_probe

    path = Path(ref)
    if path.suffix == ".rq" or path.exists():
        return load_probe(path)
    return discover(None, [ref])[0]


def query_main(argv: list[str]) -> int:
    """``kgprobe query FILE``: run a probe's SELECT (validated first) and print its first rows,
    the number of rows and the seconds it took. Writes nothing."""
    from kg.errors import KgError
    from kg.store import DEFAULT_TIMEOUT_S, open_store
    from probes.errors import ProbeError
    from probes.export import QueryLimits, check_graphs, run_query
    from probes.preview import format_rows

    p = argparse.ArgumentParser(prog="kgprobe query", description="Run a probe file's SELECT "
                                "against the store and print its first rows (nothing is "
                                "written).")
    p.add_argument("probe", metavar="FILE|NAME", help="a probe file (.rq) or a probe name")
    p.add_argument("--rows", "-n", type=int, default=10, metavar="N",
                   help="rows to print (default: 10)")
    p.add_argument("--endpoint", metavar="URL", help=argparse.SUPPRESS)
    p.add_argument("--query-timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"the most seconds the query may run (default: {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--allow-service", action="store_true",
                   help="let the query call other SPARQL endpoints with SERVICE")
    args = p.parse_args(argv)
    try:
        probe = _find_probe(args.probe)
        store = open_store(args.endpoint)
        check_graphs([probe], store)
        t0 = time.perf_counter()
        limits = QueryLimits(timeout_s=args.query_timeout or None,
                             allow_service=args.allow_service)
        rows = run_query(probe, store, limits)
        seconds = time.perf_counter() - t0
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_rows(rows, args.rows))
    print(f"\n{len(rows):,} row(s) in {seconds:.2f} s ({probe.spec.name}, "
          f"{probe.path})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
