"""The subsumption task (OntoLAMA zero-shot) and the eval/ontolama metrics.

The task is checked on the real OntoLAMA probe header (queries/ontolama/pizza-atomic.rq: two
templates, label-word sets L1 {Yes/No}, L2 {Right/Wrong}, L3 {Yes, Right/No, Wrong}); the
metrics on hand-worked score tables whose expected values are worked out in the comments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pytest

from eval.sqlfile import discover_metrics, run_metric, run_support
from probes.backends.protocol import CAUSAL_LM, MASKED_LM
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import RunOptions
from probes.engine.runner.probe import run_probe
from probes.engine.spec import ProbeSpec, load_probe
from probes.engine.tasks import Instance, TaskContext, get_task
from probes.engine.tasks.subsumption import decode_prompt_id
from probes.results import connect
from probes.results.writers import PromptRow, Run, insert_run, write_prompts

ROOT = Path(__file__).parents[1]
PIZZA = load_probe(ROOT / "queries" / "ontolama" / "pizza-atomic.rq")
METRICS = {m.name: m for m in discover_metrics([ROOT / "eval" / "ontolama"])}
TASK = get_task("subsumption")
FIELDS = {"sub": "margherita", "a_sub": "a ", "super": "pizza", "a_super": "a "}


def instance(gold: str = "1", **fields: str) -> Instance:
    return Instance(PIZZA.spec.name, "test", "i1", "margherita", [gold], [],
                    {**FIELDS, **fields})


# --- the task ------------------------------------------------------------------------------


def test_items_cover_every_template_label_set_and_word() -> None:
    TASK.check(PIZZA.spec, TaskContext(CAUSAL_LM))
    items = TASK.items(instance(), PIZZA.spec, TaskContext(CAUSAL_LM))
    # 2 templates x (L1: 2 words, L2: 2, L3: 4) = 16 items, prompt ids 0..5.
    assert len(items) == 16
    got = {(decode_prompt_id(it.prompt_id, ["L1", "L2", "L3"]), it.candidate, it.label)
           for it in items}
    expected = set()
    for t in ("T1", "T2"):
        expected |= {((t, "L1"), "Yes", "1"), ((t, "L1"), "No", "0"),
                     ((t, "L2"), "Right", "1"), ((t, "L2"), "Wrong", "0"),
                     ((t, "L3"), "Yes", "1"), ((t, "L3"), "Right", "1"),
                     ((t, "L3"), "No", "0"), ((t, "L3"), "Wrong", "0")}
    assert got == expected


def test_causal_requests_score_the_filled_template_from_the_slot() -> None:
    items = TASK.items(instance(), PIZZA.spec, TaskContext(CAUSAL_LM))
    t1_yes = next(it for it in items if it.prompt_id == 0 and it.candidate == "Yes")
    assert t1_yes.prompt == "It is a margherita? Yes, it is a pizza."
    assert t1_yes.requests[0].op == "loglik"
    assert t1_yes.requests[0].args == ("It is a margherita?", " Yes, it is a pizza.")
    t2_no = next(it for it in items if it.prompt_id == 3 and it.candidate == "No")
    assert t2_no.requests[0].args == ('"It is a margherita"?', ' No, "it is a pizza".')


def test_masked_requests_score_the_label_word_at_the_slot() -> None:
    items = TASK.items(instance(a_super="", super="something that has topping some cheese"),
                       PIZZA.spec, TaskContext(replace(MASKED_LM, slot_token="<mask>")))
    right = next(it for it in items if it.prompt_id == 1 and it.candidate == "Right")
    text, (start, end) = right.requests[0].args
    assert right.requests[0].op == "pll"
    assert text == "It is a margherita? Right, it is something that has topping some cheese."
    assert text[start:end] == "Right"


def test_bad_gold_label_words_and_templates_are_clear_errors() -> None:
    with pytest.raises(ProbeError, match=r"gold 'yes'.*1 or 0"):
        TASK.items(instance(gold="yes"), PIZZA.spec, TaskContext(CAUSAL_LM))
    ctx = TaskContext(CAUSAL_LM)

    def spec(**kw: Any) -> ProbeSpec:
        base = {"name": "o/x", "task": "subsumption", "split": "test",
                "prompts": ["[SUB]? [V], [SUPER]."],
                "params": {"label_words": {"L1": {"1": ["Yes"], "0": ["No"]}}}}
        return ProbeSpec(**{**base, **kw})

    TASK.check(spec(), ctx)
    with pytest.raises(ProbeError, match="needs params label_words"):
        TASK.check(spec(params={}), ctx)
    with pytest.raises(ProbeError, match='classes "1" and "0"'):
        TASK.check(spec(params={"label_words": {"L1": {"yes": ["Yes"], "no": ["No"]}}}), ctx)
    with pytest.raises(ProbeError, match="for both classes"):
        TASK.check(spec(params={"label_words": {"L1": {"1": ["Yes"], "0": ["Yes"]}}}), ctx)
    with pytest.raises(ProbeError, match="exactly one slot"):
        TASK.check(spec(prompts=["[SUB] is [SUPER]."]), ctx)
    with pytest.raises(ProbeError, match="unknown params key 'label_word'"):
        TASK.check(spec(params={"label_word": {}}), ctx)


# --- the metrics, by hand --------------------------------------------------------------------


def add_instance(con: duckdb.DuckDBPyConnection, iid: str, gold: str) -> None:
    con.execute("INSERT INTO instances VALUES ('o/p', 'test', ?, NULL, ?, [], ?::JSON, now())",
                [iid, [gold], json.dumps(FIELDS)])


def add_run(con: duckdb.DuckDBPyConnection, rid: str, status: str = "done") -> None:
    # label_words deliberately not in name order: the set index counts the *sorted* names.
    cfg = {"prompts": ["T1 [V]", "T2 [V]"], "params": {"label_words": {
        "L2": {"1": ["Right"], "0": ["Wrong"]}, "L3": {"1": ["Yes", "Right"],
                                                       "0": ["No", "Wrong"]},
        "L1": {"1": ["Yes"], "0": ["No"]}}}}
    insert_run(con, Run(run_id=rid, model="m", probe="o/p", task="subsumption", config=cfg,
                        status=status))
    # What each prompt_id stands for (template_index * 3 + index of the sorted set name).
    write_prompts(con, [PromptRow(rid, t * 3 + s, f"T{t + 1}", cfg["prompts"][t], name,
                                  cfg["params"]["label_words"][name])
                        for t in range(2) for s, name in enumerate(["L1", "L2", "L3"])])


CLASS_OF = {"Yes": "1", "Right": "1", "No": "0", "Wrong": "0"}


def add_scores(con: duckdb.DuckDBPyConnection, rid: str, iid: str, pid: int,
               words: dict[str, float]) -> None:
    for word, score in words.items():
        con.execute("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                       candidate, label, prompt, score, n_tokens)
                       VALUES (?, 'o/p', 'test', ?, ?, ?, ?, '', ?, 1)""",
                    [rid, iid, pid, word, CLASS_OF[word], score])


@pytest.fixture
def hand() -> duckdb.DuckDBPyConnection:
    """prompt_id = template * 3 + set (L1 0, L2 1, L3 2): 0-2 are T1, 3-5 are T2."""
    con = connect(":memory:")
    add_instance(con, "A", "1")
    add_instance(con, "B", "0")
    add_instance(con, "C", "1")
    add_run(con, "R")
    add_run(con, "F", status="failed")
    a = {0: {"Yes": -1, "No": -2},                               # 1 wins: right
         1: {"Right": -3, "Wrong": -2},                          # 0 wins: wrong
         2: {"Yes": -1, "Right": -5, "No": -2, "Wrong": -3},     # mean 1: -3 < 0: -2.5: wrong
         3: {"Yes": -2, "No": -2},                               # tie: wrong
         4: {"Right": -1, "Wrong": -4},                          # right
         5: {"Yes": -2, "Right": -2, "No": -1, "Wrong": -4}}     # mean -2 > -2.5: right
    # (A's pid 2 and 5 are decided the other way by the best single word: only the mean fits.)
    for pid, words in a.items():
        add_scores(con, "R", "A", pid, words)
        add_scores(con, "R", "B", pid, words)  # gold 0: right where A is wrong, but not the tie
        add_scores(con, "F", "A", pid, {w: 0.0 for w in words})  # failed run: left out
    for pid in range(6):  # C (gold 1): right under T1 (pid 0-2), wrong under T2 (pid 3-5)
        good, bad = (-1, -2) if pid < 3 else (-2, -1)
        add_scores(con, "R", "C", pid, {"Yes": good, "Right": good, "No": bad, "Wrong": bad})
    return con


def metric(con: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    cols, rows = run_metric(con, METRICS[name])
    return [dict(zip(cols, r, strict=True)) for r in rows]


def test_accuracy_per_template_and_label_set(hand: duckdb.DuckDBPyConnection) -> None:
    rows = metric(hand, "ontolama_accuracy")
    assert {r["scoring"] for r in rows} == {"sum_prob", "mean_logprob"}
    # right: T1 L1 A, C; T1 L2 B, C; T2 L1 none (A and B tie, C wrong); T2 L2 A.
    # L3 by the mean of log-probabilities (OpenPrompt): T1 L3 B, C; T2 L3 A.
    # L3 by the sum of probabilities (the paper): pid 2 for A: e^-1 + e^-5 > e^-2 + e^-3, so A
    # is right and B wrong: T1 L3 A, C; pid 5: e^-2 + e^-2 = 0.271 < e^-1 + e^-4 = 0.386, so
    # B is right: T2 L3 B. The same totals, from other instances.
    third, two = pytest.approx(1 / 3), pytest.approx(2 / 3)
    for scoring in ("sum_prob", "mean_logprob"):
        got = {(r["template"], r["label_set"]): (r["value"], r["n"])
               for r in rows if r["scoring"] == scoring}
        assert got == {("T1", "L1"): (two, 3), ("T1", "L2"): (two, 3),
                       ("T1", "L3"): (two, 3), ("T2", "L1"): (0.0, 3),
                       ("T2", "L2"): (third, 3), ("T2", "L3"): (third, 3)}


def test_zero_shot_mean_and_std(hand: duckdb.DuckDBPyConnection) -> None:
    # six accuracies 2/3, 2/3, 2/3, 0, 1/3, 1/3: mean 8/18 = 4/9; deviations 2/9 (x3), -4/9,
    # -1/9 (x2): squares (12 + 16 + 2)/81 = 30/81, / 6 = 5/81: population std sqrt(5)/9.
    rows = metric(hand, "ontolama_zero_shot")
    assert sorted(r["scoring"] for r in rows) == ["mean_logprob", "sum_prob"]
    row = next(r for r in rows if r["scoring"] == "sum_prob")
    assert (row["run_id"], row["probe"], row["split"]) == ("R", "o/p", "test")
    assert row["value"] == pytest.approx(4 / 9)
    assert row["std"] == pytest.approx(5 ** 0.5 / 9)
    assert row["combinations"] == 6


def test_l3_sum_of_probabilities_against_a_hand_computation() -> None:
    """The paper's equation (L149): P(y | x) sums the probabilities of y's label words.

    Instance D (gold 1), T1 L3: P(Yes) = P(Right) = 0.30, P(No) = 0.65, P(Wrong) = 0.001.
    Sum: class 1 has 0.60, class 0 has 0.651, so D is wrong. Mean of log-probabilities:
    class 1 ln 0.30 = -1.204, class 0 (ln 0.65 + ln 0.001) / 2 = -3.669, so D is right.
    Instance F (gold 1): 0.5, 0.2 (sum 0.7) against 0.25, 0.25 (0.5): right both ways
    ((ln 0.5 + ln 0.2) / 2 = -1.151 > ln 0.25 = -1.386). Accuracy: 1/2 by the sum, 2/2 by
    the mean."""
    con = connect(":memory:")
    add_instance(con, "D", "1")
    add_instance(con, "F", "1")
    add_run(con, "R")
    ln = math.log
    add_scores(con, "R", "D", 2, {"Yes": ln(0.30), "Right": ln(0.30), "No": ln(0.65),
                                  "Wrong": ln(0.001)})
    add_scores(con, "R", "F", 2, {"Yes": ln(0.5), "Right": ln(0.2), "No": ln(0.25),
                                  "Wrong": ln(0.25)})
    got = {r["scoring"]: (r["template"], r["label_set"], r["value"], r["n"])
           for r in metric(con, "ontolama_accuracy")}
    assert got == {"sum_prob": ("T1", "L3", 0.5, 2), "mean_logprob": ("T1", "L3", 1.0, 2)}
    run_support(con, METRICS["ontolama_accuracy"].requires)  # the views, on con itself
    [(class0,)] = con.execute("SELECT score FROM ontolama_class_scores WHERE instance_id = 'D' "
                              "AND label = '0' AND scoring = 'sum_prob'").fetchall()
    assert class0 == pytest.approx(ln(0.651))


# --- end to end through probes.engine.run
# ----------------------------------------------------------


class FakeScore(NamedTuple):
    logprob: float
    n_tokens: int


class OracleScorer:
    """A causal "model" that knows pizzas are food: the positive words score -1 and the
    negative ones -2 when the hypothesis is "food", the other way round otherwise."""

    kind = "causal"
    name = "fake/oracle"
    revision = "r"
    device = "cpu"
    dtype = "float32"
    max_length = 512
    batch_size = None
    capabilities = CAUSAL_LM

    def cache_key_options(self) -> dict[str, Any]:
        return {}

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
        out = []
        for _context, continuation in requests:
            positive = continuation.split(",")[0].strip() in ("Yes", "Right")
            holds = "food" in continuation
            out.append(FakeScore(-1.0 if positive == holds else -2.0, 3))
        return out


def test_probes_run_writes_rows_the_metrics_read() -> None:
    con = connect(":memory:")
    for iid, sup, gold in (("i1", "food", "1"), ("i2", "country", "0"), ("i3", "food", "1")):
        con.execute("""INSERT INTO instances VALUES (?, 'test', ?, 'margherita', [?], [],
                       ?::JSON, now())""",
                    [PIZZA.spec.name, iid, gold, json.dumps({**FIELDS, "super": sup})])
    report = run_probe(con, OracleScorer(), PIZZA, RunOptions(progress=False))
    assert report.items == 3 * 16
    # L3's words repeat L1's and L2's prompts, and i1 and i3 render the same texts:
    # 2 distinct instances x 2 templates x 4 words to score.
    assert report.requests == 16
    rows = metric(con, "ontolama_accuracy")
    assert {(r["template"], r["label_set"]) for r in rows} == {
        (t, s) for t in ("T1", "T2") for s in ("L1", "L2", "L3")}
    assert all(r["value"] == 1.0 and r["n"] == 3 for r in rows)
    summaries = metric(con, "ontolama_zero_shot")
    assert len(summaries) == 2
    assert all(s["value"] == 1.0 and s["std"] == 0.0 for s in summaries)
