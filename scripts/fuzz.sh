#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz) over its stored corpus for a fixed time.
#
#   scripts/fuzz.sh [--build DIR] [--seconds N] [--jobs N] [--merge] [TARGET...]
#
# --build DIR   where the targets are built (default build/fuzz, the coverage-guided preset;
#               CI passes build/dev, the sanitizer build that also holds them)
# --seconds N   per target (default 300)
# --jobs N      targets fuzzed at once, one process each (default: the CPU count)
# --merge       keep what the run found: new inputs that add coverage are merged into
#               tests/fuzz/corpus/<target>/ (libFuzzer -merge=1, minimal additions only)
# TARGET...     e.g. config_json safetensors (default: all of them)
#
# New inputs go to a scratch directory, never straight into the stored corpus; a crash
# leaves its input as DIR/fuzz-artifacts/crash-* and makes the script fail, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/fuzz seconds=300 jobs=$(nproc) merge=0 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs takes a positive whole number, not '$jobs'" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds takes a whole number, not '$seconds'" >&2; exit 2; }
if [ ${#targets[@]} -eq 0 ]; then
  # Every target CMake knows (tests/fuzz/CMakeLists.txt), so a new one cannot be forgotten.
  mapfile -t targets < <(sed -n '/^set(TINYLM_FUZZ_TARGETS/,/)/p' tests/fuzz/CMakeLists.txt |
                         grep -o 'fuzz_[a-z0-9_]*' | sed 's/^fuzz_//')
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets listed in tests/fuzz/CMakeLists.txt" >&2; exit 1; }
bindir=$build/tests/fuzz
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
for t in "${targets[@]}"; do
  if [ ! -x "$bindir/fuzz_$t" ]; then
    echo "fuzz.sh: $bindir/fuzz_$t is missing: build it first (cmake --build $build --target fuzz_$t;" \
         "the dev and fuzz presets build the fuzz targets)" >&2
    exit 1
  fi
  [ -d "tests/fuzz/corpus/$t" ] || { echo "fuzz.sh: no stored corpus tests/fuzz/corpus/$t for fuzz_$t" >&2; exit 1; }
done

# One target; fails (after saying why) if it found a crash.
fuzz_one() {
  local t=$1 bin=$bindir/fuzz_$1 corpus=tests/fuzz/corpus/$1 scratch
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tinylm-fuzz-$t.XXXXXX")
  echo "== fuzz_$t: ${seconds} s over $corpus ($(ls "$corpus" | wc -l) seeds)"
  # Sanitizer findings abort (the targets are built with -fno-sanitize-recover); leaks in
  # an input count too.
  if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
       LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp} "$bin" -max_total_time="$seconds" \
       -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
       "$scratch" "$corpus" >"$scratch.log" 2>&1; then
    tail -40 "$scratch.log"
    echo "fuzz.sh: fuzz_$t failed; the input is in $artifacts/ (reproduce: $bin <file>)"
    rm -rf "$scratch" "$scratch.log"
    return 1
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$scratch.log" | sed 's/^/  /' || true
  if [ "$merge" = 1 ] && [ -n "$(ls -A "$scratch")" ]; then
    "$bin" -merge=1 "$corpus" "$scratch" >>"$scratch.log" 2>&1
    echo "  merged: $corpus now holds $(ls "$corpus" | wc -l) inputs"
  fi
  rm -rf "$scratch" "$scratch.log"
}

# --jobs targets at a time; each one's report is printed whole, in the list's order, at the end.
reports=$(mktemp -d "${TMPDIR:-/tmp}/tinylm-fuzz-reports.XXXXXX")
running=0
for t in "${targets[@]}"; do
  (fuzz_one "$t" >"$reports/$t" 2>&1 || touch "$reports/$t.failed") &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
failed=()
for t in "${targets[@]}"; do
  if [ -e "$reports/$t.failed" ]; then cat "$reports/$t" >&2; failed+=("$t"); else cat "$reports/$t"; fi
done
rm -rf "$reports"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
