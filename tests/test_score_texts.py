"""``api.score_texts``: a plain list of sentences and (context, continuation) pairs scored without a
probe file, through the score cache, per-token scores on request (issue 32 point 5)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from probes.app import api
from probes.engine.errors import ProbeError


class S(NamedTuple):
    logprob: float
    n_tokens: int


class Counting:
    """A scorer whose score of a pair is minus the number of characters of its continuation,
    one token per word; it counts what it is asked."""

    name, revision, kind = "counting", "r1", "causal"

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def cache_key_options(self) -> dict[str, Any]:
        return {}

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[S]:
        self.asked += list(requests)
        return [S(-float(len(c)), len(c.split())) for _, c in requests]

    def token_logprobs(self, requests: Sequence[tuple[str, str]]) -> list[list[tuple[str, float]]]:
        self.asked += list(requests)
        return [[(" " + w, -float(len(w) + 1)) for w in c.split()] for _, c in requests]


def test_sentences_and_pairs_in_order_through_the_cache(tmp_path: Path) -> None:
    scorer = Counting()
    results = tmp_path / "r.duckdb"
    items: list[Any] = ["A dog barks.", ("A dog is a kind of", " animal")]
    df = api.score_texts(items, scorer, results)
    assert df["context"].to_list() == ["", "A dog is a kind of"]
    assert df["continuation"].to_list() == ["A dog barks.", " animal"]
    assert df["logprob"].to_list() == [-12.0, -7.0] and df["n_tokens"].to_list() == [3, 1]
    assert len(scorer.asked) == 2
    again = api.score_texts([*items, "A cat purrs."], scorer, results)
    assert scorer.asked[2:] == [("", "A cat purrs.")]  # only the new item reaches the model
    assert again["logprob"].to_list()[:2] == [-12.0, -7.0]


def test_per_token_scores_are_cached_too(tmp_path: Path) -> None:
    scorer = Counting()
    results = tmp_path / "r.duckdb"
    df = api.score_texts([("A dog is", " an animal")], scorer, results, per_token=True)
    assert df["tokens"].to_list() == [[" an", " animal"]]
    assert df["token_logprobs"].to_list() == [[-3.0, -7.0]]
    n = len(scorer.asked)
    assert api.score_texts([("A dog is", " an animal")], scorer, results,
                           per_token=True).equals(df)
    assert len(scorer.asked) == n


@pytest.mark.parametrize("bad", [3, ("only one",), ("a", 2)])
def test_a_bad_item_is_one_line(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(ProbeError, match=r"item 1 .* is neither a sentence"):
        api.score_texts(["ok", bad], Counting(), tmp_path / "r.duckdb")


@pytest.mark.slow
def test_local_causal_per_token_scores_sum_to_its_loglik(tmp_path: Path) -> None:
    scorer = api.load_scorer("smollm2-135m", threads=1, device="cpu")
    df = api.score_texts(["A sparrow is a bird.", ("The capital of France is", " Paris")],
                         scorer, tmp_path / "r.duckdb", per_token=True)
    for row in df.iter_rows(named=True):
        assert len(row["tokens"]) == row["n_tokens"]
        assert abs(sum(row["token_logprobs"]) - row["logprob"]) <= 1e-4 * max(
            1.0, abs(row["logprob"]))
    assert "".join(df["tokens"][1]) == " Paris"
