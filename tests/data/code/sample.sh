#!/usr/bin/env bash
# A fixture for Bash.
set -euo pipefail

readonly MAX=10
name="world"

# Says hello.
greet() {
  echo "hello $1"
}

function cleanup {
  rm -f /tmp/x
}

main() {
  greet "$name"
  cleanup
}

main "$@"
