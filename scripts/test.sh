#!/usr/bin/env bash
# Set up (idempotent), then run the linter, the type checker and the test suite.
#   bash scripts/test.sh          every test, the slow ones included (what CI runs)
#   bash scripts/test.sh --fast   skips the tests marked slow (pytest -m "not slow"): the
#                                 developer loop
# Any other argument goes to pytest, e.g. `bash scripts/test.sh --fast tests/test_store.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
pytest_args=()
for arg in "$@"; do
    if [[ "$arg" == "--fast" ]]; then
        select=(-m "not slow")
    else
        pytest_args+=("$arg")
    fi
done
bash scripts/setup.sh
VENV="${KGPROBE_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$VENV/bin/ruff" check .
"$VENV/bin/mypy"  # the files and settings are in pyproject.toml's [tool.mypy]
# -n auto --dist loadfile: one pytest-xdist worker per core, each test file whole on one worker
# (so a module's fixtures, e.g. a llama.cpp server, start once), the files with slow tests handed
# out first (tests/conftest.py, which also gives each worker its share of the cores); `-n 0`
# among the arguments runs in one process. --durations=25: every log lists the slowest tests.
"$VENV/bin/python" -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=25 \
    ${select[@]+"${select[@]}"} ${pytest_args[@]+"${pytest_args[@]}"}
