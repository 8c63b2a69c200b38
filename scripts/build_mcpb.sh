#!/usr/bin/env bash
# The Claude Desktop extension bundle (MCPB): stages mcpb/manifest.json, mcpb/server/main.py, the package's
# pyproject.toml, README.md and src/shipcode_mcp in a temporary folder, checks the manifest's version is
# shipcode_mcp.__version__, validates it and packs it with the official CLI (@anthropic-ai/mcpb, pinned,
# from npm into a cache folder like scripts/conformance.sh: no root, nothing global). The bundle is of
# server type "uv": the host installs the dependencies from pyproject.toml with uv, so it holds no
# compiled code and serves every platform the package does.
#
#   scripts/build_mcpb.sh [OUTPUT.mcpb]    # default dist/shipcode-mcp-VERSION.mcpb; MCPB_CACHE may override
#
# Signed: with MCPB_SIGN_CERT and MCPB_SIGN_KEY (PEM files: a code-signing certificate and its key; and
# MCPB_SIGN_INTERMEDIATE, the chain's intermediate certificates, if any) the bundle is signed by `mcpb sign`
# (a PKCS#7 signature of the whole archive, appended), which Claude Desktop checks against the system's trust.
#
# It needs node and npm, nothing of Python: the two versions are read by node, so a fresh clone without
# .venv builds the bundle too.
#
# Prints the bundle's path on stdout. Exit status 3 means npm or its registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

MCPB_VERSION=2.1.2   # @anthropic-ai/mcpb
CACHE="${MCPB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp/mcpb-$MCPB_VERSION}"
CLI="$CACHE/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"

if [ ! -f "$CLI" ]; then
  source scripts/npm_cache.sh
  echo "build_mcpb: installing @anthropic-ai/mcpb@$MCPB_VERSION into $CACHE" >&2
  STAGING_CACHE="$(cache_staging build_mcpb "$CACHE")"
  trap 'rm -rf "$STAGING_CACHE"' EXIT
  npm_into build_mcpb "$STAGING_CACHE" "@anthropic-ai/mcpb@$MCPB_VERSION"
  into_place "$STAGING_CACHE" "$CACHE"
  trap - EXIT
fi
mcpb() { node "$CLI" "$@"; }
if [ "$(mcpb --version)" != "$MCPB_VERSION" ]; then
  echo "build_mcpb: $CLI is not version $MCPB_VERSION (remove $CACHE and run again)" >&2
  exit 2
fi

VERSION="$(node -p 'require("fs").readFileSync("src/shipcode_mcp/__init__.py", "utf8").match(/^__version__ = "(.+)"$/m)[1]')"
MANIFEST_VERSION="$(node -p 'require("./mcpb/manifest.json").version')"
if [ "$MANIFEST_VERSION" != "$VERSION" ]; then
  echo "build_mcpb: mcpb/manifest.json says version $MANIFEST_VERSION, the package is $VERSION" >&2
  exit 1
fi
OUTPUT="${1:-dist/shipcode-mcp-$VERSION.mcpb}"
mkdir -p "$(dirname "$OUTPUT")"
OUTPUT="$(cd "$(dirname "$OUTPUT")" && pwd)/$(basename "$OUTPUT")"

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
cp mcpb/manifest.json pyproject.toml README.md "$STAGE/"
mkdir -p "$STAGE/server" "$STAGE/src"
cp mcpb/server/main.py "$STAGE/server/"
cp -R src/shipcode_mcp "$STAGE/src/"
find "$STAGE" \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +
find "$STAGE" -name '*.py[co]' -delete

mcpb validate "$STAGE/manifest.json" >&2
rm -f "$OUTPUT"
mcpb pack "$STAGE" "$OUTPUT" >&2
if [ -n "${MCPB_SIGN_CERT:-}" ] || [ -n "${MCPB_SIGN_KEY:-}" ]; then
  if [ -z "${MCPB_SIGN_CERT:-}" ] || [ -z "${MCPB_SIGN_KEY:-}" ]; then
    echo "build_mcpb: signing needs both MCPB_SIGN_CERT and MCPB_SIGN_KEY" >&2
    exit 2
  fi
  # shellcheck disable=SC2086  # the intermediates are a list of paths
  mcpb sign --cert "$MCPB_SIGN_CERT" --key "$MCPB_SIGN_KEY" ${MCPB_SIGN_INTERMEDIATE:+--intermediate $MCPB_SIGN_INTERMEDIATE} \
    "$OUTPUT" >&2
fi
echo "$OUTPUT"
