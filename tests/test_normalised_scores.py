"""Length-normalised and calibrated choice/binary accuracy (lm-evaluation-harness's acc,
acc_norm, acc_mutual_info) and the task params that record what they need (issue 24, point 3).

The metric values are worked out by hand from the scores written here: acc compares summed
log-probabilities, acc_norm divides them by the characters of the scored text, the per-token
accuracy by the tokens, PMI subtracts the log-probability after the neutral context.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.sqlfile import discover_metrics, run_metric
from probes.backends.protocol import CAUSAL_LM, MASKED_LM
from probes.engine.errors import ProbeError
from probes.engine.spec import ProbeSpec
from probes.engine.tasks import Instance, Request, TaskContext, get_task
from probes.engine.tasks.registry import TASK_ENTRIES
from probes.results import connect, transaction
from probes.results.writers import Run, ScoreRow, insert_run, write_scores
from tests.tolerance import approx_logprob

METRICS = {m.name: m for m in discover_metrics()}

# instance -> gold, then (candidate, score, n_tokens, n_chars, baseline) per candidate
CHOICE = {
    # acc: hammer -5 beats apron -6 (wrong). acc_norm: apron -6/6 = -1.0 beats hammer -5/2 =
    # -2.5 (right). per token: apron -6/3 = -2 beats hammer -5/1 (right). PMI: apron -6 - -7 =
    # +1 beats hammer -5 - -4 = -1 (right).
    "i1": ("apron", [("apron", -6.0, 3, 6, -7.0), ("hammer", -5.0, 1, 2, -4.0)]),
    # acc: cat -2 beats elephant -3 (right). acc_norm: cat -2/4 = -0.5 loses to elephant
    # -3/8 = -0.375 (wrong). per token: -2/1 beats -3/1 (right). PMI: cat -2 - -1 = -1 loses
    # to elephant -3 - -4 = +1 (wrong).
    "i2": ("cat", [("cat", -2.0, 1, 4, -1.0), ("elephant", -3.0, 1, 8, -4.0)]),
    # acc: ox -4 beats wildebeest -4.5 (right). acc_norm: ox -4/3 = -1.33 loses to -4.5/11 =
    # -0.41 (wrong). per token: -4/1 loses to -4.5/3 = -1.5 (wrong). PMI: ox -4 - -3 = -1 loses
    # to -4.5 - -6 = +1.5 (wrong).
    "i3": ("ox", [("ox", -4.0, 1, 3, -3.0), ("wildebeest", -4.5, 3, 11, -6.0)]),
}


def _results(tmp_path: Path, task: str = "choice", with_chars: bool = True) -> Path:
    path = tmp_path / "r.duckdb"
    con = connect(path)
    with transaction(con):
        insert_run(con, Run(run_id="r1", model="m", probe="p/c", task=task, status="done"))
        rows = []
        for iid, (gold, cands) in CHOICE.items():
            con.execute("INSERT INTO instances (probe, split, instance_id, gold, candidates, "
                        "exported_at) VALUES ('p/c', 'test', ?, [?], ?, now())",
                        [iid, "true" if task == "binary" else gold, [c[0] for c in cands]])
            for cand, score, n_tok, n_chars, base in cands:
                label = ("true" if cand == gold else "false") if task == "binary" else cand
                rows.append(ScoreRow("r1", "p/c", "test", iid, 0, cand, label, f"x {cand}.",
                                     score, n_tok, n_chars if with_chars else None, base))
        write_scores(con, rows)
    con.close()
    return path


def _value(path: Path, name: str) -> list[tuple[float, int]]:
    con = connect(path, read_only=True)
    try:
        cols, rows = run_metric(con, METRICS[name])
    finally:
        con.close()
    return [(r[cols.index("value")], r[cols.index("n")]) for r in rows]


def test_acc_norm_per_token_and_pmi_on_a_hand_worked_example(tmp_path: Path) -> None:
    path = _results(tmp_path)
    assert _value(path, "choice_accuracy") == [(pytest.approx(2 / 3), 3)]        # i2, i3
    assert _value(path, "choice_accuracy_norm") == [(pytest.approx(1 / 3), 3)]   # i1
    assert _value(path, "choice_accuracy_per_token") == [(pytest.approx(2 / 3), 3)]  # i1, i2
    assert _value(path, "choice_accuracy_pmi") == [(pytest.approx(1 / 3), 3)]    # i1


def test_binary_normalised_accuracies_follow_the_classes(tmp_path: Path) -> None:
    # the same numbers as label words of classes true (the gold word) and false
    path = _results(tmp_path, task="binary")
    assert _value(path, "binary_accuracy") == [(pytest.approx(2 / 3), 3)]
    assert _value(path, "binary_accuracy_norm") == [(pytest.approx(1 / 3), 3)]
    assert _value(path, "binary_accuracy_pmi") == [(pytest.approx(1 / 3), 3)]


def test_runs_without_char_counts_or_baselines_get_no_row(tmp_path: Path) -> None:
    path = _results(tmp_path, with_chars=False)
    assert _value(path, "choice_accuracy_norm") == []
    assert _value(path, "choice_accuracy_per_token") == [(pytest.approx(2 / 3), 3)]


def test_acc_norm_averages_the_normalised_score_over_prompts(tmp_path: Path) -> None:
    path = tmp_path / "r.duckdb"
    con = connect(path)
    with transaction(con):
        insert_run(con, Run(run_id="r1", model="m", probe="p/c", task="choice", status="done"))
        con.execute("INSERT INTO instances (probe, split, instance_id, gold, candidates, "
                    "exported_at) VALUES ('p/c', 'test', 'i1', ['a'], ['a', 'b'], now())")
        # a: prompt 0 -1 / 1 char = -1, prompt 1 -10 / 10 = -1: mean -1.
        # b: prompt 0 -4 / 2 = -2, prompt 1 -1 / 10 = -0.1: mean -1.05. a wins (right).
        # Dividing the summed scores instead (a -11/11 = -1, b -5/12 = -0.42) or the raw means
        # (a -5.5, b -2.5) would make b win.
        write_scores(con, [ScoreRow("r1", "p/c", "test", "i1", 0, "a", "a", "", -1.0, 1, 1),
                           ScoreRow("r1", "p/c", "test", "i1", 0, "b", "b", "", -4.0, 1, 2),
                           ScoreRow("r1", "p/c", "test", "i1", 1, "a", "a", "", -10.0, 1, 10),
                           ScoreRow("r1", "p/c", "test", "i1", 1, "b", "b", "", -1.0, 1, 10)])
    con.close()
    assert _value(path, "choice_accuracy_norm") == [(1.0, 1)]


def _spec(task: str, prompts: list[str], **params: object) -> ProbeSpec:
    return ProbeSpec(name="d/x", task=task, split="test", prompts=prompts, params=dict(params))


def test_pmi_context_adds_the_neutral_request_and_fills_baseline() -> None:
    spec = _spec("choice", ["A typical [W] is [DET] [V]."], pmi_context="Answer:")
    inst = Instance("d/x", "test", "i1", "fruit", ["apple"], ["fig"], {})
    task = get_task("choice")
    items = task.items(inst, spec, TaskContext(CAUSAL_LM))
    assert [[(q.op, q.args) for q in it.requests] for it in items] == [
        [("loglik", ("A typical fruit is an", " apple.")), ("loglik", ("Answer:", " apple."))],
        [("loglik", ("A typical fruit is a", " fig.")), ("loglik", ("Answer:", " fig."))]]

    class R:
        def __init__(self, logprob: float, n_tokens: int) -> None:
            self.logprob, self.n_tokens = logprob, n_tokens

    row = task.rows(items[0], [R(-3.5, 2), R(-6.0, 1)]).scores[0]
    assert (row.score, row.n_tokens, row.n_chars) == (approx_logprob(-3.5), 2, len("apple."))
    assert row.baseline == approx_logprob(-6.0)


def test_unconditional_pmi_scores_the_answer_after_the_start_token_only() -> None:
    spec = _spec("binary", ["[W] The answer is [V]."], pmi_context="",
                 labels={"true": "yes", "false": "no"})
    inst = Instance("d/x", "test", "i1", "Owls fly.", ["true"], [], {})
    items = get_task("binary").items(inst, spec, TaskContext(CAUSAL_LM))
    assert [it.requests[1].args for it in items] == [("", "yes."), ("", "no.")]
    masked = get_task("binary").items(inst, spec, TaskContext(MASKED_LM))
    assert masked[0].requests[1] == Request("pll", ("yes.", (0, 4)))


def test_without_pmi_context_a_row_has_chars_and_no_baseline() -> None:
    spec = _spec("choice", ["[W] is [DET] [V]."])
    inst = Instance("d/x", "test", "i1", "owl", ["bird"], [], {})
    task = get_task("choice")
    item = task.items(inst, spec, TaskContext(CAUSAL_LM))[0]
    assert len(item.requests) == 1

    class R:
        logprob, n_tokens = -1.25, 2

    row = task.rows(item, [R()]).scores[0]
    assert (row.n_chars, row.baseline) == (len("bird."), None)


def test_pmi_of_a_whole_text_is_refused() -> None:
    spec = _spec("choice", ["[W] is [DET] [V]."], pmi_context="", score="whole")
    with pytest.raises(ProbeError, match="pmi_context needs a scored part"):
        get_task("choice").check(spec, TaskContext(CAUSAL_LM))


@pytest.mark.parametrize("task", ["choice", "binary"])
def test_slot_det_of_choice_and_binary_is_a_or_an(task: str) -> None:
    assert TASK_ENTRIES[task].params.model_validate({"slot_det": "an"}).slot_det == "an"
    with pytest.raises(ValueError, match="'auto' is not a slot_det value"):
        TASK_ENTRIES[task].params.model_validate({"slot_det": "auto"})


def test_the_real_slot_det_default_of_choice_renders_the_candidates_article() -> None:
    # the README's table says: a [DET] before the slot takes the candidate's article
    spec = _spec("choice", ["[W] wears [DET] [V]"])
    inst = Instance("d/x", "test", "i1", "cook", ["apron"], ["hat"], {})
    prompts = [it.prompt for it in get_task("choice").items(inst, spec, TaskContext(CAUSAL_LM))]
    assert prompts == ["cook wears an apron", "cook wears a hat"]
    assert "an apron" in TASK_ENTRIES["choice"].params.model_fields["slot_det"].description


def test_relatum_slot_det_refuses_undocumented_words_and_keeps_fixed_texts() -> None:
    params = TASK_ENTRIES["relatum"].params
    for ok in ("a", "an", "both", "the", "a(n)"):
        assert params.model_validate({"slot_det": ok}).slot_det == ok
    with pytest.raises(ValueError, match="'auto' is not a slot_det value"):
        params.model_validate({"slot_det": "auto"})


def test_a_run_records_characters_and_the_pmi_baseline_and_resumes_them(tmp_path: Path) -> None:
    # the fake model of tests/test_run.py: log P(x | c) = -fake_value(c + "|" + x)
    from tests.test_run import FakeScorer, choice_probe, fake_value, query, run, setup

    probe = choice_probe(prompts='["[W] is [DET] [V]."]', params='# params: {pmi_context: ""}\n')
    qdir, results = setup(tmp_path, probe)
    scorer = FakeScorer()
    assert run(qdir, results, scorer, "-p", "t/choice") == 0
    rows = query(results, "SELECT i.target, candidate, score, n_chars, baseline FROM scores "
                 "JOIN instances i USING (probe, split, instance_id)")
    assert len(rows) == 9
    for target, cand, score, n_chars, baseline in rows:
        det = "an" if cand[0] in "aeiou" else "a"
        assert score == approx_logprob(-fake_value(f"{target} is {det}| {cand}."))
        assert baseline == approx_logprob(-fake_value(f"|{cand}."))  # unconditional
        assert n_chars == len(f"{cand}.")
    # rows rebuilt from the score cache carry the same counts and baselines
    with connect(results) as con:
        con.execute("DELETE FROM scores")
        con.execute("DELETE FROM runs")
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/choice") == 0
    assert again.calls == []  # every request (both of each item) came from the cache
    again_rows = query(results, "SELECT i.target, candidate, score, n_chars, baseline FROM "
                       "scores JOIN instances i USING (probe, split, instance_id)")
    assert sorted(again_rows) == sorted(rows)


def test_an_older_results_file_gains_the_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "old.duckdb"
    old = duckdb.connect(str(path))
    old.execute("""CREATE TABLE scores (run_id VARCHAR NOT NULL, probe VARCHAR NOT NULL,
                   split VARCHAR NOT NULL, instance_id VARCHAR NOT NULL,
                   prompt_id INTEGER NOT NULL, candidate VARCHAR NOT NULL, prompt VARCHAR,
                   score DOUBLE, n_tokens INTEGER, label VARCHAR,
                   PRIMARY KEY (run_id, probe, split, instance_id, prompt_id, candidate))""")
    old.execute("INSERT INTO scores VALUES ('r', 'p', 'test', 'i', 0, 'a', 'x a', -1.5, 2, 'a')")
    old.close()
    con = connect(path)
    try:
        assert con.execute("SELECT score, n_tokens, n_chars, baseline FROM scores").fetchall() \
            == [(-1.5, 2, None, None)]
        assert con.execute("SELECT count(*) FROM gold_forms").fetchone() == (0,)
    finally:
        con.close()
