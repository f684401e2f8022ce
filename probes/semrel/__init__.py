"""The semantic-relation benchmark of Cao, Yamada, Teufel and Tokunaga (``python -m
probes.semrel``).

The probe files are ``queries/semrel/<relation>.rq``; the metrics are SQL in ``eval/semrel/``.
The modules:

- :mod:`probes.semrel.humans`: the human agent, the ``cao-probe-responses`` answers as runs of
  model ``human`` ranked by pooled normalised frequency;
- :mod:`probes.semrel.vocab`: the declared model list (``queries/semrel/shared_vocab.yaml``)
  and the ``model_vocab`` rows of its models;
- ``python -m probes.semrel humans|vocab`` (:mod:`probes.semrel.__main__`).

The relation codes and the probe of each relation are :mod:`kg.relations` (eval reads them too).

Usage::

    python -m probes.export -p 'semrel/*'
    python -m probes.semrel humans            # the human agent into the results file
    python -m probes.run -m smollm2-135m -p 'semrel/*'
    python -m eval.semrel_report
"""

from probes.semrel.humans import (
    HUMAN,
    HumanLoad,
    human_distribution,
    load_humans,
    normalise_answer,
    prompt_key,
    relation_probes,
)
from probes.semrel.vocab import SHARED_VOCAB, shared_vocab_models, write_vocab

__all__ = [
    "HUMAN", "SHARED_VOCAB", "HumanLoad", "human_distribution", "load_humans",
    "normalise_answer", "prompt_key", "relation_probes", "shared_vocab_models", "write_vocab",
]
