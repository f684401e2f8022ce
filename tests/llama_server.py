"""Start and stop llama.cpp's server (``python -m llama_cpp.server`` from llama-cpp-python, built
by scripts/setup.sh) on 127.0.0.1 over the GGUF files that ship in PyPI packages.

Without llama-cpp-python the tests that need it are skipped with the reason, except under
``CI=true``, where its absence fails them (CI must run them).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_server import free_port, running

MISSING = ("llama-cpp-python (with its server extra) is not installed: `bash scripts/setup.sh` "
           "builds it once (a wheel kept in ~/.cache/kgprobe/wheels)")


BOS_OVERRIDE = "tokenizer.ggml.add_bos_token=bool:true"


def need_llama_cpp() -> None:
    """Skip (fail under CI=true) when llama-cpp-python or its server extra is missing."""
    missing = [m for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette")
               if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{MISSING} (missing: {', '.join(missing)}); CI must run these tests")
        pytest.skip(MISSING)


@functools.cache
def gguf(alias: str) -> Path:
    """The GGUF file of a packaged model alias (probes.engine.models), as a path that stays until
    this
    process ends: located (Gemma 3: assembled from its parts, about 270 MB) once per process, and
    an assembled copy is removed at exit."""
    from probes.engine.models import ALIASES

    scratch = Path(tempfile.mkdtemp(prefix="kgp-gguf-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    path, _, _ = ALIASES[alias].locate(scratch)
    return Path(path)


@contextlib.contextmanager
def serve(model: Path, workdir: Path, *, alias: str | None = None, logits_all: bool = True,
          n_ctx: int = 512, bos: bool = False) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Serve ``model`` on a free local port with one thread (``bos``: make the model add its BOS
    token, a GGUF metadata override); yield (base URL ending in /v1, the
    server process) and always stop it."""
    port = free_port()
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
            "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1",
            "--n_ctx", str(n_ctx), "--logits_all", str(logits_all).lower(),
            "--cache", "false", "--verbose", "false"]
    if alias:
        args += ["--model_alias", alias]
    if bos:  # SmolLM2's GGUF adds no BOS; llama-cpp-python's echo then misaligns (see docs)
        args += ["--kv_overrides", BOS_OVERRIDE]
    url = f"http://127.0.0.1:{port}/v1"
    with running(args, workdir / f"llama-server-{port}.log", url + "/models", "llama_cpp.server",
                 wait_s=120, poll_s=0.2, request_timeout_s=2) as server:
        yield url, server


# The (context, continuation) pairs that the server and an in-process model must score alike
# (tests/test_server_backend.py: SmolLM2; tests/test_server_gemma.py: Gemma 3).
PAIRS = [("The capital of France is", " Paris"), ("The capital of France is", " Rome"),
         ("A dog is a kind of", " animal"), ("A dog is a kind of", " vegetable"),
         ("Water is made of hydrogen and", " oxygen"), ("The sun rises in the", " east"),
         ("The opposite of hot is", " cold"), ("The opposite of hot is ", "cold"),
         ("", "A sparrow is a bird."), ("", "A sparrow is a fish.")]


def reference(path: Path, pairs: list[tuple[str, str]], bos: bool = False
              ) -> list[tuple[float, int]]:
    """Sum of log P(token | prefix) over the continuation's tokens, from the raw logits of an
    in-process llama-cpp-python model (the lm-eval boundary: the context's trailing whitespace
    moves to the continuation; a sentence scores every token but its first)."""
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), n_ctx=512, n_threads=1, logits_all=True, verbose=False,
                kv_overrides={"tokenizer.ggml.add_bos_token": True} if bos else None)
    bos = [llm.token_bos()] if llm._model.add_bos_token() else []
    out = []
    for context, continuation in pairs:
        stripped = context.rstrip()
        whole = stripped + context[len(stripped):] + continuation
        tokens = bos + llm.tokenize(whole.encode(), add_bos=False, special=True)
        ctx = bos + llm.tokenize(stripped.encode(), add_bos=False, special=True) if stripped \
            else bos + tokens[len(bos):len(bos) + 1]
        assert tokens[:len(ctx)] == ctx, "a test text whose context tokens are not a prefix"
        llm.reset()
        llm.eval(tokens)
        logits = np.asarray(llm.scores[: len(tokens)], dtype=np.float64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        total = sum(logp[i - 1, tokens[i]] for i in range(len(ctx), len(tokens)))
        out.append((float(total), len(tokens) - len(ctx)))
    del llm
    return out
