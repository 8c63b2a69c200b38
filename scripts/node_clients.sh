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
  source scripts/npm_cache.sh
  echo "node_clients: installing node@$NODE_VERSION and @modelcontextprotocol/client@$CLIENT_VERSION into $CACHE" >&2
  STAGING="$(cache_staging node_clients "$CACHE")"
  trap 'rm -rf "$STAGING"' EXIT
  npm_into node_clients "$STAGING" "node@$NODE_VERSION" "@modelcontextprotocol/client@$CLIENT_VERSION"
  into_place "$STAGING" "$CACHE"
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
