#!/usr/bin/env bash
# Create the peers' virtual environment for scripts/bench_peers.py.
#
# The peer tools (lm-evaluation-harness, minicons) are installed from PyPI into their
# own environment, outside the repository, so they never touch kgprobe's dependencies
# (the CPU torch venv of scripts/cpu_venv.sh). lm-eval's [api] extra (tenacity, aiohttp,
# tiktoken) is what its local-completions backend imports (scripts/bench_server.py).
#
#   scripts/setup_peers.sh                # venv at ~/.cache/kgprobe/peers-venv
#   KGPROBE_PEERS_VENV=/some/dir scripts/setup_peers.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cpu_venv.sh"

VENV="${KGPROBE_PEERS_VENV:-$HOME/.cache/kgprobe/peers-venv}"
LM_EVAL_VERSION="0.4.13"
MINICONS_VERSION="0.3.39"

cpu_venv "$VENV" peers

echo "installing lm-eval==$LM_EVAL_VERSION minicons==$MINICONS_VERSION"
"${PIP[@]}" install -c "$CONSTRAINTS" \
    "lm-eval[api]==$LM_EVAL_VERSION" \
    "minicons==$MINICONS_VERSION" \
    transformers safetensors accelerate

cpu_venv_ready "$VENV" peers torch transformers lm_eval minicons tenacity
