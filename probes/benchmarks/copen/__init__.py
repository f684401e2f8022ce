"""COPEN (Peng et al., EMNLP 2022): conceptual similarity judgment (CSJ), conceptual property
judgment (CPJ) and conceptualization in contexts (CiC), end to end.

Modules (one job each):

- :mod:`probes.benchmarks.copen.released`: read the released COPEN files (task1/2/3 train/dev/test
JSON)
  into the results file's ``instances`` table as probes ``copen/csj``, ``copen/cpj``,
  ``copen/cic``;
- :mod:`probes.benchmarks.copen.forms`: the scored text parts, Table 8's part per model, the Table 9
  text-to-text forms and the texts linear probing / fine-tuning classify;
- :mod:`probes.benchmarks.copen.marked`: zero-shot prompts as marked token sequences (the authors');
- :mod:`probes.benchmarks.copen.tokenscore`: scores of every part (by default the authors' executed
  method: every token scored alone in the whole sentence, a part the mean over its tokens;
  the progressive span method as an option; the ``all`` negative perplexity);
- :mod:`probes.benchmarks.copen.zeroshot`: zero-shot probing, one run per (task, part, context);
- test predictions in the leaderboard's format and the part Table 8 reports per model read
  results only: :mod:`eval.copen_submission`, :mod:`eval.copen_table8`;
- :mod:`probes.benchmarks.copen.construct`: build CSJ instances and CiC concept chains from Wikidata
with the
  SPARQL files of ``queries/copen/`` (splits over the taxonomy, members, assembly);
- ``python -m probes.benchmarks.copen``: the command line (load, zero-shot, construct; with
submission
  and report from ``eval``, added by :mod:`probes.app.cli`).

Linear probing and fine-tuning live in :mod:`probes.benchmarks.copen.linear` and
:mod:`probes.benchmarks.copen.finetune`
(the shared training loop in :mod:`probes.engine.train`); the
metrics in ``eval/copen/*.sql`` and the Table 2 report in :mod:`eval.copen_report`.

>>> PROBES["csj"], TASK_OF["copen/cpj"]
('copen/csj', 'binary')
>>> len(TRAIN_TOPS)
11
"""

from __future__ import annotations

PROBES: dict[str, str] = {"csj": "copen/csj", "cpj": "copen/cpj", "cic": "copen/cic"}
"""COPEN task -> the probe name its instances have in the results file."""

TASK_OF: dict[str, str] = {"copen/csj": "choice", "copen/cpj": "binary", "copen/cic": "choice"}
"""Probe name -> the kgprobe task (probes.engine.tasks) that scores it."""

TRAIN_TOPS: tuple[str, ...] = (
    "Organisation", "Name", "Award", "MeanOfTransportation", "Colour", "Language", "Person",
    "Holiday", "Work", "Currency", "EthnicGroup",
)  # fmt: skip
"""Top-level concepts whose concepts make the train/dev side; the other twelve make the test
side (the same list is written in ``queries/copen/splits.rq``, where the split is declared)."""

CSJ_CANDIDATES = 21
"""Candidates per CSJ instance in the released files: the answer and 20 distractors."""


def task_name(name: str) -> str:
    """``csj``/``cpj``/``cic`` from a task or probe name (``copen/csj``, ``CSJ``).

    >>> task_name("copen/cic"), task_name("CSJ")
    ('cic', 'csj')
    """
    key = name.lower().removeprefix("copen/")
    if key not in PROBES:
        raise ValueError(f"unknown COPEN task {name!r}; use csj, cpj or cic")
    return key
