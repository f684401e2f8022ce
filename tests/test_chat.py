"""``--apply-chat-template`` (probes.engine.chat): prompts wrapped in the tokenizer's chat template,
cached and identified apart from plain runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from probes.engine.chat import ChatTemplateScorer, chat_prompt, matching_stand_in
from probes.engine.errors import ProbeError
from tests.test_run import FakeScorer, choice_probe, query, run, setup


class TagTokenizer:
    """A tokenizer whose chat template wraps a user message in <u>...</u><a>."""

    bos_token = None
    chat_template = "<u>{{ messages[0]['content'] }}</u><a>"

    def apply_chat_template(self, messages: list[dict[str, str]], tokenize: bool,
                            add_generation_prompt: bool) -> str:
        assert messages[0]["role"] == "user" and add_generation_prompt and not tokenize
        return f"<u>{messages[0]['content']}</u><a>"

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}


class RecordingScorer(FakeScorer):
    """The fake model, with a tokenizer, remembering every loglik request it scored."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tokenizer = TagTokenizer()
        self.seen: list[tuple[str, str]] = []

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Any]:
        self.seen += list(requests)
        return super().loglik(requests)


def test_wrapper_changes_the_context_and_keeps_the_continuation() -> None:
    inner = RecordingScorer()
    scorer = ChatTemplateScorer(inner)
    scorer.loglik([("owl is a", " bird."), ("", "owls can fly.")])
    # the continuation keeps its text; the space that joined it to the prompt goes
    assert inner.seen == [("<u>owl is a</u><a>", "bird."), ("<u></u><a>", "owls can fly.")]
    assert scorer.name == "fake/model" and scorer.kind == "causal"
    assert scorer.cache_key_options()["dtype"] == "float32"
    assert len(scorer.cache_key_options()["chat_template"]) == 16


def test_run_with_template_is_its_own_run_and_never_reuses_plain_scores(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    plain = RecordingScorer()
    assert run(qdir, results, plain, "-p", "t/choice") == 0
    assert len(plain.seen) == 18 and not any(c.startswith("<u>") for c, _ in plain.seen)
    chat = RecordingScorer()
    assert run(qdir, results, chat, "-p", "t/choice", "--apply-chat-template") == 0
    assert len(chat.seen) == 18  # nothing taken from the plain run's cache
    assert all(c.startswith("<u>") and c.endswith("</u><a>") for c, _ in chat.seen)
    assert {x for _, x in chat.seen} == {x.lstrip() for _, x in plain.seen}  # same words
    again = RecordingScorer()
    assert run(qdir, results, again, "-p", "t/choice", "--apply-chat-template") == 0
    assert again.seen == []  # its own cache entries are reused
    rows = query(results, "SELECT config FROM runs ORDER BY started_at")
    assert len(rows) == 2
    flags = sorted(json.loads(c)["runtime"]["apply_chat_template"] for (c,) in rows)
    assert flags == [False, True]
    # the scored row keeps the probe's own rendered prompt
    prompts = {p for (p,) in query(results, "SELECT DISTINCT prompt FROM scores")}
    assert not any(p.startswith("<u>") for p in prompts)


def test_masked_model_is_refused(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    masked = RecordingScorer(kind="masked")
    assert run(qdir, results, masked, "-p", "t/choice", "--apply-chat-template") == 2
    assert "works with causal (decoder-only) models" in capsys.readouterr().err


def test_tokenizer_without_template_is_a_clear_error() -> None:
    inner = RecordingScorer()
    inner.tokenizer.chat_template = None
    with pytest.raises(ProbeError, match="has no chat template"):
        ChatTemplateScorer(inner)


def test_recorded_stand_in_must_match_the_choice() -> None:
    class StandIn:
        options: ClassVar[dict[str, str]] = {"dtype": "float32", "chat_template": "abc"}

    assert matching_stand_in(StandIn(), True) is not None
    assert matching_stand_in(StandIn(), False) is None
    assert matching_stand_in(None, True) is None


def test_smollm2_tokenizer_wraps_the_prompt_in_its_template() -> None:
    from probes.engine.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    text = chat_prompt(tok, "A dog is a kind of ")
    # SmolLM2-Instruct's template: a default system turn, the user turn, the assistant header
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained "
                    "by Hugging Face<|im_end|>\n<|im_start|>user\nA dog is a kind of<|im_end|>\n"
                    "<|im_start|>assistant\n")
    inner = RecordingScorer()
    inner.tokenizer = tok
    ChatTemplateScorer(inner).loglik([("A dog is a kind of", " animal")])
    assert inner.seen == [(text, "animal")]
    assert inner.seen[0][0].startswith("<|im_start|>system\n")
