"""The semantic-relation benchmark of Cao, Yamada, Teufel and Tokunaga (``python -m
probes.benchmarks.semrel``).

The probe files are ``queries/semrel/<relation>.rq``; the metrics are SQL in ``eval/semrel/``.
The modules:

- :mod:`probes.benchmarks.semrel.humans`: the human agent, the ``cao-probe-responses`` answers as
runs of
  model ``human`` ranked by pooled normalised frequency;
- :mod:`probes.benchmarks.semrel.vocab`: the declared model list
(``queries/semrel/shared_vocab.yaml``)
  and the ``model_vocab`` rows of its models;
- ``python -m probes.benchmarks.semrel humans|vocab`` (:mod:`probes.benchmarks.semrel.__main__`).

The relation codes and the probe of each relation are :mod:`kg.relations` (eval reads them too).

Usage::

    python -m probes.engine.export -p 'semrel/*'
    python -m probes.benchmarks.semrel humans            # the human agent into the results file
    python -m probes.engine.run -m smollm2-135m -p 'semrel/*'
    python -m eval.semrel_report
"""

from probes.benchmarks.semrel.humans import (
    HUMAN,
    HumanLoad,
    human_distribution,
    load_humans,
    normalise_answer,
    prompt_key,
    relation_probes,
)
from probes.benchmarks.semrel.vocab import SHARED_VOCAB, shared_vocab_models, write_vocab

__all__ = [
    "HUMAN", "SHARED_VOCAB", "HumanLoad", "human_distribution", "load_humans",
    "normalise_answer", "prompt_key", "relation_probes", "shared_vocab_models", "write_vocab",
]
