"""Subsumption inference (OntoLAMA): does the premise concept ``[SUB]`` fall under ``[SUPER]``?

Every probe of task ``subsumption`` has templates (``prompts``) with a slot ``[V]`` and label-
word sets (``params.label_words``), each mapping the two classes ``"1"`` (subsumption) and
``"0"`` (no subsumption) to one or more words::

    label_words:
      L1: {"1": ["Yes"], "0": ["No"]}
      L3: {"1": ["Yes", "Right"], "0": ["No", "Wrong"]}

For each instance, each template and each label-word set, every label word fills ``[V]`` and is
scored as one item (one ``scores`` row: ``candidate`` = the word, ``label`` = its class):

- masked LMs: the pseudo-log-likelihood of the slot span (``pll`` with the span of ``[V]``).
  For a word that is one token this is exactly log P(word at the mask | the rest of the
  prompt), OntoLAMA's label-word probability at ``[MASK]``; a word of several tokens gets the
  sum of each of its tokens masked in turn. (The backends' ``topk`` ranks the whole vocabulary;
  it cannot be asked for given words, hence ``pll``.)
- causal and seq2seq LMs: ``loglik(text before [V], the word and the rest of the template)``,
  the likelihood of the filled template up to a term that is the same for every word (the
  text before the slot), so the comparison is the paper's "likelihood of the template filled
  with each class's words". ``params.score`` changes the scored part: ``whole`` (the whole
  text: same ranking, more work), ``slot`` (the word alone; the default for masked LMs) or
  ``continuation`` (the default for the others).

**prompt_id encoding.** ``prompt_id = template_index * n_sets + set_index``, where
``template_index`` counts ``prompts`` from 0 (T1 = 0, T2 = 1) and ``set_index`` is the position
of the set's *name* in the sorted list of ``params.label_words`` names (L1 = 0, L2 = 1,
L3 = 2), ``n_sets`` their number. probes.engine.run writes one ``prompts`` row per prompt id of the
run (template, label-word set, words: docs/results.md), which the metric SQL
(eval/ontolama/*.sql) joins. :func:`decode_prompt_id` decodes an id in Python.

A class's score comes from its words' scores (L3 has two words per class): the paper's sum of
their probabilities (default) or OpenPrompt's mean of their log-probabilities; the class with
the higher score is the prediction, and gold is ``instance.gold[0]``. That is done in SQL
(eval/ontolama/_class_scores.sql, ontolama_accuracy.sql), not here.

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import CAUSAL_LM, MASKED_LM
>>> spec = ProbeSpec(name="o/a", task="subsumption", split="test",
...                  prompts=["It is [A_SUB][SUB]? [V], it is [A_SUPER][SUPER]."],
...                  params={"label_words": {"L2": {"1": ["Right"], "0": ["Wrong"]},
...                                          "L1": {"1": ["Yes"], "0": ["No"]}}})
>>> inst = Instance("o/a", "test", "i1", "owl", ["1"], [],
...                 {"sub": "owl", "a_sub": "an ", "super": "bird", "a_super": "a "})
>>> items = TASK.items(inst, spec, TaskContext(CAUSAL_LM))
>>> [(it.prompt_id, it.candidate, it.label) for it in items]
[(0, 'Yes', '1'), (0, 'No', '0'), (1, 'Right', '1'), (1, 'Wrong', '0')]
>>> items[0].requests[0].args
('It is an owl?', ' Yes, it is a bird.')
>>> TASK.items(inst, spec, TaskContext(MASKED_LM))[0].requests[0].args
('It is an owl? Yes, it is a bird.', (14, 17))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from probes.engine.errors import ProbeError
from probes.engine.render import placeholders, render
from probes.engine.tasks import (
    SCORE_PARTS,
    Instance,
    Item,
    Task,
    TaskContext,
    TaskParams,
    one_of,
    span_request,
)

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec

CLASSES = ("1", "0")
"""The two classes: ``"1"`` = the subsumption holds, ``"0"`` = it does not."""

SUBSUMPTION_PARTS = ("continuation", *(p for p in SCORE_PARTS
                                        if p not in ("continuation", "conditional")))
"""The parts a subsumption probe may score: the scored tasks' :data:`SCORE_PARTS` but
``conditional`` (a choice score), its default ``continuation`` first."""


def label_sets(spec: ProbeSpec) -> list[tuple[str, dict[str, list[str]]]]:
    """``params.label_words`` as (name, {class: words}) pairs, sorted by name (the order of
    the ``set_index`` in prompt ids). Errors say what to write.

    >>> from probes.engine.spec import ProbeSpec
    >>> s = ProbeSpec(name="o/a", task="subsumption", split="t",
    ...               params={"label_words": {"B": {"1": "Yes", "0": ["No"]}}})
    >>> label_sets(s)
    [('B', {'1': ['Yes'], '0': ['No']})]
    >>> label_sets(ProbeSpec(name="o/a", task="subsumption", split="t",
    ...                      params={"label_words": {"B": {"1": ["Yes"]}}}))
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: probe o/a: params label_words.B must map the classes "1" and ...
    """
    try:
        return _label_sets(spec.params.get("label_words"))
    except ValueError as e:
        raise ProbeError(f"probe {spec.name}: {e}") from e


def _label_sets(raw: Any) -> list[tuple[str, dict[str, list[str]]]]:
    """:func:`label_sets` of the raw ``label_words`` value; ValueError when it is malformed."""
    example = 'label_words: {L1: {"1": [Yes], "0": [No]}}'
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"a subsumption probe needs params label_words, a "
                         f"mapping of set names to label words, e.g. {example}")
    out: list[tuple[str, dict[str, list[str]]]] = []
    for name in sorted(raw, key=str):
        words = raw[name]
        if not isinstance(words, dict) or {str(k) for k in words} != set(CLASSES):
            raise ValueError(f"params label_words.{name} must map the "
                             f'classes "1" and "0" (quoted) to words, e.g. {example}')
        classes: dict[str, list[str]] = {}
        for cls in CLASSES:
            value = next(v for k, v in words.items() if str(k) == cls)
            value = [value] if isinstance(value, str) else value
            if (not isinstance(value, list) or not value
                    or not all(isinstance(w, str) and w.strip() for w in value)):
                raise ValueError(f"params label_words.{name}.{cls} must be "
                                 f"a word or a non-empty list of words (got {value!r}); quote "
                                 "Yes/No/On/Off, which YAML reads as booleans")
            classes[cls] = list(value)
        shared = set(classes["1"]) & set(classes["0"])
        if shared:
            raise ValueError(f"params label_words.{name} lists "
                             f"{sorted(shared)} for both classes")
        out.append((str(name), classes))
    return out


def prompt_id(template_index: int, set_index: int, n_sets: int) -> int:
    """The ``scores.prompt_id`` of a (template, label-word set) pair.

    >>> [prompt_id(t, s, 3) for t in range(2) for s in range(3)]
    [0, 1, 2, 3, 4, 5]
    """
    return template_index * n_sets + set_index


def decode_prompt_id(pid: int, set_names: list[str]) -> tuple[str, str]:
    """(template name ``T<n>``, label-word set name) of a prompt id; ``set_names`` are the
    names of ``params.label_words`` (any order: they are sorted here, as in the task).

    >>> decode_prompt_id(4, ["L3", "L1", "L2"])
    ('T2', 'L2')
    """
    names = sorted(set_names)
    return f"T{pid // len(names) + 1}", names[pid % len(names)]


class SubsumptionParams(TaskParams):
    """The ``params`` of a subsumption probe."""

    label_words: dict[Any, Any] | None = Field(None, description=(
        'set name -> `{"1": words, "0": words}` (required to score; OntoLAMA: L1, L2, L3)'))
    score: str | None = Field(None, description=(
        "the part scored: `slot` (default for masked LMs), `continuation` (default for the "
        "others) or `whole`"))

    @field_validator("label_words")
    @classmethod
    def _words(cls, v: dict[Any, Any] | None) -> dict[Any, Any] | None:
        if v is not None:
            _label_sets(v)
        return v

    @field_validator("score")
    @classmethod
    def _score(cls, v: str | None) -> str | None:
        return None if v is None else str(one_of(v, SUBSUMPTION_PARTS))


class SubsumptionTask(Task):
    name = "subsumption"
    description = ("OntoLAMA subsumption inference: every label word of every set in "
                   "`label_words` fills the slot `[V]` and is scored")
    Params = SubsumptionParams

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        self.typed_params(spec)
        label_sets(spec)
        if not spec.prompts:
            raise ProbeError(f"probe {spec.name}: a subsumption probe needs 'prompts:' with a "
                             "slot [V] for the label words")
        for t in spec.prompts:
            if placeholders(t).count("V") != 1:
                raise ProbeError(f"probe {spec.name}: template {t!r} must hold exactly one "
                                 "slot [V] for the label words")

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        gold = inst.gold[0] if inst.gold else None
        if gold is not None and str(gold) not in CLASSES:
            raise ProbeError(f"probe {spec.name}: instance {inst.instance_id} has gold "
                             f"{gold!r}; a subsumption probe's gold must be 1 or 0")
        sets = label_sets(spec)
        p: SubsumptionParams = self.typed_params(spec)
        part = p.score or ("slot" if ctx.slot_scoring == "pll" else "continuation")
        out: list[Item] = []
        for t_index, template in enumerate(spec.prompts):
            for s_index, (_name, classes) in enumerate(sets):
                pid = prompt_id(t_index, s_index, len(sets))
                for cls, words in classes.items():
                    for word in words:
                        out.append(self._item(inst, template, pid, word, cls, part, ctx))
        return out

    @staticmethod
    def _item(inst: Instance, template: str, pid: int, word: str, cls: str, part: str,
              ctx: TaskContext) -> Item:
        fields: dict[str, Any] = inst.fields
        r = render(template, fields, target=inst.target, slot=word)
        request = span_request(r, part, template, ctx.slot_scoring)
        return Item(inst.split, inst.instance_id, pid, word, cls, r.text, (request,))


TASK = SubsumptionTask()
