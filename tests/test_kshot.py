"""K-shot prompt-based fine-tuning (probes.benchmarks.ontolama.kshot) end to end on a tiny random
Llama.

The model is built from a config with SmolLM2's offline tokenizer (as in test_backends.py), the
instances are made-up pizza pairs under the real OntoLAMA probe header
(queries/ontolama/pizza-atomic.rq), and everything runs on the CPU in a few seconds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import duckdb
import pytest
import torch

from eval.sqlfile import discover_metrics, run_metric
from probes.benchmarks.ontolama import kshot
from probes.engine.errors import ProbeError
from probes.engine.models import load_tokenizer
from probes.engine.spec import load_probe
from probes.engine.tasks import Instance
from probes.results import connect

ROOT = Path(__file__).parents[1]
PIZZA = load_probe(ROOT / "queries" / "ontolama" / "pizza-atomic.rq")
METRICS = {m.name: m for m in discover_metrics([ROOT / "eval" / "ontolama"])}
SUBS = ["margherita", "american", "napoletana", "soho", "rosa", "caprina", "fiorentina",
        "giardiniera", "mushroom", "parmense", "polo", "siciliana"]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = load_tokenizer("smollm2-135m")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                         tie_word_embeddings=False)
    path = tmp_path_factory.mktemp("models") / "tiny-llama"
    LlamaForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def results(path: Path, probe: str = PIZZA.spec.name) -> duckdb.DuckDBPyConnection:
    """Per split, every SUBS pizza twice: "... it is a pizza" (1) and "... a country" (0)."""
    con = connect(path)
    for split in ("train", "dev", "test"):
        for sub in SUBS:
            for sup, gold in (("pizza", "1"), ("country", "0")):
                fields = {"sub": sub, "a_sub": "a ", "super": sup, "a_super": "a "}
                con.execute("INSERT INTO instances VALUES (?, ?, ?, ?, [?], [], ?::JSON, now())",
                            [probe, split, f"{sub}-{sup}", sub, gold,
                             json.dumps(fields)])
    return con


def test_sample_k_is_seeded_balanced_and_checked() -> None:
    pool = [Instance("p", "train", f"i{n:02d}", None, [str(n % 2)], [], {}) for n in range(20)]
    a = kshot.sample_k(pool, 4, 6666)
    assert sorted(i.gold[0] for i in a) == ["0"] * 4 + ["1"] * 4
    assert len({i.instance_id for i in a}) == 8
    assert [i.instance_id for i in a] == [i.instance_id for i in kshot.sample_k(pool, 4, 6666)]
    assert {i.instance_id for i in a} != {i.instance_id for i in kshot.sample_k(pool, 4, 7777)}
    with pytest.raises(ProbeError, match="10 instances of class 1, fewer than K = 11"):
        kshot.sample_k(pool, 11, 6666)


@pytest.mark.slow
def test_kshot_end_to_end_on_a_tiny_model(tiny_llama: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    results(db).close()
    # A high learning rate so that 6 epochs visibly fit 8 examples.
    argv = ["-m", str(tiny_llama), "-p", PIZZA.spec.name, "--results", str(db), "--k", "4",
            "--seed", "6666", "--seed", "7777", "--epochs", "6", "--lr", "3e-3",
            "--label-set", "L3", "--template", "2", "--device", "cpu"]
    assert kshot.main(argv) == 0
    con = connect(db)
    runs = con.execute("SELECT run_id, config, status FROM runs ORDER BY run_id").fetchall()
    assert len(runs) == 2 and all(r[2] == "done" for r in runs)
    cfg: dict[str, Any] = json.loads(runs[0][1])["kshot"]
    assert (cfg["k"], cfg["template"], cfg["label_set"], cfg["epochs"]) == (4, "T2", "L3", 6)
    assert 1 <= cfg["best_epoch"] <= 6 and len(cfg["dev_accuracy"]) == 6
    assert cfg["train_loss"][-1] < cfg["train_loss"][0]  # training moved the weights
    # every test instance (24) gets one row per L3 word (4), at prompt id T2 x L3 = 1 * 3 + 2.
    n, pids = con.execute("SELECT count(*), list(DISTINCT prompt_id) FROM scores "
                          "WHERE run_id = ?", [runs[0][0]]).fetchone()
    assert (n, pids) == (24 * 4, [5])
    cols, rows = run_metric(con, METRICS["ontolama_kshot"])
    got = [dict(zip(cols, r, strict=True)) for r in rows]
    assert [(g["k"], g["template"], g["label_set"], g["seeds"]) for g in got] == [
        (4, "T2", "L3", 2)]
    cols, rows = run_metric(con, METRICS["ontolama_zero_shot"])
    assert rows == []  # K-shot runs are not zero-shot runs


def test_bad_settings_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "r.duckdb"
    results(db).close()
    assert kshot.main(["-m", "x", "-p", PIZZA.spec.name, "--results", str(db), "--k", "13"]) == 2
    assert "fewer than K = 13" in capsys.readouterr().err
    assert kshot.main(["-m", "x", "-p", PIZZA.spec.name, "--results", str(db),
                       "--label-set", "L9"]) == 2
    assert "'L9' is not one of L1, L2, L3" in capsys.readouterr().err


def test_balanced_sample_is_seeded_and_class_balanced() -> None:
    pool = [Instance("p", "test", f"i{n:03d}", None, [str(int(n < 30))], [], {})
            for n in range(100)]  # 30 positives, 70 negatives
    a = kshot.balanced_sample(pool, 20)
    assert sorted(i.gold[0] for i in a) == ["0"] * 10 + ["1"] * 10
    assert a == kshot.balanced_sample(pool, 20)
    assert {i.instance_id for i in a} != {i.instance_id for i in kshot.balanced_sample(pool, 20, 7)}
    assert kshot.balanced_sample(pool, None) == pool and kshot.balanced_sample(pool, 500) == pool


def test_combine_is_the_papers_sum_of_probabilities() -> None:
    # class 0: P = 0.01 and 0.5 (sum 0.51); class 1: 0.2 and 0.2 (sum 0.4). The sum picks 0,
    # the mean of log-probabilities (geometric mean 0.0707 against 0.2) picks 1.
    ws = {"0": torch.tensor([[0.01, 0.5]]).log(), "1": torch.tensor([[0.2, 0.2]]).log()}
    assert kshot.combine(ws).exp().tolist()[0] == pytest.approx([0.51, 0.4])
    assert int(kshot.combine(ws).argmax()) == 0
    assert int(kshot.combine(ws, "mean_logprob").argmax()) == 1


@pytest.mark.slow
def _printed_runs(out: str) -> dict[str, tuple[str, str]]:
    """run id -> (test acc, seconds) from the printed markdown table."""
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| 2 |")]
    return {r[3].strip(): (r[6].strip(), r[8].strip()) for r in rows}


def test_protocol_runs_every_template_and_label_set(tiny_llama: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Without --template/--label-set a K runs all 2 x 3 combinations (x the seeds given); the
    protocol metric averages over all of them; a second call resumes (no new run) and prints
    each resumed run's stored test accuracy and time as first printed (not NaN and 0)."""
    db = tmp_path / "r.duckdb"
    results(db).close()
    argv = ["-m", str(tiny_llama), "-p", PIZZA.spec.name, "--results", str(db), "--k", "2",
            "--seed", "6666", "--epochs", "1", "--device", "cpu", "--sample", "8"]
    capsys.readouterr()
    assert kshot.main(argv) == 0
    first = _printed_runs(capsys.readouterr().out)
    assert len(first) == 6
    con = connect(db)
    cols, rows = run_metric(con, METRICS["ontolama_kshot_protocol"])
    [row] = [dict(zip(cols, r, strict=True)) for r in rows]
    assert (row["k"], row["runs"], row["n"]) == (2, 6, 8)
    cfgs = [json.loads(c)["kshot"] for (c,) in con.execute("SELECT config FROM runs").fetchall()]
    assert {(c["template"], c["label_set"]) for c in cfgs} == {
        (t, s) for t in ("T1", "T2") for s in ("L1", "L2", "L3")}
    assert {c["scoring"] for c in cfgs} == {"sum_prob"}
    con.close()
    assert kshot.main(argv) == 0
    resumed = _printed_runs(capsys.readouterr().out)
    assert resumed == first and all(acc != "nan" for acc, _ in resumed.values())
    con = connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (6,)


NLI = """# name: t/binli
# description: a biMNLI-like probe - premise and hypothesis are sentences, in T1 without It is
# task: subsumption
# split: test
# target: ?sub
# gold: ?label
# prompts: ['[SUB]? [V], [SUPER].']
# params:
#   label_words:
#     L1: {"1": ["yes"], "0": ["no"]}
SELECT ?sub ?super ?label WHERE { VALUES (?sub ?super ?label) { ("a" "b" 1) } }
"""


@pytest.mark.slow
def test_nli_comparison_path_on_a_tiny_masked_lm(tmp_path: Path) -> None:
    """The NLI comparison (biMNLI) runs the prompt-based K-shot code with a masked LM and
    premise/hypothesis sentences: here a 2-layer BERT built from a config with the MiniLM
    tokenizer (no masked LM with its head ships offline) and made-up NLI pairs."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from probes.engine.spec import parse_probe
    from tests.test_backends import _minilm_dir

    tok = AutoTokenizer.from_pretrained(_minilm_dir())
    torch.manual_seed(1)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=32,
                                       intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, max_position_embeddings=64))
    path = tmp_path / "tiny-bert"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    probe = parse_probe(NLI, tmp_path / "binli.rq")
    db = tmp_path / "r.duckdb"
    con = connect(db)
    pairs = [("the cat sleeps on the mat", "an animal sleeps", "1"),
             ("the cat sleeps on the mat", "the cat is running", "0"),
             ("a man plays a guitar", "someone makes music", "1"),
             ("a man plays a guitar", "nobody is playing", "0")]
    for split in ("train", "dev", "test"):
        for i, (premise, hypothesis, gold) in enumerate(pairs * 2):
            con.execute("INSERT INTO instances VALUES ('t/binli', ?, ?, ?, [?], [], ?::JSON, "
                        "now())", [split, f"{split}{i}", premise, gold,
                                   json.dumps({"sub": premise, "super": hypothesis})])
    result = kshot.run_kshot(con, str(path), probe, 2, 6666, device="cpu",
                             cfg=kshot.KshotConfig(epochs=2, lr=1e-3))
    assert result.test_n == 8 and 0.0 <= result.test_accuracy <= 1.0
    rows = con.execute("SELECT prompt, candidate FROM scores WHERE run_id = ? ORDER BY ALL",
                       [result.run_id]).fetchall()
    assert len(rows) == 8 * 2  # every test pair, once per label word
    assert rows[0][0] == "a man plays a guitar? no, nobody is playing."


@pytest.mark.slow
def test_full_setting_trains_on_all_of_train_for_the_papers_epochs(tiny_llama: Path,
                                                                   tmp_path: Path) -> None:
    """--full: one run (T1, L1, seed 6666, K = -1) on the whole train split (24 pairs here);
    epochs as the paper's L178 and footnote 17: 1 for GO atomic (a large training set in the
    paper), 10 for a small training split the paper does not name (Pizza's 24 < 10,000);
    --epochs overrides."""
    db = tmp_path / "r.duckdb"
    go = "ontolama/go-atomic"
    results(db).close()
    results(db, go).close()
    common = ["-m", str(tiny_llama), "--results", str(db), "--full", "--device", "cpu",
              "--sample", "8"]
    assert kshot.main([*common, "-p", go]) == 0
    assert kshot.main([*common, "-p", PIZZA.spec.name]) == 0
    assert kshot.main([*common, "-p", PIZZA.spec.name, "--epochs", "2"]) == 0
    con = connect(db, read_only=True)
    got = []
    for p, k, c, seed in con.execute("SELECT probe, k, config, seed FROM runs").fetchall():
        ks = json.loads(c)["kshot"]
        got.append((p, k, ks["epochs"], len(ks["dev_accuracy"]), ks["template"],
                    ks["label_set"], seed))
    got.sort()
    assert got == [(go, -1, 1, 1, "T1", "L1", 6666),
                   (PIZZA.spec.name, -1, 2, 2, "T1", "L1", 6666),
                   (PIZZA.spec.name, -1, 10, 10, "T1", "L1", 6666)]
