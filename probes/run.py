"""Score probe instances with a model: ``python -m probes.run --model NAME --probe PATTERN``.

For each chosen probe: read its instances from the results file (written by
``python -m probes.export``), turn them into scoring requests with the probe's task module
(probes.tasks), answer the requests from the score cache or the model, and write the ``runs``,
``scores`` and ``responses`` rows. Scores are committed chunk by chunk (probes.cache), so a run
that is killed resumes where it stopped when started again; a re-run with nothing new does no
model work.

The engine lives in :mod:`probes.runner`, one job per module (plan, select, caching,
scoring, runrecord, probe, cli); this module is the command (:func:`main`) and re-exports the
names other modules import from it (``run_probe``, ``RunOptions``, ``load_instances``, ...).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import duckdb

from kg import config
from kg.errors import KgError
from probes import chat, model_args, outputs, parquet_sync, scale_cli
from probes.errors import ProbeError
from probes.results import connect, diagnose, disk_error
from probes.runner.caching import (
    CachingScorer,
    RecordedScorer,
    needs_model,
    open_scorer,
    recorded_scorer,
)
from probes.runner.cli import (
    ScorerFactory,
    build_parser,
    check_device,
    check_lm_eval_flags,
    default_factory,
)
from probes.runner.plan import (
    DEFAULT_CHUNK,
    Plan,
    RunOptions,
    chunks,
    load_instances,
    plan,
    run_id,
    run_identity,
    slot_token,
)
from probes.runner.probe import RunReport, format_reports, run_probe
from probes.runner.runrecord import record_vocab
from probes.runner.scoring import score_requests
from probes.runner.select import select_probes

_score = score_requests  # the name scripts/bench_semrel.py imports

__all__ = [
    "DEFAULT_CHUNK", "CachingScorer", "Plan", "RecordedScorer", "RunOptions", "RunReport",
    "ScorerFactory", "build_parser", "check_device", "chunks", "format_reports",
    "load_instances", "main", "needs_model", "open_scorer", "plan", "record_vocab",
    "recorded_scorer", "run_id", "run_identity", "run_probe", "select_probes", "slot_token",
]


def main(argv: list[str] | None = None, scorer_factory: ScorerFactory | None = None) -> int:
    """The command line. ``scorer_factory(name, device=, dtype=, batch_size=, threads=)`` replaces
    ``probes.backends.registry.load_scorer`` (tests pass a fake scorer)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:  # python -m probes.run merge --shards N (probes.shard)
        from probes.shard import merge_main

        return merge_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_lm_eval_flags(args)
    except ProbeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:  # the same list as probes.export --list
        from probes.export import print_probe_list

        try:
            return print_probe_list(args.queries, args.probe, not args.only_extra)
        except ProbeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if not args.probe:
        parser.error("the following arguments are required: --probe/-p")
    try:  # --model-args folded into --dtype/--allow-pickle/--device-map; the rest for loading
        model_kwargs = model_args.apply_to_args(args)
        if args.log_samples and args.output_path is None:
            raise ProbeError("--log-samples needs --output-path DIR (where the samples go)")
    except ProbeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    factory = scorer_factory or default_factory
    routed = scale_cli.route(args, argv, main, factory)  # a model list, a shard or a rank
    if routed is not None:
        return routed
    results = str(args.results) if args.results else None
    con = None
    try:
        if args.limit is not None and args.sample is not None:
            raise ProbeError("--limit and --sample exclude each other: use one")
        for flag, value in (("--limit", args.limit), ("--sample", args.sample),
                            ("--top-k", args.top_k),
                            ("--chunk-size", args.chunk_size), ("--threads", args.threads),
                            ("--batch-size", args.batch_size)):
            if value is not None and value < 1:
                raise ProbeError(f"{flag} must be a positive number (got {value})")
        con = connect(args.results)
        where = results or str(config.results_path())
        for note in parquet_sync.sync(con, Path(where), config.exports_dir()):
            print(f"note: {note}", file=sys.stderr)
        probes = select_probes(con, args.probe, args.queries, not args.only_extra, where)
        opts = RunOptions(top_k=args.top_k, splits=args.split, limit=args.limit,
                          sample=args.sample,
                          chunk_size=args.chunk_size, use_cache=not args.no_cache,
                          progress=not args.quiet,
                          runtime={"threads": args.threads, "batch_size": args.batch_size,
                                   "chunk_size": args.chunk_size, "device": args.device,
                                   "dtype": args.dtype, "model_args": args.model_args_parsed,
                                   "apply_chat_template": args.apply_chat_template})

        def load() -> Any:  # the model, constructed only when a request is not cached
            check_device(args.device)
            extra = {"allow_pickle": True} if args.allow_pickle else {}
            return chat.with_chat_template(factory(
                args.model, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                threads=args.threads, **extra, **model_kwargs, **scale_cli.load_options(args)),
                args.apply_chat_template)

        recorded = chat.matching_stand_in(recorded_scorer(
            con, args.model, args.device, args.dtype), args.apply_chat_template
        ) if opts.use_cache else None
        scorer, plans = open_scorer(con, probes, opts, where, load, recorded)
        t0 = time.perf_counter()
        reports = [run_probe(con, scorer, p, opts, where, plans.get(p.spec.name))
                   for p in probes]
        if args.output_path is not None:  # the metrics read the file opened read-only,
            con.close()                      # sandboxed (eval.sqlfile.sandbox)
            con = None
            con = connect(args.results, read_only=True)
            try:
                written = outputs.write_outputs(
                    con, args.output_path, [r.run_id for r in reports],
                    {"model": args.model, **opts.runtime, "probes": [r.probe for r in reports],
                     "splits": opts.splits, "limit": opts.limit, "sample": opts.sample,
                     "top_k": opts.top_k, "results": where}, log_samples=args.log_samples)
            except OSError as e:  # a full disk, a read-only folder: the runs are stored
                raise ProbeError(f"cannot write the --output-path files under "
                                 f"{args.output_path}: {disk_error(e) or e.strerror or e}; the "
                                 "runs are stored in the results file: free space or choose "
                                 "another --output-path and run the command again (it scores "
                                 "nothing twice)") from e
    except (ProbeError, KgError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except duckdb.Error as e:  # the file went bad under us: never report success
        where_ = Path(results or config.results_path())
        kept = (". Nothing of the chunk being scored was written; the chunks scored before "
                "it are kept and the same command resumes" if disk_error(e) else "")
        print(f"error: {diagnose(where_, e)}{kept}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the chunks scored so far are saved; run the same command again "
              "to resume", file=sys.stderr)
        return 130
    finally:
        if con is not None:
            con.close()
    print(format_reports(reports))
    print(f"\n{len(reports)} probe(s) in {time.perf_counter() - t0:.2f} s")
    if args.output_path is not None:
        print("wrote " + ", ".join(str(w) for w in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

