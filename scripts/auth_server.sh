#!/usr/bin/env bash
# A real, independently written OAuth 2.1 authorization server for the auth tests
# (tests/transports/http/test_oauth.py): the certified `oidc-provider` from npm and Node 22, pinned, into a
# cache folder (no root, nothing global). tests/auth/oidc_provider.mjs runs it. Prints the cache folder on
# stdout; under it, node_modules/node/bin/node is Node and node_modules/oidc-provider the server.
#
#   scripts/auth_server.sh        # AUTH_SERVER_CACHE may override the cache folder
#
# Exit status 3 means npm or its registry cannot be reached (the tests then skip, saying so); any other
# failure is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

PROVIDER_VERSION=9.13.3   # oidc-provider
NODE_VERSION=22.23.3      # the npm package `node`, as in scripts/node_clients.sh
CACHE="${AUTH_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp/oidc-provider-$PROVIDER_VERSION-node-$NODE_VERSION}"

source scripts/npm_cache.sh
node_and_package auth_server "$CACHE" "$NODE_VERSION" oidc-provider "$PROVIDER_VERSION"
echo "$CACHE"
