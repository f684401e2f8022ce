"""The paper's text forms: templates, the text parts zero-shot probing scores, and the texts
that linear probing and fine-tuning classify.

Templates (placeholders as in :mod:`probes.render`; ``[V]`` is the slot every candidate fills):

- CSJ: ``E1 is conceptually similar with E2.`` (E1 = query entity, E2 = candidate);
- CPJ: the statement followed by ``The statement is true.`` / ``... false.``;
- CiC: ``<sentence> <entity> is a/an <concept>.``, and without the sentence for the
  out-of-context analysis.

Text parts (``part``) and how they are scored (``score`` param of the choice/binary task):

==========  ============================  ===================================================
task        part                          text scored
==========  ============================  ===================================================
csj         query / candidate / whole     E1 / E2 / the whole sentence
cpj         concept / answer / whole      the concept's words / true-false / everything
cic         concept / whole               the concept / the whole text
==========  ============================  ===================================================

Masked LMs score a part by its pseudo-log-likelihood in the whole text; causal LMs by
log P(part | text before it) (``whole``: the whole text from the start token). A causal LM reads
the CSJ query entity and the CPJ concept before the text that differs between candidates, so
those two parts would give every candidate the same score: they are refused for causal LMs.

Seq2seq LMs (T5, BART) get text-to-text forms: the encoder reads a task input and the decoder is
scored on the answer (the CSJ candidate, ``true``/``false``, the CiC concept). The inputs follow
the T5 processors of the COPEN repository (``choose the most similar entity to ...``,
``select concept: ...``); the answer is the candidate's text rather than an option letter, so a
model that was not fine-tuned can rank the candidates.

>>> spec = probe_spec("csj", "candidate", "causal")
>>> spec.prompts, spec.params
(['[W] is conceptually similar with [V].'], {'score': 'slot'})
>>> probe_spec("csj", "query", "causal")
Traceback (most recent call last):
...
probes.errors.ProbeError: COPEN csj: part 'query' cannot be scored by a causal LM: ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probes.copen import PROBES, TASK_OF, task_name
from probes.errors import ProbeError
from probes.render import render
from probes.spec import ProbeSpec

TEMPLATES: dict[str, str] = {
    "csj": "[W] is conceptually similar with [V].",
    "cpj": "[PRE][CONCEPT][POST] The statement is [V].",
    "cic": "[SENTENCE] [ENTITY] is [DET] [V].",
    "cic-no-context": "[ENTITY] is [DET] [V].",
}

SEQ2SEQ_TEMPLATES: dict[str, str] = {
    "csj": "choose the most similar entity to [W]: [OPTIONS] [V]",
    "cpj": "verify the statement: [STATEMENT] [V]",
    "cic": "select concept: [SENTENCE] Select a contextually related concept for [ENTITY] "
           "from [OPTIONS]. [V]",
    "cic-no-context": "select concept: Select a contextually related concept for [ENTITY] "
                      "from [OPTIONS]. [V]",
}

PARTS: dict[str, dict[str, str]] = {
    "csj": {"query": "[W]", "candidate": "slot", "whole": "whole"},
    "cpj": {"concept": "[CONCEPT]", "answer": "slot", "whole": "whole"},
    "cic": {"concept": "slot", "whole": "whole"},
}
"""Task -> part -> the ``score`` param of the choice/binary task (see probes.tasks)."""

DEFAULT_PART: dict[str, str] = {"csj": "candidate", "cpj": "answer", "cic": "concept"}
"""The part every model kind can score (the Table 2 zero-shot column uses it)."""

_CAUSAL_REFUSED = {("csj", "query"): "the query entity comes before the candidate",
                   ("cpj", "concept"): "the concept comes before true/false"}


@dataclass(frozen=True)
class Form:
    """One zero-shot setting: the task, the text part, the model kind, with or without context."""

    task: str
    part: str
    kind: str
    context: bool = True

    def describe(self) -> dict[str, Any]:
        """What goes into the run record (``config.runtime.copen``)."""
        return {"method": "zero-shot", "task": self.task, "part": self.part,
                "context": self.context, "form": "text-to-text" if self.kind == "seq2seq"
                else "cloze"}


def check_form(task: str, part: str, kind: str, context: bool = True) -> Form:
    """Validate a (task, part, kind, context) setting; a ProbeError says what to use instead."""
    task = task_name(task)
    parts = PARTS[task]
    if part not in parts:
        raise ProbeError(f"COPEN {task}: unknown part {part!r}; use one of "
                         f"{', '.join(parts)}")
    if not context and task != "cic":
        raise ProbeError(f"COPEN {task}: only CiC has a context to remove")
    if kind == "causal" and (task, part) in _CAUSAL_REFUSED:
        why = _CAUSAL_REFUSED[(task, part)]
        raise ProbeError(f"COPEN {task}: part {part!r} cannot be scored by a causal LM: {why}, "
                         "so every candidate would get the same score; use part "
                         f"{DEFAULT_PART[task]!r} or 'whole', or a masked LM")
    if kind == "seq2seq" and part != DEFAULT_PART[task]:
        raise ProbeError(f"COPEN {task}: a seq2seq LM is scored on the answer of the "
                         f"text-to-text form; use part {DEFAULT_PART[task]!r}")
    if kind not in ("masked", "causal", "seq2seq"):
        raise ProbeError(f"unknown model kind {kind!r}; use masked, causal or seq2seq")
    return Form(task, part, kind, context)


def template(form: Form) -> str:
    """The template of a form (seq2seq: the text-to-text form)."""
    key = form.task if form.context else f"{form.task}-no-context"
    return (SEQ2SEQ_TEMPLATES if form.kind == "seq2seq" else TEMPLATES)[key]


def probe_spec(task: str, part: str, kind: str, context: bool = True) -> ProbeSpec:
    """The ProbeSpec that scores a COPEN task with the choice/binary task of probes.tasks.

    >>> probe_spec("cpj", "answer", "masked").params
    {'labels': {'true': 'true', 'false': 'false'}, 'score': 'slot'}
    >>> probe_spec("cic", "whole", "masked", context=False).prompts
    ['[ENTITY] is [DET] [V].']
    """
    form = check_form(task, part, kind, context)
    name = PROBES[form.task]
    params: dict[str, Any] = {}
    if form.task == "cpj":
        params["labels"] = {"true": "true", "false": "false"}
    params["score"] = PARTS[form.task][form.part]
    return ProbeSpec(name=name, task=TASK_OF[name], split="all", prompts=[template(form)],
                     params=params,
                     description=f"COPEN {form.task.upper()} zero-shot, part {form.part}")


# --- texts for linear probing and fine-tuning --------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One instance as classification input.

    ``texts``: one text per option (CSJ, CiC: a filled template per candidate) or the single
    statement (CPJ). ``options``: the candidate strings the scores are written for (CPJ:
    ``false``, ``true``). ``gold``: the index of the gold option, None for hidden labels.
    """

    split: str
    instance_id: str
    texts: tuple[str, ...]
    options: tuple[str, ...]
    gold: int | None
    pairwise: bool  # True: texts[i] scores options[i]; False: one text, one logit per option


CPJ_OPTIONS = ("false", "true")


def example(task: str, split: str, instance_id: str, target: str | None, gold: list[str],
            candidates: list[str], fields: Mapping[str, Any]) -> Example:
    """The classification input of one instance (the same templates as zero-shot).

    >>> e = example("csj", "dev", "i", "Rose", ["Marine One"], ["Marine One", "Ugadi"], {})
    >>> e.texts[1], e.gold
    ('Rose is conceptually similar with Ugadi.', 0)
    >>> example("cpj", "dev", "i", "S.", ["true"], [], {"statement": "Owls fly."}).texts
    ('Owls fly.',)
    """
    task = task_name(task)
    if task == "cpj":
        statement = str(fields.get("statement", target or ""))
        g = CPJ_OPTIONS.index(gold[0].lower()) if gold else None
        return Example(split, instance_id, (statement,), CPJ_OPTIONS, g, pairwise=False)
    options = list(dict.fromkeys([*gold, *candidates]))
    key = "csj" if task == "csj" else "cic"
    texts = tuple(render(TEMPLATES[key], fields, target=target, slot=o).text for o in options)
    g = options.index(gold[0]) if gold else None
    return Example(split, instance_id, texts, tuple(options), g, pairwise=True)
