#!/usr/bin/env bash
# Create lm-pub-quiz's own virtual environment for scripts/bench_bear.py.
#
# lm-pub-quiz (BEAR's reference implementation) is installed from PyPI into its own
# environment, outside the repository, so it never touches kgprobe's dependencies.
#
#   scripts/setup_lmpq.sh                # venv at ~/.cache/kgprobe/lmpq-venv
#   KGPROBE_LMPQ_VENV=/some/dir scripts/setup_lmpq.sh
#
# torch is pinned to 2.13.0: on this machine that resolves to the local CPU wheel
# (pip's find-links); any other version would pull the multi-gigabyte CUDA build.
set -euo pipefail

VENV="${KGPROBE_LMPQ_VENV:-$HOME/.cache/kgprobe/lmpq-venv}"
PYTHON="${PYTHON:-python3.11}"
TORCH_VERSION="2.13.0"
LMPQ_VERSION="0.3.3"
# the transformers of kgprobe's requirements.lock: both tools tokenise with the same code
TRANSFORMERS_VERSION="5.24.0"

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating lm-pub-quiz venv at $VENV (python: $PYTHON)"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi

PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install --quiet --upgrade pip

# A constraints file keeps every later resolution on the same CPU torch.
CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
printf "torch==%s\ntransformers==%s\n" "$TORCH_VERSION" "$TRANSFORMERS_VERSION" > "$CONSTRAINTS"

echo "installing torch==$TORCH_VERSION (CPU wheel)"
"${PIP[@]}" install "torch==$TORCH_VERSION"

echo "installing lm-pub-quiz==$LMPQ_VERSION"
# requests: lm_pub_quiz.data.util imports it but 0.3.3 does not declare it
"${PIP[@]}" install -c "$CONSTRAINTS" "lm-pub-quiz==$LMPQ_VERSION" transformers safetensors requests

"$VENV/bin/python" - <<'PY'
import importlib.metadata as md

import torch

for name in ("torch", "transformers", "lm-pub-quiz"):
    print(f"{name:14s} {md.version(name)}")
if torch.version.cuda is not None:
    raise SystemExit("lm-pub-quiz venv has a CUDA torch build; expected the CPU wheel")
PY
echo "lm-pub-quiz venv ready: $VENV"
