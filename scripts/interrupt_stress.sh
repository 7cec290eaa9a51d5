#!/usr/bin/env bash
# Interrupts `tinylm train` N times at random moments and counts the runs that did not end
# with exit code 130 after saving a checkpoint (a corrupted heap shows as 134, "Aborted").
# usage: scripts/interrupt_stress.sh [N=30] [TINYLM=build/release/tinylm] [extra train flags]
set -u
n=${1:-30}
bin=${2:-build/release/tinylm}
shift $(($# < 2 ? $# : 2))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 200000 "$(dirname "$0")/../data/tinyshakespeare.txt" > "$work/text.txt"
bad=0
for i in $(seq 1 "$n"); do
  rm -rf "$work/run"
  "$bin" train --arch gpt2 --preset small-test --data "$work/text.txt" --out "$work/run" \
    --batch 2 --seq-len 32 --steps 1000000 --eval-every 20 --eval-batches 2 --save-every 15 \
    "$@" > /dev/null 2> "$work/err.txt" &
  pid=$!
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.5 + 2.5 * rand() }')"
  kill -INT "$pid"
  wait "$pid"
  rc=$?
  if [ "$rc" -ne 130 ] || ! grep -q "checkpoint .* saved" "$work/err.txt"; then
    bad=$((bad + 1))
    echo "run $i: exit $rc: $(tail -c 160 "$work/err.txt" | tr '\n' ' ')"
  fi
done
echo "$bad of $n interrupted runs failed"
[ "$bad" -eq 0 ]
