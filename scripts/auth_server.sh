#!/usr/bin/env bash
# A real, independently written OAuth 2.1 authorization server for the auth tests
# (tests/transports/test_http_oauth.py): the certified `oidc-provider` from npm and Node 22, pinned, into a
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

NODE="$CACHE/node_modules/node/bin/node"
PROVIDER="$CACHE/node_modules/oidc-provider/package.json"
if [ ! -x "$NODE" ] || [ ! -f "$PROVIDER" ]; then
  source scripts/npm_cache.sh
  echo "auth_server: installing node@$NODE_VERSION and oidc-provider@$PROVIDER_VERSION into $CACHE" >&2
  STAGING="$(cache_staging auth_server "$CACHE")"
  trap 'rm -rf "$STAGING"' EXIT
  npm_into auth_server "$STAGING" "node@$NODE_VERSION" "oidc-provider@$PROVIDER_VERSION"
  into_place "$STAGING" "$CACHE"
fi
if [ "$("$NODE" --version)" != "v$NODE_VERSION" ]; then
  echo "auth_server: $NODE is not Node $NODE_VERSION (remove $CACHE and run again)" >&2
  exit 2
fi
if [ "$("$NODE" -p "require('$PROVIDER').version")" != "$PROVIDER_VERSION" ]; then
  echo "auth_server: $PROVIDER is not version $PROVIDER_VERSION (remove $CACHE and run again)" >&2
  exit 2
fi
echo "$CACHE"
