"""The paper's text forms: the scored text parts of zero-shot probing, the part Table 8 uses
per model, the Table 9 text-to-text forms, and the texts linear probing / fine-tuning classify.

Zero-shot prompts are built token by token in :mod:`probes.benchmarks.copen.marked` and scored in
:mod:`probes.benchmarks.copen.tokenscore`; every part below is scored for every model kind and
stored
as its own run (the report picks one per model: :func:`eval.copen_table8.table8_part`):

==========  ====================================  ==============================================
task        parts                                 text scored
==========  ====================================  ==============================================
csj         query / candidate / all               E1 / E2 / every token (negative perplexity)
cpj         concept / answer / all                the concept's words / true-false / every token
cic         concept / all                         the concept / every token
==========  ====================================  ==============================================

A causal LM reads the CSJ query entity and the CPJ concept before anything that differs
between the options, so those two parts give every option the same score (the metrics count
a tie as wrong): they are stored all the same, and :data:`DEGENERATE` names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probes.benchmarks.copen import task_name
from probes.benchmarks.copen.marked import joined, pieces_for
from probes.engine.errors import ProbeError
from probes.results.copen import DEGENERATE, PARTS  # noqa: F401 (re-exported)

# --- Table 9: text-to-text forms (T5 linear probing and fine-tuning) --------------------------


def letters(n: int) -> list[str]:
    """Option letters A, B, ... (Table 9).

    >>> letters(3)
    ['A', 'B', 'C']
    """
    if n > 26:
        raise ProbeError(f"COPEN text-to-text: {n} options exceed the 26 option letters")
    return [chr(ord("A") + i) for i in range(n)]


def _options(options: list[str]) -> str:
    return ", ".join(f"({x}) {o}" for x, o in zip(letters(len(options)), options, strict=True))


def text_to_text(task: str, fields: Mapping[str, Any], options: list[str]) -> str:
    """The Table 9 input of one instance.

    >>> text_to_text("csj", {"query": "Inter Milan"}, ["Milan", "Pohang Steelers"])
    'choose the most similar entity to Inter Milan: (A) Milan, (B) Pohang Steelers.'
    >>> text_to_text("cpj", {"statement": "Mammals raise their young on milk."}, [])
    'verify: Mammals raise their young on milk.'
    >>> f = {"sentence": "Dolly is running on the grassland.", "entity": "Dolly",
    ...      "entity_pos": [0, 1]}
    >>> text_to_text("cic", f, ["Horse", "Mammal", "Animal"])  # doctest: +NORMALIZE_WHITESPACE
    'select concept: <entity> Dolly </entity> is running on the grassland. Select a
     contextually related concept for Dolly from (A) Horse, (B) Mammal, (C) Animal.'
    """
    task = task_name(task)
    if task == "csj":
        return f"choose the most similar entity to {fields['query']}: {_options(options)}."
    if task == "cpj":
        return f"verify: {fields['statement']}"
    words = str(fields["sentence"]).split()
    pos = fields.get("entity_pos")
    if pos:
        a, b = int(pos[0]), int(pos[1])
        words = [*words[:a], "<entity>", *words[a:b], "</entity>", *words[b:]]
    return (f"select concept: {' '.join(words)} Select a contextually related concept for "
            f"{fields['entity']} from {_options(options)}.")


def text_to_text_target(task: str, gold: int) -> str:
    """The Table 9 label: the option letter (CSJ, CiC) or ``true``/``false`` (CPJ, gold 1/0).

    >>> text_to_text_target("csj", 2), text_to_text_target("cpj", 1)
    ('C', 'true')
    """
    if task_name(task) == "cpj":
        return CPJ_OPTIONS[gold]
    return letters(gold + 1)[gold]


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
    """The classification input of one instance (the zero-shot prompts, as text).

    >>> e = example("csj", "dev", "i", "Rose", ["Marine One"], ["Marine One", "Ugadi"],
    ...             {"query": "Rose"})
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
    texts = tuple(prompt_text(task, dict(fields), o) for o in options)
    g = options.index(gold[0]) if gold else None
    return Example(split, instance_id, texts, tuple(options), g, pairwise=True)


def prompt_text(task: str, fields: dict[str, Any], option: str) -> str:
    """The zero-shot prompt of one option as text (:mod:`probes.benchmarks.copen.marked`)."""
    t = task_name(task)
    return joined(t, pieces_for(t, fields, option))
