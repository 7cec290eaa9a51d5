#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build tinylm (release) and run the main job,
# `tinylm microgpt` on the bundled names. Extra arguments go to `tinylm microgpt`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
mkdir -p build
log=build/run-microgpt-build.log
# The build is quiet when it works; when it fails, the compiler's own messages are shown.
if ! { cmake --preset release && cmake --build build/release --target tinylm_cli; } >"$log" 2>&1; then
  echo "run-microgpt.sh: the build failed. The compiler said:" >&2
  grep -E -A3 "error|Error" "$log" | head -n 60 >&2 || tail -n 60 "$log" >&2
  echo "run-microgpt.sh: the whole log is in $log. Check that scripts/install-deps.sh finished," >&2
  echo "  then retry from a clean build (rm -rf build/release); if it still fails, report the log." >&2
  exit 1
fi
exec build/release/tinylm microgpt --data data/names.txt "$@"
