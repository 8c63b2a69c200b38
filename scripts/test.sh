#!/usr/bin/env bash
# The project's one test command: sets up .venv if needed, then lint, types and the whole test suite.
# Extra arguments go to pytest (e.g. `scripts/test.sh tests/test_session.py -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test,watch,http]"
.venv/bin/ruff check src tests bench examples
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
