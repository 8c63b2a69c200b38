#!/usr/bin/env bash
# The model providers' schema converters and the MCP Inspector's schema portability check, pinned, into a
# cache folder (nothing in the project's venv, nothing global), for tests/test_provider_schemas.py:
#   - a Python venv with google-genai, openai-agents, langchain-openai, pydantic-ai-slim[mcp] and anthropic
#     (their dependencies clash with the project's test venv: mcp, pydantic, httpx versions);
#   - @modelcontextprotocol/inspector (its CLI's `--method tools/list --strict`) and Node 22, from npm.
# Prints the cache folder on stdout; under it, venv/bin/python is the converters' interpreter,
# node_modules/node/bin/node is Node and node_modules/@modelcontextprotocol/inspector the Inspector.
#
#   scripts/provider_converters.sh   # PROVIDER_CONVERTERS_CACHE may override the cache folder;
#                                    # PYTHON names the interpreter the venv is made from (python3)
#
# Exit status 3 means PyPI or npm cannot be reached (the tests then skip, saying so); any other failure
# is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON_PINS=(google-genai==3.6.1 openai-agents==0.24.0 langchain-core==1.8.3 langchain-openai==1.7.4
             "pydantic-ai-slim[mcp]==2.68.0" anthropic==2.10.0)
INSPECTOR_VERSION=2.12.0   # @modelcontextprotocol/inspector: the CLI's schema portability check
NODE_VERSION=22.23.3       # the npm package `node`, as in scripts/node_clients.sh (the Inspector needs >= 22.19)
PYTHON="${PYTHON:-python3}"
TAG="$(printf '%s\n' "${PYTHON_PINS[@]}" "$INSPECTOR_VERSION" "$NODE_VERSION" \
       "$("$PYTHON" -c 'import sys; print(sys.version_info[:2])')" | sha256sum | cut -c1-12)"
CACHE="${PROVIDER_CONVERTERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp/provider-converters-$TAG}"

if [ ! -f "$CACHE/complete" ]; then
  echo "provider_converters: installing ${PYTHON_PINS[*]}, @modelcontextprotocol/inspector@$INSPECTOR_VERSION" \
       "and node@$NODE_VERSION into $CACHE" >&2
  source scripts/npm_cache.sh
  STAGING="$(cache_staging provider_converters "$CACHE")"  # the venv is only run as venv/bin/python, so it may move
  trap 'rm -rf "$STAGING"' EXIT
  npm_into provider_converters "$STAGING" "node@$NODE_VERSION" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
  "$PYTHON" -m venv "$STAGING/venv"
  if ! "$STAGING/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PYTHON_PINS[@]}" >&2; then
    if ! "$STAGING/venv/bin/python" -m pip download --quiet --no-deps --dest "$STAGING/probe" \
        "google-genai==3.6.1" >/dev/null 2>&1; then
      echo "provider_converters: PyPI cannot be reached" >&2
      exit 3
    fi
    echo "provider_converters: pip install failed" >&2
    exit 1
  fi
  touch "$STAGING/complete"
  into_place "$STAGING" "$CACHE"
fi
if [ "$("$CACHE/node_modules/node/bin/node" --version)" != "v$NODE_VERSION" ]; then
  echo "provider_converters: $CACHE holds no Node $NODE_VERSION (remove it and run again)" >&2
  exit 2
fi
for pin in "${PYTHON_PINS[@]}"; do
  name="${pin%%==*}"; name="${name%%\[*}"
  if [ "$("$CACHE/venv/bin/python" -c "import importlib.metadata as m; print(m.version('$name'))")" != "${pin##*==}" ]; then
    echo "provider_converters: $CACHE holds no $pin (remove it and run again)" >&2
    exit 2
  fi
done
echo "$CACHE"
