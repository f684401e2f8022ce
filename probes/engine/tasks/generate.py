"""Generation: the model answers each instance in its own words, matched afterwards in SQL.

Each template in ``prompts`` gives one ``generate`` request per instance. A template whose
slot ``[V]`` ends it (a final ``.``, ``!`` or ``?`` allowed) is cut before the slot, and a
``[DET]`` right before the slot is dropped with it, so the model writes the article itself
("A dog is a kind of" -> " an animal"); a template without ``[V]`` is the prompt as it
renders (a question: ``"Q: What is [DET] [W] a kind of?\\nA:"``). The answer goes to the
``generations`` table with every accepted form; the metrics (eval/generate/) normalise and
match them (docs/generate.md).

The accepted forms are the instance's gold values (the header's ``gold``) and the values of
the variables in ``params.aliases`` (the answer's other names: WordNet lemmas of a synset,
``oboInOwl`` synonyms, Wikidata aliases), in that order, duplicates dropped.

Params (every decoding setting enters the cache key and the run id):

- ``aliases``: variables holding other accepted forms (``[?alias]``);
- ``max_new_tokens`` (default 16), ``stop`` (default: a newline for a completion prompt,
  the end-of-turn token only under ``--apply-chat-template``), ``system`` (a system prompt);
- ``do_sample`` (default false: greedy), ``temperature``, ``top_p``, ``seed`` (sampling);
- ``capitalize``: upper-case the prompt's first character.

>>> from probes.engine.spec import ProbeSpec
>>> from probes.backends.protocol import CAUSAL_LM
>>> spec = ProbeSpec(name="d/g", task="generate", split="test", gold=["?h"],
...                  prompts=["[DET] [W] is a kind of [DET] [V].", "Q: What is [DET] [W]?\\nA:"],
...                  params={"aliases": ["?syn"], "max_new_tokens": 4})
>>> inst = Instance("d/g", "test", "i1", "owl", ["bird"], [], {"syn": ["fowl", "bird"]})
>>> items = TASK.items(inst, spec, TaskContext(CAUSAL_LM))
>>> [i.requests[0].args[0] for i in items]
['An owl is a kind of', 'Q: What is an owl?\\nA:']
>>> items[0].answers
('bird', 'fowl')
>>> from probes.backends.generation import Generation
>>> TASK.rows(items[0], [Generation(" a bird", 2, "stop")]).generations[0].generation
' a bird'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field, StrictInt, field_validator

from probes.backends.generation import GenerateSettings
from probes.engine.errors import ProbeError
from probes.engine.render import causal_prompt, placeholders, render
from probes.engine.tasks import (
    GenerationRow,
    Instance,
    Item,
    Request,
    Rows,
    Task,
    TaskContext,
    TaskParams,
    instance_prompts,
)

if TYPE_CHECKING:
    from probes.engine.spec import ProbeSpec


class GenerateParams(TaskParams):
    aliases: list[str] = Field(default=[], description=(
        "variables holding the answer's other accepted forms (the gold values count too)"))
    max_new_tokens: StrictInt = Field(default=16, ge=1, le=4096,
                                      description="tokens the answer may have at most")
    stop: list[str] | None = Field(default=None, description=(
        "strings that end the answer (default: a newline; under a chat template the "
        "end-of-turn token only)"))
    system: str | None = Field(default=None, description="a system prompt")
    do_sample: bool = Field(default=False, description="sample instead of greedy decoding")
    temperature: float = Field(default=1.0, gt=0, description="sampling temperature")
    top_p: float = Field(default=1.0, gt=0, le=1, description="nucleus sampling mass")
    seed: StrictInt = Field(default=0, description="seed of each prompt's sampler")
    capitalize: bool = Field(default=False,
                             description="upper-case the first character of the prompt")

    @field_validator("aliases", mode="before")
    @classmethod
    def _yaml_flow(cls, v: Any) -> Any:
        """``[?a, ?b]`` in a YAML flow list reads as ``[{a: None}, {b: None}]``."""
        return alias_variables(v)

    @field_validator("aliases")
    @classmethod
    def _variables(cls, v: list[str]) -> list[str]:
        for name in v:
            if not (isinstance(name, str) and name.startswith("?") and name[1:].isidentifier()):
                raise ValueError(f"{name!r} is not a SPARQL variable; write it as ?name")
        return v

    def settings(self) -> GenerateSettings:
        return GenerateSettings(max_new_tokens=self.max_new_tokens,
                                stop=None if self.stop is None else tuple(self.stop),
                                do_sample=self.do_sample, temperature=self.temperature,
                                top_p=self.top_p, seed=self.seed, system=self.system)


def alias_variables(value: Any) -> Any:
    """``params.aliases`` as variable names: one name or a list, YAML's ``{a: None}`` for
    ``?a`` in a flow list read back as ``?a``.

    >>> alias_variables([{"alias": None}, "?syn"]), alias_variables("?x ?y")
    (['?alias', '?syn'], ['?x', '?y'])
    """
    if isinstance(value, str):
        return value.replace(",", " ").split()
    if isinstance(value, list):
        return [f"?{next(iter(x))}" if isinstance(x, dict) and list(x.values()) == [None]
                else x for x in value]
    return value


@dataclass(frozen=True)
class GenerateItem(Item):
    """An item of the generate task: the accepted forms travel with it to its row."""

    answers: tuple[str, ...] = ()


def accepted_forms(inst: Instance, aliases: list[str]) -> tuple[str, ...]:
    """The gold values, then every alias variable's values, without repeats or empties."""
    forms: list[str] = [str(g) for g in inst.gold]
    for var in aliases:
        value = inst.fields.get(var[1:])
        values = value if isinstance(value, list) else [value]
        forms += [str(v) for v in values if v is not None]
    return tuple(dict.fromkeys(f for f in forms if f.strip()))


def slot_ends(template: str) -> bool:
    """Whether ``[V]`` is the template's last placeholder with at most ``.``, ``!`` or ``?``
    after it (or the template has no slot).

    >>> slot_ends("[W] is the capital of [V]."), slot_ends("[V] is the capital of [W].")
    (True, False)
    """
    if "[V]" not in template:
        return True
    return template.rsplit("[V]", 1)[1].strip() in ("", ".", "!", "?")


def generation_prompt(template: str, inst: Instance, capitalize: bool = False) -> str:
    """The prompt of one template: the text before a final ``[V]`` (and its ``[DET]``), or
    the whole rendered template when it has no slot."""
    if "V" not in placeholders(template):
        return render(template, inst.fields, target=inst.target, capitalize=capitalize).text
    cut = template.replace("[DET] [V]", "[V]")
    rendered = render(cut, inst.fields, target=inst.target, slot="", slot_known=False,
                      capitalize=capitalize)
    return causal_prompt(rendered, template)


class GenerateTask(Task):
    name = "generate"
    description = ("the model's generated answer after each prompt, matched against the gold "
                   "answer and its aliases (exact match, contains, token F1)")
    Params = GenerateParams

    def check(self, spec: ProbeSpec, ctx: TaskContext) -> None:
        super().check(spec, ctx)
        if not spec.gold:
            raise ProbeError(f"probe {spec.name}: task generate needs the gold answer's "
                             "variable; set 'gold: ?var' in the header")
        if not spec.prompts and spec.prompts_from is None:
            raise ProbeError(f"probe {spec.name}: task generate needs prompts")
        if not ctx.caps.generate:
            raise ProbeError(f"probe {spec.name}: task generate needs a model that generates "
                             "text (a causal or seq2seq LM, or a server); this model cannot "
                             "(a masked LM fills slots only)")

    def items(self, inst: Instance, spec: ProbeSpec, ctx: TaskContext) -> list[Item]:
        p: GenerateParams = self.typed_params(spec)
        options = p.settings().as_options()
        answers = accepted_forms(inst, p.aliases)
        out: list[Item] = []
        for pid, template in enumerate(instance_prompts(spec, inst)):
            if spec.prompts_from is not None and not slot_ends(template):
                continue  # an instance's own template whose answer is not last: not asked
            prompt = generation_prompt(template, inst, p.capitalize)
            out.append(GenerateItem(inst.split, inst.instance_id, pid, "", None, prompt,
                                    (Request("generate", (prompt,), options),),
                                    answers=answers))
        return out

    def rows(self, item: Item, results: Any) -> Rows:
        (got,) = results
        answers = list(getattr(item, "answers", ()))
        return Rows(generations=[GenerationRow(
            item.split, item.instance_id, item.prompt_id, item.prompt, str(got.text),
            int(got.n_tokens), str(got.finish), answers)])


TASK = GenerateTask()
