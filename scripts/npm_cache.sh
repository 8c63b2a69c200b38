# Sourced by the scripts that put pinned npm packages into a cache folder (node_clients.sh,
# provider_converters.sh, build_mcpb.sh): each fills a fresh folder beside the cache, then moves it into
# place, so a run that stops half way leaves no half cache and two runs at once cannot mix their files.
# Exit status 3: npm or its registry cannot be reached (the tests that need the cache then skip, saying
# why); 1: the install failed.

# cache_staging LABEL CACHE: a fresh folder beside CACHE (printed), removed when the script exits
# unless it was moved into place; npm must be on PATH.
cache_staging() {
  if ! command -v npm >/dev/null; then
    echo "$1: npm is not on PATH" >&2
    exit 3
  fi
  mkdir -p "$(dirname "$2")"
  mktemp -d "$2.partial.XXXXXX"
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
