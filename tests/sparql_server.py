"""Start and stop ``oxigraph serve`` on 127.0.0.1 for the endpoint tests of several files."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def oxigraph_cli() -> str:
    """The ``oxigraph`` command beside this Python, else on PATH; a failing test if missing."""
    exe = Path(sys.executable).with_name("oxigraph")
    found = str(exe) if exe.is_file() else shutil.which("oxigraph")
    if not found:
        pytest.fail("the `oxigraph` command is missing; install it with `pip install oxigraph` "
                    "(it is in kgprobe's dev extra and requirements.lock: bash scripts/setup.sh)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(data: Path, workdir: Path, union_default_graph: bool = False) -> Iterator[str]:
    """Load ``data`` into a fresh location, serve it on a free local port, yield the query URL,
    and always stop the server."""
    cli = oxigraph_cli()
    location = workdir / "served"
    subprocess.run([cli, "load", "--location", str(location), "--file", str(data)],
                   check=True, capture_output=True, timeout=60)
    url = f"http://127.0.0.1:{free_port()}/query"
    args = [cli, "serve", "--location", str(location), "--bind", url.split("/")[2]]
    if union_default_graph:  # like the embedded store: read the union of the named graphs
        args.insert(4, "--union-default-graph")
    log_path = workdir / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while True:
                if server.poll() is not None:
                    pytest.fail("oxigraph serve exited: " + log_path.read_text())
                try:
                    with urllib.request.urlopen(url + "?query=ASK%7B%7D", timeout=1):
                        break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    if time.monotonic() > deadline:
                        pytest.fail(f"oxigraph serve did not answer on {url} within 20 s")
                    time.sleep(0.05)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
