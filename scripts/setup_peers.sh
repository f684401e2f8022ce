#!/usr/bin/env bash
# Create the peers' virtual environment for scripts/bench_peers.py.
#
# The peer tools (lm-evaluation-harness, minicons) are installed from PyPI into their
# own environment, outside the repository, so they never touch kgprobe's dependencies.
# lm-eval's [api] extra (tenacity, aiohttp, tiktoken) is what its local-completions backend
# imports (scripts/bench_server.py).
#
#   scripts/setup_peers.sh                # venv at ~/.cache/kgprobe/peers-venv
#   KGPROBE_PEERS_VENV=/some/dir scripts/setup_peers.sh
#
# torch is pinned to 2.13.0: on this machine that resolves to the local CPU wheel
# (pip's find-links); any other version would pull the multi-gigabyte CUDA build.
set -euo pipefail

VENV="${KGPROBE_PEERS_VENV:-$HOME/.cache/kgprobe/peers-venv}"
PYTHON="${PYTHON:-python3.11}"
TORCH_VERSION="2.13.0"
LM_EVAL_VERSION="0.4.13"
MINICONS_VERSION="0.3.39"

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating peers venv at $VENV (python: $PYTHON)"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi

PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install --quiet --upgrade pip

# A constraints file keeps every later resolution on the same CPU torch.
CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
echo "torch==$TORCH_VERSION" > "$CONSTRAINTS"

echo "installing torch==$TORCH_VERSION (CPU wheel)"
"${PIP[@]}" install "torch==$TORCH_VERSION"

echo "installing lm-eval==$LM_EVAL_VERSION minicons==$MINICONS_VERSION"
"${PIP[@]}" install -c "$CONSTRAINTS" \
    "lm-eval[api]==$LM_EVAL_VERSION" \
    "minicons==$MINICONS_VERSION" \
    transformers safetensors accelerate

"$VENV/bin/python" - <<'PY'
import importlib.metadata as md

import torch

for name in ("torch", "transformers", "lm_eval", "minicons", "tenacity"):
    print(f"{name:14s} {md.version(name.replace('_', '-'))}")
if torch.version.cuda is not None:
    raise SystemExit("peers venv has a CUDA torch build; expected the CPU wheel")
PY
echo "peers venv ready: $VENV"
