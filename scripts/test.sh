#!/usr/bin/env bash
# The project's one test command: sets up .venv if needed, then lint, types, the official MCP
# conformance suite over our Streamable HTTP transport, and the whole pytest suite.
# Extra arguments go to pytest (e.g. `scripts/test.sh tests/test_session.py -x`);
# SKIP_CONFORMANCE=1 skips the conformance run (it needs npm and the npm registry the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test,watch,http]"
.venv/bin/ruff check src tests bench examples
.venv/bin/mypy
if [ "${SKIP_CONFORMANCE:-0}" != 1 ]; then
  scripts/conformance.sh
fi
.venv/bin/python -m pytest "$@"
