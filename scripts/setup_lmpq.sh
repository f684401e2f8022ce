#!/usr/bin/env bash
# Create lm-pub-quiz's own virtual environment for scripts/bench_bear.py.
#
# lm-pub-quiz (BEAR's reference implementation) is installed from PyPI into its own
# environment, outside the repository, so it never touches kgprobe's dependencies (the CPU
# torch venv of scripts/cpu_venv.sh).
#
#   scripts/setup_lmpq.sh                # venv at ~/.cache/kgprobe/lmpq-venv
#   KGPROBE_LMPQ_VENV=/some/dir scripts/setup_lmpq.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cpu_venv.sh"

VENV="${KGPROBE_LMPQ_VENV:-$HOME/.cache/kgprobe/lmpq-venv}"
LMPQ_VERSION="0.3.3"
# the transformers of kgprobe's requirements.lock: both tools tokenise with the same code
TRANSFORMERS_VERSION="5.24.0"

cpu_venv "$VENV" lm-pub-quiz "transformers==$TRANSFORMERS_VERSION"

echo "installing lm-pub-quiz==$LMPQ_VERSION"
# requests: lm_pub_quiz.data.util imports it but 0.3.3 does not declare it
"${PIP[@]}" install -c "$CONSTRAINTS" "lm-pub-quiz==$LMPQ_VERSION" transformers safetensors requests

cpu_venv_ready "$VENV" lm-pub-quiz torch transformers lm-pub-quiz
