"""The ``kgprobe`` command: one argparse tree for every step. Each command's options are
defined by its module's ``add_arguments(parser)`` (the same function its ``python -m`` form
builds its parser with), which also sets the ``handler(args, argv)`` that runs it; the options
every layer shares (``--results``, ``--store``, ``--queries``, ``--endpoint``) are defined once in
:mod:`kg.options`, the model options (``--model``, ``--device``, ``--dtype``, ``--threads``) in
:mod:`probes.engine.options`.

    kgprobe build                      # python -m kg.build
    kgprobe list                       # the probes found (as probes.engine.export --list)
    kgprobe list --what metrics        # ... or tasks, metrics, model_args, all, described
    kgprobe query my/probe.rq          # a probe's SELECT: first rows, row count, seconds
    kgprobe export --preview 3         # rendered prompts, nothing written
    kgprobe export -p 'mine/*'         # python -m probes.engine.export
    kgprobe run -m smollm2-135m -p 'mine/*'
    kgprobe report                     # python -m eval.report
    kgprobe semrel humans | ontolama build | copen zero-shot | bear subset | kshot ...
    kgprobe semrel report              # python -m eval.semrel_report (likewise ontolama, copen,
                                       # bear)

The shared options may come before or after the command. Given before it, they are handed to
the command explicitly, as if given after it (a value given after the command wins; ``--queries``
folders add up); a command that reads no such file or folder ignores it, and ``--endpoint`` is
refused where no store is read. Nothing is passed through
environment variables, so one step's values never reach the next in the same process
(``export KGPROBE_QUERIES=DIR`` once still sets a default for every command). Before the command
``-q`` means ``--queries``; after it, ``-q`` is the command's own.

Modules are imported only when their command runs (the tree is built with the chosen command's
branch only), so ``kgprobe --help`` loads no torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg import options
from kg.benchmark import benchmarks
from kg.errors import UserError

if TYPE_CHECKING:
    from probes.engine.spec import Probe

#: command -> (``module:function`` that adds its options, one line of help): the commands of
#: every step, then each benchmark's (:func:`_benchmark_tables`, from its record)
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("kg.build:add_arguments",
              "build the RDF store from the sources (python -m kg.build)"),
    "derived": ("kg.derived:add_arguments",
                "rebuild only the derived graphs (python -m kg.derived)"),
    "list": ("probes.app.cli:add_list_arguments", "list the probes found (--what: tasks, "
             "metrics, model_args, all), with descriptions"),
    "query": ("probes.app.cli:add_query_arguments",
              "run a probe file's SELECT and print its first rows"),
    "export": ("probes.engine.export:add_arguments", "export probe instances; --preview N shows "
               "rendered prompts (python -m probes.engine.export)"),
    "run": ("probes.app.run:add_arguments",
            "score exported probes with a model (python -m probes.engine.run)"),
    "report": ("eval.report:add_arguments", "metric tables and plots (python -m eval.report)"),
    "results": ("probes.results.__main__:add_arguments", "results files: upgrade an older one, "
                "combine several into one (python -m probes.results)"),
    "layers": ("probes.engine.layers:add_arguments",
               "linear probes per layer with control tasks on a probing probe's statements"),
}


def _benchmark_tables() -> tuple[dict[str, tuple[str, str]],
                                 dict[tuple[str, str], tuple[str, str]], set[tuple[str, ...]]]:
    """The benchmarks' commands, their sub-commands in ``eval`` and the sub-commands that take
    ``--endpoint``, from the benchmark records (:mod:`kg.benchmark`): each benchmark's
    ``kgprobe NAME`` in the records' order, then the top-level commands they add."""
    records = benchmarks()
    commands = {b.name: (b.command.ref, b.command.help) for b in records if b.command}
    commands |= {name: (c.ref, c.help) for b in records for name, c in b.commands.items()}
    subcommands = {(b.name, name): (c.ref, c.help) for b in records
                   for name, c in b.eval_subcommands().items()}
    endpoint: set[tuple[str, ...]] = {(b.name, name) for b in records for name in b.endpoint}
    return commands, subcommands, endpoint


_BENCHMARK_COMMANDS, _EVAL_SUBCOMMANDS, _ENDPOINT_SUBCOMMANDS = _benchmark_tables()
COMMANDS |= _BENCHMARK_COMMANDS

#: Sub-commands of a benchmark that live in ``eval`` (which the benchmark package may not
#: import): (command, sub-command) -> (``module:function``, help); from the records.
EVAL_SUBCOMMANDS: dict[tuple[str, str], tuple[str, str]] = _EVAL_SUBCOMMANDS

#: the commands (and benchmark sub-commands) that take ``--endpoint``.
ENDPOINT_COMMANDS: set[tuple[str, ...]] = {("export",), ("query",), *_ENDPOINT_SUBCOMMANDS}

#: the shared options as flags (``--queries`` repeats).
FLAGS = {"results": "--results", "store": "--store", "queries": "--queries",
         "endpoint": "--endpoint"}


def _function(ref: str) -> Callable[..., Any]:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def top_parser() -> argparse.ArgumentParser:
    """``kgprobe [shared options] COMMAND [arguments]``: finds the command (and prints the
    top-level help); the command's own arguments are parsed by :func:`build_parser`'s tree."""
    p = argparse.ArgumentParser(
        prog="kgprobe", parents=[options.shared_parent()], allow_abbrev=False,
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


def _hide_shared(parser: argparse.ArgumentParser) -> None:
    """Accept the shared options a command does not take (so that they may come after any
    command, as before it), into ``top_*``: :func:`merge_shared` ignores them, or refuses
    ``--endpoint`` with the command's name."""
    have = set(parser._option_string_actions)
    for key, flag in FLAGS.items():
        if flag not in have:
            parser.add_argument(flag, dest=f"top_{key}", default=argparse.SUPPRESS,
                                action="append" if key == "queries" else "store",
                                type=str if key == "endpoint" else Path,
                                help=argparse.SUPPRESS)


def add_command(sub: argparse._SubParsersAction, name: str, ref: str, text: str,
                group: tuple[str, ...] = (), prog: str | None = None) -> argparse.ArgumentParser:
    """One command's branch of the tree, with the eval sub-commands of a benchmark (``prog``:
    the branch's program name, for a ``python -m`` form)."""
    parser: argparse.ArgumentParser = (sub.add_parser(name, help=text, prog=prog) if prog
                                       else sub.add_parser(name, help=text))
    children = _function(ref)(parser)
    path = (*group, name)
    for (command, child), (child_ref, child_text) in EVAL_SUBCOMMANDS.items():
        if (command,) == path:
            add_command(children, child, child_ref, child_text, path)
    for action in parser._actions:  # the shared options each (sub-)command branch lacks
        if isinstance(action, argparse._SubParsersAction):
            for leaf in action.choices.values():
                _hide_shared(leaf)
    _hide_shared(parser)
    return parser


def build_parser(command: str | None = None, prog: str | None = None
                 ) -> argparse.ArgumentParser:
    """The ``kgprobe`` tree; only ``command``'s branch is filled in (its modules imported), its
    program name ``prog`` when given (default ``kgprobe COMMAND``)."""
    p = argparse.ArgumentParser(prog="kgprobe", parents=[options.shared_parent()],
                                allow_abbrev=False)
    sub = p.add_subparsers(dest="kgprobe_command", metavar="COMMAND", required=True)
    for name, (ref, text) in COMMANDS.items():
        if name == command:
            add_command(sub, name, ref, text, prog=prog)
        else:
            sub.add_parser(name, help=text)
    return p


def merge_shared(args: argparse.Namespace, where: tuple[str, ...]) -> list[str]:
    """Hand the shared options given before the command to it (a value after the command
    wins; --queries adds up). A command that does not read a file or folder ignores it (one
    line of options may serve every step: ``kgprobe --store S --results R query ...``); a
    :class:`UsageError` for ``--endpoint`` where no store is read. Returns the flags added, for
    commands that pass their arguments on (a run's model list, shards)."""
    added: list[str] = []
    name = " ".join(where)
    for key, flag in FLAGS.items():
        top = getattr(args, f"top_{key}", None)
        if not top:
            continue
        if key == "endpoint" and where not in ENDPOINT_COMMANDS:
            accepted = ", ".join(" ".join(c) for c in sorted(ENDPOINT_COMMANDS))
            raise UsageError(f"kgprobe {name} does not query a SPARQL endpoint; "
                             f"--endpoint applies to: {accepted}")
        if not hasattr(args, key):  # a file or folder this command does not read
            continue
        if key == "queries":
            setattr(args, key, [*top, *(getattr(args, key) or [])])
            added += [a for q in top for a in (flag, str(q))]
        elif getattr(args, key) is None:
            setattr(args, key, top)
            added += [flag, str(top)]
    return added


class UsageError(UserError):
    """A shared option given to a command that does not take it."""


def _where(args: argparse.Namespace, command: str) -> tuple[str, ...]:
    """The command and, for a command with sub-commands, the one chosen
    (``("semrel", "humans")``)."""
    sub = getattr(args, "command", None)
    return (command, sub) if isinstance(sub, str) else (command,)


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run ``kgprobe``; returns the command's exit status. ``prog`` names the command's program
    in its help and errors (a ``python -m`` form that runs the tree: ``python -m
    probes.benchmarks.copen``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    top = top_parser().parse_args(argv)
    if top.command == "run" and top.args[:1] == ["merge"]:  # kgprobe run merge --shards N
        from probes.engine.shard import merge_main

        given = ["--results", str(top.top_results)] if top.top_results else []
        return merge_main([*given, *top.args[1:]])
    parser = build_parser(top.command, prog)
    args = parser.parse_args(argv)
    where = _where(args, top.command)

    def dispatch(args: argparse.Namespace, own: list[str]) -> int:
        added = merge_shared(args, where)
        # the command's own arguments (after a benchmark's sub-command), with the shared values
        # given before the command made explicit: a run hands them on to each model or shard
        if where[1:] and where[1] in own:
            own.remove(where[1])
        return int(args.handler(args, [*added, *own]) or 0)

    return options.call_handler(dispatch, args, list(top.args))


#: what ``kgprobe list --what`` may list; ``all`` is every one of them in this order.
LIST_WHAT = ("probes", "tasks", "metrics", "model_args")


def add_list_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe list``."""
    p.description = ("List the probes found under queries/ and the --queries folders (name, "
                     "task, file, description), or with --what the tasks, metrics or model args "
                     "with their descriptions.")
    p.add_argument("--what", choices=[*LIST_WHAT, "all"], default="probes",
                   help="what to list (default: probes; all: probes, tasks, metrics and "
                   "model_args)")
    p.add_argument("--probe", "-p", action="append", metavar="PATTERN",
                   help="only probes matching this name or glob pattern; repeatable")
    options.add_queries(p)
    p.add_argument("--only-extra", action="store_true",
                   help="do not read the default queries/ folder, only --queries folders")
    p.set_defaults(handler=list_main, usage_error=p.error)


def list_main(args: argparse.Namespace, argv: list[str]) -> int:
    """``kgprobe list``: the probes found (the same list as ``probes.engine.export --list``), or
    with
    ``--what`` the task kinds, the metrics or the ``--model-args`` keys, each with its
    description (:func:`probes.app.api.listing`), or all of them."""
    from probes.engine.errors import ProbeFileError
    from probes.engine.export import format_probe_list, list_probes

    if args.probe and args.what not in ("probes", "all"):
        args.usage_error(f"--probe selects probes; it does not apply to --what {args.what}")
    parts = LIST_WHAT if args.what == "all" else (args.what,)
    problems: list[ProbeFileError] = []  # files that cannot be read: after the list
    for part in parts:
        if part == "probes":
            probes = format_probe_list(list_probes(args.queries, args.probe,
                                                   not args.only_extra, problems))
            print(probes if args.what == "probes"
                  else "probes:\n" + "\n".join(f"  {ln}" for ln in probes.splitlines())
                  + "\n")
        else:
            from probes.app.api import listing

            print(listing(part, include_default=not args.only_extra), end="")
            if part != parts[-1]:
                print()
    for problem in problems:
        options.error_line(problem)
    return options.ERROR_STATUS if problems else 0


def _find_probe(ref: str, queries: list[Path]) -> Probe:
    """A probe by file path, else by name among the probes found."""
    from probes.engine.spec import discover, load_probe

    path = Path(ref)
    if path.suffix == ".rq" or path.exists():
        return load_probe(path)
    return discover(queries, [ref])[0]


def add_query_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe query``."""
    from kg.store import DEFAULT_TIMEOUT_S

    p.description = ("Run a probe file's SELECT against the store and print its first rows "
                     "(nothing is written).")
    p.add_argument("probe", metavar="FILE|NAME", help="a probe file (.rq) or a probe name")
    p.add_argument("--rows", "-n", type=int, default=10, metavar="N",
                   help="rows to print (default: 10)")
    options.add_store(p)
    options.add_endpoint(p)
    options.add_queries(p)
    p.add_argument("--query-timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"the most seconds the query may run (default: {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--allow-service", action="store_true",
                   help="let the query call other SPARQL endpoints with SERVICE")
    p.set_defaults(handler=query_main)


def query_main(args: argparse.Namespace, argv: list[str]) -> int:
    """``kgprobe query FILE``: run a probe's SELECT (validated first) and print its first rows,
    the number of rows and the seconds it took. Writes nothing."""
    from kg.store import open_store
    from probes.engine.export import QueryLimits, check_graphs, run_query
    from probes.engine.preview import format_rows

    probe = _find_probe(args.probe, args.queries)
    store = open_store(args.endpoint, args.store)
    check_graphs([probe], store)
    t0 = time.perf_counter()
    limits = QueryLimits(timeout_s=args.query_timeout or None, allow_service=args.allow_service)
    rows = run_query(probe, store, limits)
    seconds = time.perf_counter() - t0
    print(format_rows(rows, args.rows))
    print(f"\n{len(rows):,} row(s) in {seconds:.2f} s ({probe.spec.name}, "
          f"{probe.path})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
