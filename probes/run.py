"""Score probe instances with a model: ``python -m probes.run --model NAME --probe PATTERN``.

For each chosen probe: read its instances from the results file (written by
``python -m probes.export``), turn them into scoring requests with the probe's task module
(probes.tasks), answer the requests from the score cache or the model, and write the ``runs``,
``scores`` and ``responses`` rows. Scores are committed chunk by chunk (probes.cache), so a run
that is killed resumes where it stopped when started again; a re-run with nothing new does no
model work.

The engine lives in :mod:`probes.runner`, one job per module (plan, select, caching,
scoring, runrecord, probe, cli); this module re-exports the names other modules import from it
(``run_probe``, ``RunOptions``, ``load_instances``, ...). The command itself
(``python -m probes.run``, ``kgprobe run``) is :func:`probes.app.run.main`: with
``--output-path`` it computes metrics, so it lives in the application layer.
"""

from __future__ import annotations

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
    task_context,
)
from probes.runner.probe import RunReport, format_reports, run_probe
from probes.runner.runrecord import record_vocab
from probes.runner.scoring import score_requests
from probes.runner.select import select_probes

_score = score_requests  # the name scripts/bench_semrel.py imports

__all__ = [
    "DEFAULT_CHUNK", "CachingScorer", "Plan", "RecordedScorer", "RunOptions", "RunReport",
    "ScorerFactory", "build_parser", "check_device", "chunks", "format_reports",
    "load_instances", "needs_model", "open_scorer", "plan", "record_vocab",
    "recorded_scorer", "run_id", "run_identity", "run_probe", "select_probes", "task_context",
]


if __name__ == "__main__":  # the command is in the application layer (it writes metrics)
    from probes.app.run import main

    raise SystemExit(main())

