"""The ``run`` command (``kgprobe run``, ``python -m probes.engine.run``): score exported probe
instances with a model and, with ``--output-path``, write the run's files with its metrics.

The engine is :mod:`probes.engine.runner` (re-exported by :mod:`probes.engine.run`); this module is
the command: parse the options, route model lists and shards (:mod:`probes.engine.scale`), load the
scorer only when a request is not cached, and hand the finished runs to
:mod:`probes.app.outputs`, which computes metrics with ``eval``. It is in the application layer
because of that last step.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from kg import config, options
from probes.app import outputs
from probes.engine import chat, model_args, parquet_sync, scale
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.runner import command as run_command
from probes.engine.runner.caching import open_scorer, recorded_scorer
from probes.engine.runner.command import (
    ScorerFactory,
    check_device,
    check_lm_eval_flags,
    default_factory,
)
from probes.engine.runner.plan import Plan, RunOptions, task_context
from probes.engine.runner.probe import RunReport, format_reports, run_probe
from probes.engine.runner.select import select_probes
from probes.engine.spec import Probe
from probes.engine.tasks import get_task
from probes.results import connect, diagnose, disk_error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe run`` / ``python -m probes.engine.run``
    (:func:`probes.engine.runner.command.add_arguments`) and the handler."""
    run_command.add_arguments(parser)
    parser.set_defaults(handler=run, usage_error=parser.error)


def main(argv: list[str] | None = None, scorer_factory: ScorerFactory | None = None) -> int:
    """The command line. ``scorer_factory(name, device=, dtype=, batch_size=, threads=)`` replaces
    ``probes.backends.registry.load_scorer`` (tests pass a fake scorer)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:  # python -m probes.engine.run merge --shards N (probes.engine.shard)
        from probes.engine.shard import merge_main

        return merge_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m probes.engine.run")
    add_arguments(parser)
    return options.call_handler(partial(run, scorer_factory=scorer_factory),
                                parser.parse_args(argv), argv)


def run(args: argparse.Namespace, argv: list[str],
        scorer_factory: ScorerFactory | None = None) -> int:
    """Run the parsed command; ``argv`` (the arguments it was parsed from) is handed on to each
    model of a ``--models`` list and to each shard. A user's error is raised, and reported as
    one line by the command's runner (``kg.options.call_handler``)."""
    check_lm_eval_flags(args)
    if args.list:  # the same list as probes.engine.export --list
        from probes.engine.export import print_probe_list

        return print_probe_list(args.queries, args.probe, not args.only_extra)
    if not args.probe:
        args.usage_error("the following arguments are required: --probe/-p")
    # --model-args folded into --dtype/--allow-pickle/--device-map; the rest for loading
    model_kwargs = model_args.apply_to_args(args)
    if args.log_samples and args.output_path is None:
        raise ProbeError("--log-samples needs --output-path DIR (where the samples go)")
    factory = scorer_factory or default_factory
    routed = scale.route(args, argv, main, factory)  # a model list, a shard or a rank
    if routed is not None:
        return routed
    return score(args, factory, model_kwargs)


def check_numbers(args: argparse.Namespace) -> None:
    """--limit and --sample exclude each other; counts are positive."""
    if args.limit is not None and args.sample is not None:
        raise ProbeError("--limit and --sample exclude each other: use one")
    for flag, value in (("--limit", args.limit), ("--sample", args.sample),
                        ("--top-k", args.top_k), ("--chunk-size", args.chunk_size),
                        ("--threads", args.threads), ("--batch-size", args.batch_size)):
        if value is not None and value < 1:
            raise ProbeError(f"{flag} must be a positive number (got {value})")


def run_options(args: argparse.Namespace) -> RunOptions:
    """The scoring options of the command line."""
    return RunOptions(top_k=args.top_k, splits=args.split, limit=args.limit, sample=args.sample,
                      chunk_size=args.chunk_size, use_cache=not args.no_cache,
                      progress=not args.quiet,
                      runtime={"threads": args.threads, "batch_size": args.batch_size,
                               "chunk_size": args.chunk_size, "device": args.device,
                               "dtype": args.dtype, "model_args": args.model_args_parsed,
                               "apply_chat_template": args.apply_chat_template})


def _scorer(con: duckdb.DuckDBPyConnection, args: argparse.Namespace, factory: ScorerFactory,
            model_kwargs: dict[str, Any], probes: list[Probe], opts: RunOptions, where: str
            ) -> tuple[Any, dict[str, Plan]]:
    """The scorer (probes.engine.runner.caching.CachingScorer: cached requests answered from the
    cache, the model constructed only when one is not) and the plans already made with it."""

    def load() -> Any:  # the model, constructed only when a request is not cached
        check_device(args.device)
        extra: dict[str, Any] = {"allow_pickle": True} if args.allow_pickle else {}
        if args.backend is not None:  # the registered backend to load it with (a label)
            extra["kind"] = args.backend
        return chat.with_chat_template(factory(
            args.model, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
            threads=args.threads, **extra, **model_kwargs, **scale.load_options(args)),
            args.apply_chat_template)

    recorded = chat.matching_stand_in(recorded_scorer(
        con, args.model, args.device, args.dtype, args.backend), args.apply_chat_template
    ) if opts.use_cache else None
    return open_scorer(con, probes, opts, where, load, recorded)


def _write_outputs(args: argparse.Namespace, opts: RunOptions, reports: list[RunReport],
                   where: str) -> list[Path]:
    """``--output-path``: the metrics read the file opened read-only, sandboxed
    (eval.sqlfile.sandbox), after the scoring connection is closed."""
    con = connect(args.results, read_only=True)
    try:
        return outputs.write_outputs(
            con, args.output_path, [r.run_id for r in reports],
            {"model": args.model, **opts.runtime, "probes": [r.probe for r in reports],
             "splits": opts.splits, "limit": opts.limit, "sample": opts.sample,
             "top_k": opts.top_k, "results": where}, log_samples=args.log_samples)
    except OSError as e:  # a full disk, a read-only folder: the runs are stored
        raise ProbeError(f"cannot write the --output-path files under {args.output_path}: "
                         f"{disk_error(e) or e.strerror or e}; the runs are stored in the "
                         "results file: free space or choose another --output-path and run "
                         "the command again (it scores nothing twice)") from e
    finally:
        con.close()


def _run_all(args: argparse.Namespace, factory: ScorerFactory, model_kwargs: dict[str, Any],
             where: str) -> tuple[list[RunReport], RunOptions, float]:
    """Score every chosen probe on one connection, closed before the outputs are written;
    the seconds scoring took (the model loaded)."""
    check_numbers(args)
    con = connect(args.results)
    try:
        for note in parquet_sync.sync(con, Path(where), config.exports_dir()):
            print(f"note: {note}", file=sys.stderr)
        skip = getattr(args, "skip_bad_files", False)
        skipped: list[ProbeFileError] | None = [] if skip else None
        probes = select_probes(con, args.probe, args.queries, not args.only_extra, where,
                               skipped)
        for e in skipped or []:
            print(f"note: skipped (--skip-bad-files): {e}", file=sys.stderr)
        opts = run_options(args)
        scorer, plans = _scorer(con, args, factory, model_kwargs, probes, opts, where)
        t0 = time.perf_counter()
        # each probe, then the same instances in each of its formats (a run of its own)
        reports = [run_probe(con, scorer, q, opts, where,
                             plans.get(p.spec.name) if q is p else None)
                   for p in probes for q in _formats(p, scorer, opts)]
        return reports, opts, time.perf_counter() - t0
    finally:
        con.close()


def _formats(probe: Probe, scorer: Any, opts: RunOptions) -> list[Probe]:
    """The probe, then each of its header's ``formats`` that this model can read (a format
    it cannot, such as generate for a masked LM, is skipped with a note)."""
    out = [probe]
    for q in probe.formatted()[1:]:
        try:
            get_task(q.spec.task).check(q.spec, task_context(scorer, opts.top_k))
        except ProbeError as e:
            print(f"note: {probe.path}: format {q.spec.task} skipped: {e}", file=sys.stderr)
            continue
        out.append(q)
    return out


def score(args: argparse.Namespace, factory: ScorerFactory, model_kwargs: dict[str, Any]) -> int:
    """A plain run (no list, no shard): score, write the outputs, print the reports."""
    where = str(args.results or config.results_path())
    try:
        reports, opts, seconds = _run_all(args, factory, model_kwargs, where)
        written = (_write_outputs(args, opts, reports, where)
                   if args.output_path is not None else None)
    except duckdb.Error as e:  # the file went bad under us: never report success
        kept = (". Nothing of the chunk being scored was written; the chunks scored before "
                "it are kept and the same command resumes" if disk_error(e) else "")
        return options.error_line(f"{diagnose(Path(where), e)}{kept}")
    except KeyboardInterrupt:
        print("interrupted: the chunks scored so far are saved; run the same command again "
              "to resume", file=sys.stderr)
        return 130
    print(format_reports(reports))
    print(f"\n{len(reports)} probe(s) in {seconds:.2f} s")
    if written is not None:
        print("wrote " + ", ".join(str(w) for w in written))
    return 0
