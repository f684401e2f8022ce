#!/usr/bin/env bash
# The prepared GPU check (scripts/gpu_check.py), in one command on the GPU machine.
#
#   bash scripts/gpu_check.sh --prepare   # here, once: tokenizers and the wheels the GPU machine
#                                         # lacks (duckdb for kgprobe's imports, lm-eval) into
#                                         # .gpu_carry/ (git-ignored through .git/info/exclude)
#   bash scripts/gpu_check.sh [OPTIONS]   # there: installs the carried wheels into a temporary
#                                         # folder, runs the check, writes check.json/check.md
#                                         # into $OUT (or --out); any OPTIONS go to gpu_check.py
#
# With the device tool: run(command="bash scripts/gpu_check.sh", carry=[".gpu_carry"],
# timeout_s=540). The check stops its optional parts after --budget-s (default 420 s).
set -euo pipefail
cd "$(dirname "$0")/.."
CARRY=.gpu_carry
LM_EVAL_VERSION=0.4.13

if [[ "${1:-}" == "--prepare" ]]; then
    PY="${KGPROBE_VENV:-.venv}/bin/python"
    mkdir -p "$CARRY/wheels"
    grep -qxF "/$CARRY/" .git/info/exclude 2>/dev/null || echo "/$CARRY/" >> .git/info/exclude
    duckdb_version=$("$PY" -c "import duckdb; print(duckdb.__version__)")
    # the GPU machine's python is CPython 3.12 on x86-64 (see the device tool's KINDS.md)
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$CARRY/wheels" "duckdb==$duckdb_version"
    "$PY" -m pip download -q --no-deps -d "$CARRY/wheels" "lm_eval==$LM_EVAL_VERSION"
    "$PY" scripts/gpu_check.py --prepare "$CARRY/tokenizers"
    du -sh "$CARRY"
    exit 0
fi

PY=python3
if [ -d "$CARRY/wheels" ]; then
    site=$(mktemp -d -t kgprobe-site-XXXX)
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
        "$CARRY"/wheels/*.whl
    export PYTHONPATH="$site"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
tokenizers=()
[ -d "$CARRY/tokenizers" ] && tokenizers=(--tokenizers "$CARRY/tokenizers")
exec timeout 500 "$PY" scripts/gpu_check.py ${tokenizers[@]+"${tokenizers[@]}"} "$@"
