"""Fill prompt templates: ``[W]``, ``[V]``, ``[DET]`` and ``[NAME]`` placeholders.

Placeholders (upper-case names in square brackets):

- ``[W]``: the instance's target word (the probe header's ``target`` variable).
- ``[V]``: the slot. It becomes the answer being scored (a candidate, a label word), the
  backend's mask token for masked and seq2seq LMs, or the end of the prompt for causal LMs
  (see :func:`causal_prompt`).
- ``[DET]``: the indefinite article for the word that follows it, by :func:`indefinite_article`.
  Before an unknown slot it is ``slot_det`` (default ``"a"``). At the start of the text or
  after ``.``, ``!`` or ``?`` it is capitalised (``A``/``An``). Before a plural noun it is
  nothing, as in English ("Scissors are ...", "a kind of trousers"): the words listed in the
  instance field ``det_plural`` (:data:`PLURAL_FIELD`; the export fills it from WordNet's
  morphology, :meth:`kg.morphology.Morphology.is_plural`) take no article, and the space after
  the ``[DET]`` goes with it.
- ``[NAME]``: the instance field ``name`` (a variable selected by the probe query, matched
  case-insensitively: ``[CONCEPT]`` reads ``?concept``). A field holding a list of one value
  gives that value; a longer list is an error.

>>> r = render("[DET] [W] is a kind of [DET] [V].", target="owl", slot="animal")
>>> r.text
'An owl is a kind of an animal.'
>>> r.text[slice(*r.slot)]
'animal'
>>> render("[W] is part of [DET] [V].", target="wheel", slot="[MASK]", slot_known=False).text
'wheel is part of a [MASK].'
>>> render("[DET] [ENTITY] is [DET] [V].", {"entity": "hour hand"}, slot="unit").text
'An hour hand is a unit.'
>>> render("[DET] [W] is a kind of [DET] [V].", {"det_plural": ["spectacles"]},
...        target="spectacles", slot="optical instrument").text
'Spectacles is a kind of an optical instrument.'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probes.engine.errors import ProbeError

PLACEHOLDER = re.compile(r"\[([A-Z][A-Z0-9_]*)\]")

#: The instance field listing the texts that are plural nouns: a ``[DET]`` before one is empty.
PLURAL_FIELD = "det_plural"

# Words whose first letter is a consonant but whose first sound is a vowel (silent h).
_AN_PREFIXES = ("hour", "honest", "honour", "honor", "heir")
# Words whose first letter is a vowel but whose first sound is a consonant ("yoo", "w").
_A_PREFIXES = (
    "uni", "use", "usu", "usur", "uten", "uter", "util", "utop", "ura", "ure", "uri", "uro",
    "ubiq", "uku", "ufo", "euc", "eul", "eun", "eup", "eur", "ewe", "ouija",
)
# "uni" words that start with the prefix "un-" (vowel sound) rather than "uni-" ("yoo").
_UN_PREFIX = ("unim", "unin", "unid")
_ONE = re.compile(r"^on(?:e|ce)(?:$|[\s\-])")


def indefinite_article(word: str) -> str:
    """``"a"`` or ``"an"`` for ``word`` by the vowel-sound rule.

    The rule: ``"an"`` when the first letter is a vowel (a, e, i, o, u), else ``"a"``, with two
    small exception lists matched on the start of the lower-cased word:

    - ``"an"`` before a silent h: hour, honest, honour/honor, heir (and hourly, heirloom, ...);
    - ``"a"`` before a "yoo" or "w" sound: university, unicorn, uniform, unit, union, unique,
      user, usual, utensil, utility, utopia, uranium, urine, european, eucalyptus, euphemism,
      ewe, ukulele, one, once, ... But "un-" words (uninformed, unimportant) keep ``"an"``.

    Digits, acronyms and other special cases are not handled: write the article in the
    template if it matters.

    >>> [indefinite_article(w) for w in ["dog", "owl", "hour", "honest man", "heirloom"]]
    ['a', 'an', 'an', 'an', 'an']
    >>> [indefinite_article(w) for w in ["university", "unicorn", "user", "European", "one"]]
    ['a', 'a', 'a', 'a', 'a']
    >>> [indefinite_article(w) for w in ["uninformed voter", "umbrella", "onion", "house", ""]]
    ['an', 'an', 'an', 'a', 'a']
    """
    w = word.strip().lower().lstrip("\"'([{")
    if not w:
        return "a"
    if w.startswith(_AN_PREFIXES):
        return "an"
    if _ONE.match(w):
        return "a"
    if w.startswith(_UN_PREFIX):
        return "an"
    if w.startswith(_A_PREFIXES):
        return "a"
    return "an" if w[0] in "aeiou" else "a"


@dataclass(frozen=True)
class Rendered:
    """A filled template: the text, the span of each placeholder's first occurrence, the slot.

    Spans are character offsets ``(start, end)`` into ``text``; ``slot`` is the span of the
    first ``[V]`` (``None`` when the template has none).
    """

    text: str
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    slot: tuple[int, int] | None = None
    slot_count: int = 0


def placeholders(template: str) -> list[str]:
    """The placeholder names of a template, in order, repeated as they occur.

    >>> placeholders("[DET] [W] is [DET] [V]")
    ['DET', 'W', 'DET', 'V']
    """
    return PLACEHOLDER.findall(template)


def _field(fields: Mapping[str, Any], name: str, template: str) -> str:
    lowered = {k.lower(): v for k, v in fields.items()}
    key = name.lower()
    if key not in lowered:
        known = ", ".join(f"[{k.upper()}]" for k in sorted(lowered)) or "(none)"
        raise ProbeError(f"template {template!r} uses [{name}] but the instance has no field "
                         f"{key!r}; select ?{key} in the probe query or use one of: {known}")
    value = lowered[key]
    if isinstance(value, list):
        if len(value) != 1:
            raise ProbeError(f"template {template!r}: [{name}] holds {len(value)} values "
                             f"({value[:3]}...); a placeholder needs exactly one (add ?{key} to "
                             "the probe's group_by, or do not group)")
        value = value[0]
    if value is None:
        raise ProbeError(f"template {template!r}: [{name}] is unbound for this instance")
    return str(value)


def _capitalise_det(text_before: str) -> bool:
    stripped = text_before.rstrip()
    return not stripped or stripped[-1] in ".!?"


def render(template: str, fields: Mapping[str, Any] | None = None, *, target: str | None = None,
           slot: str | None = None, slot_known: bool = True, slot_det: str = "a",
           capitalize: bool = False) -> Rendered:
    """Fill ``template``. ``slot`` fills ``[V]``; ``slot_known=False`` marks it as a mask token
    (the following ``[DET]`` cannot look at it and becomes ``slot_det``). ``capitalize``
    upper-cases the first character of the text.

    >>> render("[DET] [W] has [DET] [V]", target="car", slot="engine").text
    'A car has an engine'
    >>> render("it is [DET] [W]", target="egg", capitalize=True).text
    'It is an egg'
    >>> render("[W] and [V]", target="x")
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: template '[W] and [V]' has a slot [V] but nothing fills it
    """
    fields = fields or {}
    parts: list[tuple[str | None, str]] = []  # (placeholder name or None for literal, text)
    pos = 0
    for m in PLACEHOLDER.finditer(template):
        if m.start() > pos:
            parts.append((None, template[pos:m.start()]))
        name = m.group(1)
        if name == "W":
            if target is None:
                raise ProbeError(f"template {template!r} uses [W] but the probe has no target; "
                                 "set 'target: ?var' in the probe header")
            parts.append(("W", target))
        elif name == "V":
            if slot is None:
                raise ProbeError(f"template {template!r} has a slot [V] but nothing fills it")
            parts.append(("V", slot))
        elif name == "DET":
            parts.append(("DET", ""))
        else:
            parts.append((name, _field(fields, name, template)))
        pos = m.end()
    if pos < len(template):
        parts.append((None, template[pos:]))

    plural = frozenset(str(w) for w in fields.get(PLURAL_FIELD) or ())
    text = ""
    spans: dict[str, tuple[int, int]] = {}
    slot_span: tuple[int, int] | None = None
    slot_count = 0
    no_article = False  # the [DET] before this part was empty: drop one space, capitalise
    for i, (name, value) in enumerate(parts):
        if no_article:
            if name is None and value.startswith(" "):
                value = value[1:]
            if value and name != "DET":
                if _capitalise_det(text):
                    value = value[:1].upper() + value[1:]
                no_article = False
        if name == "DET":
            value = _determiner(parts[i + 1:], slot_known, slot_det, plural)
            if not value:
                no_article = True
            elif _capitalise_det(text):
                value = value[:1].upper() + value[1:]
        start = len(text)
        text += value
        if name is not None:
            spans.setdefault(name, (start, len(text)))
        if name == "V":
            slot_count += 1
            if slot_span is None:
                slot_span = (start, len(text))
    if capitalize and text:
        text = text[0].upper() + text[1:]
    return Rendered(text=text, spans=spans, slot=slot_span, slot_count=slot_count)


def _determiner(rest: list[tuple[str | None, str]], slot_known: bool, slot_det: str,
                plural: frozenset[str] = frozenset()) -> str:
    """The article for the first word in ``rest`` (the parts after a ``[DET]``): none (``""``)
    when the text there is one of the ``plural`` nouns."""
    for name, value in rest:
        if name == "V" and not slot_known:
            return slot_det
        if name == "DET":
            continue
        if value.strip():
            if name is not None and value.strip() in plural:
                return ""
            return indefinite_article(value)
    return slot_det


def causal_prompt(rendered: Rendered, template: str) -> str:
    """The prompt for next-token prediction: the text before the slot, which must end the
    template (a final ``.``, ``!`` or ``?`` after it is allowed and dropped).

    >>> causal_prompt(render("[DET] [W] is a kind of [V].", target="owl", slot=""), "t")
    'An owl is a kind of'
    >>> causal_prompt(render("[V] is [W]", target="owl", slot=""), "[V] is [W]")
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: template '[V] is [W]': a causal LM predicts the next token, ...
    """
    if rendered.slot is None or rendered.slot_count != 1:
        raise ProbeError(f"template {template!r} must hold exactly one slot [V] for slot "
                         f"prediction (it holds {rendered.slot_count})")
    start, end = rendered.slot
    after = rendered.text[end:]
    if after.strip() not in ("", ".", "!", "?"):
        raise ProbeError(f"template {template!r}: a causal LM predicts the next token, so [V] "
                         f"must end the template (found {after!r} after it); put the slot last "
                         "or use a masked LM")
    prompt = rendered.text[:start].rstrip()
    if not prompt:
        raise ProbeError(f"template {template!r}: nothing before the slot [V] to condition on")
    return prompt


def text_span(rendered: Rendered, part: str, template: str) -> tuple[int, int]:
    """The character span to score for a ``score`` setting (see probes.engine.tasks):

    - ``"whole"``: the whole text;
    - ``"continuation"``: from the slot to the end of the text;
    - ``"slot"``: the slot's filler only;
    - ``"[NAME]"``: the first occurrence of that placeholder (``"[W]"``: the target word).

    >>> r = render("[W] is [DET] [V].", target="owl", slot="bird")
    >>> [r.text[slice(*text_span(r, p, "t"))] for p in ("whole", "continuation", "slot", "[W]")]
    ['owl is a bird.', 'bird.', 'bird', 'owl']
    """
    if part == "whole":
        return 0, len(rendered.text)
    m = PLACEHOLDER.fullmatch(part)
    if part in ("continuation", "slot") or (m and m.group(1) == "V"):
        if rendered.slot is None:
            raise ProbeError(f"template {template!r} has no slot [V], so score: {part} has "
                             "nothing to score; use score: whole or add [V]")
        start, end = rendered.slot
        return (start, len(rendered.text)) if part == "continuation" else (start, end)
    if m:
        if m.group(1) not in rendered.spans:
            raise ProbeError(f"score: {part} but template {template!r} has no {part}")
        return rendered.spans[m.group(1)]
    raise ProbeError(f"unknown score setting {part!r}: use whole, continuation, slot or a "
                     "placeholder such as [W]")
