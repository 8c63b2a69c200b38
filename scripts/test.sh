#!/usr/bin/env bash
# The project's one test command: sets up .venv if needed, then lint, types, the official MCP
# conformance suite over our Streamable HTTP transport, and the whole pytest suite; then pytest again
# on each other Python of 3.10-3.13 present on this machine (pyenv's, else pythonX.Y on PATH), each in
# its own venv under .venv/pythons/ (made once, so a fresh .venv makes them afresh; pip's cache keeps
# that quick). Each pytest run's time is printed at the end; any failure fails the command.
# Each pytest run spreads the tests over PYTEST_WORKERS processes (pytest-xdist; 2, this machine's cores;
# PYTEST_WORKERS=0 runs them in one). Extra arguments go to every pytest run (e.g.
# `scripts/test.sh tests/test_session.py -x`);
# SKIP_CONFORMANCE=1 skips the conformance run (it needs npm and the npm registry the first time);
# OTHER_PYTHONS="3.12" picks the other Pythons, OTHER_PYTHONS= runs the main one only. The other Pythons leave out
# the tests marked `one_python` (measurements on real projects, minutes each, that no Python version changes:
# tests/conftest.py); a `-m` among the extra arguments overrides that.
# The run of COVERAGE_PYTHON (3.12) measures coverage (coverage.py with sys.monitoring, its cheapest tracer; the
# servers the tests start included, but those of a test marked `measures`, which bounds a server's memory or
# latency: tests/conftest.py) and prints the figure at the end; shown, never a threshold. COVERAGE=0 leaves it out.
# The peers some tests run (Node clients, an authorization server, the providers' converters, the MCPB
# CLI, typescript-language-server) are installed into their cache folders before pytest, each within PREPARE_TIMEOUT seconds (1200):
# cold, they take minutes, longer than pytest's per-test timeout. One that cannot be installed because
# npm or PyPI is out of reach makes its tests skip, saying so; under CI=true (as CI runs), that fails
# the command instead, and so does a Python of OTHER_PYTHONS missing from the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
pip_install() { "$1" -m pip install --quiet --disable-pip-version-check -e ".[test,watch,http,auth,code,precise,skills,run]"; }
version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
pip_install .venv/bin/python
.venv/bin/ruff check src tests bench examples
.venv/bin/mypy
.venv/bin/mypy --config-file tests/mypy.ini tests bench examples  # every function body of the tests checked too

summary=()
failed=0
IN_CI=0
case "${CI:-}" in ""|0|false|False|FALSE) ;; *) IN_CI=1 ;; esac
prepare() {  # a script of scripts/ that fills a cache folder the tests use, and its arguments
  local start=$SECONDS status=0
  timeout --kill-after=30 "${PREPARE_TIMEOUT:-1200}" "$@" >/dev/null || status=$?
  if [ "$status" = 0 ]; then
    summary+=("$1: ready in $((SECONDS - start)) s")
  elif [ "$status" = 3 ] && [ "$IN_CI" = 0 ]; then
    summary+=("$1: cannot be installed (npm or PyPI out of reach): its tests skip")
  else
    summary+=("$1: FAILED ($status$([ "$status" = 124 ] && echo ": over ${PREPARE_TIMEOUT:-1200} s")) after $((SECONDS - start)) s")
    failed=1
  fi
}
if [ "${SKIP_CONFORMANCE:-0}" != 1 ]; then
  timeout --kill-after=30 "${PREPARE_TIMEOUT:-1200}" scripts/conformance.sh
fi
bundle="$(mktemp -d)"
trap 'rm -rf "$bundle"' EXIT
for installer in scripts/node_clients.sh scripts/auth_server.sh scripts/provider_converters.sh scripts/language_servers.sh; do
  prepare "$installer"
done
prepare scripts/build_mcpb.sh "$bundle/prepared.mcpb"

MAIN="$(version .venv/bin/python)"
run_pytest() {  # $1: the venv's python; the rest: pytest's arguments
  local python="$1" start status=0 measured=() tracer=() total
  shift
  start=$SECONDS
  if [ "${COVERAGE:-1}" = 1 ] && [ "$(version "$python")" = "${COVERAGE_PYTHON:-3.12}" ]; then  # [tool.coverage.run]
    rm -rf .coverage && mkdir .coverage
    measured=(--cov --cov-report=term)
    tracer=(env COVERAGE_CORE=sysmon)
  fi
  "${tracer[@]}" "$python" -m pytest -n "${PYTEST_WORKERS:-2}" "${measured[@]}" "$@" || status=$?
  summary+=("Python $(version "$python"): pytest $([ "$status" = 0 ] && echo passed || echo "FAILED ($status)") in $((SECONDS - start)) s")
  if [ "${#measured[@]}" != 0 ] && total="$("$python" -m coverage report --format=total 2>/dev/null)"; then
    summary+=("Python $(version "$python"): coverage of src/shipcode_mcp ${total} % of statements (test processes and the servers they start)")
  fi
  [ "$status" = 0 ] || failed=1
}
find_python() {  # the interpreter of Python $1 (e.g. 3.12), or nothing
  local prefix candidate
  if command -v pyenv >/dev/null && prefix="$(pyenv prefix "$1" 2>/dev/null)" && [ -x "$prefix/bin/python$1" ]; then
    echo "$prefix/bin/python$1"
  elif candidate="$(command -v "python$1")" && "$candidate" -c '' 2>/dev/null; then  # a pyenv shim of a missing version fails
    echo "$candidate"
  fi
  return 0
}

run_pytest .venv/bin/python "$@"
for wanted in ${OTHER_PYTHONS-3.10 3.11 3.12 3.13}; do
  [ "$wanted" != "$MAIN" ] || continue
  python="$(find_python "$wanted")"
  if [ -z "$python" ]; then
    summary+=("Python $wanted: not on this machine, skipped$([ "$IN_CI" = 1 ] && echo ": FAILED under CI=true")")
    [ "$IN_CI" = 0 ] || failed=1
    continue
  fi
  venv=".venv/pythons/$wanted"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c '' 2>/dev/null; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
  fi
  start=$SECONDS
  if ! pip_install "$venv/bin/python"; then
    summary+=("Python $wanted: installing into $venv FAILED")
    failed=1
    continue
  fi
  summary+=("Python $wanted: venv ready in $((SECONDS - start)) s")
  run_pytest "$venv/bin/python" -m "not one_python" "$@"
done
printf '%s\n' "${summary[@]}"
exit "$failed"
