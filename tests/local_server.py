"""A server process for the tests, on 127.0.0.1: a free port, and :func:`running`, which starts
the server, waits until it answers and always stops it. Shared by the endpoint tests' oxigraph
server (``tests.sparql_server``) and the server backend's llama.cpp server
(``tests.llama_server``)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running(args: list[str], log_path: Path, ready_url: str, name: str, wait_s: float,
            poll_s: float, request_timeout_s: float) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``args`` (its output into ``log_path``), wait up to ``wait_s`` seconds until
    ``ready_url`` answers (asked every ``poll_s``), yield the process and always stop it; a
    failing test, named ``name``, when the server exits or does not answer in time."""
    with log_path.open("wb") as log:
        server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + wait_s
            while True:
                if server.poll() is not None:
                    pytest.fail(f"{name} exited: " + log_path.read_text()[-2000:])
                try:
                    with urllib.request.urlopen(ready_url, timeout=request_timeout_s):
                        break
                except OSError:  # refused, reset, timed out (URLError is an OSError)
                    if time.monotonic() > deadline:
                        pytest.fail(f"{name} did not answer on {ready_url} within {wait_s:g} s")
                    time.sleep(poll_s)
            yield server
        finally:
            if server.poll() is None:
                server.terminate()
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
