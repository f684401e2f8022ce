"""Badly behaved HTTP servers on 127.0.0.1 for the endpoint and SERVICE tests (no other host)."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

EMPTY_SELECT = b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}'
# answers that look like SPARQL JSON but are not (issue 21): kind -> body
MALFORMED = {
    "no-head": b'{"results": {"bindings": [{"x": {"type": "literal", "value": "a"}}]}}',
    "no-type": b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"value": "a"}}]}}',
    "bindings-dict": b'{"head": {"vars": ["x"]}, "results": {"bindings": {"x": "a"}}}',
}
# error statuses (kind -> status) and the error text the server sends with them
ERROR_STATUS = {"bad-request": 400, "forbidden": 403}
ERROR_TEXT = "Parser error at line 1, column 8:\n  expected 'WHERE' — got '?'".encode()
# what the address a redirect points to answers (one row), to show it is never read
OTHER_ANSWER = (b'{"head": {"vars": ["x"]}, "results": {"bindings": '
                b'[{"x": {"type": "literal", "value": "from elsewhere"}}]}}')


@dataclass
class Served:
    """The URL of a running server and the request bodies it received."""

    url: str
    bodies: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def _handler(kind: str, served: Served, stop: threading.Event) -> type:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _answer(self) -> None:
            served.paths.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            served.bodies.append(self.rfile.read(length) if length else b"")
            if kind == "silent":  # accept, then never answer
                stop.wait(60)
                return
            if kind == "redirect" and self.path != "/elsewhere":  # 302 to another address
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if kind in ERROR_STATUS:  # an error status with the server's own error text
                self.send_response(ERROR_STATUS[kind])
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(ERROR_TEXT)))
                self.end_headers()
                self.wfile.write(ERROR_TEXT)
                return
            if kind == "huge":  # a valid result of about 3 MB
                rows = b",".join([b'{"x": {"type": "literal", "value": "' + b"a" * 1000
                                  + b'"}}'] * 3000)
                body = b'{"head": {"vars": ["x"]}, "results": {"bindings": [' + rows + b"]}}"
                self.send_response(200)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if kind == "html":
                body, ctype = b"<html><body>Welcome</body></html>", "text/html"
            elif kind == "json-no-results":
                body, ctype = b'{"status": "ok"}', "application/json"
            elif kind in MALFORMED:
                body, ctype = MALFORMED[kind], "application/sparql-results+json"
            elif kind == "redirect":  # what /elsewhere answers
                body, ctype = OTHER_ANSWER, "application/sparql-results+json"
            else:  # trickle / record: a valid empty result
                body, ctype = EMPTY_SELECT, "application/sparql-results+json"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if kind == "trickle":  # one byte at a time, slowly: each read succeeds
                for b in body:
                    if stop.wait(0.3):
                        return
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                return
            self.wfile.write(body)

        do_GET = _answer
        do_POST = _answer

    return Handler


@contextlib.contextmanager
def serving(kind: str) -> Iterator[Served]:
    """Serve ``kind`` (html, json-no-results, trickle, silent, record, redirect, huge, or a
    key of MALFORMED or ERROR_STATUS) on a free local port."""
    stop = threading.Event()
    served = Served("")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(kind, served, stop))
    server.daemon_threads = True
    served.url = f"http://127.0.0.1:{server.server_address[1]}/query"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        time.sleep(0.01)
