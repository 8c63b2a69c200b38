#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios of spec
# 2025-06-18) against examples/conformance_server.py, served by our own Streamable HTTP transport on
# 127.0.0.1. Node 22 (the suite does not load on Node 20) and the suite come from npm, pinned, into a
# cache folder: no root, nothing global. Exits non-zero unless every one of the 26 scenarios passes.
#
#   scripts/conformance.sh              # CONFORMANCE_CACHE, PYTHON and CONFORMANCE_PORT may override the defaults
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION=0.1.16   # @modelcontextprotocol/conformance
NODE_VERSION=22.23.3   # the npm package `node`, which brings a Node binary of that version
SCENARIOS=26           # what SUITE_VERSION runs for --spec-version 2025-06-18
CACHE="${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp/conformance-$SUITE_VERSION-node-$NODE_VERSION}"
PYTHON="${PYTHON:-.venv/bin/python}"

NODE_BIN="$CACHE/node_modules/node/bin"
SUITE="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
source scripts/npm_cache.sh  # staged beside the cache and moved into place: a killed install leaves no half cache
node_and_package conformance "$CACHE" "$NODE_VERSION" @modelcontextprotocol/conformance "$SUITE_VERSION"

PORT="${CONFORMANCE_PORT:-$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
"$PYTHON" examples/conformance_server.py --port "$PORT" &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true' EXIT
"$PYTHON" - "$PORT" "$SERVER_PID" <<'EOF'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit("conformance: the example server exited before it listened")
        time.sleep(0.1)
sys.exit("conformance: the example server did not listen within 30 s")
EOF

OUTPUT="$(mktemp)"
status=0
PATH="$NODE_BIN:$PATH" "$NODE_BIN/node" "$SUITE" server --url "http://127.0.0.1:$PORT/mcp" --spec-version 2025-06-18 \
  | tee "$OUTPUT" || status=$?
passed_scenarios="$(grep -c "^✓ " "$OUTPUT" || true)"
if [ "$status" -ne 0 ] || [ "$passed_scenarios" -ne "$SCENARIOS" ] || ! grep -q "^Total: $SCENARIOS passed, 0 failed" "$OUTPUT"; then
  echo "conformance: FAILED ($passed_scenarios of $SCENARIOS scenarios passed)" >&2
  rm -f "$OUTPUT"
  exit 1
fi
rm -f "$OUTPUT"
