#!/usr/bin/env bash
# Quick start, part 2: install what is missing, build, and run every test twice: optimized
# (release) and under AddressSanitizer + UndefinedBehaviorSanitizer (dev).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== release build and tests"
cmake --preset release -DTINYLM_BUILD_TESTS=ON >/dev/null
cmake --build build/release -j "$jobs"
ctest --preset release -j "$jobs"

echo "== sanitizer build (ASan + UBSan) and tests"
cmake --preset dev >/dev/null
cmake --build build/dev -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset dev -j "$jobs"
