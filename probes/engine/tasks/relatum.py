"""Relatum prediction: the model's top-k fillers of the slot ``[V]`` (Cao et al.).

Each template in ``prompts`` gives one ``topk`` request per instance; the ranked answers go to
the ``responses`` table (rank 1 = most probable). Masked and seq2seq LMs see the slot as their
mask token; causal LMs see the text before the slot, so ``[V]`` must end the template (a final
``.`` is dropped).

Params:

- ``top_k``: how many answers to keep (default: ``--top-k`` of probes.engine.run, 10).
- ``slot_det``: the article written for a ``[DET]`` right before the slot, whose word is
  unknown: ``"a"``, ``"an"``, a fixed text such as ``"the"`` or ``"a(n)"`` (one word other than
  these is refused: ``"auto"`` is not a value), or ``"both"`` (default): the
  prompt is scored twice, with "a" and with "an", and the two slot distributions are mixed,
  P(w) = f_a * P(w | "a") + f_an * P(w | "an"), on the device before the top-k. Templates
  without a ``[DET]`` before the slot are scored once.
- ``det_weights``: the mixing weights ``{"a": f_a, "an": f_an}``, normalised to sum 1. Default
  DET_WEIGHTS: the relative frequencies of "a" (21,626 per million words) and "an" (3,430)
  in the British National Corpus, as listed by Leech, Rayson and Wilson, *Word Frequencies in
  Written and Spoken English* (2001): 0.863 / 0.137.
- ``capitalize``: upper-case the first character of the prompt.
- ``lower_case``: lower-case the first character of the prompt (the article that starts a
  sentence is otherwise capitalised); Cao et al.'s probes are all lower case ("a wall is a part
  of [DET] [V]", eq. 10). Wins over ``capitalize``.
- ``vocab``: which answers count: ``lowercase`` (default; lower-case whole words of the
  model's vocabulary, like WordNet lemmas), ``words`` (every whole word) or ``all`` (the whole
  vocabulary ranked, as Cao et al. section 5: sub-word pieces, punctuation and capitalised words
  keep their place in the list as ``⟨token⟩``, probes.engine.wordvocab.nonword, and never equal a
  word, so a non-word top-1 scores as a miss).
- ``top_k_gold``: keep at least as many answers as the instance's gold set has, rounded up to
  a power of two (Cao et al. eq. 13 sets completeness's k to the relatum set's size, and
  distinguishability's L_k has k = that size: a list cut at ``top_k`` below it would cut k).
- ``inflections``: off by default (a response must equal a gold answer). ``noun``, ``verb``,
  ``adjective``, ``adverb`` or ``any``: a response that is an inflected form of a gold answer
  of that part of speech by WordNet's morphology counts as that answer ("fingers" for
  "finger", "teeth" for "tooth"); the export stores the forms (probes.engine.inflections,
  kg.morphology) and the relatum metrics match them. Scoring does not change.

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import CAUSAL_LM, MASKED_LM
>>> spec = ProbeSpec(name="d/r", task="relatum", split="test", prompts=["[DET] [W] is [DET] [V]."])
>>> inst = Instance("d/r", "test", "i1", "owl", ["bird"], [], {})
>>> [r.args for r in TASK.items(inst, spec, TaskContext(MASKED_LM, 5))[0].requests]
[('An owl is a [MASK].', 'An owl is an [MASK].')]
>>> item = TASK.items(inst, spec, TaskContext(CAUSAL_LM, 2))[0]
>>> [(r.args, dict(r.options)["mix"]) for r in item.requests]
[(('An owl is a', 'An owl is an'), (0.8631, 0.1369))]
>>> low = ProbeSpec(name="d/r", task="relatum", split="test", prompts=["[DET] [W] is [DET] [V]"],
...                 params={"lower_case": True})
>>> TASK.items(inst, low, TaskContext(CAUSAL_LM, 2))[0].requests[0].args
('an owl is a', 'an owl is an')
>>> rows = TASK.rows(item, [[("bird", .3), ("eagle", .2)]])
>>> [(r.rank, r.token, r.probability) for r in rows.responses]
[(1, 'bird', 0.3), (2, 'eagle', 0.2)]
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from pydantic import Field, StrictInt, field_validator

from probes.engine.errors import ProbeError
from probes.engine.render import causal_prompt, placeholders, render
from probes.engine.tasks import Instance, Item, Request, Task, TaskContext, TaskParams, one_of

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec

VOCABS = ("lowercase", "words", "all")
INFLECTIONS = ("noun", "verb", "adjective", "adverb", "any")
DET_WEIGHTS = {"a": 21626, "an": 3430}
"""Per-million frequencies of "a" and "an" in the BNC (Leech, Rayson and Wilson 2001)."""


def det_mix(weights: Any) -> tuple[float, float]:
    """The normalised (f_a, f_an) mixing weights, rounded to 4 digits (they enter cache keys).

    >>> det_mix({"a": 3, "an": 1})
    (0.75, 0.25)
    >>> det_mix({"a": 1})
    Traceback (most recent call last):
    ...
    ValueError: params det_weights must map both "a" and "an" to non-negative numbers that ...
    """
    ok = isinstance(weights, dict) and set(weights) == {"a", "an"} and all(
        isinstance(v, int | float) and v >= 0 for v in weights.values())
    total = sum(weights.values()) if ok else 0
    if not ok or total <= 0:
        raise ValueError('params det_weights must map both "a" and "an" to non-negative '
                         f'numbers that are not both 0, e.g. {{"a": 0.86, "an": 0.14}}; got '
                         f'{weights!r}')
    return round(weights["a"] / total, 4), round(weights["an"] / total, 4)


def _det_before_slot(template: str) -> bool:
    names = placeholders(template)
    return any(a == "DET" and b == "V" for a, b in itertools.pairwise(names))


class RelatumParams(TaskParams):
    """The ``params`` of a relatum probe."""

    top_k: StrictInt | None = Field(None, ge=1, description=(
        "how many answers to keep (default: `--top-k` of probes.engine.run, 10)"))
    slot_det: str = Field("both", description=(
        "the article before the slot: `a`, `an`, `both` (the two distributions mixed by "
        "`det_weights`), or a fixed text that is not one word other than `the` (`the`, `a(n)`)"))
    det_weights: dict[str, Any] | None = Field(None, description=(
        'the mixing weights `{"a": f_a, "an": f_an}` (default: BNC frequencies, 0.863 / 0.137)'))
    capitalize: bool = Field(False, description="upper-case the prompt's first character")
    lower_case: bool = Field(False, description=(
        "lower-case the prompt's first character (wins over `capitalize`)"))
    vocab: str = Field("lowercase", description=(
        "which answers count: `lowercase` (lower-case whole words), `words` (every whole word) "
        "or `all` (the whole vocabulary, non-words marked `⟨token⟩`)"))
    top_k_gold: bool = Field(False, description=(
        "keep at least as many answers as the instance's gold set, rounded up to a power of 2"))
    inflections: str | None = Field(None, description=(
        "also count an inflected form of a gold answer as that answer, by WordNet's morphology "
        "(\"fingers\" for \"finger\"): `noun`, `verb`, `adjective`, `adverb` or `any` (the forms "
        "are found at export and stored in `gold_forms`); default off: exact match"))

    @field_validator("det_weights")
    @classmethod
    def _weights(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            det_mix(v)
        return v

    @field_validator("slot_det")
    @classmethod
    def _slot_det(cls, v: str) -> str:
        if v.isalpha() and v not in ("a", "an", "both", "the"):
            raise ValueError(f"{v!r} is not a slot_det value: use a, an, both (the a and an "
                             "distributions mixed), the, or a fixed text such as 'a(n)'")
        return v

    @field_validator("vocab")
    @classmethod
    def _vocab(cls, v: str) -> str:
        return str(one_of(v, VOCABS))

    @field_validator("inflections")
    @classmethod
    def _inflections(cls, v: str | None) -> str | None:
        return None if v is None else str(one_of(v, INFLECTIONS))


class RelatumTask(Task):
    name = "relatum"
    description = ("the top-k whole words at the slot `[V]` (mask token for masked LMs; next "
                   "token for causal LMs, so `[V]` ends the template)")
    Params = RelatumParams

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        p: RelatumParams = self.typed_params(spec)
        k = p.top_k if p.top_k is not None else ctx.top_k
        if not isinstance(k, int) or k < 1:
            raise ProbeError(f"probe {spec.name}: params top_k must be a positive integer")
        if not spec.prompts:
            raise ProbeError(f"probe {spec.name}: a relatum probe needs 'prompts:' templates "
                             "with one slot [V]")
        for t in spec.prompts:
            if placeholders(t).count("V") != 1:
                raise ProbeError(f"probe {spec.name}: template {t!r} must hold exactly one "
                                 "slot [V]")
        if not ctx.caps.topk:
            raise ProbeError(f"probe {spec.name}: the model cannot return the top-k fillers of "
                             "a slot (e.g. an encoder without its LM head); relatum prediction "
                             "needs them")
        if not ctx.caps.reads_slot:
            raise ProbeError(f"probe {spec.name}: the backend exposes no mask token for the "
                             "slot [V]; relatum prediction needs one")

    def _prompt(self, template: str, inst: Instance, ctx: TaskContext, det: str,
                capitalize: bool, lower_case: bool = False) -> str:
        slot = "" if ctx.ends_at_slot else ctx.slot_token
        r = render(template, inst.fields, target=inst.target, slot=slot or "", slot_known=False,
                   slot_det=det, capitalize=capitalize and not lower_case)
        text = causal_prompt(r, template) if ctx.ends_at_slot else r.text
        return text[:1].lower() + text[1:] if lower_case else text

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        p: RelatumParams = self.typed_params(spec)
        k = p.top_k if p.top_k is not None else int(ctx.top_k)
        if p.top_k_gold and len(inst.gold) > k:
            k = 1 << (len(inst.gold) - 1).bit_length()
        slot_det, capitalize, lower_case = p.slot_det, p.capitalize, p.lower_case
        options = (("k", k), ("vocab", p.vocab))
        mix = det_mix(p.det_weights if p.det_weights is not None else DET_WEIGHTS)
        out = []
        for pid, template in enumerate(spec.prompts):
            if slot_det == "both" and _det_before_slot(template):
                prompts = [self._prompt(template, inst, ctx, d, capitalize, lower_case)
                           for d in ("a", "an")]
                req = Request("topk", tuple(prompts), (*options, ("mix", mix)))
            else:
                det = "a" if slot_det == "both" else slot_det
                prompts = [self._prompt(template, inst, ctx, det, capitalize, lower_case)]
                req = Request("topk", tuple(prompts), options)
            # responses.prompt: the text(s) ranked; the a and an renderings both, when mixed
            out.append(Item(inst.split, inst.instance_id, pid, "", None, " | ".join(prompts),
                            (req,)))
        return out


TASK = RelatumTask()
