"""Relatum prediction: the model's top-k fillers of the slot ``[V]`` (Cao et al.).

Each template in ``prompts`` gives one ``topk`` request per instance; the ranked answers go to
the ``responses`` table (rank 1 = most probable). Masked and seq2seq LMs see the slot as their
mask token; causal LMs see the text before the slot, so ``[V]`` must end the template (a final
``.`` is dropped).

Params:

- ``top_k``: how many answers to keep (default: ``--top-k`` of probes.run, 10).
- ``slot_det``: the article written for a ``[DET]`` right before the slot, whose word is
  unknown: ``"a"``, ``"an"``, any fixed text such as ``"a(n)"``, or ``"both"`` (default): the
  prompt is scored twice, with "a" and with "an", and each answer's probability is read from the
  prompt whose article agrees with it (probes.render.indefinite_article); answers that disagree
  are dropped, the rest merged and re-ranked. Templates without a ``[DET]`` before the slot are
  scored once.
- ``capitalize``: upper-case the first character of the prompt.
- ``vocab``: which answers count: ``lowercase`` (default; lower-case whole words of the
  model's vocabulary, like WordNet lemmas) or ``words`` (every whole word). Sub-word pieces
  never count (probes.wordvocab).

>>> from probes.spec import ProbeSpec
>>> spec = ProbeSpec(name="d/r", task="relatum", split="test", prompts=["[DET] [W] is [DET] [V]."])
>>> inst = Instance("d/r", "test", "i1", "owl", ["bird"], [], {})
>>> [r.args for r in TASK.items(inst, spec, TaskContext("masked", "[MASK]", 5))[0].requests]
[('An owl is a [MASK].',), ('An owl is an [MASK].',)]
>>> item = TASK.items(inst, spec, TaskContext("causal", None, 2))[0]
>>> [r.args for r in item.requests]
[('An owl is a',), ('An owl is an',)]
>>> rows = TASK.rows(item, [[("eagle", .3), ("bird", .2)], [("animal", .25), ("bird", .1)]])
>>> [(r.rank, r.token, r.probability) for r in rows.responses]
[(1, 'animal', 0.25), (2, 'bird', 0.2)]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from probes.errors import ProbeError
from probes.render import causal_prompt, indefinite_article, placeholders, render
from probes.spec import ProbeSpec
from probes.tasks import (
    Instance,
    Item,
    Request,
    ResponseRow,
    Rows,
    Task,
    TaskContext,
    check_params,
    param,
)

VOCABS = ("lowercase", "words")


def _det_before_slot(template: str) -> bool:
    names = placeholders(template)
    return any(a == "DET" and b == "V" for a, b in itertools.pairwise(names))


class RelatumTask(Task):
    name = "relatum"
    params = frozenset({"top_k", "slot_det", "capitalize", "vocab"})

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        check_params(spec, self.params)
        k = param(spec, "top_k", ctx.top_k)
        if not isinstance(k, int) or k < 1:
            raise ProbeError(f"probe {spec.name}: params top_k must be a positive integer")
        param(spec, "vocab", "lowercase", VOCABS)
        if not spec.prompts:
            raise ProbeError(f"probe {spec.name}: a relatum probe needs 'prompts:' templates "
                             "with one slot [V]")
        for t in spec.prompts:
            if placeholders(t).count("V") != 1:
                raise ProbeError(f"probe {spec.name}: template {t!r} must hold exactly one "
                                 "slot [V]")
        if ctx.kind != "causal" and not ctx.slot_token:
            raise ProbeError(f"probe {spec.name}: the {ctx.kind} backend exposes no mask token "
                             "for the slot [V]; relatum prediction needs one")

    def _prompt(self, template: str, inst: Instance, ctx: TaskContext, det: str,
                capitalize: bool) -> str:
        slot = ctx.slot_token if ctx.kind != "causal" else ""
        r = render(template, inst.fields, target=inst.target, slot=slot or "", slot_known=False,
                   slot_det=det, capitalize=capitalize)
        return causal_prompt(r, template) if ctx.kind == "causal" else r.text

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        k = int(param(spec, "top_k", ctx.top_k))
        slot_det = str(param(spec, "slot_det", "both"))
        capitalize = bool(param(spec, "capitalize", False))
        options = (("k", k), ("vocab", param(spec, "vocab", "lowercase", VOCABS)))
        out = []
        for pid, template in enumerate(spec.prompts):
            dets = ["a", "an"] if slot_det == "both" and _det_before_slot(template) else [
                "a" if slot_det == "both" else slot_det]
            prompts = [self._prompt(template, inst, ctx, d, capitalize) for d in dets]
            reqs = tuple(Request("topk", (p,), options) for p in prompts)
            out.append(Item(inst.split, inst.instance_id, pid, "", None, prompts[0], reqs))
        return out

    def rows(self, item: Item, results: Sequence[Any]) -> Rows:
        if len(results) == 1:
            return super().rows(item, results)
        k = dict(item.requests[0].options)["k"]
        merged: dict[str, float] = {}
        for det, answers in zip(("a", "an"), results, strict=True):
            for tok, p in answers:
                if indefinite_article(str(tok)) == det and float(p) > merged.get(tok, -1.0):
                    merged[str(tok)] = float(p)
        ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return Rows(responses=[
            ResponseRow(item.split, item.instance_id, item.prompt_id, rank, tok, p)
            for rank, (tok, p) in enumerate(ranked, start=1)])


TASK = RelatumTask()
