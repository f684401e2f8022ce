#!/usr/bin/env bash
# The knowledge profile of one model (default smollm2-135m), the end of scripts/main.sh: small,
# seeded, class-balanced samples of the four benchmarks (BEAR: one instance per relation)
# scored into the results file, then
# `python -m eval.profile` (one page: key measures with n and 95 % intervals beside chance and the
# human ceiling, and profile.png). Needs a built store (`python -m kg.build`: its derived semrel
# graphs included). KGPROBE_THREADS=N passes --threads N to the model runs. Measured with one thread
# on a shared 2-core machine, a fresh results file: about 3 min 25 s wall, 2 min 35 s CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${KGPROBE_VENV:-.venv}/bin/python"
MODEL="${1:-smollm2-135m}"
THREADS=(); [ -n "${KGPROBE_THREADS:-}" ] && THREADS=(--threads "$KGPROBE_THREADS")
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# The model runs below are --quiet (no bars); each step says on stderr what it starts, and the
# seconds since the profile began, and a --quiet run prints how far it is every minute after its
# first 30 s (probes/engine/runner/probe.py), so the minutes of a loaded machine are never silent.
STEPS=10; STEP=0; START=$SECONDS
step() { STEP=$((STEP + 1)); echo "profile: step $STEP of $STEPS ($((SECONDS - START)) s): $*" >&2; }

# Samples are deterministic: --limit takes the first N instances by instance id (a hash, so a
# fixed pseudo-random draw), the same N for each of the six relations; --sample takes N/2
# instances of each gold class, ordered by MD5(instance id + "42").
RELATIONS=(-p semrel/hyp -p semrel/hpo -p semrel/hol -p semrel/mer -p semrel/ant -p semrel/syn)
step "export the semantic-relation probes"
"$PY" -m probes.engine.export -p 'semrel/*'                        # relation probes, tuples, relata
step "load the human responses (Cao et al.)"
"$PY" -m probes.benchmarks.semrel humans                               # the human ceiling (Cao et al.)
step "score 40 words of each of the six relations with $MODEL"
"$PY" -m probes.engine.run --model "$MODEL" "${RELATIONS[@]}" --limit 40 --quiet "${THREADS[@]}"
ONTOLOGIES=(-p ontolama/pizza-atomic -p ontolama/schemaorg-atomic)
step "build the OntoLAMA Pizza and Schema.org atomic datasets"
"$PY" -m probes.benchmarks.ontolama build "${ONTOLOGIES[@]}" --no-parquet
# Pizza's test split holds 94 instances, 47 per class: --sample 100 takes all of them;
# Schema.org's 2,830: 50 of each class
step "score the OntoLAMA samples (Pizza 94, Schema.org 100 instances)"
"$PY" -m probes.engine.run --model "$MODEL" "${ONTOLOGIES[@]}" --split test --sample 100 --quiet \
  "${THREADS[@]}"
# COPEN: the released-format files in the repository (5 instances per task, built from the KoLA
# samples of ../shared/data/copen; the released test labels are hidden: train + dev count)
step "load COPEN's released-format sample"
"$PY" -m probes.benchmarks.copen load tests/fixtures/copen/released \
  --taxonomy "${KGPROBE_DATA_DIR:-../shared/data}/copen/schema/father.txt"
step "score COPEN zero-shot (every text part)"
"$PY" -m probes.benchmarks.copen zero-shot --model "$MODEL" --quiet "${THREADS[@]}"
# BEAR (relational knowledge): one seeded instance per relation under its first template,
# against the relation's whole answer space (bear/bear-sample: 60 instances, 1,902 statements)
step "export the BEAR sample (60 instances)"
"$PY" -m probes.engine.export -p bear/bear-sample
step "score the BEAR sample (1,902 statements)"
"$PY" -m probes.engine.run --model "$MODEL" -p bear/bear-sample --quiet "${THREADS[@]}"
step "the profile: metrics, table and profile.png"
"$PY" -m eval.profile --model "$MODEL"
echo "profile: done in $((SECONDS - START)) s" >&2
