#!/usr/bin/env bash
# Write requirements.lock again from pyproject.toml (run after changing a dependency there): every
# package of kgprobe and its dev extra at an exact version with its hashes, resolved for this
# platform and Python by pip-tools (pip-compile, which reads pip's own configuration, so it
# finds the local CPU build of torch the way scripts/setup.sh's pip does). torch stays at
# the CPU build pinned in scripts/lock-constraints.txt; everything else takes the newest release
# that pyproject.toml allows.
# scripts/setup.sh installs from the lock; tests/test_lock.py checks it against pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS="$(mktemp -d)"
trap 'rm -rf "$TOOLS"' EXIT
python3 -m venv "$TOOLS/venv"
"$TOOLS/venv/bin/pip" install -q --disable-pip-version-check "pip-tools==7.6.2"
# --allow-unsafe: setuptools and pip are pinned too when something needs them
export CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh"  # the header's "made by" line
"$TOOLS/venv/bin/pip-compile" -q --extra dev --generate-hashes --strip-extras --allow-unsafe \
  --no-emit-index-url --no-emit-find-links --constraint scripts/lock-constraints.txt \
  --output-file requirements.lock pyproject.toml
echo "wrote requirements.lock"
# The test server (llama-cpp-python[server], pyproject's server-test extra) and what it needs
# beyond requirements.lock, whose pins it keeps: scripts/setup.sh installs this lock with hashes
# and llama-cpp-python itself from a wheel built once from the hash-checked sdist.
python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))
  ["project"]["optional-dependencies"]["server-test"]))' > "$TOOLS/server.in"
"$TOOLS/venv/bin/pip-compile" -q --generate-hashes --strip-extras --allow-unsafe \
  --no-emit-index-url --no-emit-find-links --constraint requirements.lock \
  --output-file requirements-server.lock "$TOOLS/server.in"
sed -i "s|$TOOLS/server.in|pyproject.toml (server-test)|" requirements-server.lock
echo "wrote requirements-server.lock"
