#!/usr/bin/env bash
# Quick start, part 2: install what is missing, check the formatting and the layers, build, and
# run every test: optimized (release) once per kernel level this CPU supports (generic always, then
# AVX2 and AVX-512 where the CPU has them; on a CPU with AMX the bf16 products' tests on both
# units), then under AddressSanitizer + UndefinedBehavior
# Sanitizer (dev, clang) at the best level, with every fuzz target run over its seed corpus,
# then every fuzz target for about 20 s, as many at once as there are CPUs (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== formatting (clang-format)"
scripts/check-format.sh
echo "== layers (no include runs up docs/architecture.md's picture)"
scripts/check-layers.sh

echo "== release build"
# The test sources compile in batches here (a unity build, tests/CMakeLists.txt); the sanitizer
# build below compiles them one by one, so a source that lacks an include is still found.
cmake --preset release -DTINYLM_BUILD_TESTS=ON -DTINYLM_UNITY_TESTS=ON >/dev/null
cmake --build build/release -j "$jobs"
# "kernels: avx512 (supported: generic avx2 avx512)" -> the supported levels.
levels=$(build/release/tinylm --version | sed -n 's/^kernels: .*(supported: \(.*\))$/\1/p')
[ -n "$levels" ] || { echo "test.sh: cannot read the kernel levels from tinylm --version" >&2; exit 1; }
best=${levels##* }
for level in $levels; do
  echo "== release tests, kernel level $level"
  # The GPU tests do not depend on the CPU's kernel level: they run once, at the best level.
  skip=()
  [ "$level" = "$best" ] || skip=(-E 'Gpu')
  TINYLM_ISA=$level ctest --preset release -j "$jobs" "${skip[@]}"
done
# Where bf16 products run on AMX tiles by default, the tests that use them once more on
# VDPBF16PS, the unit of CPUs without AMX.
if build/release/tinylm --version | grep -qx 'bf16 products: amx'; then
  echo "== release tests of bf16 activations and the server, TINYLM_BF16_UNIT=vdpbf16ps"
  TINYLM_BF16_UNIT=vdpbf16ps ctest --preset release -j "$jobs" -R 'Bf16|Serve|CliGpt2'
fi

echo "== sanitizer build (clang, ASan + UBSan): tests and fuzz seeds"
# The kernels of the level these tests run at build at -O1 (the others at -O0: src/CMakeLists.txt).
cmake --preset dev -DTINYLM_SANITIZE_O1_LEVEL="$best" >/dev/null
cmake --build build/dev -j "$jobs"
# Tests that check numbers, not memory, and are the slowest under the sanitizers run only in the
# release passes above: EvermindTrain's loss target, SameBitsCli's perplexity at every level, two
# processes' bits against two devices', and microgpt's 1000-step default run against
# microgpt.py's transcript. The code they run is under the sanitizers through the other tests
# (CliMpi's shards and a dying process, MicrogptRun's 40-step run).
numbers_only='^(EvermindTrain\.TinyShakespeareLossFallsBelow60PercentOfStart|SameBitsCli\.PerplexityPrintsTheSameBytesAtEveryLevel'
numbers_only+='|CliMpi\.TrainOnTwoProcessesMatchesTwoDevicesAndResumesOnOne|.*MicrogptRun\.SlowDefaultRun.*)$'
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset dev -j "$jobs" \
  -E "$numbers_only"

# Every fuzz target for a short fixed budget over its stored corpus, so a change that crashes
# a parser cannot land (scripts/fuzz.sh runs them longer by hand; TINYLM_FUZZ_SECONDS=0 skips).
fuzz_seconds=${TINYLM_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzzing (${fuzz_seconds} s per target, sanitizer build)"
  UBSAN_OPTIONS=print_stacktrace=1 scripts/fuzz.sh --build build/dev --seconds "$fuzz_seconds"
fi
