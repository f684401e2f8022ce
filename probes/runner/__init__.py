"""The engine behind ``python -m probes.run``, one job per module:

- :mod:`probes.runner.plan`: a probe's instances, items, keyed requests, chunks and run id;
- :mod:`probes.runner.select`: the probe files a run scores (exported and current);
- :mod:`probes.runner.caching`: the scorer behind its cache (answers cached requests, loads
  the model only when one is not: :func:`~probes.runner.caching.needs_model`);
- :mod:`probes.runner.scoring`: answering requests with a backend, answers into rows;
- :mod:`probes.runner.runrecord`: the record a run keeps in the results file (its ``runs``
  row, stale rows, vocabularies);
- :mod:`probes.runner.probe`: scoring one probe end to end, and its report;
- :mod:`probes.runner.command`: the command line's parser, device check and scorer factory.

:mod:`probes.run` is the command (``main``) and re-exports the public names.
"""
