"""``--apply-chat-template``: score instruct models on prompts wrapped in their chat template.

An instruct model (SmolLM2-135M-Instruct, Gemma 3 IT, ...) was tuned on conversations, so it may
answer a probe better when the prompt reaches it as a user turn. With the option, every prompt
of a causal model is rendered by the tokenizer's chat template as ONE user message followed by
the assistant's turn header (``add_generation_prompt``), as lm-evaluation-harness does. The
scored continuation (the candidate, label word or statement) is the same text, read as the
start of the assistant's reply: only its leading whitespace (the space that joined it to the
prompt) is dropped, since a reply starts a new line, as lm-evaluation-harness drops its target
delimiter under a chat template. The backend's token-boundary rule still applies (trailing
whitespace of the context, the newline after the assistant header, moves to the
continuation). A request whose context is empty (the whole filled prompt is scored) gets the
template of an empty user turn as its context. ``topk`` prompts (relatum prediction) are
wrapped the same way; the model then predicts the first word of its reply, which a tokenizer
usually spells without the leading-space marker that whole-word vocabularies expect, so
relatum probes are better run without the template.

:class:`ChatTemplateScorer` wraps a loaded causal scorer and changes only the request texts. It
adds ``chat_template`` (a hash of the template) and ``chat_version`` (of the wrapping rule) to
the scorer's ``cache_key_options``, which go
into every cache key (:func:`probes.engine.cache.request_key`) and into the run id, so a score
computed without the template is never reused for a run with it, and the other way round.

>>> class Tok:
...     bos_token = None
...     chat_template = "<u>{{ messages[0]['content'] }}</u><a>"
...     def apply_chat_template(self, messages, tokenize, add_generation_prompt):
...         return "<u>" + messages[0]["content"] + "</u><a>"
...     def __call__(self, text, add_special_tokens=True):
...         return {"input_ids": [ord(c) for c in text]}
>>> chat_prompt(Tok(), "A dog is a kind of ")
'<u>A dog is a kind of</u><a>'
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from probes.backends.generation import GenerateSettings
from probes.backends.protocol import capabilities
from probes.engine.errors import ProbeError

CHAT_VERSION = 1
"""Version of the wrapping rule (what :meth:`ChatTemplateScorer.loglik` and ``topk`` send to
the model); part of the cache key, so changing the rule must bump it."""


def template_of(tokenizer: Any, model: str = "the model") -> str:
    """The tokenizer's chat template (text); ProbeError when it has none."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # several named templates: the default one
        template = template.get("default") or next(iter(template.values()), None)
    if not template:
        raise ProbeError(f"--apply-chat-template: the tokenizer of {model} has no chat template "
                         "(it is not an instruct/chat model); leave the option out")
    return str(template)


def template_hash(tokenizer: Any) -> str:
    """16 hex digits identifying the tokenizer's chat template (for cache keys and run ids)."""
    return hashlib.sha256(template_of(tokenizer).encode("utf-8")).hexdigest()[:16]


def _adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer itself puts its BOS token before a text (Gemma does)."""
    bos = getattr(tokenizer, "bos_token", None)
    if not bos:
        return False
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    return len(full) > len(plain)


def chat_prompt(tokenizer: Any, text: str, system: str | None = None) -> str:
    """``text`` as one user message in the tokenizer's chat template (after a system message
    when ``system`` is given), ending with the header of the assistant's turn. Trailing
    whitespace of ``text`` is dropped (it belongs to the slot, not to the message); a BOS
    text at the start is dropped when the tokenizer adds BOS by itself (the backend encodes
    with special tokens, so it would appear twice)."""
    messages = [{"role": "user", "content": text.rstrip()}]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    out = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    bos = getattr(tokenizer, "bos_token", None)
    if bos and out.startswith(bos) and _adds_bos(tokenizer):
        out = out[len(bos):]
    return out


class ChatTemplateScorer:
    """A causal scorer whose prompts are wrapped in the model's chat template; everything else
    (name, revision, device, vocabulary, ...) is the wrapped scorer's."""

    def __init__(self, inner: Any) -> None:
        if not capabilities(inner).ends_at_slot:
            raise ProbeError(f"--apply-chat-template works with causal (decoder-only) models; "
                             f"{inner.name} is a {inner.kind} LM: leave the option out")
        self.inner = inner
        self.tokenizer = inner.tokenizer
        template_of(self.tokenizer, repr(inner.name))  # a clear error when there is none
        self.chat_template = template_hash(self.tokenizer)
        self._memo: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:  # name, revision, kind, dtype, device, ...
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def progress(self) -> Any:
        return self.inner.progress

    @progress.setter
    def progress(self, value: Any) -> None:
        self.inner.progress = value

    def wrap(self, text: str) -> str:
        """The chat-template form of one prompt or context (memoised)."""
        got = self._memo.get(text)
        if got is None:
            got = self._memo[text] = chat_prompt(self.tokenizer, text)
        return got

    def cache_key_options(self) -> dict[str, Any]:
        return {**self.inner.cache_key_options(), "chat_template": self.chat_template,
                "chat_version": CHAT_VERSION}

    def describe(self) -> dict[str, Any]:
        base = self.inner.describe() if hasattr(self.inner, "describe") else {}
        return {**base, "chat_template": self.chat_template}

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Any]:
        return self.inner.loglik([(self.wrap(c), x.lstrip()) for c, x in requests])

    def topk(self, prompts: Sequence[str], k: int, vocab: Any = None, **options: Any
             ) -> list[Any]:
        wrapped = [self.wrap(p) for p in prompts]
        if vocab is None:
            return self.inner.topk(wrapped, k, **options)
        return self.inner.topk(wrapped, k, vocab, **options)


    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Any]:
        """Each prompt as one user turn (after the system turn, when ``settings.system``),
        the reply generated after the assistant's header; without ``stop`` the reply ends at
        the end-of-turn token only (no newline stop, as a reply may hold several lines)."""
        wrapped = [chat_prompt(self.tokenizer, p, settings.system) for p in prompts]
        inner = replace(settings, system=None, stop=() if settings.stop is None
                        else settings.stop)
        return list(self.inner.generate(wrapped, inner))


def with_chat_template(scorer: Any, apply: bool) -> Any:
    """``scorer`` wrapped in :class:`ChatTemplateScorer` when ``apply``, else as it is."""
    return ChatTemplateScorer(scorer) if apply else scorer


def matching_stand_in(stand_in: Any, apply: bool) -> Any:
    """A recorded stand-in (:class:`probes.engine.runner.caching.RecordedScorer`) only when it was
    recorded with the same chat-template choice as this run (else None: load the model), so
    that its cache options never mix templated and plain scores."""
    if stand_in is None:
        return None
    recorded = "chat_template" in (getattr(stand_in, "options", None) or {})
    return stand_in if recorded == bool(apply) else None
