#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build tinylm (release) and run the main job,
# `tinylm microgpt` on the bundled names. Extra arguments go to `tinylm microgpt`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build build/release --target tinylm_cli >/dev/null
exec build/release/tinylm microgpt --data data/names.txt "$@"
