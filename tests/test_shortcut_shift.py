"""A split that moves a cue (issue 45 point 8; eval/metrics/shortcut_shift.sql): every rule's
accuracy on train, dev and test side by side, and a flag where a split's accuracy lies beyond
the label-shuffle null on the other side from train's.

The dataset mirrors OntoLAMA Pizza's controlled split: in train and dev every pair whose two
sides share their head word is a negative and every other pair a positive; in test it is the
other way round. So the head-word rule (and the shared-words rule, which reads the same cue
here) is right on all of train and dev and wrong on all of test; every other rule sees only
unique texts of one length and predicts the train majority outside train (train 10 : 10, a
tie: "0"), right on half of dev and test.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest

from probes.results import connect
from tests.test_shortcuts import _add, _rows

CUE = ("head_word_match", "shared_words")


def _pairs(c: duckdb.DuckDBPyConnection, split: str, n: int, shared_label: str) -> None:
    other = "1" if shared_label == "0" else "0"
    for i in range(n):
        _add(c, "t/moved", split, f"{split}-s{i}", f"a{split}{i} b{split}{i}", [shared_label],
             sub=f"a{split}{i} b{split}{i}", super=f"b{split}{i}")
        _add(c, "t/moved", split, f"{split}-u{i}", f"c{split}{i} d{split}{i}", [other],
             sub=f"c{split}{i} d{split}{i}", super=f"e{split}{i}")


@pytest.fixture
def rows() -> dict[str, dict]:
    c = connect(":memory:")
    _pairs(c, "train", 10, "0")
    _pairs(c, "dev", 5, "0")
    _pairs(c, "test", 20, "1")
    return {r["rule"]: r for r in _rows(c, "shortcut_shift") if r["probe"] == "t/moved"}


def _band_95() -> float:
    """The 95th percentile of |accuracy - 1/2| of a rule that predicts 1 on 20 of 40 items
    whose 20 ones are shuffled: k ones among its 20 is hypergeometric, accuracy k / 20."""
    pmf = [math.comb(20, k) * math.comb(20, 20 - k) / math.comb(40, 20) for k in range(21)]
    far = sorted((abs(k / 20 - 0.5), p) for k, p in enumerate(pmf))
    total = 0.0
    for d, p in far:
        total += p
        if total >= 0.95:
            return d
    return 0.5


def test_the_moved_cue_is_flagged_on_test_only(rows: dict[str, dict]) -> None:
    for rule in CUE:
        r = rows[rule]
        assert (r["train"], r["dev"], r["test"], r["value"]) == (1.0, 1.0, 0.0, -1.0), rule
        assert (r["n_train"], r["n_dev"], r["n_test"]) == (20, 10, 40)
        assert r["test_moved"] is True and r["dev_moved"] is False, rule
        assert r["test_null_median"] == pytest.approx(0.5, abs=0.05)
    # the band allows for the rules; here two rules share one cue, so it is one rule's band
    assert rows["head_word_match"]["test_band"] == pytest.approx(_band_95(), abs=0.05)
    by_rule = {rule: r for rule, r in rows.items() if rule not in CUE}
    # train in-sample: a lookup of a unique text finds its own label; elsewhere the majority
    assert by_rule and all((r["train"], r["dev"], r["test"]) == (
        1.0 if rule.startswith("lookup_") else 0.5, 0.5, 0.5) for rule, r in by_rule.items())
    others = list(by_rule.values())
    assert not any(r["test_moved"] or r["dev_moved"] for r in others)


def test_a_cue_that_holds_on_test_is_not_flagged() -> None:
    c = connect(":memory:")
    _pairs(c, "train", 10, "0")
    _pairs(c, "dev", 5, "0")
    _pairs(c, "test", 20, "0")  # the same association as train
    rows = {r["rule"]: r for r in _rows(c, "shortcut_shift") if r["probe"] == "t/moved"}
    assert rows["head_word_match"]["test"] == 1.0
    assert not any(r["test_moved"] for r in rows.values())


def test_the_report_shows_the_rules_side_by_side(tmp_path: Path, capsys: Any) -> None:
    from eval.report import main

    c = connect(tmp_path / "r.duckdb")
    _pairs(c, "train", 10, "0")
    _pairs(c, "dev", 5, "0")
    _pairs(c, "test", 20, "1")
    c.close()
    assert main(["--results", str(tmp_path / "r.duckdb"), "--out", str(tmp_path / "rep"),
                 "--no-plots"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Shortcut rules across the splits" in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| t/moved |")
            and ln.count("|") == 8]
    # the moved rules first, flagged; the others after them, unflagged
    assert [r.split("|")[2].strip() for r in rows[:2]] == ["head_word_match", "shared_words"]
    assert all(r.startswith(f"| t/moved | {rule} | 1.000 | 1.000 | 0.000 | 0.5")
               and r.endswith("| **test** |") for r, rule in zip(rows, CUE, strict=False))
    assert len(rows) == 14 and not any("**" in r for r in rows[2:])
    assert rows[0] in capsys.readouterr().out
