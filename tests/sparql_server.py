"""Start and stop ``oxigraph serve`` on 127.0.0.1 for the endpoint tests of several files."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_server import free_port, running


def oxigraph_cli() -> str:
    """The ``oxigraph`` command beside this Python, else on PATH; a failing test if missing."""
    exe = Path(sys.executable).with_name("oxigraph")
    found = str(exe) if exe.is_file() else shutil.which("oxigraph")
    if not found:
        pytest.fail("the `oxigraph` command is missing; install it with `pip install oxigraph` "
                    "(it is in kgprobe's dev extra and requirements.lock: bash scripts/setup.sh)")
    return found


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
    with running(args, workdir / "serve.log", url + "?query=ASK%7B%7D", "oxigraph serve",
                 wait_s=20, poll_s=0.05, request_timeout_s=1):
        yield url
