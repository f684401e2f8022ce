"""The generate task end to end: a probe file, its export, a run with a tiny real causal LM
(tests/test_backends.py's 2-layer Llama with the SmolLM2 tokenizer), the generations table,
the cache that makes a re-run free, and the clear errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from eval.sqlfile import discover_metrics, run_metric
from probes.backends import load_scorer
from probes.backends.generation import GenerateSettings, Generation
from probes.engine.errors import ProbeFileError
from probes.results import connect
from tests.test_backends import smol_tokenizer, tiny_bert, tiny_llama  # noqa: F401
from tests.test_run import ANIMALS, FakeScorer, choice_probe, query, run, setup

ROWS = {"owl": ("bird", ["fowl", "raptor"]), "cat": ("animal", ["feline"]),
        "emu": ("bird", [])}


def generate_probe(params: str = "{aliases: [?alias], max_new_tokens: 5}") -> str:
    values = " ".join(f'("{w}" "{g}" {a})' for w, (g, aliases) in ROWS.items()
                      for a in ([f'"{x}"' for x in aliases] or ["UNDEF"]))
    return ("# name: t/gen\n# task: generate\n# split: test\n# target: ?w\n# gold: ?g\n"
            "# group_by: [?w, ?g]\n"
            '# prompts: ["[DET] [W] is a kind of [DET] [V].", "Q: What is [DET] [W]?\\nA:"]\n'
            f"# params: {params}\n"
            "SELECT ?w ?g ?alias WHERE { VALUES (?w ?g ?alias) { " + values + " } }\n")


class Counting:
    """A loaded scorer that counts the prompts it is asked to generate for."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.generated = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Generation]:
        self.generated += len(prompts)
        return self.inner.generate(prompts, settings)


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:  # noqa: F811
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


def test_generate_run_stores_answers_and_accepted_forms(tmp_path: Path, llama: Any) -> None:
    qdir, results = setup(tmp_path, generate_probe())
    scorer = Counting(llama)
    scorer.name = str(llama.name)
    assert run(qdir, results, scorer, "-p", "t/gen") == 0
    rows = query(results, "SELECT i.target, g.prompt_id, g.prompt, g.generation, g.n_tokens, "
                 "g.finish, g.answers FROM generations g JOIN instances i "
                 "USING (probe, split, instance_id) ORDER BY ALL")
    assert len(rows) == 3 * 2 and scorer.generated == 6
    settings = GenerateSettings(max_new_tokens=5)
    for target, pid, prompt, text, n, finish, answers in rows:
        det = "An" if target in ("owl", "emu") else "A"
        want_prompt = (f"{det} {target} is a kind of" if pid == 0
                       else f"Q: What is {det.lower()} {target}?\nA:")
        assert prompt == want_prompt
        (direct,) = llama.generate([prompt], settings)
        assert (text, n, finish) == (direct.text, direct.n_tokens, direct.finish)
        gold, aliases = ROWS[target]
        assert answers == [gold, *sorted(aliases)] or answers == [gold, *aliases]
    (task, status, requests) = query(results, "SELECT task, status, requests FROM runs")[0]
    assert (task, status, requests) == ("generate", "done", 6)

    again = Counting(llama)
    again.name = str(llama.name)
    assert run(qdir, results, again, "-p", "t/gen") == 0
    assert again.generated == 0  # every answer from the cache
    assert query(results, "SELECT count(*) FROM generations") == [(6,)]


def test_decoding_settings_are_part_of_the_cache_key(tmp_path: Path, llama: Any) -> None:
    qdir, results = setup(tmp_path, generate_probe())
    assert run(qdir, results, llama, "-p", "t/gen") == 0
    qdir, results = setup(tmp_path, generate_probe("{aliases: [?alias], max_new_tokens: 3}"))
    scorer = Counting(llama)
    scorer.name = str(llama.name)
    assert run(qdir, results, scorer, "-p", "t/gen") == 0
    assert scorer.generated == 6  # nothing reused across settings
    runs = query(results, "SELECT count(DISTINCT run_id) FROM generations")
    assert runs == [(2,)]
    con = connect(results)
    try:
        ops = con.execute("SELECT op, count(*) FROM score_cache GROUP BY op").fetchall()
    finally:
        con.close()
    assert ops == [("generate", 12)]


def test_masked_model_is_one_clear_line(tmp_path: Path, tiny_bert: Path, capsys: Any) -> None:  # noqa: F811
    qdir, results = setup(tmp_path, generate_probe())
    bert = load_scorer(str(tiny_bert), device="cpu", dtype="float32")
    capsys.readouterr()  # the export's warning that masked models cannot run it
    assert run(qdir, results, bert, "-p", "t/gen") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "generates text" in err[0] and "masked" in err[0]


def test_alias_variable_not_selected_is_named(tmp_path: Path) -> None:
    with pytest.raises(ProbeFileError) as e:
        setup(tmp_path, generate_probe("{aliases: [?other]}"))
    msg = str(e.value)
    assert "p0.rq:8:" in msg and "params aliases ?other is not selected" in msg
    assert "\n" not in msg


def test_older_results_file_gains_the_generations_table(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = connect(path)
    con.execute("DROP TABLE generations")
    con.execute("CREATE TABLE keep (x INTEGER)")
    con.execute("INSERT INTO keep VALUES (7)")
    con.close()
    con = connect(path)
    try:
        assert con.execute("SELECT count(*) FROM generations").fetchone() == (0,)
        assert con.execute("SELECT x FROM keep").fetchall() == [(7,)]
    finally:
        con.close()


def test_export_preview_shows_the_prompt_and_every_accepted_form(
        tmp_path: Path, tiny_store_path: Path, capsys: Any) -> None:
    from probes.app.cli import main as kgprobe

    qdir = tmp_path / "q"
    qdir.mkdir()
    (qdir / "gen.rq").write_text(generate_probe())
    assert kgprobe(["export", "--preview", "3", "-p", "t/gen", "-q", str(qdir), "--store",
                    str(tiny_store_path), "--results", str(tmp_path / "r.duckdb")]) == 0
    out = capsys.readouterr().out
    assert "-> 'An owl is a kind of'  accepts: bird | fowl | raptor" in out
    assert "-> 'Q: What is a cat?\\nA:'  accepts: animal | feline" in out
    assert "accepts: bird\n" in out  # emu: no alias


# --- one instance, two formats ------------------------------------------------------------------

class FakeSpeaker(FakeScorer):
    """The project's fake causal scorer (tests/test_run.py: scores from an md5 of the text)
    that also answers: the gold word for the owl and the cat, "no idea" for the emu."""

    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Generation]:
        self._called("generate", len(prompts))
        said = {"owl": " a bird, surely", "cat": " an animal", "emu": " no idea"}
        return [Generation(next(v for k, v in said.items() if k in p.lower()), 3, "stop")
                for p in prompts]


def test_formats_read_the_same_instances_twice_and_agreement_is_computed(
        tmp_path: Path) -> None:
    probe = choice_probe(params="# formats: {generate: {max_new_tokens: 4}}\n")
    qdir, results = setup(tmp_path, probe)
    scorer = FakeSpeaker()
    assert run(qdir, results, scorer, "-p", "t/choice") == 0
    runs = dict(query(results, "SELECT task, run_id FROM runs WHERE status = 'done'"))
    assert set(runs) == {"choice", "generate"}
    ids = {t: {r[0] for r in query(results, f"SELECT DISTINCT instance_id FROM {table} "
                                   "WHERE run_id = ?", [runs[t]])}
           for t, table in (("choice", "scores"), ("generate", "generations"))}
    assert ids["choice"] == ids["generate"] and len(ids["choice"]) == 3
    # ranked, computed here from the stored scores: the gold's mean score beats the rest
    ranked = {}
    for iid, target in query(results, "SELECT instance_id, target FROM instances"):
        means = dict(query(results, "SELECT candidate, avg(score) FROM scores WHERE run_id = ? "
                           "AND instance_id = ? GROUP BY candidate", [runs["choice"], iid]))
        gold = ANIMALS[target][0]
        ranked[target] = all(means[gold] > v for c, v in means.items() if c != gold)
    said = {"owl": True, "cat": True, "emu": False}
    cells = {(r, s): sum(1 for t in said if ranked[t] == r and said[t] == s)
             for r in (True, False) for s in (True, False)}
    n = 3
    po = (cells[True, True] + cells[False, False]) / n
    pe = ((cells[True, True] + cells[True, False]) * (cells[True, True] + cells[False, True])
          + (cells[False, True] + cells[False, False]) * (cells[True, False]
                                                          + cells[False, False])) / n ** 2
    con = connect(results)
    try:
        metrics = {m.name: m for m in discover_metrics()}
        cols, rows = run_metric(con, metrics["format_agreement"])
        _, dis = run_metric(con, metrics["format_disagreements"])
    finally:
        con.close()
    (row,) = [dict(zip(cols, r, strict=True)) for r in rows]
    assert (row["both_right"], row["ranked_not_said"], row["said_not_ranked"],
            row["both_wrong"]) == (cells[True, True], cells[True, False], cells[False, True],
                                   cells[False, False])
    if pe < 1:
        kappa = (po - pe) / (1 - pe)
        assert row["value"] == pytest.approx(kappa)
        # scipy's Wilson interval of the observed agreement, through kappa's line in po,
        # clipped to kappa's range; never zero-width
        agree = cells[True, True] + cells[False, False]
        wilson = binomtest(agree, n).proportion_ci(confidence_level=0.95, method="wilson")
        low, high = ((wilson.low - pe) / (1 - pe), (wilson.high - pe) / (1 - pe))
        assert row["ci_low"] == pytest.approx(max(-1.0, low), rel=1e-9, abs=1e-12)
        assert row["ci_high"] == pytest.approx(min(1.0, high), rel=1e-9, abs=1e-12)
        assert -1 <= row["ci_low"] <= row["value"] <= row["ci_high"] <= 1
        assert row["ci_low"] < row["ci_high"]
    kinds = sorted(r[4] for r in dis)
    want = sorted("ranked first but not said" if ranked[t] else "said but not ranked first"
                  for t in said if ranked[t] != said[t])
    assert kinds == want


def test_relatum_probe_with_a_generate_format_and_a_masked_model(tmp_path: Path,
                                                                 capsys: Any) -> None:
    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
             '# prompts: ["[DET] [W] is a kind of [V]"]\n'
             "# formats: {generate: {max_new_tokens: 4}}\n"
             'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") ("cat" "animal") '
             '("emu" "bird") } }\n')
    qdir, results = setup(tmp_path, probe)
    capsys.readouterr()
    # a masked LM cannot generate: the format is skipped with a note, the relatum run is made
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/rel") == 0
    err = capsys.readouterr().err
    assert "format generate skipped" in err and "masked" in err
    assert query(results, "SELECT task FROM runs") == [("relatum",)]
    # a causal one reads both; ranked = the top-1 answer is the gold word
    scorer = FakeSpeaker(name="fake/speaker")
    assert run(qdir, results, scorer, "-p", "t/rel") == 0
    runs = dict(query(results, "SELECT task, run_id FROM runs WHERE model = 'fake/speaker'"))
    top = dict(query(results, "SELECT i.target, r.token FROM responses r JOIN instances i "
                     "USING (probe, split, instance_id) WHERE r.run_id = ? AND r.rank = 1",
                     [runs["relatum"]]))
    ranked = {t: top[t] == ANIMALS[t][0] for t in top}
    said = {"owl": True, "cat": True, "emu": False}
    con = connect(results)
    try:
        cols, rows = run_metric(con, {m.name: m for m in discover_metrics()}[
            "format_agreement"])
    finally:
        con.close()
    (row,) = [dict(zip(cols, r, strict=True)) for r in rows]
    assert row["choice_run"] == runs["relatum"] and row["n"] == 3
    assert row["both_right"] == sum(ranked[t] and said[t] for t in said)
    assert row["ranked_not_said"] == sum(ranked[t] and not said[t] for t in said)
    assert row["said_not_ranked"] == sum(said[t] and not ranked[t] for t in said)
