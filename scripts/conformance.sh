#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) over our Streamable HTTP transport
# on 127.0.0.1, in both eras, two pinned releases: 0.1.16 (the line this began with) and 0.2.0-alpha.12
# (the newest line, the first to know MCP 2026-07-28). Five runs, each of which must pass exactly its pinned
# number of scenarios:
#
#   suite           scenarios                                server                             must pass
#   0.1.16          --spec-version 2025-06-18                examples/conformance_server.py     all 26
#   0.2.0-alpha.12  --spec-version 2025-06-18                examples/conformance_server.py     all 27
#   0.2.0-alpha.12  --requirements 2026-07-28                examples/conformance_server.py     all 37 required,
#                                                                                               3 pending, 10 tasks
#   0.2.0-alpha.12  --spec-version 2025-06-18, one by one    shipcode-mcp --http, a tmp folder  5 (REAL_2025)
#   0.2.0-alpha.12  --spec-version 2026-07-28, one by one    shipcode-mcp --http, a tmp folder  7 (REAL_2026)
#   0.2.0-alpha.12  the Skills extension's server scenarios  shipcode-mcp --http --skills,      3 (SKILLS)
#                   (--force: extensions are on no timeline)   a tmp folder holding a skill
#
# `--requirements 2026-07-28` runs the set the suite froze as what that revision requires (37 server
# scenarios, at the 2026-07-28 wire), and beside it, never scored, 3 "pending" scenarios and the 10 of the
# tasks extension (SEP-2663), which we pass too, and must (the example has their fixtures: greet, slow_compute,
# failing_job, protocol_error_job, confirm_delete, multi_input, test_tool_with_task).
# Its exit status fails only on a required scenario; a --spec-version run's fails on any. The example
# server, written with the public API alone, has every fixture those scenarios call; the real server is
# run only on the scenarios that need none (the others call fixture tools and prompts it rightly lacks).
#
# Node 22 (the suite does not load on Node 20) and each suite come from npm, pinned, into a cache folder
# per suite version under ~/.cache/shipcode-mcp/ (XDG_CACHE_HOME): no root, nothing global. Each run's
# time is printed; the whole script takes about 10 s once cached, half a minute cold (both installs).
#
#   scripts/conformance.sh    # CONFORMANCE_CACHE (the folder of the caches), PYTHON, SHIPCODE_MCP and
#                             # CONFORMANCE_PORT (the example server's) may override the defaults
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=22.23.3   # the npm package `node`, which brings a Node binary of that version
FIRST=0.1.16           # @modelcontextprotocol/conformance, the first line
NEWEST=0.2.0-alpha.12  # @modelcontextprotocol/conformance, the newest line
# What each run must pass, exactly (a scenario passes when none of its checks fails):
FIRST_2025=26          # FIRST, --spec-version 2025-06-18, the example server: every scenario it runs
NEWEST_2025=27         # NEWEST, --spec-version 2025-06-18, the example server: every scenario it runs
NEWEST_2026=37         # NEWEST, --requirements 2026-07-28, the example server: every required scenario
NEWEST_2026_PENDING=3  # ... and the pending ones it runs unscored (json-schema-2020-12, http-*-validation)
NEWEST_2026_TASKS=10   # ... and the tasks extension's, also unscored (tasks-status-notifications checks nothing yet)
# The scenarios the real server is run on, one by one: those that need no fixture of the example's.
REAL_2025=(server-initialize server-session-lifecycle ping tools-list resources-list)
REAL_2026=(tools-list resources-list sep-2164-resource-not-found dns-rebinding-protection server-sse-multiple-streams
           input-required-result-unsupported-methods http-header-validation)
# The Skills extension's server scenarios (SEP-2640), against shipcode-mcp --skills. (skills-manifest warns twice:
# it takes the first resource whose URI ends in SKILL.md, here the skill's file:// resource, for the skill's own.)
SKILLS=(sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory)

CACHES="${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shipcode-mcp}"
PYTHON="${PYTHON:-.venv/bin/python}"
SHIPCODE_MCP="${SHIPCODE_MCP:-$(dirname "$PYTHON")/shipcode-mcp}"
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%01d s' $((ms / 1000)) $((ms % 1000 / 100)); }
script_start=$(now_ms)

source scripts/npm_cache.sh  # staged beside each cache and moved into place: a killed install leaves no half cache
cache_of() { echo "$CACHES/conformance-$1-node-$NODE_VERSION"; }
for version in "$FIRST" "$NEWEST"; do
  start=$(now_ms)
  node_and_package conformance "$(cache_of "$version")" "$NODE_VERSION" @modelcontextprotocol/conformance "$version"
  echo "conformance: $version ready ($(seconds_since "$start"))"
done

free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
WORK="$(mktemp -d)"
PIDS=()
# shellcheck disable=SC2317  # run by the trap
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
show_logs() { echo "--- example server's stderr:"; cat "$WORK/example.log"; echo "--- shipcode-mcp's stderr:"; cat "$WORK/real.log"; }

# The two servers, started together: the example, and the real one serving a small folder of its own.
EXAMPLE_PORT="${CONFORMANCE_PORT:-$(free_port)}"
REAL_PORT="$(free_port)"
SKILLS_PORT="$(free_port)"
mkdir "$WORK/root" && printf '# demo\n' >"$WORK/root/README.md" && printf 'x = 1\n' >"$WORK/root/main.py"
mkdir -p "$WORK/skilled/.claude/skills/review/references"
printf -- '---\nname: review\ndescription: Review a change as this team does.\n---\n# Review\n' \
  >"$WORK/skilled/.claude/skills/review/SKILL.md"
printf -- '- tests\n' >"$WORK/skilled/.claude/skills/review/references/CHECKLIST.md"
"$PYTHON" examples/conformance_server.py --port "$EXAMPLE_PORT" 2>"$WORK/example.log" &
PIDS+=($!)
"$SHIPCODE_MCP" --http "127.0.0.1:$REAL_PORT" "$WORK/root" 2>"$WORK/real.log" &
PIDS+=($!)
"$SHIPCODE_MCP" --http "127.0.0.1:$SKILLS_PORT" --skills "$WORK/skilled" 2>>"$WORK/real.log" &
PIDS+=($!)
"$PYTHON" - "$EXAMPLE_PORT" "${PIDS[0]}" "$REAL_PORT" "${PIDS[1]}" "$SKILLS_PORT" "${PIDS[2]}" <<'EOF' || { show_logs; exit 1; }
import os, socket, sys, time
deadline = time.monotonic() + 30
for port, pid in zip(map(int, sys.argv[1::2]), map(int, sys.argv[2::2])):
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            try:
                os.kill(pid, 0)
            except OSError:
                sys.exit(f"conformance: the server on port {port} exited before it listened")
            if time.monotonic() > deadline:
                sys.exit(f"conformance: the server on port {port} did not listen within 30 s")
            time.sleep(0.1)
EOF

suite() {  # VERSION, then the arguments of `conformance server`
  local node_bin
  node_bin="$(cache_of "$1")/node_modules/node/bin"
  PATH="$node_bin:$PATH" "$node_bin/node" "$(cache_of "$1")/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    server "${@:2}"
}
failed=0
summary=()

# run_example VERSION EXPECTED EXPECTED_PENDING ARGS...: one run of the suite against the example server. Its
# summary lists each scenario (`✓ NAME: ...` or `✗ NAME: ...`), then, for a requirement set, the scenarios run
# but not scored (`  ✓ NAME (pending)`): those are left out of the count of required ones.
run_example() {
  local version="$1" expected="$2" expected_pending="$3" expected_extension="$4" start status=0 counts passed total pending
  local extension
  shift 4
  echo; echo "### $version $* against examples/conformance_server.py"
  start=$(now_ms)
  suite "$version" --url "http://127.0.0.1:$EXAMPLE_PORT/mcp" "$@" >"$WORK/out" 2>&1 || status=$?
  read -r passed total pending extension < <(awk '
    /^  (✓|✗) [^ ]+ \([a-z-]+\)$/ { unscored[$2] = 1; if ($1 == "✓" && $3 == "(pending)") pending++
                                     if ($1 == "✓" && $3 == "(extension)") extension++; next }
    /^(✓|✗) [^ ]+: / { name = $2; sub(/:$/, "", name); verdict[name] = $1 }
    END { for (name in verdict) if (!(name in unscored)) { total++; if (verdict[name] == "✓") passed++ }
          print passed + 0, total + 0, pending + 0, extension + 0 }' "$WORK/out")
  sed -n '/^=== SUMMARY ===$/,$p' "$WORK/out"
  counts="$passed/$total$([ "$expected_pending" = 0 ] || echo ", pending $pending/$expected_pending")"
  counts="$counts$([ "$expected_extension" = 0 ] || echo ", extension $extension/$expected_extension")"
  if [ "$status" -ne 0 ] || [ "$passed" -ne "$expected" ] || [ "$total" -ne "$expected" ] || [ "$pending" -ne "$expected_pending" ] \
     || [ "$extension" -ne "$expected_extension" ]; then
    cat "$WORK/out"
    summary+=("FAILED  $version $* (example server): $counts, expected $expected (exit status $status)")
    failed=1
  else
    summary+=("ok      $version $* (example server): $counts ($(seconds_since "$start"))")
  fi
}

# run_real PORT ERA SCENARIO...: the newest suite against the shipcode-mcp on PORT, one scenario at a time (the
# suite runs a chosen scenario only alone; with FORCE=--force even one on no timeline, an extension's); each
# must pass every check it makes (a scenario not run at ERA is skipped: exit status 0, no checks, and counts
# as a failure here).
run_real() {
  local port="$1" era="$2" scenario start status passed=0
  shift 2
  echo; echo "### $NEWEST --spec-version $era against shipcode-mcp --http, one scenario at a time"
  start=$(now_ms)
  for scenario in "$@"; do
    status=0
    suite "$NEWEST" --url "http://127.0.0.1:$port/mcp" --spec-version "$era" --scenario "$scenario" ${FORCE:-} \
      >"$WORK/out" 2>&1 || status=$?
    if [ "$status" -eq 0 ] && grep -qE '^Passed: ([1-9][0-9]*)/\1, 0 failed' "$WORK/out"; then
      passed=$((passed + 1))
      echo "✓ $scenario ($era, shipcode-mcp): $(grep '^Passed: ' "$WORK/out")"
    else
      cat "$WORK/out"
      echo "✗ $scenario ($era, shipcode-mcp): exit status $status"
    fi
  done
  if [ "$passed" -ne "$#" ]; then
    summary+=("FAILED  $NEWEST --spec-version $era, one by one (shipcode-mcp): $passed/$#")
    failed=1
  else
    summary+=("ok      $NEWEST --spec-version $era, one by one (shipcode-mcp): $passed/$# ($(seconds_since "$start"))")
  fi
}

run_example "$FIRST" "$FIRST_2025" 0 0 --spec-version 2025-06-18
run_example "$NEWEST" "$NEWEST_2025" 0 0 --spec-version 2025-06-18
run_example "$NEWEST" "$NEWEST_2026" "$NEWEST_2026_PENDING" "$NEWEST_2026_TASKS" --requirements 2026-07-28
run_real "$REAL_PORT" 2025-06-18 "${REAL_2025[@]}"
run_real "$REAL_PORT" 2026-07-28 "${REAL_2026[@]}"
FORCE=--force run_real "$SKILLS_PORT" 2026-07-28 "${SKILLS[@]}"

echo
echo "conformance ($(seconds_since "$script_start") in all):"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  show_logs
  echo "conformance: FAILED" >&2
  exit 1
fi
