#!/usr/bin/env bash
# check_install.sh BUILD_DIR CONSUMER_DIR CXX GENERATOR: cmake --install BUILD_DIR into a
# temporary prefix, then build CONSUMER_DIR against it (find_package(tinylm)) and run it.
# Exit 77 (skipped) when cmake is missing.
set -euo pipefail
build=$1 consumer=$2 cxx=$3 generator=$4
command -v cmake >/dev/null || { echo "skipped: cmake is not on PATH"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
  { cat "$tmp/install.log"; exit 1; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$consumer" -B "$tmp/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  --no-warn-unused-cli >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/build/tinylm_consumer" "$tmp/prefix/share/tinylm/gpt2"
