"""The model options the ``probes`` commands share, defined once: ``--model``, ``--device``,
``--dtype``, ``--threads`` (the file and folder options every layer shares are in
:mod:`kg.options`). Each command adds the ones it takes with these functions.

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_model(p, required=True); add_device(p); add_threads(p)
>>> p.parse_args(["-m", "smollm2-135m", "--threads", "2"])
Namespace(model='smollm2-135m', device=None, threads=2)
"""

from __future__ import annotations

import argparse

MODEL_HELP = ("model: a Hugging Face hub name, a local folder, a GGUF file, or an offline alias "
              "(smollm2-135m, gemma3-270m; see probes.engine.models)")
DEVICE_HELP = ("torch device: cpu, cuda, cuda:1, mps (default: the backend's choice, a GPU when "
               "there is one)")
DTYPE_HELP = ("weights/compute dtype: float32, bfloat16, float16 (default: the backend's choice, "
              "float32 on CPU)")
THREADS_HELP = "CPU threads for torch (torch.set_num_threads; default: torch's)"


def add_model(p: argparse.ArgumentParser, required: bool = False,
              help: str = MODEL_HELP) -> None:
    """``--model NAME`` / ``-m`` (``args.model``)."""
    p.add_argument("--model", "-m", required=required, help=help)


def add_device(p: argparse.ArgumentParser, help: str = DEVICE_HELP) -> None:
    """``--device`` (``args.device``: None for the backend's choice)."""
    p.add_argument("--device", default=None, help=help)


def add_dtype(p: argparse.ArgumentParser, help: str = DTYPE_HELP) -> None:
    """``--dtype`` (``args.dtype``: None for the backend's choice)."""
    p.add_argument("--dtype", default=None, help=help)


def add_threads(p: argparse.ArgumentParser, help: str = THREADS_HELP) -> None:
    """``--threads N`` (``args.threads``: None for torch's default)."""
    p.add_argument("--threads", type=int, default=None, help=help)
