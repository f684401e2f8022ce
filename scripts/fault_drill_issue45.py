"""The cases of issue 45 for scripts/fault_drill.py (rows ``45.N``): a server's answer and a
results file are data. A hostile OpenAI-compatible server on 127.0.0.1 (tests/openai_hostile.py)
against the server backend, hostile text from a results file in the HTML report, and the small
ones of point 7. ``KGPROBE_DRILL_SKIP_SLOW=1`` leaves out the trickling and the huge answer
(for a run against a version that has no bound on them: they would hang it)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from fault_drill_kit import CHOICE, Drill, exported, results_counts

from tests.openai_hostile import hostile


def _scored(results: Path) -> Callable[[], str]:
    """The results' counts and how many stored scores or cache entries are not finite."""
    base = results_counts(results)

    def count() -> str:
        text = base()
        try:
            con = duckdb.connect(str(results), read_only=True)
        except duckdb.Error:
            return text
        try:
            bad = con.execute("SELECT (SELECT count(*) FROM scores WHERE NOT isfinite(score)) + "
                              "(SELECT count(*) FROM score_cache WHERE NOT isfinite(score))"
                              ).fetchone()
        finally:
            con.close()
        return f"{text} / {bad[0] if bad else 0} not finite"
    return count


def _server_run(url: str, q: Path, results: Path, **options: Any) -> Callable[[], int]:
    def call() -> int:
        from probes.app.run import main
        from probes.backends.server import load_server

        scorer = load_server(f"server:{url}", **{"max_retries": 0, **options})
        scorer.client.backoff = 0.01
        return main(["-m", "stand-in", "--results", str(results), "--queries", str(q),
                     "--only-extra", "--quiet", "-p", "d/*", "--chunk-size", "2"],
                    lambda name, **kw: scorer)
    return call


def edges(d: Drill) -> None:
    """Issue 45, points 1 to 7."""
    html_page(d)
    server_values(d)
    server_http(d)
    small_ones(d)


def html_page(d: Drill) -> None:
    f = d.folder()
    _, res = exported(f, CHOICE, score=True)
    payload = '<img src=x onerror="document.title=\'pwned\'">'
    con = duckdb.connect(str(res))
    for table in ("instances", "scores", "runs"):
        con.execute(f"UPDATE {table} SET probe = probe || ?", [payload])
    con.close()
    page = f / "r.html"

    def call() -> tuple[str, str]:
        from eval.report import main

        code = main(["--results", str(res), "--out", str(f / "md"), "--html", str(page),
                     "--no-plots"])
        text = page.read_text() if page.exists() else ""
        return (f"exit {code}", f"the payload as markup in the page: {payload in text}; as "
                f"text: {'&lt;img src=x onerror=' in text}")
    d.record("45.1", "`report --html` of a results file whose probe name holds "
             "`<img onerror=...>`", call)


def server_values(d: Drill) -> None:
    from tests.openai_hostile import VALUE_FAULTS

    for fault in sorted(VALUE_FAULTS):
        f = d.folder()
        q, res = exported(f, CHOICE)
        with hostile() as server:
            server.fault = fault
            point = "45.4" if fault in ("logprobs-null", "string") else "45.3"
            d.record(point, f"server answers `{fault}` for the prompts about the cat, a run",
                     _server_run(server.url, q, res), _scored(res))
    f = d.folder()
    q, res = exported(f, CHOICE)
    with hostile() as server:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            _server_run(server.url, q, res)()
        con = duckdb.connect(str(res))
        con.execute("UPDATE score_cache SET score = 'nan'::DOUBLE")
        con.execute("UPDATE scores SET score = 'nan'::DOUBLE")
        con.close()

        def report() -> tuple[str, str]:
            import contextlib
            import io
            import sys

            from eval.report import main
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["--results", str(res), "--out", str(f / "md"), "--no-plots"])
            sys.stderr.write(err.getvalue())
            line = next((x for x in err.getvalue().splitlines() if "warning" in x), "no warning")
            return f"exit {code}", line
        d.record("45.3", "report over stored NaN scores", report)

        def again() -> tuple[str, str]:
            before = len(server.paths)
            code = _server_run(server.url, q, res)()
            sent = sum(p == "/v1/completions" for p in server.paths[before:])
            return f"exit {code}", f"completion requests sent: {sent} (2 identify the model at " \
                                   f"load; the other {sent - 2} score the requests again)"
        d.record("45.3", "the same run again against a good server (NaN in the cache)", again,
                 _scored(res))


def server_http(d: Drill) -> None:
    from probes.backends.server import load_server
    from probes.backends.server_client import CompletionsClient

    os.environ["KGPROBE_SERVER_API_KEY"] = "drill-secret"
    try:
        with hostile() as other, hostile() as server:
            server.fault, server.location = "redirect", other.url.rsplit("/v1", 1)[0]

            def redirect() -> tuple[str, str]:
                try:
                    load_server(f"server:{server.url}")
                except Exception as e:
                    return type(e).__name__, f"{e} [requests at the other address: " \
                                             f"{len(other.paths)}]"
                return "ok", f"requests at the other address: {len(other.paths)}, with the " \
                             f"key: {sum('Authorization' in h for h in other.headers)}"
            d.record("45.2", "`GET /v1/models` answered `302` to another port (API key set)",
                     redirect)
    finally:
        del os.environ["KGPROBE_SERVER_API_KEY"]

    def client_case(point: str, case: str, fault: str, **options: Any) -> None:
        with hostile() as server:
            server.fault = fault
            client = CompletionsClient(server.url, model="org/llama-like",
                                       **{"retries": 0, "backoff": 0.01, **options})
            d.record(point, case, lambda: (client.echo(["A cat is an animal."]),
                                           ("ok", "answered"))[1])
    client_case("45.4", "a body shorter than its Content-Length", "short-body")
    client_case("45.7", "HTTP 500 (retried once)", "error-500", retries=1)
    if os.environ.get("KGPROBE_DRILL_SKIP_SLOW"):
        return
    client_case("45.5", "headers, then one byte a second; `timeout=3`", "trickle", timeout=3)
    client_case("45.6", "an answer without a length, streamed without end (1 GiB)",
                "huge-streamed")
    client_case("45.6", "`Content-Length: 1073741824`", "huge-declared")


def small_ones(d: Drill) -> None:
    from kg.manifest import load_manifest
    from probes.app.cli import main

    f = d.folder()
    (f / "a-file").write_text("keep")
    for what, out in (("/dev/null", "/dev/null"), ("an existing file", str(f / "a-file"))):
        d.record("45.7", f"`kgprobe bear subset --out` {what}",
                 lambda out=out: main(["bear", "subset", "--relation", "P19", "--out", out]))
    d.record("45.7", "`kgprobe bear subset --relation P99999`",
             lambda: main(["bear", "subset", "--relation", "P99999", "--out", str(f / "out")]),
             lambda: f"{len(list((f / 'out').glob('*')))} files" if (f / "out").exists()
             else "no folder")
    source = load_manifest()["bear"]
    for what, make in (("a FIFO", os.mkfifo),
                       ("a link to /dev/zero", lambda p: p.symlink_to("/dev/zero"))):
        g = d.folder()
        first = g / source.files[0].path
        first.parent.mkdir(parents=True)
        make(first)
        d.record("45.7", f"a BEAR data file that is {what}", lambda g=g: source.resolve(g))
    g = d.folder()
    _, res = exported(g, CHOICE, score=True)
    mine = g / "mine"
    mine.mkdir()
    head = "-- name: {}\n-- description: d.\n-- tasks: [choice]\n-- grain: [probe]\n"
    (mine / "c.sql").write_text(head.format("c") + "/* a note */\nCREATE TEMP TABLE t AS "
                                "SELECT 'p' AS probe, 1 AS value;\nSELECT * FROM t\n")
    d.record("45.7", "a metric with `/* comment */` before `CREATE TEMP TABLE`",
             lambda: __import__("eval.report").report.main(
                 ["--results", str(res), "--metrics", str(mine), "--out", str(g / "o1"),
                  "--no-plots"]))
    (mine / "c.sql").write_text(head.format("c") + "SELECT 'p' AS probe, ("
                                + "+".join(["1"] * 1500) + ") AS value\n")
    d.record("45.7", "a metric with an expression of 1,500 terms",
             lambda: __import__("eval.report").report.main(
                 ["--results", str(res), "--metrics", str(mine), "--out", str(g / "o2"),
                  "--no-plots"]))
