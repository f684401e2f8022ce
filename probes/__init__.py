"""kgprobe's middle layer: prompts, models and runs, in one package per kind of thing.

- :mod:`probes.engine`: probe files (header schema, rendering), export, runs, tasks, the score
  cache, model names and options: what every benchmark shares;
- :mod:`probes.backends`: the model backends (masked, causal, seq2seq, server) behind one
  protocol;
- :mod:`probes.results`: the results file's contract (schema and its only writers), the one
  part of ``probes`` that ``eval`` may import;
- :mod:`probes.benchmarks`: one package per benchmark (bear, copen, ontolama, semrel): what a
  benchmark needs beyond SPARQL probe files and SQL metrics;
- :mod:`probes.app`: the ``kgprobe`` command and the notebook API, the one layer that sees both
  the engine and ``eval``.

Each package's ``__init__`` says what others may import from it; docs/architecture.md says
which package may import which and what the tests enforce.
"""
