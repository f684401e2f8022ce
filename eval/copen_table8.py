"""Which zero-shot part the paper reports per model: Table 8 of Peng et al. (COPEN), the
text part each model's Table 2 zero-shot cell uses, and the part of the chain-level CPJ cells
(the authors' ``merge_result``). Every part is scored and stored as its own run
(``runs.config.runtime.copen.part``, :data:`probes.results.copen.PARTS`); this module only
chooses among them, for the report (:mod:`eval.copen_report`) and the leaderboard files
(:mod:`eval.copen_submission`).

>>> table8_part("bert", "masked", "csj"), table8_part("gpt_neo", "causal", "cpj")
('query', 'all')
>>> table8_part("llama", "causal", "cic"), table8_part("t5", "seq2seq", "copen/cic")
('concept', 'all')
"""

from __future__ import annotations

from probes.results import ProbeError
from probes.results.copen import DEGENERATE, PARTS

TABLE8: dict[str, dict[str, str]] = {
    "bert": {"csj": "query", "cpj": "concept", "cic": "all"},
    "roberta": {"csj": "query", "cpj": "concept", "cic": "concept"},
    "gpt2": {"csj": "all", "cpj": "all", "cic": "concept"},
    "gpt_neo": {"csj": "all", "cpj": "concept", "cic": "concept"},
    "bart": {"csj": "query", "cpj": "concept", "cic": "concept"},
    "t5": {"csj": "query", "cpj": "concept", "cic": "all"},
}
"""Table 8 of the paper: the text part each model's zero-shot accuracy uses (Table 2)."""

CHAIN_PART: dict[str, str] = {"bert": "answer", "roberta": "answer", "gpt2": "answer",
                              "gpt_neo": "answer", "bart": "all", "t5": "answer"}
"""The part of the chain-level CPJ cells of Table 2, as the authors' ``merge_result``
(``code/utils.py``) takes it: ``answer``, BART ``all`` (its ``bert-small`` branch, ``concept``,
is unreachable: bert-small is not one of the six main models). With these parts their stored
scores (``code/probing/task2/output/results``) give the published 22.5 / 21.6 / 14.7 / 22.5 /
20.6 / 22.5; with the instance-level part (Table 8) they would give 13.7 / 11.8 / 9.8 / 2.9 /
15.7 / 12.7."""

KIND_ROW = {"masked": "bert", "causal": "gpt2", "seq2seq": "t5"}
"""The Table 8 row a model not in the table follows: its kind's first model."""


def _task(name: str) -> str:
    key = name.lower().removeprefix("copen/")
    if key not in PARTS:
        raise ValueError(f"unknown COPEN task {name!r}; use csj, cpj or cic")
    return key


def table8_row(model_type: str | None, kind: str) -> str:
    """The Table 8 row of a model (its config's ``model_type``, else by kind)."""
    mt = (model_type or "").lower().replace("-", "_")
    if mt in TABLE8:
        return mt
    if kind not in KIND_ROW:
        raise ProbeError(f"unknown model kind {kind!r}; use masked, causal or seq2seq")
    return KIND_ROW[kind]


def table8_part(model_type: str | None, kind: str, task: str) -> str:
    """The part Table 8 uses for this model and task; a part that is degenerate for the kind
    (GPT-Neo's CPJ concept, for a causal LM) falls back to ``all``."""
    part = TABLE8[table8_row(model_type, kind)][_task(task)]
    return "all" if (kind, _task(task), part) in DEGENERATE else part


def chain_part(model_type: str | None, kind: str) -> str:
    """The part chain-level CPJ uses for this model (:data:`CHAIN_PART`; a model outside the
    table follows its kind's first model).

    >>> chain_part("bart", "seq2seq"), chain_part("bert", "masked"), chain_part(None, "causal")
    ('all', 'answer', 'answer')
    """
    return CHAIN_PART[table8_row(model_type, kind)]
