"""A hostile OpenAI-compatible Completions server on 127.0.0.1 (issue 45): it answers like a vLLM
server (tests/test_server_responses.StandIn, the OpenAI echo form) until told otherwise, then
corrupts what it sends in one of :data:`VALUE_FAULTS` (for the prompts holding
``Hostile.trigger`` only, so a run stores its other requests) or misbehaves at the HTTP level
(:data:`HTTP_FAULTS`). It records every request's path and headers."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.test_server_responses import MODELS, StandIn


def _set(index: int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(lp: dict[str, Any]) -> None:
        lp["token_logprobs"][index] = value
    return change


# fault -> how it changes a choice's OpenAI echo form (``logprobs``); the prompt's tokens are
# at 1.. (0 is the BOS token, the last is the generated one)
VALUE_FAULTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "nan": _set(-2, float("nan")),
    "inf": _set(-2, float("inf")),
    "-inf": _set(-2, float("-inf")),
    "positive": _set(-2, 5.0),
    "string": _set(-2, "-1.5"),
    "logprobs-short": lambda lp: lp["token_logprobs"].pop(),
    "logprobs-null": lambda lp: lp.update(token_logprobs=[None]),
    "offsets-short": lambda lp: lp["text_offset"].pop(1),
    "offsets-out-of-range": lambda lp: lp["text_offset"].__setitem__(-2, 10 ** 6),
    "offsets-backwards": lambda lp: lp["text_offset"].__setitem__(-2, 0),
}
HTTP_FAULTS = ("redirect", "trickle", "huge-declared", "huge-streamed", "short-body",
               "error-500", "choices-junk")


@dataclass
class Hostile:
    """The server's state: ``fault`` (None: a good server), the ``trigger`` text a prompt must
    hold to get a corrupted answer, ``location`` (where a redirect points) and what it got."""

    url: str = ""
    fault: str | None = None
    trigger: str = "cat"
    location: str = ""
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    sent_bytes: int = 0


def _corrupt(state: Hostile, choice: dict[str, Any], prompt: str) -> None:
    if state.fault in VALUE_FAULTS and state.trigger in prompt and "logprobs" in choice:
        choice.pop("prompt_logprobs", None)  # the echo form only, so the fault is read
        VALUE_FAULTS[state.fault](choice["logprobs"])


def _handler(state: Hostile, stop: threading.Event) -> type:
    stand_in = StandIn("echo")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def send(self, code: int, raw: bytes, length: int | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw) if length is None else length))
            self.end_headers()
            self.wfile.write(raw)
            state.sent_bytes += len(raw)

        def record(self) -> None:
            state.paths.append(self.path)
            state.headers.append(dict(self.headers.items()))

        def do_GET(self) -> None:
            self.record()
            if state.fault == "redirect":
                self.send_response(302)
                self.send_header("Location", state.location + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/v1/models":
                self.send(200, json.dumps(MODELS).encode())
            else:
                self.send(404, b'{"detail": "Not Found"}')

        def do_POST(self) -> None:
            self.record()
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fault = state.fault
            if fault == "error-500":
                self.send(500, b'{"error": {"message": "CUDA error: an illegal memory '
                          b'access was encountered"}}')
                return
            if fault == "short-body":  # promises 1,000 bytes, sends 10 and closes
                self.send(200, b'{"choices"', length=1000)
                self.close_connection = True
                return
            if fault == "huge-declared":  # says 1 GB, sends a little
                self.send(200, b'{"choices": [', length=1 << 30)
                self.close_connection = True
                return
            if fault == "huge-streamed":  # no length: bytes until the client hangs up
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.close_connection = True
                block = b" " * (1 << 16)
                with contextlib.suppress(OSError):
                    self.wfile.write(b'{"choices": [')
                    for _ in range(1 << 14):  # 1 GiB at most
                        if stop.is_set():
                            return
                        self.wfile.write(block)
                        state.sent_bytes += len(block)
                return
            prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
            choices = []
            for i, p in enumerate(prompts):
                c = stand_in.choice(i, p, body)
                _corrupt(state, c, p)
                choices.append(c)
            if fault == "choices-junk" and any(state.trigger in p for p in prompts):
                choices = ["junk" for _ in prompts]
            raw = json.dumps({"id": "cmpl-1", "object": "text_completion",
                              "model": body.get("model"), "choices": choices}).encode()
            if fault == "trickle":  # the headers, then one byte a second
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                for b in raw:
                    if stop.wait(1.0):
                        return
                    with contextlib.suppress(OSError):
                        self.wfile.write(bytes([b]))
                        self.wfile.flush()
                return
            self.send(200, raw)

    return Handler


@contextlib.contextmanager
def hostile() -> Iterator[Hostile]:
    """The server, good until its ``fault`` is set; yields its state (``url`` ends in /v1)."""
    stop = threading.Event()
    state = Hostile()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, stop))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        time.sleep(0.01)
