# A virtual environment of its own, outside the repository, on the CPU torch wheel: what
# scripts/setup_peers.sh (lm-evaluation-harness, minicons) and scripts/setup_lmpq.sh
# (lm-pub-quiz) share. Sourced by them, not run.
#
# torch is pinned to 2.13.0: on this machine that resolves to the local CPU wheel
# (pip's find-links); any other version would pull the multi-gigabyte CUDA build.

TORCH_VERSION="2.13.0"
PYTHON="${PYTHON:-python3.11}"  # the Python a new venv is made with

# cpu_venv VENV WHAT [CONSTRAINT...]: create VENV with $PYTHON unless it exists (WHAT names
# the venv in messages), upgrade its pip, write the constraints file $CONSTRAINTS (torch ==
# $TORCH_VERSION, then each CONSTRAINT; removed on exit) and install that torch. Sets PIP.
cpu_venv() {
    local venv="$1" what="$2"
    shift 2
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $what venv at $venv (python: $PYTHON)"
        mkdir -p "$(dirname "$venv")"
        "$PYTHON" -m venv "$venv"
    fi

    PIP=("$venv/bin/python" -m pip)
    "${PIP[@]}" install --quiet --upgrade pip

    # A constraints file keeps every later resolution on the same CPU torch.
    CONSTRAINTS="$(mktemp)"
    trap 'rm -f "$CONSTRAINTS"' EXIT
    printf "%s\n" "torch==$TORCH_VERSION" "$@" > "$CONSTRAINTS"

    echo "installing torch==$TORCH_VERSION (CPU wheel)"
    "${PIP[@]}" install "torch==$TORCH_VERSION"
}

# cpu_venv_ready VENV WHAT DIST...: print each distribution's version (a '_' in its name read
# as '-'), fail when the venv's torch is a CUDA build, else say the venv is ready.
cpu_venv_ready() {
    local venv="$1" what="$2"
    shift 2
    "$venv/bin/python" - "$what" "$@" <<'PY'
import importlib.metadata as md
import sys

import torch

what, names = sys.argv[1], sys.argv[2:]
for name in names:
    print(f"{name:14s} {md.version(name.replace('_', '-'))}")
if torch.version.cuda is not None:
    raise SystemExit(f"{what} venv has a CUDA torch build; expected the CPU wheel")
PY
    echo "$what venv ready: $venv"
}
