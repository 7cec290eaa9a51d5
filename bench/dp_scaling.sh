#!/usr/bin/env bash
# Data-parallel scaling on one machine: GPT-2 (124M by default) trained on tinyshakespeare
# with a global batch of 32 x 64 tokens (--batch rows x --accum micro-batches; 16 x 2 by
# default), as
#   1 process x 1 thread, 2 processes x 1 thread (mpirun), 1 process x 2 threads,
# run alternately for --rounds rounds; prints each one's training tokens/s (the median over
# the steps after the first of every round) and the ratios the issue asks for.
# Usage: bench/dp_scaling.sh [--preset 124M] [--batch 16 --accum 2] [--steps 3] [--rounds 2]
#                            [--tinylm PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=124M batch=16 accum=2 steps=3 rounds=2 tinylm=build/release/tinylm
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --accum) accum=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --tinylm) tinylm=$2; shift 2 ;;
    *) echo "usage: $0 [--preset P] [--batch B --accum A] [--steps N] [--rounds N] [--tinylm PATH]" >&2
       exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tinylm" --version | sed -n 2p
echo "GPT-2 $preset, global batch $((batch * accum)) x 64 ($batch rows x $accum micro-batches), $steps steps, $rounds rounds"
args=(train --arch gpt2 --preset "$preset" --data data/tinyshakespeare.txt --batch "$batch"
      --accum "$accum" --seq-len 64 --steps "$steps" --eval-batches 0 --save-every 0 --keep 1)
median_tok_s() {  # the steps after the first
  python3 -c '
import json, statistics, sys
s = [json.loads(l) for l in open(sys.argv[1]) if "\"step\"" in l and "\"type\":\"step\"" in l]
print(statistics.median(x["tok_per_s"] for x in s[1:]))' "$1"
}
declare -A results
for round in $(seq "$rounds"); do
  for config in 1x1 2x1 1x2; do
    out="$work/$config-$round"
    case $config in
      1x1) "$tinylm" "${args[@]}" --out "$out" --threads 1 >/dev/null 2>&1 ;;
      2x1) mpirun -np 2 --bind-to none "$tinylm" "${args[@]}" --out "$out" --threads 1 >/dev/null 2>&1 ;;
      1x2) "$tinylm" "${args[@]}" --out "$out" --threads 2 >/dev/null 2>&1 ;;
    esac
    results[$config]+="$(median_tok_s "$out/metrics.jsonl") "
    rm -rf "$out"
  done
done
python3 - "${results[1x1]}" "${results[2x1]}" "${results[1x2]}" <<'PY'
import statistics, sys
one, two_proc, two_thr = (statistics.median(map(float, a.split())) for a in sys.argv[1:4])
print(f"1 process x 1 thread   {one:8.0f} tok/s")
print(f"2 processes x 1 thread {two_proc:8.0f} tok/s  ({two_proc / one:.2f}x one process)")
print(f"1 process x 2 threads  {two_thr:8.0f} tok/s  (2 processes: {two_proc / two_thr:.0%} of it)")
PY
