#!/usr/bin/env bash
# The main job on the embedded defaults, offline: set up, build the store from ../shared/data and
# WordNet, export the starter probes, score them with SmolLM2-135M, print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY="${KGPROBE_VENV:-.venv}/bin/python"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$PY" -m kg.build
"$PY" -m probes.export -p 'starter/*'
"$PY" -m probes.run --model smollm2-135m --probe 'starter/*'
"$PY" -m eval.report --probe 'starter/*'
