"""The scorer behind its cache (probes.engine.runner.caching, issue 26 point 3): requests the
score cache holds are answered from it, the rest go to the model, and the model is
constructed only when a request is not cached."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest
from tqdm import tqdm

from probes.app.run import main
from probes.backends.protocol import CAUSAL_LM
from probes.engine import cache
from probes.engine.runner.caching import CachingScorer, RecordedScorer, needs_model
from probes.engine.runner.plan import Plan
from probes.engine.tasks import Request
from probes.results import connect
from tests.test_run import FakeScore, FakeScorer, choice_probe, query, setup
from tests.tolerance import logprob_close


class Recording(FakeScorer):
    """A FakeScorer that keeps every loglik request it is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str]] = []

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
        self.asked += [tuple(r) for r in requests]  # type: ignore[misc]
        return super().loglik(requests)


@pytest.fixture
def argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A scored choice probe (3 instances x 3 candidates x 2 prompts = 18 requests) whose
    model's revision is known without loading it (as a local model's checksum is)."""
    import probes.engine.models

    monkeypatch.setattr(probes.engine.models, "resolve", lambda name, **kw: SimpleNamespace(
        revision=FakeScorer.revision))
    qdir, results = setup(tmp_path, choice_probe())
    args = ["--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
            "--model", "fake/model", "-p", "t/choice"]
    assert main(args, scorer_factory=lambda *a, **kw: FakeScorer()) == 0
    return args


def never(*args: Any, **kwargs: Any) -> FakeScorer:
    raise AssertionError("the model was constructed, but every request is cached")


def results_of(argv: list[str]) -> Path:
    return Path(argv[argv.index("--results") + 1])


def test_a_run_whose_every_request_is_cached_never_constructs_the_scorer(
        argv: list[str]) -> None:
    assert main(argv, scorer_factory=never) == 0
    assert query(results_of(argv), "SELECT status, requests, cache_hits FROM runs") == [
        ("done", 18, 18)]


def test_one_uncached_request_is_the_only_one_the_scorer_sees(argv: list[str],
                                                              tmp_path: Path) -> None:
    results = results_of(argv)
    con = duckdb.connect(str(results))
    ((gone,),) = con.execute("SELECT key FROM score_cache ORDER BY key LIMIT 1").fetchall()
    con.execute("DELETE FROM score_cache WHERE key = ?", [gone])
    con.close()
    loads: list[Recording] = []

    def load(*args: Any, **kwargs: Any) -> Recording:
        loads.append(Recording())
        return loads[-1]

    assert main(argv, scorer_factory=load) == 0
    (model,) = loads
    assert model.calls == [("loglik", 1)]
    (asked,) = model.asked
    # the one request it was asked is the one whose cache entry was removed
    assert cache.request_key("fake/model", "rev1", {"dtype": "float32"},
                             Request("loglik", asked)) == gone
    assert query(results, "SELECT cache_hits FROM runs") == [(17,)]
    # ... and the rows equal those of a run that scored everything
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    fresh_q, fresh_results = setup(fresh, choice_probe())
    assert main([*argv[:1], str(fresh_results), "--queries", str(fresh_q), *argv[4:],
                 "--no-cache"], scorer_factory=lambda *a, **kw: FakeScorer()) == 0
    sql = ("SELECT split, instance_id, prompt_id, candidate, label, prompt, n_tokens, score "
           "FROM scores ORDER BY ALL")
    got, want = query(results, sql), query(fresh_results, sql)
    assert len(got) == len(want) == 18
    for g, w in zip(got, want, strict=True):
        assert g[:-1] == w[:-1] and logprob_close(g[-1], w[-1])


def test_the_wrapper_loads_the_model_only_to_answer_what_the_cache_lacks() -> None:
    con = connect(":memory:")
    identity = RecordedScorer("fake/model", "rev1", "causal", "float32", "cpu", CAUSAL_LM,
                              {"dtype": "float32"})
    held, missing = Request("loglik", ("A dog is", " an animal")), Request(
        "loglik", ("A cat is", " an animal"))
    keys = [cache.request_key("fake/model", "rev1", {"dtype": "float32"}, r)
            for r in (held, missing)]
    cache.commit(con, cache_rows=[(keys[0], "fake/model", "loglik", FakeScore(-2.5, 2))])
    loads: list[Recording] = []

    def load() -> Recording:
        loads.append(Recording())
        return loads[-1]

    scorer = CachingScorer(con, identity, load)
    work = Plan([], [], dict(zip(keys, (held, missing), strict=True)), [], {})
    only_held = Plan([], [], {keys[0]: held}, [], {})
    assert not needs_model(con, scorer, [only_held]) and needs_model(con, scorer, [work])
    assert scorer.cached(keys)[keys[0]].logprob == -2.5 and keys[1] not in scorer.cached(keys)
    assert not scorer.loaded and loads == []
    with tqdm(disable=True) as bar:
        (got,) = scorer.score([missing], bar)
    assert scorer.loaded and len(loads) == 1 and loads[0].asked == [missing.args]
    assert logprob_close(got.logprob, FakeScorer().loglik([missing.args])[0].logprob)


class CallRecording(FakeScorer):
    """A FakeScorer that keeps each loglik call's requests apart."""

    def __init__(self) -> None:
        super().__init__()
        self.per_call: list[list[str]] = []

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
        self.per_call.append([c + x for c, x in requests])
        return super().loglik(requests)


def test_requests_that_share_a_prefix_across_instances_are_scored_in_one_call(
        tmp_path: Path) -> None:
    # an answer-first prompt: the candidate "bird" starts the statements of two instances
    # (owl, emu), which an instance-by-instance order puts in different chunks of three
    probe = choice_probe(prompts='["[V] fits [W]."]')
    rows = []
    for sub, size in (("small", "3"), ("one", "1000")):
        (tmp_path / sub).mkdir()
        qdir, results = setup(tmp_path / sub, probe)
        scorer = CallRecording()
        assert main(["--results", str(results), "--queries", str(qdir), "--only-extra",
                     "--quiet", "--model", "fake/model", "-p", "t/choice", "--chunk-size", size],
                    scorer_factory=lambda *a, s=scorer, **kw: s) == 0
        rows.append(query(results, "SELECT instance_id, prompt_id, candidate, score FROM scores "
                                   "ORDER BY ALL"))
        if sub == "small":
            calls = scorer.per_call
    assert rows[0] == rows[1] and len(rows[0]) == 9
    assert len(calls) == 3 and all(len(c) == 3 for c in calls)
    birds = [i for i, call in enumerate(calls) for text in call if text.startswith("bird")]
    assert len(birds) == 2 and birds[0] == birds[1]
    flat = [text for call in calls for text in call]
    assert flat == sorted(flat)
