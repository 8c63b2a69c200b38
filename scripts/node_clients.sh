#!/usr/bin/env bash
# The official TypeScript MCP client (@modelcontextprotocol/client, 2.x, which speaks 2026-07-28 beside
# 2025-06-18) and Node 22, pinned, from npm into a cache folder (no root, nothing global), for the
# interop tests (tests/interop). Prints the cache folder on stdout; under it, node_modules/node/bin/node
# is Node and node_modules/@modelcontextprotocol/client the client.
#
#   scripts/node_clients.sh        # NODE_CLIENTS_CACHE may override the cache folder
#
# Exit status 3 means npm or its registry cannot be reached (the tests then skip, saying so); any other
# failure is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENT_VERSION=2.4.0   # @modelcontextprotocol/client
NODE_VERSION=22.23.3   # the npm package `node`, as in scripts/conformance.sh
CACHE="${NODE_CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp/node-clients-$CLIENT_VERSION-node-$NODE_VERSION}"

NODE="$CACHE/node_modules/node/bin/node"
CLIENT="$CACHE/node_modules/@modelcontextprotocol/client/package.json"
if [ ! -x "$NODE" ] || [ ! -f "$CLIENT" ]; then
  if ! command -v npm >/dev/null; then
    echo "node_clients: npm is not on PATH" >&2
    exit 3
  fi
  echo "node_clients: installing node@$NODE_VERSION and @modelcontextprotocol/client@$CLIENT_VERSION into $CACHE" >&2
  # Into a fresh folder first, then renamed into place: a run that stops half way leaves no half cache,
  # and two runs at once cannot mix their files.
  mkdir -p "$(dirname "$CACHE")"
  STAGING="$(mktemp -d "$CACHE.partial.XXXXXX")"
  trap 'rm -rf "$STAGING"' EXIT
  if ! npm install --prefix "$STAGING" --no-audit --no-fund --loglevel=error \
      "node@$NODE_VERSION" "@modelcontextprotocol/client@$CLIENT_VERSION" >&2; then
    if ! npm ping >/dev/null 2>&1; then
      echo "node_clients: the npm registry cannot be reached" >&2
      exit 3
    fi
    echo "node_clients: npm install failed" >&2
    exit 1
  fi
  rm -rf "$CACHE"
  mv -T "$STAGING" "$CACHE" 2>/dev/null || true   # another run may have put its own in place meanwhile
fi
if [ "$("$NODE" --version)" != "v$NODE_VERSION" ]; then
  echo "node_clients: $NODE is not Node $NODE_VERSION (remove $CACHE and run again)" >&2
  exit 2
fi
if [ "$("$NODE" -p "require('$CLIENT').version")" != "$CLIENT_VERSION" ]; then
  echo "node_clients: $CLIENT is not version $CLIENT_VERSION (remove $CACHE and run again)" >&2
  exit 2
fi
echo "$CACHE"
