"""Generation through a server (probes.backends.server_generate) against a real HTTP server
on 127.0.0.1 that serves tests/test_backends.py's tiny Llama with transformers' own greedy
``generate`` behind ``/v1/completions`` and ``/v1/chat/completions`` (the chat template of
the SmolLM2 tokenizer applied server-side, stop strings cut server-side, as vLLM does)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch

from probes.backends import ModelError, load_scorer
from probes.backends.generation import GenerateSettings
from probes.backends.server_client import CompletionsClient, ServerError
from probes.backends.server_generate import generate
from probes.engine.chat import ChatTemplateScorer
from tests.test_backends import smol_tokenizer, tiny_llama  # noqa: F401

PROMPTS = ["The capital of France is", "A dog is a kind of", "Q: What is 2+2?\nA:"]


class _Server:
    def __init__(self, scorer: Any, chat: bool) -> None:
        self.scorer, self.chat, self.bodies = scorer, chat, []

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.bodies.append((path, body))
        tok, model = self.scorer.tokenizer, self.scorer.model
        if path == "/v1/chat/completions" and self.chat:
            text = tok.apply_chat_template(body["messages"], tokenize=False,
                                           add_generation_prompt=True)
        elif path == "/v1/completions":
            text = body["prompt"]
        else:
            return 404, {"error": {"message": f"no route {path}"}}
        ids = tok(text, return_tensors="pt", add_special_tokens=False)
        with torch.inference_mode():
            out = model.generate(**ids, max_new_tokens=body["max_tokens"], do_sample=False,
                                 pad_token_id=tok.pad_token_id)
        new = out[0, ids.input_ids.shape[1]:].tolist()
        answer = tok.decode(new, skip_special_tokens=True)
        finish = "length" if len(new) == body["max_tokens"] else "stop"
        for s in body.get("stop") or []:
            if s in answer:
                answer, finish = answer[:answer.index(s)], "stop"
        choice = ({"message": {"role": "assistant", "content": answer}} if "messages" in body
                  else {"text": answer})
        return 200, {"choices": [{"index": 0, **choice, "finish_reason": finish}],
                     "usage": {"completion_tokens": len(new)}}


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:  # noqa: F811
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


def serve(llama: Any, chat: bool) -> Iterator[tuple[str, _Server]]:
    state = _Server(llama, chat)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            code, answer = state.answer(self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def server(llama: Any) -> Iterator[tuple[str, _Server]]:
    yield from serve(llama, chat=True)


def test_completions_answers_equal_the_in_process_backend(llama: Any, server: Any) -> None:
    url, state = server
    client = CompletionsClient(url, model="tiny", retries=0, timeout=60)
    settings = GenerateSettings(max_new_tokens=8)
    got = generate(client, PROMPTS, settings)
    want = llama.generate(PROMPTS, settings)
    assert [g.text for g in got] == [w.text for w in want]
    assert all(b["max_tokens"] == 8 and b["stop"] == ["\n"] and b["temperature"] == 0.0
               and b["model"] == "tiny" for _, b in state.bodies)


def test_chat_completions_equal_the_chat_template_in_process(llama: Any, server: Any) -> None:
    url, state = server
    client = CompletionsClient(url, retries=0, timeout=60)
    settings = GenerateSettings(max_new_tokens=6, system="Answer briefly.")
    got = generate(client, PROMPTS, settings, chat=True)
    want = ChatTemplateScorer(llama).generate(PROMPTS, settings)
    assert [g.text for g in got] == [w.text for w in want]
    path, body = state.bodies[0]
    assert path == "/v1/chat/completions" and "stop" not in body
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}


def test_chat_on_a_server_without_chat_is_one_clear_line(llama: Any) -> None:
    for url, _ in serve(llama, chat=False):
        client = CompletionsClient(url, retries=0, timeout=60)
        with pytest.raises(ServerError) as e:
            generate(client, PROMPTS[:1], GenerateSettings(max_new_tokens=2), chat=True)
        msg = str(e.value)
        assert "/chat/completions" in msg and "leave chat out" in msg and "\n" not in msg
        assert isinstance(e.value, ModelError)
