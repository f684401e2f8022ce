#!/usr/bin/env bash
# The main job on the embedded defaults, offline: set up, build the store from ../shared/data and
# WordNet, export the starter probes, score them with SmolLM2-135M (starter/wordnet-hypernyms is
# also asked: its header's formats generate the 200 words' answers, docs/generate.md), print the
# report; then a
# one-page knowledge profile of the same model on small, seeded, class-balanced samples of the
# four benchmarks (semantic relations beside humans, OntoLAMA, COPEN, BEAR), with one PNG.
set -euo pipefail
cd "$(dirname "$0")/.."
# the main job needs no inference server: llama.cpp is built only by the test set-up
KGPROBE_NO_SERVER="${KGPROBE_NO_SERVER:-1}" bash scripts/setup.sh
PY="${KGPROBE_VENV:-.venv}/bin/python"
MODEL="${KGPROBE_MODEL:-smollm2-135m}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$PY" -m kg.build
"$PY" -m probes.engine.export -p 'starter/*'
"$PY" -m probes.engine.run --model "$MODEL" --probe 'starter/*'
"$PY" -m eval.report --probe 'starter/*'

bash scripts/profile.sh "$MODEL"   # the knowledge profile (eval/profile.py): ~3.5 min
