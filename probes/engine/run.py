"""Score probe instances with a model: ``python -m probes.engine.run --model NAME --probe PATTERN``.

For each chosen probe: read its instances from the results file (written by
``python -m probes.engine.export``), turn them into scoring requests with the probe's task module
(probes.engine.tasks), answer the requests from the score cache or the model, and write the
``runs``,
``scores`` and ``responses`` rows. Scores are committed chunk by chunk (probes.engine.cache), so a
run that is killed resumes where it stopped when started again; a re-run with nothing new does no
model work.

This module is only the ``python -m`` entry: the engine lives in :mod:`probes.engine.runner`, one
job per module (plan, select, caching, scoring, runrecord, probe, cli), and is imported from
there; the command itself (``python -m probes.engine.run``, ``kgprobe run``) is
:func:`probes.app.run.main`: with ``--output-path`` it computes metrics, so it lives in the
application layer.
"""

from __future__ import annotations

if __name__ == "__main__":  # the command is in the application layer (it writes metrics)
    from probes.app.run import main

    raise SystemExit(main())
