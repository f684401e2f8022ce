"""``generate`` through an inference server's OpenAI-compatible API (vLLM, SGLang, llama.cpp).

Two endpoints, one request per prompt, ``num_concurrent`` at once, each through the client's
request primitive (:meth:`probes.backends.server_client.CompletionsClient._http`: its
timeout, retries and error lines):

- ``/completions`` (default): ``prompt``, ``max_tokens`` = ``max_new_tokens``, ``stop``, and
  ``temperature`` 0 for greedy (else the sampling settings and ``seed``); a system prompt is
  text before the prompt (:func:`probes.backends.generation.with_system`);
- ``/chat/completions`` (``chat=True``): the prompt as the user message after an optional
  system message; the server applies its own chat template. The default stop is then none:
  the reply ends at the end of the assistant's turn.

The answer is the choice's text, cut again before the first stop string (a server may keep
a stop string or ignore one it cannot represent), so a server and the in-process backend
store answers under the same rule. ``n_tokens`` is the server's ``usage.completion_tokens``
(0 when it does not say; a count outside 0 to ``max_new_tokens`` is refused, nothing stored);
``finish`` maps the server's ``finish_reason``: ``length`` stays, anything else is ``stop``
(a server does not tell a stop string from the end of sequence).

A chat-only server (no ``/completions``, or one without echoed log-probabilities) is found at
load (probes.backends.server): :func:`chat_reply`, its greedy reply to
:data:`CHAT_FINGERPRINT`, shows that it answers chat completions and is its fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from probes.backends.generation import (
    Finish,
    GenerateSettings,
    Generation,
    cut_at_stop,
    with_system,
)
from probes.backends.server_checks import request_error
from probes.backends.server_client import CompletionsClient, ServerError

CHAT_FINGERPRINT = ("Complete with one word, then name three rivers: The capital of France "
                    "is")
"""The user message whose greedy reply (16 tokens at most) identifies a chat-only server's
model (no log-probabilities to fingerprint)."""


def request_body(prompt: str, settings: GenerateSettings, *, chat: bool,
                 model: str | None) -> tuple[str, dict[str, Any]]:
    """The endpoint and JSON body of one prompt's request.

    >>> request_body("Q: 2+2?\\nA:", GenerateSettings(max_new_tokens=4), chat=False, model="m")
    ('/completions', {'max_tokens': 4, 'temperature': 0.0, 'stop': ['\\n'], 'prompt': 'Q: 2+2?\\nA:', 'model': 'm'})
    >>> request_body("hi", GenerateSettings(system="Be brief."), chat=True, model=None)[1]
    {'max_tokens': 32, 'temperature': 0.0, 'messages': [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]}
    """  # noqa: E501
    body: dict[str, Any] = {"max_tokens": settings.max_new_tokens}
    if settings.do_sample:
        body.update(temperature=settings.temperature, top_p=settings.top_p,
                    seed=settings.row_seed(prompt) & 0x7FFFFFFF)
    else:
        body["temperature"] = 0.0
    stops = stops_for(settings, chat)
    if stops:
        body["stop"] = list(stops)
    if chat:
        messages = [{"role": "user", "content": prompt}]
        if settings.system:
            messages.insert(0, {"role": "system", "content": settings.system})
        body["messages"] = messages
        path = "/chat/completions"
    else:
        body["prompt"] = with_system(prompt, settings.system)
        path = "/completions"
    if model:
        body["model"] = model
    return path, body


def stops_for(settings: GenerateSettings, chat: bool) -> tuple[str, ...]:
    """The stop strings in force: a chat reply has none by default."""
    if chat and settings.stop is None:
        return ()
    return settings.stops


def parse_answer(answer: Any, settings: GenerateSettings, chat: bool, root: str,
                 prompt: str = "") -> Generation:
    """One response's answer (see the module); a malformed response is a ServerError.

    >>> parse_answer({"choices": [{"text": " Paris\\nQ:", "finish_reason": "stop"}],
    ...               "usage": {"completion_tokens": 3}}, GenerateSettings(), False, "R")
    Generation(text=' Paris', n_tokens=3, finish='stop')
    """
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerError(f"the server at {root} answered without choices; kgprobe needs an "
                          "OpenAI-compatible API")
    choice = choices[0]
    message = choice.get("message")
    text = (message.get("content") if isinstance(message, dict) else None) if chat \
        else choice.get("text")
    if not isinstance(text, str):
        raise ServerError(f"the server at {root} answered a "
                          f"{'chat ' if chat else ''}completion without its text")
    cut, _ = cut_at_stop(text, stops_for(settings, chat))
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    n = usage.get("completion_tokens")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool)
                          or not 0 <= n <= settings.max_new_tokens):
        raise ServerError(request_error(
            root, prompt, f"usage.completion_tokens = {n!r}, not a count of 0 to "
            f"{settings.max_new_tokens} tokens (max_tokens)"))
    finish: Finish = "length" if choice.get("finish_reason") == "length" else "stop"
    return Generation(cut, n or 0, finish)


def post(client: CompletionsClient, path: str, body: dict[str, Any], hint: str) -> Any:
    """One generation request through the client's primitive (its timeout bounds the whole
    request, answers are bounded, no redirect is followed); an HTTP refusal is one
    ServerError line ending in ``hint``."""
    try:
        return client._http("POST", path, body)
    except ServerError:
        raise
    except Exception as e:  # the client's HTTP status: a refusal with its detail
        raise ServerError(f"the server at {client.root} refused a {path} request ({e}); "
                          f"{hint}") from None


def chat_reply(client: CompletionsClient) -> Generation:
    """The server's greedy chat reply to :data:`CHAT_FINGERPRINT` (see the module)."""
    settings = GenerateSettings(max_new_tokens=16)
    path, body = request_body(CHAT_FINGERPRINT, settings, chat=True, model=client.model)
    answer = post(client, path, body, "it answers neither scoring nor chat requests: is "
                  "base_url an OpenAI-compatible API (e.g. http://host:8000/v1)?")
    return parse_answer(answer, settings, True, client.root, CHAT_FINGERPRINT)


def generate(client: CompletionsClient, prompts: Sequence[str], settings: GenerateSettings,
             *, chat: bool = False, progress: Callable[[int], None] | None = None
             ) -> list[Generation]:
    """Every prompt's answer from the server, in order (see the module)."""
    out: list[Generation | None] = [None] * len(prompts)

    def one(i: int) -> None:
        path, body = request_body(prompts[i], settings, chat=chat, model=client.model)
        answer = post(client, path, body,
                      "a server without a chat endpoint generates through /completions: "
                      "leave chat out" if chat else "a chat-only server generates through "
                      "/chat/completions: set chat=true")
        out[i] = parse_answer(answer, settings, chat, client.root, prompts[i])

    with ThreadPoolExecutor(max_workers=client.concurrency) as pool:
        for f in [pool.submit(one, i) for i in range(len(prompts))]:
            f.result()
            if progress:
                progress(1)
    return [g for g in out if g is not None]
