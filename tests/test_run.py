"""``probes.run`` and ``probes.cache``: scoring exported instances, caching, resuming.

The model is a FakeScorer whose scores are computed from the request strings (an md5 of the
text), so every expected score below is computed here from the text the task should have
built, independently of the engine.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import duckdb
import pytest

from kg.store import LocalStore
from probes.errors import ProbeError, ProbeFileError
from probes.export import export
from probes.results import connect
from probes.run import build_parser, main
from probes.spec import discover

ROOT = Path(__file__).parents[1]


# --- a fake backend ---------------------------------------------------------------------------

def fake_value(text: str) -> float:
    """A deterministic number in [0, 10) from a string."""
    return int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16) / 2**32 * 10


class FakeScore(NamedTuple):
    logprob: float
    n_tokens: int
    greedy: bool | None = None


WORDS = ["animal", "bird", "apple", "emu", "eagle", "tree", "object", "thing", "owl", "cat",
         "Paris", "London"]


class FakeScorer:
    """Implements the Scorer interface with scores computed from the strings."""

    revision = "rev1"
    device = "cpu"
    dtype = "float32"
    max_length = 512
    batch_size = None

    def __init__(self, kind: str = "causal", name: str = "fake/model", delay: float = 0.0,
                 log: Path | None = None) -> None:
        self.kind = kind
        self.name = name
        self.delay = delay
        self.log = log
        self.calls: list[tuple[str, int]] = []
        self.mask_token = None if kind == "causal" else "[MASK]"

    def cache_key_options(self) -> dict[str, Any]:
        return {"dtype": self.dtype}

    def _called(self, op: str, n: int) -> None:
        self.calls.append((op, n))
        if self.log is not None:
            with self.log.open("a") as f:
                f.write(f"{op} {n}\n")
        time.sleep(self.delay)

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
        self._called("loglik", len(requests))
        return [FakeScore(-fake_value(c + "|" + x), len(x.split())) for c, x in requests]

    def pll(self, requests: Sequence[tuple[str, tuple[int, int]]]) -> list[FakeScore]:
        self._called("pll", len(requests))
        return [FakeScore(-fake_value(f"{t}|{s}|{e}"), len(t[s:e].split()))
                for t, (s, e) in requests]

    def word_vocab(self, *, lowercase: bool = False) -> FakeVocab:
        return FakeVocab(lowercase)

    def topk(self, prompts: Sequence[str], k: int, vocab: Any = None,
             mix: Sequence[float] | None = None) -> list[list[tuple]]:
        self._called("topk", len(prompts))
        lower = vocab is not None and vocab.lowercase
        if not mix:
            return [fake_topk(p, k, lower) for p in prompts]
        g = len(mix)
        return [fake_mixed_topk(prompts[i:i + g], mix, k, lower)
                for i in range(0, len(prompts), g)]

    def features(self, texts: Sequence[str], pooling: str = "mean") -> Any:
        raise NotImplementedError


class FakeVocab(NamedTuple):
    lowercase: bool

    @property
    def words(self) -> list[str]:
        return [w for w in WORDS if w.islower() or not self.lowercase]


def fake_mixed_topk(prompts: Sequence[str], weights: Sequence[float], k: int,
                    lowercase: bool = True) -> list[tuple[str, float]]:
    """The fake model's answers for prompts whose distributions are mixed by ``weights``."""
    probs = {w: sum(f * fake_value(p + "#" + w) / 100 for p, f in zip(prompts, weights,
                                                                        strict=True))
             for w in FakeVocab(lowercase).words}
    return sorted(probs.items(), key=lambda kv: -kv[1])[:k]


def fake_topk(prompt: str, k: int, lowercase: bool = True) -> list[tuple[str, float]]:
    """The fake model's answers; the lower-case vocabulary drops capitalised words."""
    probs = {w: fake_value(prompt + "#" + w) / 100 for w in WORDS
             if w.islower() or not lowercase}
    return sorted(probs.items(), key=lambda kv: -kv[1])[:k]


def subprocess_main() -> int:
    """Entry point for the SIGKILL test's child process (argv after '--')."""
    delay, log = float(os.environ["FAKE_DELAY"]), Path(os.environ["FAKE_LOG"])
    argv = sys.argv[sys.argv.index("--") + 1:]
    return main(argv, lambda name, **kw: FakeScorer(name=name, delay=delay, log=log))


# --- fixtures ---------------------------------------------------------------------------------

ANIMALS = {  # target -> (gold, distractors)
    "owl": ("bird", ["tree", "apple"]),
    "cat": ("animal", ["tree", "object"]),
    "emu": ("bird", ["apple", "thing"]),
}


def choice_probe(name: str = "t/choice", prompts: str = '["[W] is [DET] [V].", '
                 '"[DET] [W] is a kind of [V]"]', params: str = "", rows: str | None = None,
                 task: str = "choice") -> str:
    rows = rows or " ".join(f'("{w}" "{g}" "{c}")' for w, (g, cs) in ANIMALS.items()
                            for c in cs)
    return (f"# name: {name}\n# task: {task}\n# split: test\n# target: ?w\n# gold: ?g\n"
            f"# candidates: ?c\n# group_by: [?w, ?g]\n# prompts: {prompts}\n{params}"
            f"SELECT ?w ?g ?c WHERE {{ VALUES (?w ?g ?c) {{ {rows} }} }}\n")


def setup(tmp_path: Path, *texts: str) -> tuple[Path, Path]:
    """Write probe files into tmp_path/queries and export them into tmp_path/results.duckdb."""
    qdir = tmp_path / "queries"
    qdir.mkdir(exist_ok=True)
    for i, text in enumerate(texts):
        (qdir / f"p{i}.rq").write_text(text)
    results = tmp_path / "results.duckdb"
    export(discover([qdir], include_default=False), LocalStore.in_memory(), results, None,
           progress=False)
    return qdir, results


def run(qdir: Path, results: Path, scorer: FakeScorer, *args: str) -> int:
    return main(["--model", scorer.name, "--results", str(results), "--queries", str(qdir),
                 "--only-extra", "--quiet", *args], lambda name, **kw: scorer)


def query(results: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(results), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def table(results: Path, name: str) -> list[tuple[Any, ...]]:
    return sorted(query(results, f"SELECT * FROM {name}"), key=repr)


# --- scoring ----------------------------------------------------------------------------------

def test_choice_scores_every_prompt_and_candidate_from_the_slot(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    scorer = FakeScorer()
    assert run(qdir, results, scorer, "-p", "t/choice") == 0
    got = {(c, pid, cand): (s, n, label, prompt) for c, pid, cand, s, n, label, prompt in query(
        results, "SELECT i.target, prompt_id, candidate, score, n_tokens, label, prompt "
        "FROM scores JOIN instances i USING (probe, split, instance_id)")}
    # 3 words x (gold + 2 distractors) x 2 prompts
    assert len(got) == 3 * 3 * 2
    det = {"bird": "a", "tree": "a", "apple": "an", "animal": "an", "object": "an",
           "thing": "a"}
    for w, (g, cs) in ANIMALS.items():
        for c in [g, *cs]:
            ctx0, cont0 = f"{w} is {det[c]}", f" {c}."
            ctx1, cont1 = f"{'An' if w in ('owl', 'emu') else 'A'} {w} is a kind of", f" {c}"
            assert got[(w, 0, c)] == (-fake_value(ctx0 + "|" + cont0), 1, c, ctx0 + cont0)
            assert got[(w, 1, c)] == (-fake_value(ctx1 + "|" + cont1), 1, c, ctx1 + cont1)
    (status, task, backend, requests, hits), = query(
        results, "SELECT status, task, backend, requests, cache_hits FROM runs")
    assert (status, task, backend, requests, hits) == ("done", "choice", "causal", 18, 0)
    assert sum(n for _, n in scorer.calls) == 18


def test_masked_lm_gets_pseudo_log_likelihood_of_the_span(tmp_path: Path) -> None:
    probe = choice_probe(prompts='["[W] is [DET] [V]."]', params="# params: {score: slot}\n")
    qdir, results = setup(tmp_path, probe)
    scorer = FakeScorer(kind="masked")
    assert run(qdir, results, scorer, "-p", "t/choice") == 0
    got = dict(query(results, "SELECT prompt, score FROM scores"))
    text = "owl is a bird."
    assert got[text] == -fake_value(f"{text}|9|13")
    assert [op for op, _ in scorer.calls] == ["pll"]


def test_rerun_with_nothing_changed_does_no_model_work(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    before = {t: table(results, t) for t in ("scores", "score_cache")}
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/choice") == 0
    assert again.calls == []
    assert {t: table(results, t) for t in ("scores", "score_cache")} == before
    assert query(results, "SELECT count(*), min(status), min(cache_hits) FROM runs") == [
        (1, "done", 18)]


def test_no_cache_scores_everything_again(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    before = table(results, "scores")
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/choice", "--no-cache") == 0
    assert sum(n for _, n in again.calls) == 18
    assert table(results, "scores") == before


def test_cache_is_shared_across_probes_and_keyed_by_model(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe(), choice_probe(name="t/same"))
    scorer = FakeScorer()
    assert run(qdir, results, scorer, "-p", "t/choice") == 0
    assert run(qdir, results, scorer, "-p", "t/same") == 0
    assert sum(n for _, n in scorer.calls) == 18  # the second probe's prompts are all cached
    other = FakeScorer(name="fake/other")
    assert run(qdir, results, other, "-p", "t/choice") == 0
    assert sum(n for _, n in other.calls) == 18
    assert query(results, "SELECT count(DISTINCT run_id) FROM scores") == [(3,)]


def test_limit_takes_the_first_instances_by_id_and_is_its_own_run(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice", "--limit", "2") == 0
    ids = sorted(r[0] for r in query(results, "SELECT instance_id FROM instances"))
    got = sorted({r[0] for r in query(results, "SELECT instance_id FROM scores")})
    assert got == ids[:2]
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    assert query(results, "SELECT count(*) FROM runs") == [(2,)]


def test_binary_label_words_carry_their_class(tmp_path: Path) -> None:
    probe = ("# name: t/bin\n# task: binary\n# split: test\n# target: ?s\n# gold: ?g\n"
             '# prompts: ["[W] It is [V]."]\n'
             "# params: {labels: {'true': ['yes', right], 'false': 'no'}}\n"
             'SELECT ?s ?g WHERE { VALUES (?s ?g) { ("Owls fly." true) ("Fish fly." false) } }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(), "-p", "t/bin") == 0
    got = sorted(query(results, "SELECT prompt, candidate, label, score FROM scores"))
    assert len(got) == 6
    assert ("Owls fly. It is yes.", "yes", "true",
            -fake_value("Owls fly. It is|" + " yes.")) in got
    assert {(c, lab) for _, c, lab, _ in got} == {("yes", "true"), ("right", "true"),
                                                  ("no", "false")}


def test_binary_statements(tmp_path: Path) -> None:
    probe = ("# name: t/stmt\n# task: binary\n# split: test\n# target: ?w\n# gold: ?g\n"
             "# params: {statements: {'true': ['[W] can fly.'], 'false': ['[W] cannot fly.']}}\n"
             'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owls" "true") } }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(), "-p", "t/stmt") == 0
    got = sorted(query(results, "SELECT candidate, label, prompt, score FROM scores"))
    assert got == [("false", "false", "owls cannot fly.", -fake_value("|owls cannot fly.")),
                   ("true", "true", "owls can fly.", -fake_value("|owls can fly."))]


def test_relatum_top_k_rows_and_article_merge(tmp_path: Path) -> None:
    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
             '# prompts: ["[DET] [W] is a kind of [V].", "[DET] [W] is [DET] [V]."]\n'
             'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") } }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/rel", "--top-k", "3") == 0
    got = query(results, "SELECT prompt_id, rank, token, probability FROM responses "
                "ORDER BY prompt_id, rank")
    first = fake_topk("An owl is a kind of [MASK].", 3)
    assert [(0, i + 1, w, p) for i, (w, p) in enumerate(first)] == [r for r in got if r[0] == 0]
    # prompt 1 has [DET] before the slot: the "a" and "an" distributions, mixed by the BNC
    # frequencies of the two articles
    f_a = round(21626 / (21626 + 3430), 4)
    a = dict(fake_topk("An owl is a [MASK].", 99))
    an = dict(fake_topk("An owl is an [MASK].", 99))
    merged = sorted(((w, f_a * a[w] + (1 - f_a) * an[w]) for w in a),
                    key=lambda kv: -kv[1])[:3]
    rows = [r for r in got if r[0] == 1]
    assert [r[:3] for r in rows] == [(1, i + 1, w) for i, (w, _) in enumerate(merged)]
    assert [r[3] for r in rows] == pytest.approx([p for _, p in merged], abs=1e-12)
    # each response row carries the prompt it ranks (both renderings when two were mixed)
    assert query(results, "SELECT DISTINCT prompt_id, prompt FROM responses ORDER BY 1") == [
        (0, "An owl is a kind of [MASK]."), (1, "An owl is a [MASK]. | An owl is an [MASK].")]


def test_relatum_vocab_param_reaches_the_backend(tmp_path: Path) -> None:
    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n"
             '# prompts: ["[W] is near [V]."]\n# params: {vocab: words, top_k: 12}\n'
             'SELECT ?w WHERE { VALUES ?w { "Lyon" } }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/rel") == 0
    got = [r[0] for r in query(results, "SELECT token FROM responses ORDER BY rank")]
    assert got == [w for w, _ in fake_topk("Lyon is near [MASK].", 12, lowercase=False)]
    assert "Paris" in got and len(got) == 12


def test_relatum_causal_needs_the_slot_last(tmp_path: Path, capsys: Any) -> None:
    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n"
             '# prompts: ["[V] is the opposite of [W]"]\n'
             'SELECT ?w WHERE { VALUES ?w { "hot" } }\n')
    qdir, results = setup(tmp_path, probe)
    scorer = FakeScorer()
    assert run(qdir, results, scorer, "-p", "t/rel") == 2
    err = capsys.readouterr().err
    assert "p0.rq" in err and "[V] must end the template" in err
    assert scorer.calls == []


# --- errors -----------------------------------------------------------------------------------

def test_probe_not_exported_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    (qdir / "later.rq").write_text(choice_probe(name="t/later"))
    assert run(qdir, results, FakeScorer(), "-p", "t/later") == 2
    assert "python -m probes.export -p t/later" in capsys.readouterr().err


def test_empty_probe_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    probe = ("# name: t/empty\n# task: choice\n# split: test\n# target: ?w\n# candidates: ?w\n"
             '# prompts: ["[W] [V]"]\nSELECT ?w WHERE { VALUES ?w { "a" } FILTER(false) }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(), "-p", "t/empty") == 2
    err = capsys.readouterr().err
    assert "no instances of t/empty" in err and "python -m probes.export" in err


def test_records_probe_cannot_be_scored(tmp_path: Path, capsys: Any) -> None:
    probe = ("# name: t/rec\n# task: records\n# split: test\n"
             'SELECT ?w WHERE { VALUES ?w { "a" } }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(), "-p", "t/rec") == 2
    assert "nothing to score" in capsys.readouterr().err


def test_unknown_param_names_the_file_and_suggests(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe(params="# params: {score: whole}\n"))
    (qdir / "p0.rq").write_text(choice_probe(params="# params: {scroe: whole}\n"))
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 2
    err = capsys.readouterr().err
    assert "p0.rq:9: unknown params key 'scroe'" in err and "did you mean 'score'" in err
    with pytest.raises(ProbeFileError, match="did you mean 'score'"):  # export refuses it too
        setup(tmp_path, choice_probe(params="# params: {scroe: whole}\n"))


def test_binary_gold_outside_the_classes_is_an_error(tmp_path: Path, capsys: Any) -> None:
    probe = ("# name: t/bin\n# task: binary\n# split: test\n# target: ?s\n# gold: ?g\n"
             '# prompts: ["[W] [V]"]\n'
             'SELECT ?s ?g WHERE { VALUES (?s ?g) { ("x" "maybe") } }\n')
    with pytest.raises(ProbeError) as e:  # found at export, before any model loads
        setup(tmp_path, probe)
    assert "'maybe', which is not a class" in str(e.value)


def test_help_documents_every_option() -> None:
    parser = build_parser()
    for action in parser._actions:
        assert action.help, action.option_strings
    text = parser.format_help()
    for flag in ("--model", "--probe", "--results", "--device", "--dtype", "--batch-size",
                 "--threads", "--top-k", "--limit", "--split", "--no-cache"):
        assert flag in text


def test_failed_run_is_marked_failed_and_keeps_committed_chunks(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())

    class Broken(FakeScorer):
        def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
            if len(self.calls) == 2:
                raise RuntimeError("device lost")
            return super().loglik(requests)

    # an instance has 2 prompts x 3 candidates = 6 requests; chunks end between instances once
    # they hold >= 5 requests, so the two calls before the failure committed 2 x 6 requests
    with pytest.raises(RuntimeError):
        run(qdir, results, Broken(), "-p", "t/choice", "--chunk-size", "5")
    assert query(results, "SELECT status FROM runs") == [("failed",)]
    assert query(results, "SELECT count(*) FROM score_cache") == [(12,)]
    assert query(results, "SELECT count(*) FROM scores") == [(12,)]
    again = FakeScorer()
    assert run(qdir, results, again, "-p", "t/choice") == 0
    assert sum(n for _, n in again.calls) == 6


def test_model_error_mid_run_is_a_clear_error_and_marks_the_run_failed(
        tmp_path: Path, capsys: Any) -> None:
    from probes.models import PromptTooLongError

    qdir, results = setup(tmp_path, choice_probe())

    class TooLong(FakeScorer):
        def loglik(self, requests: Sequence[tuple[str, str]]) -> list[FakeScore]:
            raise PromptTooLongError("prompt #0 has 900 tokens but the model accepts 512")

    assert run(qdir, results, TooLong(), "-p", "t/choice") == 2
    assert "900 tokens" in capsys.readouterr().err
    assert query(results, "SELECT status FROM runs") == [("failed",)]


def test_missing_operation_fails_before_any_work(tmp_path: Path, capsys: Any) -> None:
    from probes.models import ModelError

    probe = ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n"
             '# prompts: ["[W] is [V]."]\nSELECT ?w WHERE { VALUES ?w { "owl" } }\n')
    qdir, results = setup(tmp_path, probe)

    class Headless(FakeScorer):
        def require(self, *ops: str) -> None:
            if "topk" in ops:
                raise ModelError("model 'x' has no masked-LM head; it supports: features")

    scorer = Headless(kind="masked")
    assert run(qdir, results, scorer, "-p", "t/rel") == 2
    assert "no masked-LM head" in capsys.readouterr().err
    assert scorer.calls == [] and query(results, "SELECT count(*) FROM runs") == [(0,)]


def test_reexport_with_fewer_instances_drops_their_rows(tmp_path: Path) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    fewer = choice_probe(rows='("owl" "bird" "tree")')
    setup(tmp_path, fewer)
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    assert query(results, "SELECT count(*) FROM scores") == [(4,)]


def test_reexport_with_changed_fields_replaces_the_rows(tmp_path: Path) -> None:
    def probe(where: str) -> str:
        return ("# name: t/f\n# task: choice\n# split: test\n# target: ?w\n# gold: ?g\n"
                '# candidates: ?g\n# id: ?w\n'
                '# prompts: ["[W] lives in [PLACE], it is [DET] [V]."]\n'
                "SELECT ?w ?g ?place WHERE { VALUES (?w ?g ?place) { "
                f'("owl" "bird" "{where}") }} }}\n')

    qdir, results = setup(tmp_path, probe("woods"))
    assert run(qdir, results, FakeScorer(), "-p", "t/f") == 0
    setup(tmp_path, probe("barns"))
    assert run(qdir, results, FakeScorer(), "-p", "t/f") == 0
    ctx = "owl lives in barns, it is a"
    assert query(results, "SELECT prompt, score FROM scores") == [
        (ctx + " bird.", -fake_value(ctx + "| bird."))]


# --- the results file locked, a run killed ----------------------------------------------------

def test_locked_results_file_is_a_clear_error_and_nothing_is_lost(tmp_path: Path,
                                                                  capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('ready', flush=True); time.sleep(60)", str(results)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        scorer = FakeScorer()
        assert run(qdir, results, scorer, "-p", "t/choice") == 2
        err = capsys.readouterr().err
        assert "locked" in err and str(holder.pid) in err
        assert scorer.calls == []
    finally:
        holder.kill()
        holder.wait()
    assert query(results, "SELECT count(*) FROM instances") == [(3,)]
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0


def big_probe() -> str:
    rows = " ".join(f'("w{i}" "g{i}" "c{i}_{j}")' for i in range(30) for j in range(4))
    return choice_probe(name="t/big", prompts='["[W] is [V]."]', rows=rows)


def test_sigkill_half_way_then_resume_gives_the_same_rows(tmp_path: Path) -> None:
    # the uninterrupted reference run, in its own results file
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    qdir_ref, results_ref = setup(ref_dir, big_probe())
    assert run(qdir_ref, results_ref, FakeScorer(), "-p", "t/big") == 0
    total = query(results_ref, "SELECT count(*) FROM scores")[0][0]
    assert total == 30 * 5

    qdir, results = setup(tmp_path, big_probe())
    log = tmp_path / "calls.log"
    child = subprocess.Popen(
        [sys.executable, "-c", "import importlib.util, sys; "
         "s = importlib.util.spec_from_file_location('kgp_test_run', sys.argv[1]); "
         "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
         "sys.exit(m.subprocess_main())", __file__, "--", "--model", "fake/model",
         "--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
         "-p", "t/big", "--chunk-size", "10"],
        env={**os.environ, "FAKE_DELAY": "0.2", "FAKE_LOG": str(log)}, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # the 4th call has started, so chunks 1-3 are committed
        if log.exists() and len(log.read_text().splitlines()) >= 4:
            break
        assert child.poll() is None, "the child run ended before it could be killed"
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL

    cached = query(results, "SELECT count(*) FROM score_cache")[0][0]
    partial = query(results, "SELECT count(*) FROM scores")[0][0]
    assert 30 <= cached < total and partial == cached
    assert query(results, "SELECT status FROM runs") == [("running",)]

    resumed = FakeScorer()
    assert run(qdir, results, resumed, "-p", "t/big", "--chunk-size", "10") == 0
    assert sum(n for _, n in resumed.calls) == total - cached
    assert table(results, "scores") == table(results_ref, "scores")
    assert table(results, "score_cache") == table(results_ref, "score_cache")
    dupes = query(results, "SELECT count(*) - count(DISTINCT (run_id, split, instance_id, "
                  "prompt_id, candidate)) FROM scores")
    assert dupes == [(0,)]
    assert query(results, "SELECT status FROM runs") == [("done",)]


def test_run_id_is_deterministic_across_results_files(tmp_path: Path) -> None:
    ids = []
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        qdir, results = setup(tmp_path / sub, choice_probe())
        assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
        ids.append(query(results, "SELECT run_id, config FROM runs")[0])
    assert ids[0][0] == ids[1][0]
    assert json.loads(ids[0][1])["prompts"] == ["[W] is [DET] [V].", "[DET] [W] is a kind of [V]"]


def test_cache_lookup_is_one_join_over_all_keys() -> None:
    from probes import cache
    from probes.tasks import Request

    con = connect(":memory:")
    reqs = [Request("loglik", ("ctx", f" w{i}")) for i in range(50)]
    keys = [cache.request_key("m", "r", {}, r) for r in reqs]
    cache.commit(con, cache_rows=[(k, "m", "loglik", FakeScore(-float(i), i))
                                  for i, k in enumerate(keys[:20])])
    got = cache.lookup(con, keys)
    assert sorted(got) == sorted(keys[:20])
    assert got[keys[7]].logprob == -7.0 and got[keys[7]].n_tokens == 7
    topk = Request("topk", ("a dog is a",), (("k", 2),))
    tk = cache.request_key("m", "r", {}, topk)
    cache.commit(con, cache_rows=[(tk, "m", "topk", [("animal", 0.5), ("pet", 0.25)])])
    assert cache.lookup(con, [tk]) == {tk: [("animal", 0.5), ("pet", 0.25)]}


# --- a tiny real model through the real backend ------------------------------------------------

def tiny_causal_model(folder: Path) -> Path:
    """A 2-layer random GPT-2 with a byte-level BPE tokenizer trained on a few sentences."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    corpus = [f"{w} is a kind of {g}. an {w} is {g}." for w, (g, cs) in ANIMALS.items()] + [
        "a tree and an apple, an object, a thing, an animal, a bird, an emu, an owl, a cat"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<|endoftext|>",
                                  eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    torch.manual_seed(0)
    eos = tok.convert_tokens_to_ids("<|endoftext|>")
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=eos, eos_token_id=eos, architectures=["GPT2LMHeadModel"])
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


def direct_loglik(folder: Path, context: str, continuation: str) -> float:
    """log P(continuation | context) by one plain forward pass, no batching, no caches."""
    import torch
    from transformers import AutoTokenizer, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(folder)
    model = GPT2LMHeadModel.from_pretrained(folder).eval()
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    full = tok(context + continuation, add_special_tokens=False)["input_ids"]
    assert full[:len(ctx)] == ctx
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([full])).logits[0].double(), -1)
    return float(sum(logp[i - 1, full[i]] for i in range(len(ctx), len(full))))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_real_tiny_causal_model_end_to_end(tmp_path: Path) -> None:
    folder = tiny_causal_model(tmp_path / "tiny-gpt2")
    qdir, results = setup(tmp_path, choice_probe(), (
        "# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n"
        '# prompts: ["[DET] [W] is [DET] [V]."]\n# params: {vocab: words}\n'
        'SELECT ?w WHERE { VALUES ?w { "owl" } }\n'))
    argv = ["--model", str(folder), "--results", str(results), "--queries", str(qdir),
            "--only-extra", "--quiet", "--device", "cpu", "--dtype", "float32",
            "--threads", "1", "--top-k", "4", "-p", "t/*"]
    assert main(argv) == 0
    got = dict(query(results, "SELECT prompt, score FROM scores WHERE prompt_id = 0"))
    assert len(got) == 9
    for text, (ctx, cont) in {"owl is a bird.": ("owl is a", " bird."),
                              "cat is an object.": ("cat is an", " object."),
                              "emu is an apple.": ("emu is an", " apple.")}.items():
        assert got[text] == pytest.approx(direct_loglik(folder, ctx, cont), abs=1e-4)
    ranks = query(results, "SELECT rank, probability FROM responses ORDER BY rank")
    assert [r for r, _ in ranks] == list(range(1, len(ranks) + 1)) and 1 <= len(ranks) <= 4
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(ranks))
    (backend, revision, status), = query(
        results, "SELECT DISTINCT backend, revision, status FROM runs")
    assert (backend, status) == ("causal", "done") and revision not in (None, "unknown")


def tiny_masked_model(folder: Path) -> Path:
    """A 2-layer random BERT with a WordPiece tokenizer over a few words."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = sorted({*WORDS, "is", "a", "an", "kind", "of", ".", "##s", "##ing", "x"} |
                   {w.lower() for w in ANIMALS})
    vocab = {t: i for i, t in enumerate(special + words)}
    raw = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=False)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(1)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                     num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=48,
                     initializer_range=0.3, architectures=["BertForMaskedLM"])
    BertForMaskedLM(cfg).eval().save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


def direct_pll(folder: Path, text: str, span: tuple[int, int]) -> float:
    """Pseudo-log-likelihood of the tokens overlapping ``span``, one masked copy at a time."""
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(folder)
    model = BertForMaskedLM.from_pretrained(folder).eval()
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    total = 0.0
    for pos, (a, b) in enumerate(enc["offset_mapping"]):
        if enc["special_tokens_mask"][pos] or not (a < span[1] and b > span[0]):
            continue
        ids = torch.tensor([enc["input_ids"]])
        ids[0, pos] = tok.mask_token_id
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0, pos].double(), -1)
        total += float(logp[enc["input_ids"][pos]])
    return total


def direct_mask_probs(folder: Path, text: str) -> dict[str, float]:
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(folder)
    model = BertForMaskedLM.from_pretrained(folder).eval()
    ids = tok(text)["input_ids"]
    pos = ids.index(tok.mask_token_id)
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=torch.tensor([ids])).logits[0, pos].double(), -1)
    return {t: float(probs[i]) for t, i in tok.get_vocab().items()}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_real_tiny_masked_model_end_to_end(tmp_path: Path) -> None:
    folder = tiny_masked_model(tmp_path / "tiny-bert")
    qdir, results = setup(tmp_path, choice_probe(params="# params: {score: slot}\n"), (
        "# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n"
        '# prompts: ["[W] is [DET] [V]."]\n# params: {top_k: 3}\n'
        'SELECT ?w WHERE { VALUES ?w { "owl" } }\n'))
    argv = ["--model", str(folder), "--results", str(results), "--queries", str(qdir),
            "--only-extra", "--quiet", "--device", "cpu", "--dtype", "float32", "-p", "t/*"]
    assert main(argv) == 0
    got = dict(query(results, "SELECT prompt, score FROM scores"))
    assert len(got) == 18
    for text, span in {"owl is a bird.": (9, 13), "cat is an object.": (10, 16),
                       "An emu is a kind of apple": (20, 25)}.items():
        assert got[text] == pytest.approx(direct_pll(folder, text, span), abs=1e-4)
    # [DET] before the slot: the "a" and "an" distributions mixed by the BNC frequencies
    a = direct_mask_probs(folder, "owl is a [MASK].")
    an = direct_mask_probs(folder, "owl is an [MASK].")
    words = {w for w in WORDS if w.islower()} | {"is", "a", "an", "kind", "of", "x"}
    f_a = round(21626 / (21626 + 3430), 4)  # probes.tasks.relatum.det_mix rounds to 4 digits
    merged = {w: f_a * a[w] + (1 - f_a) * an[w] for w in words}
    expected = sorted(merged.items(), key=lambda kv: -kv[1])[:3]
    ranks = query(results, "SELECT token, probability FROM responses ORDER BY rank")
    assert [t for t, _ in ranks] == [w for w, _ in expected]
    assert [p for _, p in ranks] == pytest.approx([p for _, p in expected], abs=1e-5)


def test_relatum_runs_record_the_model_vocabulary_once(tmp_path: Path) -> None:
    probes = [f"# name: t/r{i}\n# task: relatum\n# split: test\n# target: ?w\n"
              '# prompts: ["[W] is near [V]."]\n'
              'SELECT ?w WHERE { VALUES ?w { "Lyon" } }\n' for i in (1, 2)]
    qdir, results = setup(tmp_path, *probes)
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/*") == 0
    got = query(results, "SELECT model, vocab, word FROM model_vocab ORDER BY word")
    assert got == sorted(("fake/model", "lowercase", w) for w in FakeVocab(True).words)


def test_cached_rerun_does_not_load_the_model(tmp_path: Path, monkeypatch: Any) -> None:
    import probes.models

    qdir, results = setup(tmp_path, choice_probe())
    monkeypatch.setattr(probes.models, "resolve", lambda name, **kw: SimpleNamespace(
        revision=FakeScorer.revision))
    argv = ["--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
            "--model", "fake/model", "-p", "t/*"]
    assert main(argv, scorer_factory=lambda *a, **k: FakeScorer()) == 0
    before = query(results, "SELECT * FROM scores ORDER BY ALL")

    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was loaded although every request is cached")

    assert main(argv, scorer_factory=no_model) == 0
    assert query(results, "SELECT * FROM scores ORDER BY ALL") == before
    assert query(results, "SELECT status, cache_hits = requests FROM runs") == [("done", True)]
    # a new instance is a cache miss: now the model is needed
    calls: list[str] = []

    def counting(*args: Any, **kwargs: Any) -> FakeScorer:
        calls.append("load")
        return FakeScorer()

    assert main([*argv, "--top-k", "3"], scorer_factory=counting) == 0  # same requests
    assert calls == []
    assert main([*argv, "--no-cache"], scorer_factory=counting) == 0
    assert calls == ["load"]
