# Sourced by the scripts that put pinned npm packages into a cache folder (node_clients.sh, auth_server.sh,
# provider_converters.sh, build_mcpb.sh): each fills a fresh folder beside the cache, then moves it into
# place, so a run that stops half way leaves no half cache and two runs at once cannot mix their files.
# Exit status 3: npm or its registry cannot be reached (the tests that need the cache then skip, saying
# why); 1: the install failed.

trap 'exit 143' TERM  # a TERM or INT (what `timeout` or a test's clean-up sends) runs the EXIT trap too
trap 'exit 130' INT

# cache_staging LABEL CACHE: a fresh folder beside CACHE (printed), CACHE.partial.PID.XXXXXX, removed when
# the script exits unless it was moved into place (the caller's EXIT trap); npm must be on PATH. One left
# by a script killed without its trap (SIGKILL) is removed by the next run: its PID runs nothing now.
cache_staging() {
  if ! command -v npm >/dev/null; then
    echo "$1: npm is not on PATH" >&2
    exit 3
  fi
  mkdir -p "$(dirname "$2")"
  local stale pid
  for stale in "$2".partial.*; do
    [ -e "$stale" ] || continue
    pid="${stale#"$2.partial."}"; pid="${pid%%.*}"
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null; then
      echo "$1: removing $stale, left by a run that was killed" >&2
      rm -rf "$stale"
    fi
  done
  mktemp -d "$2.partial.$$.XXXXXX"
}

# npm_into LABEL STAGING PACKAGE...: npm install the packages into STAGING.
npm_into() {
  local label="$1" staging="$2"
  shift 2
  if ! npm install --prefix "$staging" --no-audit --no-fund --loglevel=error "$@" >&2; then
    if ! npm ping >/dev/null 2>&1; then
      echo "$label: the npm registry cannot be reached" >&2
      exit 3
    fi
    echo "$label: npm install failed" >&2
    exit 1
  fi
}

# into_place STAGING CACHE: the filled folder becomes the cache (another run may have put its own in
# place meanwhile: then that one stays).
into_place() {
  rm -rf "$2"
  mv -T "$1" "$2" 2>/dev/null || true
}

# node_and_package LABEL CACHE NODE_VERSION PACKAGE VERSION: Node (the npm package `node`) and
# PACKAGE@VERSION in CACHE, installed there the first time; exit status 2 when what is there is not
# those versions (auth_server.sh, node_clients.sh).
node_and_package() {
  local label="$1" cache="$2" node_version="$3" package="$4" version="$5"
  local node="$cache/node_modules/node/bin/node" manifest="$cache/node_modules/$package/package.json"
  if [ ! -x "$node" ] || [ ! -f "$manifest" ]; then
    echo "$label: installing node@$node_version and $package@$version into $cache" >&2
    STAGING="$(cache_staging "$label" "$cache")"  # global: the trap runs after this function returns
    trap 'rm -rf "$STAGING"' EXIT
    npm_into "$label" "$STAGING" "node@$node_version" "$package@$version"
    into_place "$STAGING" "$cache"
  fi
  if [ "$("$node" --version)" != "v$node_version" ]; then
    echo "$label: $node is not Node $node_version (remove $cache and run again)" >&2
    exit 2
  fi
  if [ "$("$node" -p "require('$manifest').version")" != "$version" ]; then
    echo "$label: $manifest is not version $version (remove $cache and run again)" >&2
    exit 2
  fi
}
