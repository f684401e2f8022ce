"""A model's files: the sha256 that is a local model's revision, and the dequantised copy of a
GGUF file (its cache folder, written atomically, marked complete by :data:`MARKER`).

:mod:`probes.engine.models` resolves names to sources and loads them; the files behind a source are
hashed and converted here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from kg.config import model_cache
from probes.engine.errors import ModelError

MARKER = "kgprobe.json"  # written last into a converted-model folder; its presence = complete
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".msgpack", ".h5")


# --- hashing -----------------------------------------------------------------------------------

_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered per (path, size, mtime) in this process and in the cache.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.bin"
    >>> _ = p.write_bytes(b"abc")
    >>> file_sha256(p)[:12]
    'ba7816bf8f01'
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _SHA_MEMO:
        return _SHA_MEMO[key]
    memo_file = model_cache() / "sha256.json"
    memo = _read_json(memo_file)
    memo_key = f"{key[0]}|{key[1]}|{key[2]}"
    digest = memo.get(memo_key)
    if digest is None:
        hasher = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                hasher.update(block)
        digest = hasher.hexdigest()
        if stat.st_size > (1 << 24):  # only worth remembering for big files
            memo[memo_key] = digest
            _write_json(memo_file, memo)
    _SHA_MEMO[key] = digest
    return digest


def _never_scores(name: str) -> bool:
    """Files of a model folder that cannot change a score: documentation, licences, hidden
    files (``.gitattributes``) and kgprobe's own marker."""
    upper = name.upper()
    return (name.startswith(".") or name == MARKER or upper.endswith((".MD", ".RST"))
            or upper.startswith(("README", "LICENSE", "LICENCE", "NOTICE", "USE_POLICY")))


def dir_sha256(path: Path) -> str:
    """One sha256 over the files of a model folder that can change a score (names and
    contents): the weights, ``config.json``, ``generation_config.json``, every tokenizer file
    (``tokenizer.json``, ``tokenizer_config.json``, ``vocab.txt``, ``merges.txt``,
    ``*.model``, ``special_tokens_map.json``, ...) and chat template files; every top-level
    file but documentation and licences, so a file kgprobe does not know of counts too. This
    is the revision of a local folder, part of every cache key: an edited tokenizer is never
    answered from the cache. Big files are hashed once (``file_sha256`` remembers them)."""
    files = sorted(p for p in path.iterdir() if p.is_file() and not _never_scores(p.name))
    if not any(p.suffix in WEIGHT_SUFFIXES for p in files):
        raise ModelError(
            f"model folder {str(path)!r} has no weights file (model.safetensors); "
            "save the model with save_pretrained"
        )
    hasher = hashlib.sha256()
    for file in files:
        hasher.update(file.name.encode() + b"\0" + file_sha256(file).encode() + b"\n")
    return hasher.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=0))
        os.replace(tmp, path)
    except OSError:
        pass  # the memo is an optimisation only


# --- GGUF conversion ---------------------------------------------------------------------------


def ensure_cache_root() -> Path:
    root = model_cache()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(
            f"cannot create the model cache {root} ({exc}); set KGPROBE_MODEL_CACHE to a "
            "writable folder"
        ) from exc
    return root


def converted_dir(gguf: Path, sha: str) -> Path:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", gguf.stem) or "model"
    return model_cache() / f"{stem}-{sha[:16]}"


def convert_gguf(gguf: Path, target: Path, *, sha256: str, label: str) -> Path:
    """Dequantise a GGUF file into ``target`` (safetensors fp32 + config + tokenizer), atomically.

    The folder is written under a temporary name and renamed at the end, so an interrupted
    conversion leaves nothing that a later load would mistake for a complete model.
    """
    import copy

    import torch
    from safetensors.torch import save_model
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    root = ensure_cache_root()
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=root))
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        folder, file = str(gguf.parent), gguf.name
        try:
            config = AutoConfig.from_pretrained(folder, gguf_file=file)
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
            model = AutoModelForCausalLM.from_pretrained(
                folder, gguf_file=file, dtype=torch.float32
            )
        except (ValueError, OSError, KeyError, RuntimeError) as exc:
            raise ModelError(
                f"cannot read GGUF model {label!r} ({gguf}): {exc}; check that the file is a "
                "complete GGUF of an architecture transformers supports (pip install gguf)"
            ) from exc
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        clean = copy.deepcopy(model.config)
        if hasattr(clean, "quantization_config"):
            del clean.quantization_config
        clean.architectures = [type(model).__name__]
        clean.dtype = "float32"
        clean.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        del config
        marker = {
            "source": str(gguf.name),
            "label": label,
            "sha256": sha256,
            "architecture": type(model).__name__,
        }
        (tmp / MARKER).write_text(json.dumps(marker, indent=2))
        tmp.chmod(0o755)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / MARKER).is_file():  # another process won the race only if complete
                raise
    finally:
        hf_logging.set_verbosity(verbosity)
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
