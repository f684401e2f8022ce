"""``probes.engine.run`` with tiny real models (random weights, built from a config) through the
real backends: every score against a direct, unbatched transformers computation written here.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from probes.app.run import main
from tests.test_run import WORDS, choice_probe, query, setup, tiny_causal_model, tiny_masked_model
from tests.tolerance import approx_logprob


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
        assert got[text] == approx_logprob(direct_loglik(folder, ctx, cont))
    ranks = query(results, "SELECT rank, probability FROM responses ORDER BY rank")
    assert [r for r, _ in ranks] == list(range(1, len(ranks) + 1)) and 1 <= len(ranks) <= 4
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(ranks))
    (backend, revision, status), = query(
        results, "SELECT DISTINCT backend, revision, status FROM runs")
    assert (backend, status) == ("causal", "done") and revision not in (None, "unknown")


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
        assert got[text] == approx_logprob(direct_pll(folder, text, span))
    # [DET] before the slot: the "a" and "an" distributions mixed by the BNC frequencies
    a = direct_mask_probs(folder, "owl is a [MASK].")
    an = direct_mask_probs(folder, "owl is an [MASK].")
    words = {w for w in WORDS if w.islower()} | {"is", "a", "an", "kind", "of", "x"}
    f_a = round(21626 / (21626 + 3430), 4)  # probes.engine.tasks.relatum.det_mix rounds to 4 digits
    merged = {w: f_a * a[w] + (1 - f_a) * an[w] for w in words}
    expected = sorted(merged.items(), key=lambda kv: -kv[1])[:3]
    ranks = query(results, "SELECT token, probability FROM responses ORDER BY rank")
    assert [t for t, _ in ranks] == [w for w, _ in expected]
    assert [p for _, p in ranks] == pytest.approx([p for _, p in expected], abs=1e-5)
