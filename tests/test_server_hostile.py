"""A server's answer is data (issue 45 points 2-6): a hostile OpenAI-compatible server on
127.0.0.1 (tests/openai_hostile.py) against the server backend. Each fault is one line, and
nothing is stored for the request it hit: a run keeps the requests scored before it, and no
score or cache entry holds a value the server should not have sent."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from probes.backends.server import load_server
from probes.backends.server_client import CompletionsClient, ServerError
from tests.openai_hostile import VALUE_FAULTS, hostile
from tests.test_run import choice_probe, query, setup


def _run(url: str, qdir: Path, results: Path, **options: Any) -> int:
    from probes.app.run import main

    scorer = load_server(f"server:{url}", **options)
    scorer.client.backoff = 0.01
    return main(["-m", "stand-in", "--results", str(results), "--queries", str(qdir),
                 "--only-extra", "--quiet", "-p", "t/choice", "--chunk-size", "4"],
                lambda name, **kw: scorer)


def _one_line(capsys: Any) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("fault", [*sorted(VALUE_FAULTS), "choices-junk"])
def test_a_bad_value_is_one_line_and_stored_nowhere(fault: str, tmp_path: Path,
                                                    capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    with hostile() as server:
        server.fault = fault  # every prompt about the cat gets a corrupted answer
        code = _run(server.url, qdir, results, max_retries=0)
    err = _one_line(capsys)
    assert code == 2
    assert f"the server at {server.url} answered the request for " in err
    assert "cat" in err and "nothing was stored for it" in err
    scores = query(results, "SELECT prompt, score, n_tokens FROM scores")
    assert all("cat" not in p for p, _, _ in scores)  # nothing of the request that failed
    assert all(math.isfinite(s) and s <= 0 and n > 0 for _, s, n in scores)
    cached = query(results, "SELECT score, n_tokens FROM score_cache")
    assert len(cached) == len(scores)
    assert all(math.isfinite(s) and s <= 0 and n > 0 for s, n in cached)
    assert query(results, "SELECT status FROM runs") == [("failed",)]


def test_a_stored_nan_is_never_served(tmp_path: Path, capsys: Any) -> None:
    """A cache entry that holds NaN (written before the answers were checked) is scored again,
    and the new value replaces it."""
    qdir, results = setup(tmp_path, choice_probe())
    with hostile() as server:
        assert _run(server.url, qdir, results) == 0
        import duckdb

        con = duckdb.connect(str(results))
        n = con.execute("UPDATE score_cache SET score = 'nan'::DOUBLE, n_tokens = 0").fetchall()
        con.close()
        assert n[0][0] > 0
        server.paths.clear()
        assert _run(server.url, qdir, results) == 0
    assert any(p == "/v1/completions" for p in server.paths[3:])  # scored again
    cached = query(results, "SELECT score FROM score_cache")
    assert cached and all(math.isfinite(s) for (s,) in cached)
    assert query(results, "SELECT count(*) FROM scores WHERE NOT isfinite(score)") == [(0,)]


def test_no_redirect_takes_the_key_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGPROBE_SERVER_API_KEY", "secret-key")
    with hostile() as other, hostile() as server:
        server.fault, server.location = "redirect", other.url.rsplit("/v1", 1)[0]
        with pytest.raises(ServerError) as e:
            load_server(f"server:{server.url}")
    assert other.paths == []  # the other address got nothing, so not the key
    assert server.headers[0]["Authorization"] == "Bearer secret-key"
    line = str(e.value)
    assert "\n" not in line and "redirect (HTTP 302 to " + other.url in line
    assert "kgprobe follows no redirect" in line


def _client(server: Any, **options: Any) -> CompletionsClient:
    return CompletionsClient(server.url, model="org/llama-like",
                             **{"retries": 0, "backoff": 0.01, **options})


def test_a_trickling_server_is_bounded_by_the_timeout() -> None:
    with hostile() as server:
        server.fault = "trickle"  # headers, then one byte a second
        client = _client(server, timeout=2)
        start = time.monotonic()
        with pytest.raises(ServerError, match=r"no whole answer within timeout=2 s") as e:
            client.echo(["A cat is an animal."])
        took = time.monotonic() - start
    assert took < 4, took
    assert "\n" not in str(e.value) and "cannot reach" not in str(e.value)
    assert f"the inference server at {server.url} gave POST /completions no whole answer" in \
        str(e.value)


@pytest.mark.parametrize("fault", ["huge-declared", "huge-streamed"])
def test_a_huge_answer_is_refused_as_it_streams(fault: str) -> None:
    with hostile() as server:
        server.fault = fault
        client = _client(server, max_bytes=1 << 20)
        with pytest.raises(ServerError, match=r"an answer over 1,048,576 bytes") as e:
            client.echo(["A cat is an animal."])
        time.sleep(0.2)
        sent = server.sent_bytes
    assert "\n" not in str(e.value)
    assert sent < 64 << 20  # the client hung up long before the server's 1 GiB


def test_a_body_shorter_than_its_length_is_one_line() -> None:
    with hostile() as server:
        server.fault = "short-body"
        with pytest.raises(ServerError) as e:
            _client(server).echo(["A cat is an animal."])
    line = str(e.value)
    assert "\n" not in line and "the answer ended after 10 bytes, before its Content-Length" in line
    assert "failed on POST /completions" in line  # it was reached


def test_http_500_says_the_server_failed_not_that_it_was_unreachable() -> None:
    with hostile() as server:
        server.fault = "error-500"
        with pytest.raises(ServerError) as e:
            _client(server, retries=1).echo(["A cat is an animal."])
    line = str(e.value)
    assert "cannot reach" not in line and "\n" not in line
    assert (f"the inference server at {server.url} failed on POST /completions (HTTP 500: "
            "CUDA error: an illegal memory access was encountered, 2 tries)") in line
