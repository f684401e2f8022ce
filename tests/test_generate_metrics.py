"""The generation metrics (eval/metrics/generate_*.sql, eval.answers) on hand-written answers.

Expected values are written here from SQuAD v1.1's definitions (lower case, punctuation out,
articles a/an/the out, white space collapsed; token F1 over bags of words), and the
normalisation and F1 are also compared with lm-evaluation-harness 0.4.13's own functions on
the same strings (its peers venv, scripts/setup_peers.sh) when that venv exists.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from eval.answers import contains_answer, normalize_answer, not_attempted, token_f1
from eval.items import summarise
from eval.sqlfile import discover_metrics, run_metric
from probes.results import connect, transaction
from probes.results.writers import GenerationRow, Run, insert_run, write_generations

PEERS = Path(os.environ.get("KGPROBE_PEERS_VENV",
                            Path.home() / ".cache/kgprobe/peers-venv")) / "bin" / "python"

STRINGS = ["The Eiffel Tower", "  an  apple,  a day ", "Paris.", "U.S.A.", "the", "Theatre",
           "A-ha!", "Ça va, l'été", "naïve a café", "ThE  cat\tsat\n", "", "thé a b",
           "1,000 dollars", "rock 'n' roll", "an an an", "The answer is: (b) the second"]

# SQuAD's normalisation of each, by hand
NORMALISED = ["eiffel tower", "apple day", "paris", "usa", "", "theatre", "aha",
              "ça va lété", "naïve café", "cat sat", "", "thé b", "1000 dollars",
              "rock n roll", "", "answer is b second"]


def test_normalisation_by_squads_definition() -> None:
    assert [normalize_answer(s) for s in STRINGS] == NORMALISED


def test_token_f1_by_hand() -> None:
    assert token_f1("the big red dog", "red dog") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert token_f1("Paris", "paris!") == 1.0
    assert token_f1("dog dog", "dog") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("cat", "dog") == 0.0
    assert token_f1("", "dog") == 0.0


def test_contains_is_whole_words_after_normalisation() -> None:
    assert contains_answer("It's Paris, of course.", "PARIS")
    assert contains_answer("a New York city", "new york")
    assert not contains_answer("category", "cat")
    assert not contains_answer("anything", "")


def test_not_attempted_rule() -> None:
    assert not_attempted("I don't know.", ["Paris"])
    assert not_attempted("", ["Paris"])
    assert not_attempted("Sorry, I cannot answer that", ["Paris"])
    assert not not_attempted("Paris, I think, but I'm not sure", ["Paris"])
    assert not not_attempted("London", ["Paris"])  # attempted and wrong


@pytest.mark.skipif(not PEERS.exists(), reason="lm-eval's venv is missing: run "
                    "`bash scripts/setup_peers.sh` to compare with lm-eval's own functions")
def test_normalisation_and_f1_equal_lm_evals_own_functions() -> None:
    pairs = [(a, b) for a in STRINGS for b in STRINGS[:6]]
    script = (
        "import importlib.util, json, sys, pathlib, lm_eval\n"
        "root = pathlib.Path(lm_eval.__file__).parent\n"
        "spec = importlib.util.spec_from_file_location('m', root / 'tasks/qasper/metrics.py')\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "from lm_eval.api.metrics import exact_match_hf_evaluate as em\n"
        "data = json.load(sys.stdin)\n"
        "print(json.dumps({'norm': [m.normalize_answer(s) for s in data['strings']],\n"
        "  'f1': [m.f1_abstractive([a], [b]) for a, b in data['pairs']],\n"
        "  'em': [em([a], [b], ignore_case=True, ignore_punctuation=True)['exact_match']\n"
        "         for a, b in data['pairs']]}))\n")
    out = subprocess.run([str(PEERS), "-c", script], input=json.dumps(
        {"strings": STRINGS, "pairs": pairs}), capture_output=True, text=True, check=True,
        timeout=300)
    theirs = json.loads(out.stdout)
    assert [normalize_answer(s) for s in STRINGS] == theirs["norm"]
    assert [token_f1(a, b) for a, b in pairs] == pytest.approx(theirs["f1"])
    # triviaqa's exact_match (ignore_case, ignore_punctuation) keeps articles and spacing, so
    # it is never more lenient than the SQuAD match used here
    ours = [normalize_answer(a) == normalize_answer(b) for a, b in pairs]
    assert all(o for o, t in zip(ours, theirs["em"], strict=True) if t == 1.0)


# --- the SQL metrics -------------------------------------------------------------------------

ANSWERS = {  # (instance, prompt) -> (generation, accepted forms)
    ("i1", 0): (" Paris.", ["Paris", "City of Light"]),
    ("i1", 1): (" It is Paris", ["Paris", "City of Light"]),
    ("i2", 0): (" the city of light", ["Paris", "City of Light"]),
    ("i2", 1): (" I don't know", ["Paris", "City of Light"]),
    ("i3", 0): (" red big dog", ["big red dog house"]),
    ("i3", 1): (" London", ["big red dog house"]),
    ("i4", 0): (" anything", []),  # no accepted form: left out
    ("i4", 1): (" anything", []),
}


def results_with_answers(tmp_path: Path) -> Path:
    path = tmp_path / "r.duckdb"
    con = connect(path)
    with transaction(con):
        insert_run(con, Run(run_id="r1", model="m", probe="p", task="generate", status="done"))
        insert_run(con, Run(run_id="r2", model="m", probe="p", task="generate",
                            status="failed"))
        rows = [GenerationRow(rid, "p", "test", i, pid, "Q", g, 3, "stop", forms)
                for rid in ("r1", "r2") for (i, pid), (g, forms) in ANSWERS.items()]
        write_generations(con, rows)
    con.close()
    return path


def metric_values(path: Path) -> dict[str, list[tuple]]:
    con = connect(path)
    try:
        out = {}
        for m in discover_metrics():
            if m.name.startswith("generate_"):
                _, rows = run_metric(con, m)
                out[m.name] = rows
        return out
    finally:
        con.close()


def test_generation_metrics_by_hand(tmp_path: Path) -> None:
    got = metric_values(results_with_answers(tmp_path))
    # exact: i1 (1, 0), i2 (1, 0), i3 (0, 0) -> instance means .5, .5, 0
    assert got["generate_exact_match"] == [("r1", "p", "test", pytest.approx(1 / 3), 3)]
    # contains: i1 (1, 1), i2 (1, 0), i3 (0, 0)
    assert got["generate_contains"] == [("r1", "p", "test", pytest.approx(1 / 2), 3)]
    # F1: i1 (1, 2/3 * 1 / ... "it is paris" vs paris: p=1/3, r=1 -> .5), i2 (1, 0),
    # i3 ("red big dog" vs "big red dog house": p=1, r=3/4 -> 6/7, 0)
    f1 = ((1 + 0.5) / 2 + (1 + 0) / 2 + (6 / 7) / 2) / 3
    assert got["generate_f1"] == [("r1", "p", "test", pytest.approx(f1), 3)]
    # not attempted: only i2 prompt 1 ("I don't know") -> i2 .5
    assert got["generate_not_attempted"] == [("r1", "p", "test", pytest.approx(1 / 6), 3)]


def test_generation_metrics_have_intervals_and_prompt_spread(tmp_path: Path) -> None:
    path = results_with_answers(tmp_path)
    con = connect(path)
    try:
        (metric,) = [m for m in discover_metrics() if m.name == "generate_exact_match"]
        summaries = summarise(con, metric)
    finally:
        con.close()
    (s,) = summaries.values()
    assert s.prompts == {0: (pytest.approx(2 / 3), 3), 1: (0.0, 3)}
    low, high = s.ci
    assert low < 1 / 3 < high


def test_profile_has_a_generation_row(tmp_path: Path) -> None:
    from eval import profile
    from eval.report import metric_rows

    con = connect(results_with_answers(tmp_path), read_only=True)
    try:
        rows = metric_rows(con, [profile.PROFILE_DIR])
    finally:
        con.close()
    line, said = [p for p in profile.profile_lines(rows, "m") if p.benchmark == "generation"]
    # exact match per instance: i1 .5, i2 .5, i3 0 (the finished run r1 only)
    assert line.n == 3 and line.value == pytest.approx(1 / 3) and line.chance is None
    assert line.measure == "p: exact match, generated (17% not attempted)"
    # contained per instance: i1 1, i2 .5, i3 0
    assert said.n == 3 and said.value == pytest.approx(1 / 2) and said.chance is None
    assert said.measure == "p: answer contains an accepted form, generated"
