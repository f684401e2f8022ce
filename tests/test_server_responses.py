"""The server backend reads vLLM's answers: a stand-in HTTP server answers in the JSON shapes
vLLM's OpenAI server returns (no vLLM can run here; the real-server tests use llama.cpp's).

The shapes, from vLLM's source (``vllm/entrypoints/openai/completion/protocol.py``,
``completion/serving.py``, ``vllm/logprobs.py``):

- ``/v1/models``: ``{"data": [{"id", "object": "model", "created", "owned_by": "vllm",
  "root", "max_model_len", ...}]}``.
- ``/v1/completions`` with ``echo`` and ``logprobs`` (what kgprobe sends): each choice's
  ``logprobs`` is the OpenAI form over the prompt's token ids followed by the generated ones:
  ``tokens`` (each id decoded; a position without log-probabilities, the first, is decoded
  with ``tokenizer.decode``, so a BOS token reads ``<s>``), ``text_offset`` (the running sum of
  those texts' lengths, from 0: a BOS token's text shifts every later offset), ``token_logprobs``
  (None first) and ``top_logprobs``.
- Every choice also carries ``prompt_logprobs``: a list with one item per prompt token, None
  for the first, else ``{"<token id>": {"logprob": float, "rank": int, "decoded_token": str}}``
  holding the prompt's own token and the top ones (``prompt_logprobs: 0``: the prompt's token
  alone); and ``prompt_token_ids`` (the prompt's ids) when the request asks
  ``return_token_ids``.

The expected scores below are worked out by hand from the stand-in's token log-probabilities
(``TOKEN_LOGPROB``), not by kgprobe's code.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from probes.backends.server import load_server
from probes.backends.server_client import Echo, ServerError, parse_choice

BOS, BOS_ID = "<s>", 1
NEXT = " the"
"""The stand-in always generates this token (log-probability -1)."""


def split(text: str) -> list[str]:
    """The stand-in's tokenizer: words with their leading space, and single other characters."""
    return re.findall(r" ?[A-Za-z']+| ?[^A-Za-z' ]", text)


def token_logprob(token: str) -> float:
    """The stand-in model: log P(token) = -(1 + its length) / 8 (exact in binary)."""
    return -(1 + len(token)) / 8


class StandIn:
    """Answers like a vLLM server for a model whose tokenizer adds BOS. ``form``: which parts
    each choice carries: ``echo`` (the OpenAI echo form and prompt_logprobs with two entries a
    position, no token ids: what vLLM answers kgprobe's request), ``ids`` (the same plus
    ``prompt_token_ids``), ``prompt_logprobs0`` (only prompt_logprobs, one entry a position)."""

    def __init__(self, form: str) -> None:
        self.form = form
        self.ids: dict[str, int] = {BOS: BOS_ID}

    def id_of(self, token: str) -> int:
        return self.ids.setdefault(token, 100 + len(self.ids))

    def choice(self, index: int, prompt: str, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("echo"):
            return {"index": index, "text": NEXT, "finish_reason": "length",
                    "logprobs": {"tokens": [NEXT], "token_logprobs": [-1.0],
                                 "text_offset": [len(prompt)], "top_logprobs": [{NEXT: -1.0}]}}
        prompt_tokens = [BOS, *split(prompt)]
        ids = [self.id_of(t) for t in prompt_tokens]
        positions: list[Any] = [None]
        for t, i in zip(prompt_tokens[1:], ids[1:], strict=True):
            entry = {str(i): {"logprob": token_logprob(t), "rank": 3, "decoded_token": t}}
            if self.form != "prompt_logprobs0":
                entry[str(self.id_of(" zzz"))] = {"logprob": -0.01, "rank": 1,
                                                  "decoded_token": " zzz"}
            positions.append(entry)
        out: dict[str, Any] = {"index": index, "text": prompt + NEXT, "finish_reason": "length",
                               "stop_reason": None, "prompt_logprobs": positions}
        if self.form != "prompt_logprobs0":
            tokens = [*prompt_tokens, NEXT]
            offsets, at = [], 0
            for t in tokens:
                offsets.append(at)
                at += len(t)
            values = [None, *(token_logprob(t) for t in prompt_tokens[1:]), -1.0]
            out["logprobs"] = {
                "tokens": tokens, "text_offset": offsets, "token_logprobs": values,
                "top_logprobs": [None, *({t: v} for t, v in zip(tokens[1:], values[1:],
                                                                strict=True))]}
        if self.form == "ids":
            out["prompt_token_ids"] = ids
        return out


MODELS = {"object": "list", "data": [
    {"id": "org/llama-like", "object": "model", "created": 1700000000, "owned_by": "vllm",
     "root": "org/llama-like", "max_model_len": 4096}]}


@contextlib.contextmanager
def serving(complete: Callable[[dict[str, Any]], Any] | None) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that lists MODELS and answers ``POST /v1/completions`` with
    ``complete(body)`` (None: 404, a chat-only server); yields its base URL (ending in /v1)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def answer(self, code: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self.answer(200, MODELS)
            else:
                self.answer(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/v1/completions" and complete is not None:
                self.answer(200, complete(body))
            else:
                self.answer(404, {"detail": "Not Found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["echo", "ids", "prompt_logprobs0"])
def vllm_like(request: pytest.FixtureRequest) -> Iterator[str]:
    stand_in = StandIn(request.param)

    def complete(body: dict[str, Any]) -> Any:
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        return {"id": "cmpl-1", "object": "text_completion", "model": body["model"],
                "choices": [stand_in.choice(i, p, body) for i, p in enumerate(prompts)],
                "usage": {}}

    with serving(complete) as url:
        yield url


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def test_vllm_shapes_score_like_the_hand_computation(vllm_like: str) -> None:
    scorer = load_server(f"server:{vllm_like}")
    assert scorer.served == "org/llama-like"
    got = scorer.loglik([("A dog is a kind of", " animal"), ("The opposite of hot is ", "cold"),
                         ("", "A sparrow is a bird.")])
    # " animal": -(1+7)/8; " cold" (the context's trailing space joins it): -(1+5)/8;
    # the whole sentence, every token scored since the model was given BOS:
    # "A" -2/8, " sparrow" -9/8, " is" -4/8, " a" -3/8, " bird" -6/8, "." -2/8 = -26/8
    expected = [(-1.0, 1), (-0.75, 1), (-3.25, 6)]
    assert [(round(s.logprob, 12), s.n_tokens) for s in got] == expected
    tokens = scorer.token_logprobs([("", "A sparrow is a bird.")])[0]
    assert [t for t, _ in tokens] == ["A", " sparrow", " is", " a", " bird", "."]
    assert all(close(v, e) for (_, v), e in zip(tokens, [-0.25, -1.125, -0.5, -0.375, -0.75,
                                                         -0.25], strict=True))
    # the fingerprint holds the prompt's tokens, not vLLM's "<s>"
    assert scorer.fingerprint[0][0] == "The"


def test_bos_text_in_vllm_offsets_is_moved_back() -> None:
    """vLLM's echo for a BOS model: "<s>" at offset 0 shifts every offset by 3."""
    choice = {"logprobs": {"tokens": [BOS, "Paris", " is", " big", NEXT],
                           "text_offset": [0, 3, 8, 11, 15],
                           "token_logprobs": [None, -5.0, -2.0, -3.0, -1.0],
                           "top_logprobs": [None, {}, {}, {}, {}]}}
    echo = parse_choice(choice, "Paris is big", "R")
    assert echo == Echo(("Paris", " is", " big"), (0, 5, 8), (-5.0, -2.0, -3.0), ({}, {}, {}))


def test_prompt_logprobs_with_ids_pick_the_prompt_token() -> None:
    """Two entries a position (top-1 and the prompt's token): the ids say which is which; with
    no BOS the first token has no log-probability and its text is what the others leave."""
    choice = {"prompt_token_ids": [7, 8, 9],
              "prompt_logprobs": [None,
                                  {"8": {"logprob": -2.5, "rank": 4, "decoded_token": " is"},
                                   "5": {"logprob": -0.5, "rank": 1, "decoded_token": " was"}},
                                  {"9": {"logprob": -1.5, "rank": 2, "decoded_token": " big"}}]}
    echo = parse_choice(choice, "Paris is big", "R")
    assert echo.tokens == ("Paris", " is", " big")
    assert echo.offsets == (0, 5, 8)
    assert echo.logprobs == (None, -2.5, -1.5)
    assert echo.top[1] == {" is": -2.5, " was": -0.5}


def test_prompt_logprobs_that_cannot_be_read_are_one_line() -> None:
    ambiguous = {"prompt_logprobs": [None, {"8": {"logprob": -2.5, "decoded_token": " is"},
                                            "5": {"logprob": -0.5, "decoded_token": " was"}}]}
    with pytest.raises(ServerError) as e:
        parse_choice(ambiguous, "Paris is", "http://h:8000/v1")
    assert "return_token_ids" in str(e.value) and "\n" not in str(e.value)
    wrong = {"prompt_token_ids": [7, 8],
             "prompt_logprobs": [None, {"8": {"logprob": -2.5, "decoded_token": " was"}}]}
    with pytest.raises(ServerError) as e:
        parse_choice(wrong, "Paris is", "http://h:8000/v1")
    assert "do not spell the prompt" in str(e.value) and "\n" not in str(e.value)
    no_text = {"prompt_token_ids": [7, 8],
               "prompt_logprobs": [None, {"8": {"logprob": -2.5, "decoded_token": None}}]}
    with pytest.raises(ServerError) as e:
        parse_choice(no_text, "Paris is", "http://h:8000/v1")
    assert "decoded_token" in str(e.value)


def test_chat_only_server_is_one_line() -> None:
    """A server without /v1/completions returns no prompt log-probabilities (this one has no
    /v1/chat/completions either, so it cannot even generate: tests/test_server_chat_only.py
    loads one that has)."""
    with serving(None) as url, pytest.raises(ServerError) as e:
        load_server(f"server:{url}", max_retries=0)
    assert "has no Completions endpoint" in str(e.value) and "chat-only" in str(e.value)
    assert "\n" not in str(e.value)


def test_local_model_options_are_one_line() -> None:
    """Options that place weights locally mean nothing for a server: refused before any
    request (nothing listens at the URL)."""
    with pytest.raises(ServerError) as e:
        load_server("server:http://127.0.0.1:9/v1", device_map="auto", dtype="bfloat16")
    assert str(e.value).startswith("options device_map, dtype do not apply to a server model")
    with pytest.raises(ServerError, match="disagree; give the URL once"):
        load_server("server:http://a:1/v1", base_url="http://b:2/v1")
