"""A chat-only server (probes.backends.server, ``Offer``): a real HTTP server on 127.0.0.1
that serves tests/test_backends.py's tiny Llama behind ``/v1/models`` and
``/v1/chat/completions`` only (the SmolLM2 chat template applied server-side, transformers'
greedy ``generate``), its ``/v1/completions`` missing, refusing the echo, or answering it
without log-probabilities. It loads for generation (one warning line), the ``generate`` task
runs through chat completions, and scored work is refused in one line before anything is
stored."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch

from probes.backends import load_scorer
from probes.backends.generation import GenerateSettings
from probes.backends.server import CHAT_ONLY
from probes.backends.server_client import ServerError
from probes.backends.server_generate import CHAT_FINGERPRINT
from probes.engine.chat import ChatTemplateScorer
from tests.test_backends import smol_tokenizer, tiny_llama  # noqa: F401  (module fixtures)
from tests.test_generate_run import generate_probe
from tests.test_run import choice_probe, query, run, setup

PROMPTS = ["The capital of France is", "A dog is a kind of", "Q: What is 2+2?\nA:"]
COMPLETIONS = ("missing", "no-echo", "no-logprobs")
"""How the server's /v1/completions fails: HTTP 404; HTTP 400 to an echo; text only."""


@dataclass
class ChatServer:
    """The server's state: how /completions fails, whether chat answers, what it got."""

    scorer: Any
    completions: str = "missing"
    chat: bool = True
    reply_suffix: str = ""  # other "weights": the same model's replies with text added
    fault: str | None = None  # "redirect", "junk-message", "bad-count", "slow" (chat)
    paths: list[str] = field(default_factory=list)
    url: str = ""

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
        self.paths.append(path)
        if path == "/v1/completions":
            if self.completions == "missing":
                return 404, {"detail": "Not Found"}, ""
            if self.completions == "no-echo" and body.get("echo"):
                return 400, {"error": {"message": "echo is not supported"}}, ""
            return 200, {"choices": [{"index": 0, "text": " x", "finish_reason": "length"}]}, ""
        if path != "/v1/chat/completions" or not self.chat:
            return 404, {"detail": "Not Found"}, ""
        if self.fault == "redirect":
            return 307, {}, "http://127.0.0.2:9/v1/chat/completions"
        if self.fault == "slow":  # answers after the client's timeout, without the model
            time.sleep(3)
            return 200, {"choices": [{"index": 0, "message": {"content": "late"}}]}, ""
        tok, model = self.scorer.tokenizer, self.scorer.model
        text = tok.apply_chat_template(body["messages"], tokenize=False,
                                       add_generation_prompt=True)
        ids = tok(text, return_tensors="pt", add_special_tokens=False)
        with torch.inference_mode():
            out = model.generate(**ids, max_new_tokens=body["max_tokens"], do_sample=False,
                                 pad_token_id=tok.pad_token_id)
        new = out[0, ids.input_ids.shape[1]:].tolist()
        answer = tok.decode(new, skip_special_tokens=True) + self.reply_suffix
        message: Any = {"role": "assistant", "content": answer}
        count: Any = len(new)
        if self.fault == "junk-message":
            message = "not an object"
        if self.fault == "bad-count":
            count = -3
        return 200, {"choices": [{"index": 0, "message": message,
                                  "finish_reason": "length" if len(new) == body["max_tokens"]
                                  else "stop"}],
                     "usage": {"completion_tokens": count}}, ""


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:  # noqa: F811
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


@pytest.fixture()
def server(llama: Any) -> Iterator[ChatServer]:
    state = ChatServer(llama)

    class Handler(BaseHTTPRequestHandler):
        def reply(self, code: int, answer: dict[str, Any], location: str = "") -> None:
            data = json.dumps(answer).encode()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client gone
                self.send_response(code)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def do_GET(self) -> None:
            state.paths.append(self.path)
            if self.path == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": "tiny-chat",
                                                             "owned_by": "test"}]})
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.reply(*state.post(self.path, body))

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def load(server: ChatServer) -> Any:
    with pytest.warns(UserWarning) as seen:
        scorer = load_scorer(f"server:{server.url}", max_retries=0, timeout=60)
    lines = [str(w.message) for w in seen if "offers chat only" in str(w.message)]
    assert len(lines) == 1 and "\n" not in lines[0] and CHAT_ONLY in lines[0]
    return scorer


@pytest.mark.parametrize("completions", COMPLETIONS)
def test_a_chat_only_server_loads_for_generation(server: ChatServer, llama: Any,
                                                 completions: str) -> None:
    server.completions = completions
    scorer = load(server)
    assert scorer.operations == frozenset({"generate"}) and scorer.chat
    assert scorer.capabilities.generate and not scorer.capabilities.topk
    assert scorer.describe()["offers"] == "chat only"
    assert scorer.describe()["fingerprint_text"] == CHAT_FINGERPRINT
    assert scorer.cache_key_options()["api"] == "chat-only"
    server.paths.clear()
    settings = GenerateSettings(max_new_tokens=6, system="Answer briefly.")
    got = scorer.generate(PROMPTS, settings)
    want = ChatTemplateScorer(llama).generate(PROMPTS, settings)
    assert [g.text for g in got] == [w.text for w in want]
    assert [g.n_tokens for g in got] == [w.n_tokens for w in want]
    assert server.paths == ["/v1/chat/completions"] * len(PROMPTS)


def test_scored_operations_are_one_line_naming_why(server: ChatServer) -> None:
    scorer = load(server)
    for call in (lambda: scorer.loglik([("A dog is", " an animal")]),
                 lambda: scorer.topk(["A dog is a kind of [MASK]"], 5),
                 lambda: scorer.require("loglik")):
        with pytest.raises(ServerError) as e:
            call()
        msg = str(e.value)
        assert CHAT_ONLY in msg and "has no Completions endpoint" in msg and "\n" not in msg
    with pytest.raises(ServerError, match="offers chat only"), \
            pytest.warns(UserWarning, match="offers chat only"):
        load_scorer(f"server:{server.url}", max_retries=0, require=("loglik",))


def test_generate_runs_and_a_scored_probe_stores_nothing(tmp_path: Path, server: ChatServer,
                                                         llama: Any, capsys: Any) -> None:
    qdir, results = setup(tmp_path, generate_probe(), choice_probe())
    scorer = load(server)
    assert run(qdir, results, scorer, "-p", "t/gen") == 0
    rows = query(results, "SELECT g.prompt, g.generation FROM generations g ORDER BY ALL")
    assert len(rows) == 6
    settings = GenerateSettings(max_new_tokens=5)
    chat = ChatTemplateScorer(llama)
    for prompt, text in rows:
        assert text == chat.generate([prompt], settings)[0].text
    capsys.readouterr()
    assert run(qdir, results, scorer, "-p", "t/choice") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "offers chat only" in err[0], err
    assert query(results, "SELECT task, status FROM runs ORDER BY ALL") == [("generate", "done")]
    assert query(results, "SELECT count(*) FROM scores") == [(0,)]


def test_the_reply_fingerprint_tells_other_weights_apart(server: ChatServer) -> None:
    first = load(server).revision
    assert load(server).revision == first
    server.reply_suffix = " (other weights)"
    assert load(server).revision != first


def test_a_server_that_answers_neither_is_one_line(server: ChatServer) -> None:
    server.chat = False
    with pytest.raises(ServerError) as e:
        load_scorer(f"server:{server.url}", max_retries=0)
    msg = str(e.value)
    assert "has no Completions endpoint" in msg and "nor does it answer chat" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(("fault", "said"), [
    ("redirect", "redirect"), ("junk-message", "chat completion without its text"),
    ("bad-count", "usage.completion_tokens = -3"), ("slow", "no whole answer within timeout")])
def test_bad_chat_answers_are_refused_in_one_line(server: ChatServer, fault: str,
                                                  said: str) -> None:
    server.fault = fault
    with pytest.raises(ServerError) as e:
        load_scorer(f"server:{server.url}", max_retries=0, timeout=1 if fault == "slow" else 60)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert not any("127.0.0.2" in p for p in server.paths)  # the redirect was not followed
