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

source scripts/npm_cache.sh
node_and_package node_clients "$CACHE" "$NODE_VERSION" @modelcontextprotocol/client "$CLIENT_VERSION"
echo "$CACHE"
