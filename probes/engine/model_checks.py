"""Model files checked before transformers reads them, and the refusal of a model's own code.

A model folder or file comes from wherever a user downloaded it; a damaged or crafted file
must be one line naming it and the fix, never a traceback from a loader
(``struct.error``, ``SafetensorError``), and never a loader asked to allocate what a header
claims. :func:`check_gguf` reads a GGUF file's header, metadata and tensor table;
:func:`check_safetensors` reads a ``*.safetensors`` header (a length, then JSON) and checks it
against the file: the header fits in the file and under safetensors' own bound of 100,000,000
bytes, every tensor has a known dtype, a shape of non-negative integers and a byte range inside
the data that is exactly its shape's size. :func:`remote_code_error` words the refusal of a
model that needs code from its folder or repository: what kgprobe's opt-in is and what it risks.

>>> import tempfile, struct, json
>>> d = Path(tempfile.mkdtemp())
>>> head = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
>>> _ = (d / "ok.safetensors").write_bytes(struct.pack("<Q", len(head)) + head + bytes(16))
>>> check_safetensors(d / "ok.safetensors")
>>> head = head.replace(b"[2, 2]", b"[1099511627776, 16]")
>>> _ = (d / "big.safetensors").write_bytes(struct.pack("<Q", len(head)) + head + bytes(16))
>>> check_safetensors(d / "big.safetensors")
Traceback (most recent call last):
...
probes.engine.errors.ModelError: safetensors file ...(tensor 'w' of shape [1099511627776, 16] ...
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from probes.engine.errors import ModelError

SAFETENSORS_MAX_HEADER = 100_000_000
"""The largest header the safetensors library itself reads (bytes)."""

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
               "F4": 1, "F6_E2M3": 1, "F6_E3M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}
"""Bytes per element of each safetensors dtype (sub-byte types are stored packed: counted as
1, which only makes the size check looser for them)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def check_gguf(path: Path) -> None:
    """A ModelError naming the file and the fix when ``path`` is not a complete GGUF file (not
    GGUF at all, or cut off: a 64-byte stub, a download that stopped), before transformers
    reads it (it fails there with a bare ``struct.error`` or ``IndexError``). The whole header,
    metadata and tensor table are read (memory-mapped), as the conversion will."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    if head != b"GGUF":
        raise ModelError(
            f"{path} is not a GGUF file (it starts with {head!r}, a GGUF file with b'GGUF'); "
            "name a .gguf model file, a model folder or a hub name"
        )
    try:
        from gguf import GGUFReader
    except ImportError:  # transformers says so when it needs it
        return
    try:
        GGUFReader(str(path))
    except Exception as exc:  # struct.error, IndexError, ValueError: where the file ends
        raise ModelError(
            f"GGUF file {path} is truncated or damaged ({size:,} bytes; {_first_line(exc)}); "
            "download it again (check its sha256 against the source's) or name another model"
        ) from exc


def check_safetensors(path: Path) -> None:
    """A ModelError naming ``path`` and the fix when its header does not describe the file: read
    before any loader allocates what the header claims (a header length of 2**63 - 1, a 90 MB
    header in a small file, a tensor of [2**40, 16] over 16 bytes of data)."""

    def damaged(why: str) -> ModelError:
        return ModelError(f"safetensors file {path} is damaged or crafted ({why}); download "
                          "the model again (check the file's sha256 against the source's) or "
                          "name another model")
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise damaged(f"{size} bytes: shorter than the 8-byte header length")
            (length,) = struct.unpack("<Q", raw)
            if length > SAFETENSORS_MAX_HEADER or length > size - 8:
                raise damaged(f"its header claims {length:,} bytes, the file has {size:,} and "
                              f"a header may have at most {SAFETENSORS_MAX_HEADER:,}")
            text = fh.read(length)
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    try:
        header = json.loads(text.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, not JSON, or a number of 5,000 digits
        raise damaged(f"its header is not readable JSON: {_first_line(exc).split(';')[0]}"
                      ) from None
    if not isinstance(header, dict):
        raise damaged("its header is not a JSON object")
    data = size - 8 - length
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise damaged(f"tensor {name!r} is not described by an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BYTES:
            raise damaged(f"tensor {name!r} has the unknown dtype {dtype!r}")
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
            raise damaged(f"tensor {name!r} has the shape {str(shape)[:80]}, not a list of "
                          "non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(n) is int for n in offsets) and 0 <= offsets[0] <= offsets[1]
                <= data):
            raise damaged(f"tensor {name!r} has the byte range {str(offsets)[:80]}, not one "
                          f"inside the file's {data:,} bytes of data")
        need = math.prod(shape) * DTYPE_BYTES[dtype]
        if need != offsets[1] - offsets[0]:
            raise damaged(f"tensor {name!r} of shape {shape} ({dtype}) needs {need:,} bytes but "
                          f"its byte range holds {offsets[1] - offsets[0]:,}")


def needs_remote_code(error: BaseException) -> bool:
    """Whether a transformers error says the model needs its own code (``trust_remote_code``).
    """
    return "trust_remote_code" in str(error) or "contains custom code" in str(error)


def remote_code_error(name: str, kind: str) -> ModelError:
    """The refusal of a model whose config or classes are Python files of its own (transformers'
    ``auto_map``): what kgprobe's opt-in is and what it risks, instead of transformers' advice
    (which names a keyword argument and, for a local folder, a hub address made from its path).

    >>> str(remote_code_error("/m", "dir")).split(",")[0]
    "model '/m' needs Python code from its own folder to load"
    """
    where = "folder" if kind != "hub" else "repository on the Hugging Face hub"
    return ModelError(
        f"model {name!r} needs Python code from its own {where} to load, and kgprobe does not "
        "run a model's code unless asked; that code runs with your user's rights (it can read "
        "and change your files and reach the network), so only if you trust its source: pass "
        "--model-args trust_remote_code=true to probes.engine.run (trust_remote_code=True in "
        "Python), "
        "or use a model that transformers supports without it")
