"""The engine behind ``python -m probes.engine.run``, one job per module:

- :mod:`probes.engine.runner.plan`: a probe's instances, items, keyed requests, chunks and run id;
- :mod:`probes.engine.runner.select`: the probe files a run scores (exported and current);
- :mod:`probes.engine.runner.caching`: the scorer behind its cache (answers cached requests, loads
  the model only when one is not: :func:`~probes.engine.runner.caching.needs_model`);
- :mod:`probes.engine.runner.scoring`: answering requests with a backend, answers into rows;
- :mod:`probes.engine.runner.runrecord`: the record a run keeps in the results file (its ``runs``
  row, stale rows, vocabularies);
- :mod:`probes.engine.runner.probe`: scoring one probe end to end, and its report;
- :mod:`probes.engine.runner.command`: the command line's parser, device check and scorer factory.

:mod:`probes.engine.run` is the command (``main``) and re-exports the public names.
"""
