"""Gemma 3 270M (262k-token vocabulary) through a real llama.cpp server (tests/llama_server.py),
the Gemma half of the server backend's tests (tests/test_server_backend.py: SmolLM2, faults,
cache), in a file of its own so that the parallel run (scripts/test.sh: pytest-xdist, each
file whole on one worker) scores it at the same time as the SmolLM2 tests, on the other core;
the server starts once for this module:

- the server's numbers equal the same GGUF run in-process by llama-cpp-python, computed from the
  raw logits (tests.llama_server.reference), within the batch-split tolerance below;
- against kgprobe's local path (transformers over the dequantised weights): the difference is
  measured and a bound on differing predictions holds (docs/scale.md section 7).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.llama_server import PAIRS, gguf, need_llama_cpp, reference, serve

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llama")


@pytest.fixture(scope="module")
def gemma(workdir: Path) -> Iterator[tuple[str, Any, Path]]:
    need_llama_cpp()
    path = gguf("gemma3-270m")
    with serve(path, workdir) as (url, proc):
        yield url, proc, path


def test_gemma_server_equals_the_same_gguf_in_process(gemma: tuple[str, Any, Path]) -> None:
    from probes.backends.registry import load_scorer

    url, _, path = gemma
    got = load_scorer(f"server:{url}", batch_size=1).loglik(PAIRS)
    want = reference(path, PAIRS)
    for score, (value, n) in zip(got, want, strict=True):
        assert score.n_tokens == n
        # the server reuses the previous prompt's cached prefix (at least BOS) and evaluates the
        # rest as another batch; Gemma 3's Q4_K_M logits depend on that split by up to 0.02
        # (measured: BOS alone then the rest reproduces the server's -0.16168 for "Water is
        # made of hydrogen and| oxygen", one batch gives -0.14206)
        assert abs(score.logprob - value) <= 0.05 * max(1.0, abs(value))


# --- against kgprobe's local path -------------------------------------------------------------

CHOICES = [
    ("The capital of France is", [" Paris", " Rome", " Berlin", " Madrid"]),
    ("The capital of Italy is", [" Rome", " Paris", " Vienna", " Lisbon"]),
    ("A dog is a kind of", [" animal", " plant", " stone", " machine"]),
    ("A rose is a kind of", [" flower", " animal", " metal", " vehicle"]),
    ("An apple is a kind of", [" fruit", " animal", " tool", " country"]),
    ("A hammer is a kind of", [" tool", " fruit", " bird", " river"]),
    ("The opposite of hot is", [" cold", " warm", " big", " blue"]),
    ("The opposite of up is", [" down", " left", " red", " fast"]),
    ("The opposite of big is", [" small", " tall", " green", " loud"]),
    ("Water is made of hydrogen and", [" oxygen", " carbon", " iron", " gold"]),
    ("The sun rises in the", [" east", " west", " north", " south"]),
    ("A sparrow is a kind of", [" bird", " fish", " insect", " tree"]),
    ("A salmon is a kind of", [" fish", " bird", " mammal", " flower"]),
    ("Paris is a city in", [" France", " Italy", " Spain", " Japan"]),
    ("Tokyo is a city in", [" Japan", " China", " France", " Brazil"]),
    ("A car has four", [" wheels", " wings", " legs", " eyes"]),
    ("Ice is frozen", [" water", " milk", " stone", " air"]),
    ("A week has seven", [" days", " months", " hours", " years"]),
    ("Cows drink", [" water", " oil", " sand", " glass"]),
    ("The colour of grass is", [" green", " red", " blue", " black"]),
]
DIFFERING_BOUND = 3
"""Of the 20 items above, at most this many may pick another candidate through the server
(Gemma 3 270M, Q4_K_M weights) than through transformers (the dequantised float32 weights):
measured 0 of 20 (mean |difference| 0.107 nats, largest 0.427 over the 80 pairs; docs/scale.md
section 7); the bound leaves room for other llama.cpp builds and CPUs."""


def test_server_against_the_local_transformers_path(gemma: tuple[str, Any, Path]) -> None:
    import torch

    from probes.backends.registry import load_scorer

    torch.set_num_threads(1)
    pairs = [(c, x) for c, xs in CHOICES for x in xs]
    served = load_scorer(f"server:{gemma[0]}").loglik(pairs)
    local = load_scorer("gemma3-270m", device="cpu", dtype="float32").loglik(pairs)
    diffs = [abs(a.logprob - b.logprob) for a, b in zip(served, local, strict=True)]
    assert all(a.n_tokens == b.n_tokens for a, b in zip(served, local, strict=True))
    differing = 0
    for i in range(len(CHOICES)):
        part = slice(4 * i, 4 * i + 4)
        pick_s = max(range(4), key=lambda j: served[part][j].logprob)
        pick_l = max(range(4), key=lambda j: local[part][j].logprob)
        differing += pick_s != pick_l
    print(f"server vs transformers: n={len(pairs)} max |diff| {max(diffs):.4f} mean "
          f"{sum(diffs) / len(diffs):.4f}; differing predictions {differing}/{len(CHOICES)}")
    assert differing <= DIFFERING_BOUND
    assert max(diffs) > 0  # quantised and dequantised computations are not the same numbers
