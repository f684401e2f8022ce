#!/usr/bin/env bash
# Set up (idempotent) and run the test suite and the linter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${KGPROBE_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$VENV/bin/ruff" check .
"$VENV/bin/python" -m pytest "$@"
