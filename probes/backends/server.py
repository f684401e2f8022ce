"""The server backend: score a causal LM that an inference server serves (vLLM, SGLang,
llama.cpp) through its OpenAI-compatible Completions API, the way to models larger than one
machine (docs/scale.md section 7).

Name the model ``server:URL`` (``-m server:http://node0:8000/v1``) or give ``--model-args
base_url=URL,model=NAME`` (lm-evaluation-harness's ``local-completions`` spelling). Other keys:
``tokenizer`` (a kgprobe model name whose tokenizer the server uses: checked against the
server's tokens at load, needed for ``topk``'s whole-word vocabulary), ``num_concurrent``
(requests at once, default 4), ``batch_size`` (prompts per request, default 8), ``max_retries``
(default 3), ``timeout`` (seconds per request, default 120), ``revision`` (a label of your own
for the served weights, added to the identity), ``chat`` (generate through
``/chat/completions``; default ``/completions``, :mod:`probes.backends.server_generate`; a
chat-only server always generates through ``/chat/completions``).

Scoring (:mod:`probes.backends.server_client` sends the requests):

- ``loglik`` (context, continuation): the lm-evaluation-harness convention, trailing
  whitespace of the context moves to the continuation; the server echoes context +
  continuation with each token's log-probability and character offset, and the continuation's
  tokens are those that end after the context's last character (a token that straddles the
  boundary counts with the continuation). The OpenAI API gives no log-probability for a
  prompt's first token, so an empty context (a whole sentence) scores every token but the
  first, unless the server puts a BOS token first and echoes it (vLLM does), which kgprobe
  drops: then every token of the text is scored; ``n_tokens`` counts the tokens scored.
- ``topk``: the next token's top log-probabilities (``logprobs: N``, N = ``top_logprobs``,
  default 20, what vLLM allows by default); the answers are the whole words of the tokenizer's
  vocabulary among those N, so a list can be shorter than k.

Identity (cache key and run record): the served name, whatever the server reports about the
model (``/models`` entry, llama.cpp's ``/props``, SGLang's ``/get_model_info``; volatile fields
such as ``created`` dropped) and a fingerprint: the server's echoed tokens and log-probabilities
(rounded to 0.1) of a fixed text. Other weights behind the same name give another fingerprint,
so they never read the first model's cached scores.

A chat-only server (no ``/completions``, or one that refuses the echo with log-probabilities
or answers it without them: :class:`~probes.backends.server_client.NoScoring`) is found at
load: kgprobe then asks ``/chat/completions`` once, and when that answers the model loads for
generation only (one warning line says so): ``generate`` goes through chat completions, and
every scored operation (``loglik``, ``topk``) is refused before any work with the line
:data:`CHAT_ONLY`. Its fingerprint is its greedy reply to a fixed message
(server_generate.CHAT_FINGERPRINT), the only thing such a server shows of its weights.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from probes.backends.protocol import CAUSAL_LM
from probes.backends.server_checks import request_error
from probes.backends.server_client import CompletionsClient, Echo, NoScoring, ServerError
from probes.engine.models import ModelError
from probes.engine.wordvocab import WholeWordVocab

PREFIX = "server:"
FINGERPRINT_TEXT = ("The capital of France is Paris, and the capital of Italy is Rome; "
                    "Ouagadougou's hyperparameters.")
"""Echoed once at load: the model's fingerprint (part of its revision), the echo's alignment
check, and the tokenizer check. Its last words are rare, so that two vocabularies split them
differently (SmolLM2's tokenizer: 25 tokens, Gemma 3's: 23); common words alone are single
tokens in most vocabularies and would let another model's tokenizer pass."""
SERVER_VERSION = 2
"""Bumped when a change alters the numbers this backend returns (part of the cache key).
2: vLLM's echo of a BOS model is read on the prompt's offsets (its "<s>" text no longer shifts
them), and vLLM's prompt_logprobs form is read."""
_VOLATILE = {"created", "permission", "permissions", "object"}
MASK = "[MASK]"

CHAT_ONLY = ("this server offers chat only: it can answer `generate` probes, not scored ones "
             "(loglik, topk need /completions with echoed log-probabilities)")
"""What a chat-only server cannot do: the load warning and the refusal of a scored
operation."""

API_KEY_VARS = ("KGPROBE_SERVER_API_KEY", "OPENAI_API_KEY")
"""Environment variables read for a bearer token (never an option: options enter the record)."""


def is_server_name(name: object) -> bool:
    """Whether a model name points at a server (``server:URL``).

    >>> is_server_name("server:http://127.0.0.1:8000/v1"), is_server_name("gpt2")
    (True, False)
    """
    return isinstance(name, str) and (name.startswith(PREFIX) or name == PREFIX[:-1])


class ServerScorer:
    """A causal LM behind an OpenAI-compatible Completions endpoint (see the module)."""

    kind = "server"
    capabilities = CAUSAL_LM
    """Scored like a causal LM: a filled slot by loglik, top-k from the next token after the
    prompt (``topk`` needs ``tokenizer=``; :meth:`require` says so)."""
    device = "server"
    dtype = "server"
    hidden_states = False  # a Completions API returns no activations (probes.backends.hidden)

    def __init__(self, client: CompletionsClient, served: str, reported: dict[str, Any],
                 tokenizer: Any = None, tokenizer_name: str | None = None,
                 user_revision: str | None = None, top_logprobs: int = 20,
                 offer: Offer | None = None) -> None:
        self.client = client
        self.offer = offer if offer is not None else offered(client)
        chat_only = self.chat_only = self.offer.no_scoring
        """Why the server cannot score text (its /completions error), or None: it can."""
        self.served = served
        self.reported = reported
        self.tokenizer = tokenizer
        self.tokenizer_name = tokenizer_name
        self.top_logprobs = int(top_logprobs)
        self.name = PREFIX + served
        self.batch_size: int | None = client.per_request
        self.progress: Any = None
        self.operations = frozenset({"loglik", "topk", "generate"} if tokenizer is not None
                                    else {"loglik", "generate"})
        if chat_only is not None:
            self.operations = frozenset({"generate"})
        self.chat = chat_only is not None
        """Generate through ``/chat/completions`` (the ``chat`` option) instead of
        ``/completions`` (probes.backends.server_generate)."""
        if tokenizer is None or chat_only is not None:
            self.capabilities = replace(CAUSAL_LM, topk=False)
        self.max_length = int(reported.get("max_model_len") or 1 << 20)
        self._vocabs: dict[tuple[bool, bool], WholeWordVocab] = {}
        self.fingerprint = self._fingerprint()
        identity = {"served": served, "reported": reported, "fingerprint": self.fingerprint,
                    "user_revision": user_revision}
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
        self.revision = "server-" + digest.hexdigest()[:24]
        if chat_only is not None:
            return
        self._check_alignment()
        if tokenizer is not None:
            self._check_tokenizer()

    # --- identity -------------------------------------------------------------------------

    def _fingerprint(self) -> list[Any]:
        if self.offer.reply is not None:
            reply = self.offer.reply
            return [["chat", reply.text, reply.n_tokens, reply.finish]]
        assert self.offer.echo is not None
        echo = self._fingerprint_echo = self.offer.echo
        return [[t, None if v is None else round(v, 1)]
                for t, v in zip(echo.tokens, echo.logprobs, strict=True)]

    def _check_alignment(self) -> None:
        """The echoed log-probability of the fixed text's last token must equal the server's
        own next-token log-probability after the text before it (the generation path); a
        server whose echo pairs each token with the next position's distribution fails here."""
        last, before = self.fingerprint[-1], len(FINGERPRINT_TEXT) - len(self.fingerprint[-1][0])
        if last[1] is None or before <= 0:
            return
        echoed = self._fingerprint_echo.logprobs[-1]
        top = self.client.next_token([FINGERPRINT_TEXT[:before]], self.top_logprobs)[0]
        if echoed is None or last[0] not in top:
            return  # the token is not among the next-token answers: nothing to compare
        if abs(top[last[0]] - echoed) > 0.05 * max(1.0, abs(echoed)):
            raise ServerError(
                f"the server at {self.client.root} echoes log-probabilities that disagree with "
                f"its own next-token answer ({last[0]!r} after {FINGERPRINT_TEXT[:before]!r}: "
                f"echo {echoed:.3f}, next token {top[last[0]]:.3f}): its echo is misaligned. "
                "llama-cpp-python's server does this for a model that adds no BOS token: start "
                "it with --kv_overrides tokenizer.ggml.add_bos_token=bool:true")

    def _check_tokenizer(self) -> None:
        ids = self.tokenizer(FINGERPRINT_TEXT, add_special_tokens=False)["input_ids"]
        mine = [self.tokenizer.decode([i]) for i in ids]
        theirs = [t for t, _ in self.fingerprint]
        if mine != theirs:
            at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
                      min(len(mine), len(theirs)))
            raise ServerError(
                f"tokenizer {self.tokenizer_name!r} does not match the server's model "
                f"{self.served!r}: {FINGERPRINT_TEXT!r} is {len(mine)} tokens here and "
                f"{len(theirs)} there (first difference at token {at}); name the tokenizer of "
                "the served model, or leave tokenizer= out (loglik needs none)")

    def cache_key_options(self) -> dict[str, Any]:
        """The API and boundary convention (the revision carries the model identity)."""
        key = {"kind": "server",
               "api": "chat-only" if self.chat_only is not None else "completions-echo",
               "boundary": "lm-eval-offsets",
               "scorer_version": SERVER_VERSION, "top_logprobs": self.top_logprobs,
               "tokenizer": self.tokenizer_name}
        if self.chat:
            key["generate_api"] = "chat"
        return key

    def generate(self, prompts: Sequence[str], settings: Any) -> list[Any]:
        """Answers from ``/completions`` or ``/chat/completions`` (server_generate)."""
        from probes.backends import server_generate

        return server_generate.generate(self.client, prompts, settings, chat=self.chat,
                                        progress=self.progress)

    def describe(self) -> dict[str, Any]:
        """The server, the served model's identity and the client's limits (run record)."""
        return {"model": self.name, "revision": self.revision, "kind": "server",
                "base_url": self.client.root, "served_model": self.served,
                "reported": self.reported, "fingerprint_text": self._fingerprint_text(),
                "identified_by": ("reported+fingerprint" if _informative(self.reported)
                                  else "fingerprint"),
                "offers": "chat only" if self.chat_only is not None else "completions",
                "no_scoring": self.chat_only,
                "tokenizer": self.tokenizer_name, "prompts_per_request": self.client.per_request,
                "prompt_lists": self.client._lists_ok, "concurrency": self.client.concurrency,
                "timeout_s": self.client.timeout, "max_retries": self.client.retries,
                "device": "server", "dtype": "server"}

    def _fingerprint_text(self) -> str:
        if self.chat_only is None:
            return FINGERPRINT_TEXT
        from probes.backends.server_generate import CHAT_FINGERPRINT

        return CHAT_FINGERPRINT

    def require(self, *operations: str) -> None:
        for op in operations:
            if op not in self.operations and self.chat_only is not None:
                raise ServerError(f"model {self.name!r} (server): {CHAT_ONLY}; it cannot "
                                  f"answer {op!r}: {self.chat_only}")
            if op not in self.operations:
                why = ("topk needs tokenizer= (the served model's tokenizer) for its whole-word "
                       "vocabulary" if op == "topk" else
                       "a server scores causal LMs only (loglik, topk); masked and seq2seq "
                       "models cannot be scored through the Completions API")
                raise ModelError(f"model {self.name!r} (server) does not support {op!r}: {why}")

    # --- operations ---------------------------------------------------------------------------

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Any]:
        """log P(continuation | context) summed over the continuation's tokens (see module)."""
        from probes.backends.base import Score

        self.require("loglik")
        out = []
        for echo, bound, length in self._echoes(requests):
            total, n = continuation_logprob(echo, bound, length)
            if n == 0 and 0 < bound < length:  # a context and a continuation, none of it scored
                raise ServerError(request_error(
                    self.client.root, echo.text,
                    f"no log-probability for any token after character {bound} (the "
                    "continuation)"))
            out.append(Score(total, n))
        self._report(len(requests))
        return out

    def token_logprobs(self, requests: Sequence[tuple[str, str]]) -> list[list[tuple[str, float]]]:
        """(token text, log-probability) of each continuation token (the tokens ``loglik``
        sums)."""
        self.require("loglik")
        out = []
        for echo, bound, length in self._echoes(requests):
            ends = [*echo.offsets[1:], length]
            out.append([(t, v) for t, end, v in zip(echo.tokens, ends, echo.logprobs,
                                                     strict=True)
                        if end > bound and v is not None])
        return out

    def _echoes(self, requests: Sequence[tuple[str, str]]) -> list[tuple[Echo, int, int]]:
        """The server's echo of each request's text, its boundary and its length (the
        lm-eval convention: the context's trailing whitespace joins the continuation)."""
        texts, bounds = [], []
        for context, continuation in requests:
            stripped = context.rstrip()
            texts.append(stripped + context[len(stripped):] + continuation)
            bounds.append(len(stripped))
        unique = list(dict.fromkeys(texts))
        echoes = dict(zip(unique, self.client.echo(unique), strict=True))
        return [(echoes[t], b, len(t)) for t, b in zip(texts, bounds, strict=True)]

    def pll(self, requests: Sequence[tuple[str, tuple[int, int]]]) -> list[Any]:
        self.require("pll")
        return []

    def topk(self, prompts: Sequence[str], k: int, vocab: WholeWordVocab | None = None,
             mix: Sequence[float] | None = None) -> list[list[tuple[str, float]]]:
        """The top-k whole words among the server's top ``top_logprobs`` next tokens."""
        self.require("topk")
        if k < 1:
            raise ModelError(f"top-k needs k >= 1, got {k}")
        words = set((vocab or self.word_vocab()).words)
        cut = [p.split(MASK, 1)[0].rstrip() for p in prompts]
        tops = self.client.next_token(cut, self.top_logprobs)
        probs = [_word_probs(t, words) for t in tops]
        self._report(len(prompts))
        if mix:
            g = len(mix)
            if len(probs) % g:
                raise ModelError(f"topk with {g} mix weights needs prompts in groups of {g}")
            mixed = []
            for start in range(0, len(probs), g):
                acc: dict[str, float] = {}
                for w, p in zip(mix, probs[start:start + g], strict=True):
                    for word, value in p.items():
                        acc[word] = acc.get(word, 0.0) + w * value
                mixed.append(acc)
            probs = mixed
        return [sorted(p.items(), key=lambda kv: (-kv[1], kv[0]))[:k] for p in probs]

    def word_vocab(self, *, lowercase: bool = False, min_length: int = 1,
                   every_token: bool = False) -> WholeWordVocab:
        """The whole-word items of the named tokenizer (topk's vocabulary)."""
        self.require("topk")
        key = (lowercase, every_token)
        if key not in self._vocabs:
            self._vocabs[key] = (WholeWordVocab.every_token(self.tokenizer) if every_token
                                 else WholeWordVocab.from_tokenizer(
                                     self.tokenizer, lowercase=lowercase, min_length=min_length))
        return self._vocabs[key]

    def _report(self, n: int) -> None:
        if self.progress is not None and n:
            self.progress(n)


def continuation_logprob(echo: Echo, boundary: int, length: int) -> tuple[float, int]:
    """The summed log-probability and count of the tokens of ``echo`` that end after character
    ``boundary`` (the continuation), skipping tokens without one (a prompt's first token).

    >>> e = Echo(("A", " dog", " is", " an", " animal"), (0, 1, 5, 8, 11),
    ...          (None, -3.0, -1.0, -2.0, -0.5), (None,) * 5)
    >>> continuation_logprob(e, 8, 18)
    (-2.5, 2)
    >>> continuation_logprob(e, 0, 18)
    (-6.5, 4)
    """
    ends = [*echo.offsets[1:], length]
    total, n = 0.0, 0
    for end, value in zip(ends, echo.logprobs, strict=True):
        if end > boundary and value is not None:
            total += value
            n += 1
    return total, n


def _word_probs(top: dict[str, float], words: set[str]) -> dict[str, float]:
    """Whole words (a token that is a space and a vocabulary word) among a top list.

    >>> _word_probs({" dog": math.log(0.5), "dog": -1.0, " ##": -2.0}, {"dog"})
    {'dog': 0.5}
    """
    out: dict[str, float] = {}
    for token, lp in top.items():
        if token.startswith(" ") and token[1:] in words:
            out[token[1:]] = out.get(token[1:], 0.0) + math.exp(lp)
    return out


@dataclass(frozen=True)
class Offer:
    """What a server offers, found at load (:func:`offered`): the fixed text's echo (it can
    score), or, for a chat-only server, why it cannot score and its reply to the fixed chat
    message."""

    echo: Echo | None = None
    no_scoring: str | None = None
    reply: Any = None  # server_generate's Generation


def offered(client: CompletionsClient) -> Offer:
    """Echo :data:`FINGERPRINT_TEXT`; when the server cannot score (NoScoring), ask
    ``/chat/completions`` once. A server that answers neither raises the scoring error with
    the chat error beside it, in one line."""
    try:
        return Offer(echo=client.echo([FINGERPRINT_TEXT])[0])
    except NoScoring as e:
        why = str(e)
    from probes.backends.server_generate import chat_reply

    try:
        reply = chat_reply(client)
    except ServerError as e:
        raise ServerError(f"{why.rstrip('.')}; nor does it answer chat completions "
                          f"({e})") from None
    return Offer(no_scoring=why, reply=reply)


def _informative(reported: dict[str, Any]) -> bool:
    return any(k not in ("id", "owned_by") for k in reported)


def _stable(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in _VOLATILE}


def load_server(name: str | None = None, *, base_url: str | None = None,
                model: str | None = None, tokenizer: str | None = None,
                num_concurrent: int = 4, batch_size: int | None = None, max_retries: int = 3,
                timeout: float = 120.0, revision: str | None = None,
                top_logprobs: int = 20, require_ops: Sequence[str] = (),
                chat: bool = False, **ignored: Any) -> ServerScorer:
    """Connect to the server that ``name`` (``server:URL``) or ``base_url`` names and identify
    its model; ``ignored``: local-model options (device, dtype, threads) that mean nothing
    here."""
    url = name[len(PREFIX):] if name and is_server_name(name) and name != PREFIX[:-1] else None
    if url and base_url and url.rstrip("/") != base_url.rstrip("/"):
        raise ServerError(f"-m {name} and base_url={base_url} disagree; give the URL once")
    url = url or base_url
    if not url:
        raise ServerError("a server model needs its URL: -m server:http://host:8000/v1 or "
                          "--model-args base_url=http://host:8000/v1")
    unknown = sorted(k for k, v in ignored.items()
                     if v not in (None, False, {}) and k not in ("device", "threads"))
    if unknown:
        raise ServerError(f"options {', '.join(unknown)} do not apply to a server model "
                          "(the server loads the weights); set them where the server starts")
    client = CompletionsClient(url, model=model, timeout=float(timeout), retries=int(max_retries),
                               concurrency=int(num_concurrent),
                               prompts_per_request=int(batch_size or 8),
                               api_key=next((os.environ[v] for v in API_KEY_VARS
                                             if os.environ.get(v)), None))
    listed = client.models()
    ids = [str(m.get("id")) for m in listed]
    if model is None:
        if len(ids) != 1:
            raise ServerError(f"the server at {client.root} serves {len(ids)} models "
                              f"({', '.join(ids) or 'none'}); name one with model=")
        model = ids[0]
    elif model not in ids:
        raise ServerError(f"the server at {client.root} does not serve model {model!r}; it "
                          f"serves: {', '.join(ids) or 'nothing'} (pass model= one of them)")
    client.model = model
    entry = _stable(next(m for m in listed if str(m.get("id")) == model))
    for path, root in (("/props", True), ("/get_model_info", True)):
        extra = client.get_optional(path, root=root)
        if isinstance(extra, dict):
            entry[path.strip("/")] = {k: v for k, v in extra.items()
                                      if k in ("model_path", "build_info", "total_slots",
                                               "n_ctx", "model_alias", "is_generation")}
    tok = None
    if tokenizer:
        from probes.engine.models import load_tokenizer, resolve

        tok = load_tokenizer(resolve(tokenizer))
    scorer = ServerScorer(client, model, entry, tok, tokenizer, revision, top_logprobs)
    if scorer.chat_only is not None:
        warnings.warn(f"{scorer.name}: {CHAT_ONLY}: {scorer.chat_only}", UserWarning,
                      stacklevel=2)
    scorer.chat = scorer.chat or bool(chat)
    scorer.require(*require_ops)
    return scorer
