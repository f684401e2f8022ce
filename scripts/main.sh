#!/usr/bin/env bash
# The main job on the embedded defaults, offline: set up, build the store from ../shared/data and
# WordNet, export the starter probes, score them with SmolLM2-135M, print the report; then a
# one-page knowledge profile of the same model on small, seeded, class-balanced samples of the
# three benchmarks (semantic relations beside humans, OntoLAMA, COPEN), with one PNG.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY="${KGPROBE_VENV:-.venv}/bin/python"
MODEL="${KGPROBE_MODEL:-smollm2-135m}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$PY" -m kg.build
"$PY" -m probes.export -p 'starter/*'
"$PY" -m probes.run --model "$MODEL" --probe 'starter/*'
"$PY" -m eval.report --probe 'starter/*'

# The knowledge profile. Samples are deterministic: --limit takes the first N instances by
# instance id (a hash, so a fixed pseudo-random draw), the same N per relation; --sample takes
# N/2 instances of each gold class by MD5(instance id + "42").
RELATIONS=(-p semrel/hyp -p semrel/hpo -p semrel/hol -p semrel/mer -p semrel/ant -p semrel/syn)
"$PY" -m probes.export -p 'semrel/*'                        # relation probes, tuples, relata
"$PY" -m probes.semrel humans                               # the human ceiling (Cao et al.)
"$PY" -m probes.run --model "$MODEL" "${RELATIONS[@]}" --limit 40 --quiet
"$PY" -m probes.ontolama build -p ontolama/pizza-atomic --no-parquet
"$PY" -m probes.run --model "$MODEL" -p ontolama/pizza-atomic --split test --sample 60 --quiet
# COPEN: the released-format files in the repository (5 instances per task, from the KoLA
# samples of ../shared/data/copen; the released test labels are hidden, so train + dev count)
"$PY" -m probes.copen load tests/fixtures/copen/released \
  --taxonomy "${KGPROBE_DATA_DIR:-../shared/data}/copen/schema/father.txt"
"$PY" -m probes.copen zero-shot --model "$MODEL" --quiet
"$PY" -m eval.profile --model "$MODEL"
