"""The machinery of scripts/fault_drill.py: stand-ins (a scorer, misbehaving HTTP servers on
127.0.0.1), a case's record (:class:`Outcome`, :class:`Drill`), row counters and the helpers
that build a results file or probe folder for a case. The cases themselves are in fault_drill.py.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import os
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyoxigraph as ox

from kg.store import LocalStore
from probes.app.run import main as run_main
from probes.backends.protocol import CAUSAL_LM
from probes.engine.export import export
from probes.engine.export import main as export_main
from probes.engine.spec import discover

ROOT = Path(__file__).resolve().parents[1]
EMPTY = b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}'
CHOICE = ("# name: d/choice\n# task: choice\n# split: test\n# target: ?w\n# gold: ?g\n"
          "# candidates: ?c\n# group_by: [?w, ?g]\n# prompts: [\"[W] is [DET] [V].\"]\n"
          "SELECT ?w ?g ?c WHERE { VALUES (?w ?g ?c) { (\"owl\" \"bird\" \"tree\") "
          "(\"owl\" \"bird\" \"apple\") (\"cat\" \"animal\" \"tree\") (\"emu\" \"bird\" \"thing\")"
          " } }\n")
RECORDS = "# name: d/x\n# task: records\n# split: test\n"


# --- stand-ins ----------------------------------------------------------------------------------

class Score(tuple):
    @property
    def logprob(self) -> float:
        return self[0]

    @property
    def n_tokens(self) -> int:
        return self[1]


class StandInScorer:
    """A causal 'model' whose log-probability is minus the continuation's length / 10."""

    name, revision, kind, device, dtype = "stand-in", "r1", "causal", "cpu", "float32"
    capabilities = CAUSAL_LM  # declared, as every scorer must (issue 31, point 1)
    max_length, batch_size, mask_token = 512, None, None

    def __init__(self, refuse: str | None = None) -> None:
        self.refuse = refuse

    def cache_key_options(self) -> dict[str, Any]:
        return {}

    def loglik(self, requests: Any) -> list[Score]:
        from probes.engine.models import PromptTooLongError

        for i, (c, x) in enumerate(requests):
            if self.refuse and self.refuse in c:
                raise PromptTooLongError(f"prompt #{i} ({c + x!r}) has 900 tokens but model "
                                         "'stand-in' accepts at most 512; shorten the template "
                                         "or the inserted text")
        return [Score((-len(x) / 10, 1)) for _, x in requests]


@contextlib.contextmanager
def server(kind: str) -> Iterator[dict[str, Any]]:
    """An HTTP server on 127.0.0.1: html, nojson (JSON without results), trickle (one byte per
    0.5 s), silent (never answers) or record (answers empty results, keeps request bodies)."""
    stop = threading.Event()
    info: dict[str, Any] = {"bodies": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            info["bodies"].append(self.rfile.read(n))
            if kind == "silent":
                stop.wait(120)
                return
            body = {"html": b"<html><body>Welcome</body></html>",
                    "nojson": b'{"status": "ok"}'}.get(kind, EMPTY)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(len(body)) if kind == "trickle" else [None]:
                if i is None:
                    self.wfile.write(body)
                elif stop.wait(0.5):
                    return
                else:
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()

        do_GET = do_POST

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    info["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/query"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield info
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()


# --- a case and its record ----------------------------------------------------------------------

@dataclass
class Outcome:
    point: str
    case: str
    outcome: str
    message: str
    before: str
    after: str
    files_left: str = "none"
    connections: str = "none"


LEFTOVERS = ("*.tmp", "*.wal", "*.partial", "kgprobe-reason-*", "*staging*")


@contextlib.contextmanager
def counted_connections() -> Iterator[list[Any]]:
    """Every socket connection this process opens while the block runs (Python sockets: urllib,
    SPARQLWrapper, http.client; a connection made inside DuckDB's or Oxigraph's native code is
    not seen here, so the SERVICE cases count their server's requests themselves)."""
    made: list[Any] = []
    real = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> Any:
        made.append(address)
        return real(sock, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    try:
        yield made
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]


def describe_connections(made: list[Any]) -> str:
    """``none``, or the count and the hosts (only 127.0.0.1 may appear)."""
    if not made:
        return "none"
    hosts = sorted({str(a[0]) if isinstance(a, tuple) else str(a) for a in made})
    return f"{len(made)} to {', '.join(hosts)}"


class Drill:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.rows: list[Outcome] = []
        self.n = 0

    def folder(self) -> Path:
        self.n += 1
        d = self.tmp / f"case{self.n:02d}"
        d.mkdir()
        return d

    def clean(self, text: str) -> str:
        text = text.strip().splitlines()[0] if text.strip() else ""
        text = text.replace(str(self.tmp), "$TMP").replace(os.path.realpath(self.tmp), "$TMP")
        text = re.sub(r"\$TMP/case\d+", "$TMP", text)
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
        text = re.sub(r"process \d+", "process PID", text)
        return text.removeprefix("error: ")

    def leftovers(self) -> set[str]:
        """Temporary files a command may leave behind: staged ``*.tmp`` files, write-ahead logs,
        reasoner and staging folders, here and in the system's temporary folder."""
        found = {str(p) for pattern in LEFTOVERS for p in self.tmp.rglob(pattern)}
        system = Path(tempfile.gettempdir())
        found |= {str(p) for p in system.glob("kgprobe-*") if not str(self.tmp).startswith(str(p))}
        return found

    def record(self, point: str, case: str, call: Callable[[], Any],
               count: Callable[[], str] = lambda: "–") -> None:
        """Run ``call`` (a CLI main or a function), catch its stderr and exception."""
        before = count()
        left_before = self.leftovers()
        err = io.StringIO()
        t0 = time.monotonic()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                    counted_connections() as connections:
                result = call()
            if isinstance(result, tuple):  # (outcome, message) from a case of its own
                outcome, message = result
            else:
                outcome, message = f"exit {result}", err.getvalue()
        except Exception as e:
            outcome, message = type(e).__name__, str(e)
        seconds = time.monotonic() - t0
        left = sorted(self.leftovers() - left_before)
        self.rows.append(Outcome(point, case, f"{outcome} ({seconds:.1f} s)",
                                 self.clean(message), before, count(),
                                 ", ".join(self.clean(x) for x in left) or "none",
                                 describe_connections(connections)))
        print(f"{point:4} {case[:60]:60} {outcome}", file=sys.stderr)


def results_counts(results: Path) -> Callable[[], str]:
    def count() -> str:
        if not results.is_file():
            return "no file"
        try:
            con = duckdb.connect(str(results), read_only=True)
        except duckdb.Error:
            return "unreadable"
        try:
            got = [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                   for t in ("instances", "scores", "runs")]
        except duckdb.Error:
            return "unreadable"
        finally:
            con.close()
        return f"{got[0]} inst / {got[1]} scores / {got[2]} runs"
    return count


def quad_count(store: Path) -> Callable[[], str]:
    def count() -> str:
        try:
            return f"{len(ox.Store.read_only(str(store)))} quads"
        except (OSError, RuntimeError):
            return "unreadable" if store.exists() else "no store"
    return count


def exported(folder: Path, *texts: str, score: bool = False) -> tuple[Path, Path]:
    """Probe files in folder/q, exported into folder/r.duckdb (and scored by the stand-in)."""
    q = folder / "q"
    q.mkdir()
    for i, t in enumerate(texts):
        (q / f"p{i}.rq").write_text(t, encoding="utf-8")
    results = folder / "r.duckdb"
    export(discover([q], include_default=False), LocalStore.in_memory(), results, None,
           progress=False)
    if score:
        run(q, results)
    return q, results


def run(q: Path, results: Path, *args: str, scorer: Any = None) -> int:
    return run_main(["--model", "stand-in", "--results", str(results), "--queries", str(q),
                     "--only-extra", "--quiet", "-p", "d/*", *args],
                    lambda name, **kw: scorer or StandInScorer())


EMPTY_STORE: list[Path] = []  # an empty store made once per drill (see main)


def export_cli(q: Path, results: Path, *args: str) -> int:
    store = [] if "--endpoint" in args else ["--store", str(EMPTY_STORE[0])]
    return export_main(["--queries", str(q), "--only-extra", "--results", str(results),
                        "--no-parquet", "--quiet", *store, *args])


def probe_dir(folder: Path, text: str) -> Path:
    q = folder / "q"
    q.mkdir(exist_ok=True)
    (q / "p.rq").write_text(text, encoding="utf-8")
    return q
