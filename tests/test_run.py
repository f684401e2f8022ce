"""``probes.engine.run`` and ``probes.engine.cache``: scoring exported instances, caching, resuming.

The model is a FakeScorer whose scores are computed from the request strings (an md5 of the
text), so every expected score below is computed here from the text the task should have
built, independently of the engine. Its helpers (FakeScorer, setup, run, query, the tiny-model
builders) are shared by test_run_recovery (failures, re-exports, SIGKILL and resume),
test_run_models (tiny real models end to end) and other test modules.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import duckdb
import pytest

from kg.store import LocalStore
from probes.app.run import main
from probes.backends.protocol import CAUSAL_LM, MASKED_LM
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.export import export
from probes.engine.runner.command import build_parser
from probes.engine.spec import discover
from probes.results import connect

ROOT = Path(__file__).parents[1]


# --- a fake backend ---------------------------------------------------------------------------

def fake_value(text: str) -> float:
    """A deterministic number in [0, 10) from a string."""
    return int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16) / 2**32 * 10


class FakeScore(NamedTuple):
    logprob: float
    n_tokens: int


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
        self.capabilities = CAUSAL_LM if kind == "causal" else MASKED_LM

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
    assert "python -m probes.engine.export -p t/later" in capsys.readouterr().err


def test_empty_probe_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    probe = ("# name: t/empty\n# task: choice\n# split: test\n# target: ?w\n# candidates: ?w\n"
             '# prompts: ["[W] [V]"]\nSELECT ?w WHERE { VALUES ?w { "a" } FILTER(false) }\n')
    qdir, results = setup(tmp_path, probe)
    assert run(qdir, results, FakeScorer(), "-p", "t/empty") == 2
    err = capsys.readouterr().err
    assert "no instances of t/empty" in err and "python -m probes.engine.export" in err


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


def big_probe() -> str:
    rows = " ".join(f'("w{i}" "g{i}" "c{i}_{j}")' for i in range(30) for j in range(4))
    return choice_probe(name="t/big", prompts='["[W] is [V]."]', rows=rows)


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
    from probes.engine import cache
    from probes.engine.tasks import Request

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


def test_relatum_runs_record_the_model_vocabulary_once(tmp_path: Path) -> None:
    probes = [f"# name: t/r{i}\n# task: relatum\n# split: test\n# target: ?w\n"
              '# prompts: ["[W] is near [V]."]\n'
              'SELECT ?w WHERE { VALUES ?w { "Lyon" } }\n' for i in (1, 2)]
    qdir, results = setup(tmp_path, *probes)
    assert run(qdir, results, FakeScorer(kind="masked"), "-p", "t/*") == 0
    got = query(results, "SELECT model, vocab, word FROM model_vocab ORDER BY word")
    assert got == sorted(("fake/model", "lowercase", w) for w in FakeVocab(True).words)


def test_cached_rerun_does_not_load_the_model(tmp_path: Path, monkeypatch: Any) -> None:
    import probes.engine.models

    qdir, results = setup(tmp_path, choice_probe())
    monkeypatch.setattr(probes.engine.models, "resolve", lambda name, **kw: SimpleNamespace(
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


def test_a_quiet_run_says_how_far_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 46: under --quiet (no bar) a long run prints a progress line now and then, naming
    what it counts and its total, and a closing line; a short one prints nothing."""
    from probes.engine.runner import probe as probe_module

    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0   # fast: no line
    assert "scoring:" not in capsys.readouterr().err
    monkeypatch.setattr(probe_module, "QUIET_AFTER_S", 0.05)
    monkeypatch.setattr(probe_module, "QUIET_EVERY_S", 0.05)
    assert run(qdir, results, FakeScorer(delay=0.3), "-p", "t/choice", "--no-cache") == 0
    err = capsys.readouterr().err.splitlines()
    beats = [line for line in err if line.startswith("run t/choice: scoring: ")]
    assert beats and all(" prompts, " in line for line in beats)
    total = int(beats[0].split(" of ")[1].split()[0].replace(",", ""))
    # the total is what the run scored: every request, with --no-cache
    assert [(total,)] == query(results, "SELECT requests FROM runs ORDER BY started_at DESC "
                                        "LIMIT 1")
    assert any(line.startswith(f"run t/choice: done, {total:,} prompts scored, ")
               for line in err)
