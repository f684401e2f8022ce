"""One package per benchmark: what it needs beyond its SPARQL probe files (``queries/<name>/``)
and its SQL metrics (``eval/<name>/``).

- :mod:`probes.benchmarks.bear`: BEAR (Wiland et al. 2024): store statistics, subsets;
- :mod:`probes.benchmarks.copen`: COPEN (Peng et al. 2022): released files, zero-shot scoring,
  linear probing, fine-tuning, submissions;
- :mod:`probes.benchmarks.ontolama`: OntoLAMA (He et al. 2023): the builder, the verbaliser,
  splits, K-shot;
- :mod:`probes.benchmarks.semrel`: Cao et al.'s semantic relations: the human agent, the shared
  vocabulary.

Others may import: :mod:`probes.app` (the commands) and the engine's export, which calls a
probe header's ``builder`` (``probes.benchmarks.ontolama:instances``). A benchmark package
imports the engine, :mod:`probes.backends` and :mod:`probes.results`; never another benchmark,
:mod:`probes.app` or ``eval``.
"""
