"""Tasks ask a scorer's declared capabilities, never the name its backend is registered under.

A causal backend registered under a new name (``decoder-lm`` below: a real tiny Llama behind a
subclass of CausalScorer) must be treated as what it declares, end to end through
``kgprobe run``: its relatum prompts end at the slot (no ``[MASK]``), the "[V] must end the
template" guard holds, choice candidates are scored by continuation log-likelihood (not PLL),
and its ``topk`` refuses text after a ``[MASK]`` instead of dropping it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from probes.backends import load_scorer, registry
from probes.backends.base import PromptError
from probes.backends.causal import CausalScorer
from probes.backends.protocol import (
    CAUSAL_LM,
    MASKED_LM,
    SEQ2SEQ_LM,
    Capabilities,
    capabilities,
    family,
)
from probes.engine.errors import ProbeError
from probes.engine.tasks import TaskContext, get_task
from tests.test_backends import smol_tokenizer, tiny_llama  # noqa: F401  (fixtures)
from tests.test_run import ANIMALS, choice_probe, query, setup
from tests.tolerance import approx_logprob

NEW_NAME = "decoder-lm"


class DecoderLM(CausalScorer):
    """A causal backend under a name no task has heard of."""


@pytest.fixture(scope="module")
def decoder(tiny_llama: Path) -> Iterator[Any]:  # noqa: F811
    saved = dict(registry._BACKENDS)
    registry.register(NEW_NAME)(DecoderLM)
    try:
        scorer = load_scorer(str(tiny_llama), kind=NEW_NAME, device="cpu", dtype="float32",
                             threads=1)
        assert scorer.kind == NEW_NAME and scorer.capabilities == CAUSAL_LM
        yield scorer
    finally:
        registry._BACKENDS.clear()
        registry._BACKENDS.update(saved)


def run(qdir: Path, results: Path, scorer: Any, *args: str) -> int:
    from probes.app.run import main

    return main(["--model", scorer.name, "--results", str(results), "--queries", str(qdir),
                 "--only-extra", "--quiet", *args], lambda name, **kw: scorer)


RELATUM = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
           '# prompts: ["[DET] [W] is a kind of [V]."]\n# params: {top_k: 5}\n'
           'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") } }\n')


def test_relatum_prompts_end_at_the_slot_for_a_causal_backend_under_a_new_name(
        tmp_path: Path, decoder: Any) -> None:
    qdir, results = setup(tmp_path, RELATUM)
    assert run(qdir, results, decoder, "-p", "t/rel") == 0
    got = query(results, "SELECT DISTINCT prompt FROM responses")
    assert got == [("An owl is a kind of",)]  # no [MASK] slot, the final "." dropped
    # the ranked words are the next-token distribution after exactly that text
    tokens = [r[0] for r in query(results, "SELECT token FROM responses ORDER BY rank")]
    assert tokens == [w for w, _ in decoder.topk(["An owl is a kind of"], 5,
                                                 decoder.word_vocab(lowercase=True))[0]]
    backend = query(results, "SELECT backend, config->>'$.capabilities.ends_at_slot' FROM runs")
    assert backend == [(NEW_NAME, "true")]


def test_the_slot_must_end_the_template_for_a_causal_backend_under_a_new_name(
        tmp_path: Path, decoder: Any, capsys: Any) -> None:
    probe = RELATUM.replace("[DET] [W] is a kind of [V].", "[V] is the opposite of [W]")
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, decoder, "-p", "t/rel") == 2
    err = capsys.readouterr().err
    assert "[V] must end the template" in err and "Traceback" not in err
    assert query(results, "SELECT count(*) FROM responses") == [(0,)]


def test_choice_is_scored_by_loglik_for_a_causal_backend_under_a_new_name(
        tmp_path: Path, decoder: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe(prompts='["[W] is [DET] [V]."]'))
    assert run(qdir, results, decoder, "-p", "t/choice") == 0
    got = query(results, "SELECT prompt, candidate, score FROM scores ORDER BY prompt")
    assert len(got) == sum(1 + len(cs) for _g, cs in ANIMALS.values())
    for prompt, candidate, score in got:
        # the continuation from the slot on, after the text before it (a PLL request would
        # fail here: a causal scorer has no pll)
        context = prompt[:prompt.rindex(candidate)].rstrip()
        expected = decoder.loglik([(context, prompt[len(context):])])[0].logprob
        assert score == approx_logprob(expected), prompt


def test_causal_topk_refuses_text_after_the_slot_instead_of_dropping_it(decoder: Any) -> None:
    with pytest.raises(PromptError, match="text after its"):
        decoder.topk(["An owl is a [MASK] of the night"], 3)
    # a final full stop is allowed and dropped, as for the task's own prompts
    a = decoder.topk(["An owl is a kind of [MASK]."], 3)
    b = decoder.topk(["An owl is a kind of"], 3)
    assert [w for w, _ in a[0]] == [w for w, _ in b[0]]


# --- the capability API itself (no model) ------------------------------------------------------


def test_built_in_profiles_say_what_the_papers_do() -> None:
    # masked LMs: PLL (Salazar et al.) at a marked slot; causal: next token, prompt ends at the
    # slot; encoder-decoder: log-likelihood of the decoded text, slot marked in the input
    assert (MASKED_LM.slot_scoring, MASKED_LM.ends_at_slot, MASKED_LM.slot_token) == (
        "pll", False, "[MASK]")
    assert (CAUSAL_LM.slot_scoring, CAUSAL_LM.ends_at_slot, CAUSAL_LM.slot_token) == (
        "loglik", True, None)
    assert (SEQ2SEQ_LM.slot_scoring, SEQ2SEQ_LM.ends_at_slot) == ("loglik", False)
    assert [family(c) for c in (MASKED_LM, CAUSAL_LM, SEQ2SEQ_LM)] == [
        "masked", "causal", "seq2seq"]
    assert Capabilities.from_record(MASKED_LM.as_record()) == MASKED_LM


def test_inconsistent_capabilities_are_refused() -> None:
    with pytest.raises(ProbeError, match="no slot token"):
        Capabilities("loglik", ends_at_slot=True, slot_token="[MASK]")
    with pytest.raises(ProbeError, match="slot_scoring"):
        Capabilities("mlm", ends_at_slot=False, slot_token="[MASK]")  # type: ignore[arg-type]


def test_a_scorer_that_declares_nothing_is_one_clear_error() -> None:
    class Bare:
        name, revision, kind = "bare/model", "r", "causal"  # the name says causal: not enough

    with pytest.raises(ProbeError, match="declares no capabilities"):
        capabilities(Bare())


def test_tasks_read_capabilities_not_names() -> None:
    from probes.engine.spec import ProbeSpec
    from probes.engine.tasks import Instance

    spec = ProbeSpec(name="d/r", task="relatum", split="test", prompts=["[W] is a [V]."])
    inst = Instance("d/r", "test", "i1", "owl", ["bird"], [], {})
    relatum = get_task("relatum")
    prompts = {str(c): relatum.items(inst, spec, TaskContext(c))[0].requests[0].args
               for c in (CAUSAL_LM, MASKED_LM, replace(MASKED_LM, slot_token="<mask>"))}
    assert list(prompts.values()) == [("owl is a",), ("owl is a [MASK].",),
                                      ("owl is a <mask>.",)]
    with pytest.raises(ProbeError, match="top-k"):
        relatum.check(spec, TaskContext(replace(MASKED_LM, topk=False)))

