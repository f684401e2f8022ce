"""The command-line options every layer's commands share, defined once: ``--results``,
``--store``, ``--queries`` and ``--endpoint``. Their defaults come from :mod:`kg.config`
(``$KGPROBE_RESULTS``, ``$KGPROBE_STORE``, ``$KGPROBE_QUERIES``), so they live beside it in the
base layer, where ``probes`` and ``eval`` may both import them (``eval`` may import no
``probes`` module but the results contract). Model options, used only by ``probes``, are in
:mod:`probes.engine.options`. Here too is how every layer's command runs and reports a user's error
(:func:`run_command`, :func:`call_handler`, :func:`error_line`: one line ``error: ...``, exit
status 2).

Each command adds the ones it takes to its parser with these functions (argparse applies a
parent parser only when a parser is made; a command's ``add_arguments(parser)`` receives a
parser already made: the ``kgprobe`` sub-command, or the ``python -m`` form's own).

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_results(p); add_queries(p)
>>> p.parse_args(["--results", "r.duckdb", "-q", "a", "-q", "b"])
Namespace(results=PosixPath('r.duckdb'), queries=[PosixPath('a'), PosixPath('b')])
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kg.errors import UserError

RESULTS_HELP = "results DuckDB file (default: $KGPROBE_RESULTS or .kgprobe/results.duckdb)"
STORE_HELP = "store folder (default: $KGPROBE_STORE or .kgprobe/store)"
QUERIES_HELP = "extra folder of probe files (*.rq) besides queries/; repeatable"

def add_results(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                help: str = RESULTS_HELP) -> None:
    """``--results FILE`` (``args.results``: a Path or None)."""
    p.add_argument("--results", type=Path, default=None, metavar="FILE", help=help)


def add_store(p: argparse.ArgumentParser | argparse._ArgumentGroup,
              help: str = STORE_HELP) -> None:
    """``--store DIR`` (``args.store``: a Path or None)."""
    p.add_argument("--store", type=Path, default=None, metavar="DIR", help=help)


def add_queries(p: argparse.ArgumentParser | argparse._ArgumentGroup, short: bool = True,
                help: str = QUERIES_HELP) -> None:
    """``--queries DIR`` (``-q``), repeatable (``args.queries``: a list of Paths, maybe
    empty)."""
    flags = ("--queries", "-q") if short else ("--queries",)
    p.add_argument(*flags, action="append", type=Path, default=[], metavar="DIR",
                   dest="queries", help=help)


def add_endpoint(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                 help: str = "query this SPARQL 1.1 endpoint instead of the store") -> None:
    """``--endpoint URL`` (``args.endpoint``: a string or None)."""
    p.add_argument("--endpoint", metavar="URL", default=None, help=help)


def shared_parent(short_queries: bool = True) -> argparse.ArgumentParser:
    """A parent parser with the four shared options, as ``kgprobe`` takes them before the
    command (``dest``: ``top_results``, ... so that the command's own values, parsed into the
    same namespace, never overwrite them)."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    g = p.add_argument_group("shared options (before or after the command)")
    g.add_argument("--results", type=Path, metavar="FILE", dest="top_results",
                   help=RESULTS_HELP)
    g.add_argument("--store", type=Path, metavar="DIR", dest="top_store", help=STORE_HELP)
    g.add_argument("--endpoint", metavar="URL", dest="top_endpoint",
                   help="query this SPARQL 1.1 endpoint instead of the store (export, query, "
                   "semrel humans)")
    flags = ("--queries", "-q") if short_queries else ("--queries",)
    g.add_argument(*flags, action="append", type=Path, metavar="DIR", dest="top_queries",
                   default=[], help="extra folder of probe files, for every step; repeatable")
    return p


#: A command's handler: its parsed options and the arguments they were parsed from (a report
#: names its folder by them; a run passes them on to each model of a list or shard).
Handler = Callable[[argparse.Namespace, list[str]], int]


def run_command(prog: str, add_arguments: Callable[[argparse.ArgumentParser], object],
                argv: Sequence[str] | None) -> int:
    """The ``python -m`` form of a command: the parser its ``add_arguments`` builds (the same
    one ``kgprobe`` builds for the command), then the handler it set (``handler``), through
    :func:`call_handler`."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=prog)
    add_arguments(parser)
    args = parser.parse_args(args_list)
    return call_handler(args.handler, args, args_list)


#: The exit status of a command stopped by an error the user can mend (:func:`error_line`).
ERROR_STATUS = 2


def error_line(message: object) -> int:
    """Print a command's error the one way every command does, ``error: <message>`` on
    stderr, and return :data:`ERROR_STATUS` (2) for the command to exit with.

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     status = error_line("--shards must be a positive number")
    >>> err.getvalue(), status
    ('error: --shards must be a positive number\\n', 2)
    """
    print(f"error: {message}", file=sys.stderr)
    return ERROR_STATUS


def call_handler(handler: Handler, args: argparse.Namespace, argv: list[str]) -> int:
    """Run a command's handler and return its exit status (0 for None); a
    :class:`kg.errors.UserError` it raises (``KgError``, ``ProbeError``, ``MetricError``, ...)
    becomes one :func:`error_line` and status 2, never a traceback. Both runners of a command
    call it: :func:`run_command` (the ``python -m`` form) and ``kgprobe``'s
    ``probes.app.cli.main``.

    >>> import contextlib, io
    >>> from kg.errors import StoreError
    >>> def handler(args: argparse.Namespace, argv: list[str]) -> int:
    ...     raise StoreError("no store at s/; build it with `kgprobe build`")
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     status = call_handler(handler, argparse.Namespace(), [])
    >>> err.getvalue(), status
    ('error: no store at s/; build it with `kgprobe build`\\n', 2)
    >>> call_handler(lambda args, argv: None, argparse.Namespace(), [])
    0
    """
    try:
        return int(handler(args, argv) or 0)
    except UserError as e:
        return error_line(e)
