#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz) over its stored corpus for a fixed time.
#
#   scripts/fuzz.sh [--build DIR] [--seconds N] [--merge] [TARGET...]
#
# --build DIR   where the targets are built (default build/fuzz, the coverage-guided preset;
#               CI passes build/dev, the sanitizer build that also holds them)
# --seconds N   per target (default 300)
# --merge       keep what the run found: new inputs that add coverage are merged into
#               tests/fuzz/corpus/<target>/ (libFuzzer -merge=1, minimal additions only)
# TARGET...     e.g. config_json safetensors (default: all of them)
#
# New inputs go to a scratch directory, never straight into the stored corpus; a crash
# leaves its input as DIR/fuzz-artifacts/crash-* and makes the script fail, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/fuzz seconds=300 merge=0 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  # Every target CMake knows (tests/fuzz/CMakeLists.txt), so a new one cannot be forgotten.
  mapfile -t targets < <(sed -n '/^set(TINYLM_FUZZ_TARGETS/,/)/p' tests/fuzz/CMakeLists.txt |
                         grep -o 'fuzz_[a-z0-9_]*' | sed 's/^fuzz_//')
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets listed in tests/fuzz/CMakeLists.txt" >&2; exit 1; }
bindir=$build/tests/fuzz
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
failed=()
for t in "${targets[@]}"; do
  bin=$bindir/fuzz_$t corpus=tests/fuzz/corpus/$t
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: $bin is missing: build it first (cmake --build $build --target fuzz_$t;" \
         "the dev and fuzz presets build the fuzz targets)" >&2
    exit 1
  fi
  [ -d "$corpus" ] || { echo "fuzz.sh: no stored corpus $corpus for fuzz_$t" >&2; exit 1; }
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tinylm-fuzz-$t.XXXXXX")
  echo "== fuzz_$t: ${seconds} s over $corpus ($(ls "$corpus" | wc -l) seeds)"
  # Sanitizer findings abort (the targets are built with -fno-sanitize-recover); leaks in
  # an input count too.
  if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
       LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp} "$bin" -max_total_time="$seconds" \
       -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
       "$scratch" "$corpus" >"$scratch.log" 2>&1; then
    tail -40 "$scratch.log" >&2
    echo "fuzz.sh: fuzz_$t failed; the input is in $artifacts/ (reproduce: $bin <file>)" >&2
    failed+=("$t")
  else
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$scratch.log" |
      sed 's/^/  /' || true
    if [ "$merge" = 1 ] && [ -n "$(ls -A "$scratch")" ]; then
      "$bin" -merge=1 "$corpus" "$scratch" >>"$scratch.log" 2>&1
      echo "  merged: $corpus now holds $(ls "$corpus" | wc -l) inputs"
    fi
  fi
  rm -rf "$scratch" "$scratch.log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
