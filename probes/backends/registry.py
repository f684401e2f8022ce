"""Pick and load the scorer backend for a model name.

``load_scorer(name)`` resolves the name (alias, .gguf file, folder or hub id, see
:mod:`probes.engine.models`), reads the model config and chooses the backend from it, unless the
caller names one with ``kind=`` (a built-in kind, or any backend registered with
:func:`register`, which then loads the model as it sees fit):

- ``is_encoder_decoder`` -> ``seq2seq`` (T5, BART);
- an architecture ending in ``ForCausalLM`` / ``LMHeadModel`` -> ``causal``;
- an architecture ending in ``ForMaskedLM`` (or a BERT-style ``ForPreTraining``) -> ``masked``;
- an encoder without any head (``BertModel``, e.g. all-MiniLM-L6-v2) -> ``masked`` with
  ``features`` only: asking it for fill-mask raises a ModelError that names the head it lacks.

A backend's name is a label (``runs.backend``, ``kgprobe run --backend NAME``): tasks read its
declared capabilities, the cache key its computation, the metrics ``runs.family``. A user's own
backend is found through the entry point group ``kgprobe.backends`` (:data:`ENTRY_POINTS`) of
an installed distribution: the entry's name is the backend's, its value the module that
registers it (``my_pkg.my_backend``) or the Scorer subclass itself (``my_pkg.my_backend:MyLM``,
registered under the entry's name when its module does not register it)::

    [project.entry-points."kgprobe.backends"]
    my-lm = "my_pkg.my_backend:MyLM"

>>> class Cfg:
...     is_encoder_decoder = False
...     architectures = ["BertModel"]
...     model_type = "bert"
>>> detect_kind(Cfg())
('masked', False)
>>> Cfg.architectures = ["GPT2LMHeadModel"]; detect_kind(Cfg())
('causal', True)
>>> Cfg.is_encoder_decoder, Cfg.architectures = True, ["T5EncoderModel"]; detect_kind(Cfg())
('seq2seq', False)
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Callable, Sequence
from typing import Any, cast

from probes.backends.base import Scorer, resolve_device, resolve_dtype
from probes.backends.protocol import FAMILIES
from probes.backends.server import is_server_name
from probes.engine.errors import ModelError
from probes.engine.models import load_config, resolve
from probes.engine.placement import Placement, parse_max_memory

_BACKENDS: dict[str, type[Scorer]] = {}
_MODULES = {name: f"probes.backends.{name}" for name in FAMILIES}
"""The built-in backends: one per family, named after it, in a module of that name."""
KINDS: tuple[str, ...] = FAMILIES
ENTRY_POINTS = "kgprobe.backends"
"""The entry point group where an installed distribution names its own backends."""

# encoders whose ForPreTraining class carries a masked-LM head (ELECTRA's is a discriminator)
_PRETRAINING_WITH_MLM = {"bert", "albert", "roberta", "xlm-roberta", "camembert", "megatron-bert"}
_ENCODER_TYPES = {
    "bert", "roberta", "albert", "distilbert", "electra", "deberta", "deberta-v2", "xlm-roberta",
    "camembert", "mpnet", "modernbert", "megatron-bert", "ernie", "xlm", "flaubert", "rembert",
    "roformer", "funnel", "big_bird", "nystromformer", "mobilebert", "squeezebert", "luke",
    "eurobert", "neobert",
}  # fmt: skip


def register(kind: str) -> Callable[[type[Scorer]], type[Scorer]]:
    """Class decorator: make a Scorer subclass the backend for ``kind`` (the one place its
    name is written: the decorator sets the class's ``kind``). A copy under another name is a
    subclass registered under that name."""

    def decorate(cls: type[Scorer]) -> type[Scorer]:
        if vars(cls).get("kind") not in (None, kind):  # its own name, set by this decorator
            raise ModelError(f"{cls.__qualname__} is already the backend {cls.kind!r}; register "
                             f"a subclass of it as {kind!r}")
        cls.kind = kind
        _BACKENDS[kind] = cls
        return cls

    return decorate


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The backends installed distributions name in :data:`ENTRY_POINTS`, by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}


def kinds() -> tuple[str, ...]:
    """Every kind ``load_scorer`` accepts: the built-in ones, any registered since and any an
    installed distribution names in the entry point group ``kgprobe.backends``."""
    names = [*KINDS, *_BACKENDS, *_entry_points()]
    return tuple(dict.fromkeys(names))


def _load_entry_point(kind: str, ep: importlib.metadata.EntryPoint) -> None:
    """Import what entry point ``ep`` names; a Scorer class its module did not register is
    registered under ``kind``. Any failure is one ModelError naming the entry point."""
    where = f"entry point {kind!r} = {ep.value!r} (group {ENTRY_POINTS}"
    where += f", distribution {ep.dist.name})" if ep.dist is not None else ")"
    try:
        loaded = ep.load()
    except Exception as e:  # a user's module: any error it raises is theirs to mend
        raise ModelError(f"cannot load backend {where}: {type(e).__name__}: {e}") from e
    if kind in _BACKENDS:
        return
    if isinstance(loaded, type) and issubclass(loaded, Scorer):
        register(kind)(loaded)
        return
    raise ModelError(f"backend {where} registers no backend named {kind!r}: name a Scorer "
                     f"subclass (module:Class) or a module that calls "
                     f"probes.backends.register({kind!r})")


def backend(kind: str) -> type[Scorer]:
    """The Scorer class registered for ``kind`` (importing its module on first use: a built-in
    backend's, or the one an installed distribution's entry point names)."""
    if kind in _BACKENDS:
        return _BACKENDS[kind]
    if kind in _MODULES:
        importlib.import_module(_MODULES[kind])
        return _BACKENDS[kind]
    found = _entry_points().get(kind)
    if found is None:
        raise ModelError(f"unknown model kind {kind!r}; use one of {', '.join(kinds())}, or "
                         f"install a distribution that names it in the entry point group "
                         f"{ENTRY_POINTS}")
    _load_entry_point(kind, found)
    return _BACKENDS[kind]


def detect_kind(config: Any) -> tuple[str, bool]:
    """(kind, has the LM head that kind needs) from a transformers config."""
    architectures = list(getattr(config, "architectures", None) or [])
    if getattr(config, "is_encoder_decoder", False):
        # a bare BartModel/T5Model checkpoint still carries the tied LM head; an EncoderModel not
        bare = [a for a in architectures if a.endswith("EncoderModel")]
        return "seq2seq", not (architectures and len(bare) == len(architectures))
    model_type = getattr(config, "model_type", "")
    for arch in architectures:
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal", True
        if arch.endswith("ForMaskedLM"):
            return "masked", True
        if arch.endswith("ForPreTraining") and model_type in _PRETRAINING_WITH_MLM:
            return "masked", True
    if model_type in _ENCODER_TYPES:
        return "masked", False
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if architectures and all(a.endswith("Model") for a in architectures):
        # a bare encoder/decoder body without any head
        return ("masked" if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES else "causal"), False
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal", True
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked", True
    raise ModelError(
        f"cannot tell what kind of language model this is (model_type {model_type!r}, "
        f"architectures {architectures}); pass kind='masked', 'causal' or 'seq2seq'"
    )


def load_scorer(
    name: str | os.PathLike[str],
    *,
    device: str | None = None,
    dtype: str | None = None,
    batch_size: int | None = None,
    kind: str | None = None,
    require: Sequence[str] = (),
    threads: int | None = None,
    max_batch_tokens: int | None = None,
    allow_pickle: bool = False,
    trust_remote_code: bool = False,
    revision: str | None = None,
    device_map: str | None = None,
    max_memory: dict[int | str, int | str] | str | None = None,
    offload_folder: str | None = None,
    **options: Any,
) -> Scorer:
    """Load a model by name and wrap it in the scorer for its kind.

    ``device``: ``cpu``, ``cuda``, ``cuda:1`` (default: CUDA when available); ``dtype``:
    ``float32`` / ``bfloat16`` / ``float16`` (default bf16 on GPU, fp32 on CPU); ``batch_size``:
    fixed rows per batch (default: automatic, by a token budget, halved on out-of-memory);
    ``require``: operations that must be supported (e.g. ``("topk",)``), checked before any
    work; ``threads``: torch CPU threads; ``max_batch_tokens``: the automatic batches' padded-
    token budget; ``allow_pickle`` / ``trust_remote_code``: opt in to pickle weights /
    repository code; ``revision``: a hub branch, tag or commit; ``device_map`` (``auto``,
    ``balanced``, ``sequential``), ``max_memory`` (``{0: "70GiB", "cpu": "200GiB"}`` or the
    string ``"0=70GiB,cpu=200GiB"``) and ``offload_folder``: spread a model larger than one
    device over several and offload the rest to CPU or disk (accelerate). Backend options:
    ``verify`` (causal, masked: check the fast paths against a plain forward at load, default
from probes.backends.server import is_server_name
from probes.engine.errors import ModelError
from probes.engine.models import load_config, resolve
    """
    if is_server_name(name) or options.get("base_url"):  # an inference server's model
        from probes.backends.server import load_server

        # duck-typed like a Scorer: the operations it offers, require(), describe()
        return cast(Scorer, load_server(
            str(name), batch_size=batch_size, revision=revision, device=device, dtype=dtype,
            threads=threads, max_batch_tokens=max_batch_tokens, allow_pickle=allow_pickle,
            trust_remote_code=trust_remote_code, device_map=device_map, max_memory=max_memory,
            offload_folder=offload_folder, require_ops=require, **options))
    if threads is not None:
        import torch

        torch.set_num_threads(int(threads))
    if batch_size is not None and int(batch_size) < 1:
        raise ModelError(f"batch_size must be >= 1, got {batch_size}")
    if kind is not None:
        backend(kind)  # an unknown kind fails before the model is resolved
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    source = resolve(
        name, allow_pickle=allow_pickle, trust_remote_code=trust_remote_code, revision=revision
    )
    config = load_config(source)
    try:
        detected, has_head = detect_kind(config)
    except ModelError:
        if kind is None:
            raise
        detected, has_head = kind, True  # the caller says what it is
    if kind is not None and kind not in KINDS:
        detected = kind  # a registered backend of the caller's: it says what the model is
    elif kind is not None and kind != detected:
        arch = ", ".join(getattr(config, "architectures", None) or [config.model_type])
        raise ModelError(
            f"model {str(name)!r} ({arch}) is a {detected} LM, not {kind}; "
            f"a {kind} scorer needs a {_HEAD_NEEDED[kind]}"
        )
    if device_map is not None:
        if isinstance(max_memory, str):
            max_memory = parse_max_memory(max_memory)
        options["placement"] = Placement(device_map, max_memory, offload_folder)
    elif max_memory is not None or offload_folder is not None:
        raise ModelError("max_memory and offload_folder need a device_map (e.g. device_map='auto')")
    scorer = backend(detected).from_source(
        source,
        config,
        device=torch_device,
        dtype=torch_dtype,
        batch_size=batch_size,
        max_batch_tokens=max_batch_tokens,
        has_head=has_head,
        **options,
    )
    scorer.require(*require)
    return scorer


_HEAD_NEEDED = {
    "masked": "masked-LM head (a *ForMaskedLM checkpoint)",
    "causal": "causal LM head (a *ForCausalLM checkpoint)",
    "seq2seq": "encoder-decoder with an LM head (e.g. T5ForConditionalGeneration)",
}
