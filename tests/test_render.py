"""``probes.engine.render``: templates, the a/an rule, slots, spans; and the task modules'
requests."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probes.backends.protocol import CAUSAL_LM, MASKED_LM
from probes.engine.errors import ProbeError
from probes.engine.render import causal_prompt, indefinite_article, placeholders, render, text_span
from probes.engine.spec import ProbeSpec
from probes.engine.tasks import Instance, Request, TaskContext, get_task, span_request

# English articles as a dictionary gives them (not derived from the rule's lists)
ARTICLES = {
    "dog": "a", "cat": "a", "apple": "an", "egg": "an", "ice cream": "an", "owl": "an",
    "umbrella": "an", "uncle": "an", "hour": "an", "hourglass": "an", "honest man": "an",
    "honour": "an", "honor": "an", "heir": "an", "heirloom": "an", "house": "a", "horse": "a",
    "university": "a", "unicorn": "a", "uniform": "a", "unit": "a", "union": "a",
    "unique idea": "a", "user": "a", "usual case": "a", "utensil": "a", "utility": "a",
    "european": "a", "European city": "a", "eulogy": "a", "ewe": "a", "one": "a",
    "one-way street": "a", "once-famous actor": "a", "onion": "an", "onerous task": "an",
    "uninformed voter": "an", "unimportant detail": "an", "unidentified object": "an",
    "urn": "an", "urban area": "an", "usher": "an", "Ostrich": "an", "Yak": "a",
}


@pytest.mark.parametrize(("word", "article"), sorted(ARTICLES.items()))
def test_indefinite_article(word: str, article: str) -> None:
    assert indefinite_article(word) == article


def test_det_follows_the_next_word_whatever_fills_it() -> None:
    assert render("[DET] [W] has [DET] [V]", target="owl", slot="egg").text == "An owl has an egg"
    assert render("it is [DET] [NOUN]", {"noun": "hour"}).text == "it is an hour"
    assert render("[DET] big [W]", target="owl").text == "A big owl"
    assert render("x. [DET] [W]? [DET] [W]", target="emu").text == "x. An emu? An emu"


def test_det_before_an_unknown_slot_uses_slot_det() -> None:
    t = "[W] is [DET] [V]."
    assert render(t, target="owl", slot="[MASK]", slot_known=False).text == "owl is a [MASK]."
    assert render(t, target="owl", slot="[MASK]", slot_known=False,
                  slot_det="an").text == "owl is an [MASK]."


def test_fields_are_case_insensitive_and_lists_of_one_unwrap() -> None:
    r = render("[CONCEPT] of [PART] [Part]", {"concept": ["wheel"], "Part": "car"})
    assert r.text == "wheel of car [Part]"  # only upper-case names are placeholders


@pytest.mark.parametrize(("template", "fields", "needle"), [
    ("[W] and [X]", {"y": "1"}, "no field 'x'"),
    ("[X]", {"x": ["a", "b"]}, "holds 2 values"),
    ("[X]", {"x": None}, "unbound"),
    ("[W] is [V]", {}, "nothing fills it"),
])
def test_render_errors(template: str, fields: dict, needle: str) -> None:
    with pytest.raises(ProbeError, match=needle):
        render(template, fields, target="owl")


def test_render_without_target_names_the_header_field() -> None:
    with pytest.raises(ProbeError, match="set 'target: \\?var'"):
        render("[W]", {})


def test_spans_point_at_the_filled_text() -> None:
    r = render("[DET] [W] lives in [DET] [V] near [W].", target="owl", slot="oak tree")
    assert r.text == "An owl lives in an oak tree near owl."
    assert r.text[slice(*r.spans["W"])] == "owl" and r.spans["W"] == (3, 6)
    assert r.text[slice(*r.slot)] == "oak tree" and r.slot_count == 1
    assert r.text[slice(*text_span(r, "continuation", "t"))] == "oak tree near owl."
    assert placeholders("[DET] [W] [V]") == ["DET", "W", "V"]


def test_causal_prompt() -> None:
    def prompt(template: str) -> str:
        return causal_prompt(render(template, target="owl", slot="", slot_known=False), template)

    assert prompt("[DET] [W] is a kind of [V]") == "An owl is a kind of"
    assert prompt("[W] is [DET] [V].") == "owl is a"
    for bad, needle in (("[V] eats [W]", "must end the template"),
                        ("[V]", "nothing before the slot"),
                        ("[W] [V] [V]", "exactly one slot")):
        with pytest.raises(ProbeError, match=needle):
            prompt(bad)


def test_capitalize_option() -> None:
    assert render("the word [W]", target="owl", capitalize=True).text == "The word owl"


# --- task modules -----------------------------------------------------------------------------

def spec(task: str, prompts: list[str] | None = None, **params: object) -> ProbeSpec:
    return ProbeSpec(name="t/x", task=task, split="test", prompts=prompts or [], params=params)


def inst(target: str = "owl", gold: list[str] | None = None,
         candidates: list[str] | None = None) -> Instance:
    return Instance("t/x", "test", "i1", target, gold or [], candidates or [], {})


def test_choice_requests_by_score_part_and_kind() -> None:
    task = get_task("choice")
    s = spec("choice", ["[W] is [DET] [V] indeed."], score="slot")
    items = task.items(inst(gold=["bird"], candidates=["eagle"]), s, TaskContext(CAUSAL_LM))
    assert [it.requests for it in items] == [
        (Request("loglik", ("owl is a", " bird")),), (Request("loglik", ("owl is an", " eagle")),)]
    whole = task.items(inst(gold=["bird"]), spec("choice", ["[W] is [DET] [V]."], score="whole"),
                       TaskContext(MASKED_LM))
    assert whole[0].requests == (Request("pll", ("owl is a bird.", (0, 14))),)
    target = task.items(inst(gold=["bird"]), spec("choice", ["a [W] is a [V]"], score="[W]"),
                        TaskContext(CAUSAL_LM))
    assert target[0].requests == (Request("loglik", ("a", " owl")),)


def test_choice_checks() -> None:
    task = get_task("choice")
    ctx = TaskContext(CAUSAL_LM)
    with pytest.raises(ProbeError, match="needs 'prompts:'"):
        task.check(spec("choice"), ctx)
    with pytest.raises(ProbeError, match="has no slot"):
        task.check(spec("choice", ["[W] only"]), ctx)
    with pytest.raises(ProbeError, match="params score"):
        task.check(spec("choice", ["[W] [V]"], score="middle"), ctx)
    with pytest.raises(ProbeError, match="no candidates"):
        task.items(inst(), spec("choice", ["[W] [V]"]), ctx)


def test_binary_checks() -> None:
    task = get_task("binary")
    ctx = TaskContext(CAUSAL_LM)
    with pytest.raises(ProbeError, match="listed for both"):
        task.check(spec("binary", ["[W] [V]"], labels={"t": ["yes"], "f": ["yes"]}), ctx)
    with pytest.raises(ProbeError, match="YAML reads them as booleans"):
        task.check(spec("binary", ["[W] [V]"], labels={"t": [True], "f": "no"}), ctx)
    with pytest.raises(ProbeError, match="same number of templates"):
        task.check(spec("binary", statements={"t": ["a", "b"], "f": ["c"]}), ctx)
    with pytest.raises(ProbeError, match="either statements"):
        task.check(spec("binary", ["[W] [V]"], statements={"t": ["a"], "f": ["c"]}), ctx)


def test_relatum_needs_a_mask_token_for_masked_models() -> None:
    with pytest.raises(ProbeError, match="no mask token"):
        get_task("relatum").check(spec("relatum", ["[W] [V]"]),
                                  TaskContext(replace(MASKED_LM, slot_token=None)))


def test_relatum_fixed_article_sends_one_prompt() -> None:
    s = spec("relatum", ["[W] is [DET] [V]."], slot_det="a(n)")
    (item,) = get_task("relatum").items(inst(), s, TaskContext(MASKED_LM, 3))
    assert item.requests == (Request("topk", ("owl is a(n) [MASK].",),
                                     (("k", 3), ("vocab", "lowercase"))),)


def test_span_request_moves_whitespace_into_the_continuation() -> None:
    r = render("[W]   [V]", target="owl", slot="bird")
    assert span_request(r, "slot", "t", "seq2seq").args == ("owl", "   bird")
