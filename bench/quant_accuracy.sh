#!/usr/bin/env bash
# What quantizing costs in accuracy (issue 15): a GPT-2 trained by tinylm on tinyshakespeare,
# run in f32, q8_0 and q4_0 on text it was not trained on; and the two quantized types with 8-bit
# activations (--activations q8_0, named q8_0/q8_0 and q4_0/q8_0).
#   perplexity  over the last BYTES bytes of tinyshakespeare, which lie inside the training
#               run's validation split (the last 10% of the tokens); windows of the model's
#               context, the default stride; each dtype's increase over f32
#   greedy      8 prompts (mid-sentence: a small model continues a line rather than start a
#               play), GREEDY_TOKENS new tokens each at temperature 0; how many of the
#               quantized completions are identical to f32's
# Targets: perplexity within +1% (q8_0) and +10% (q4_0) of f32; q8_0's greedy text equal to
# f32's on at least 6 of 8 prompts.
# usage: bench/quant_accuracy.sh TINYLM MODEL_DIR [BYTES=100000] [GREEDY_TOKENS=32]
# The model: tinylm train --arch gpt2 --preset mini --data data/tinyshakespeare.txt ... (see
# docs/performance.md, "Quantized inference", for the run used there).
set -euo pipefail
tinylm=$1 model=$2 bytes=${3:-100000} new=${4:-32}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tail -c "$bytes" "$here/data/tinyshakespeare.txt" >"$tmp/heldout.txt"
cat >"$tmp/prompts.txt" <<'EOF'
ROMEO: I will not
What say you to
My lord, the king
I pray you, sir, let
And if thou wilt
Come, come, you
The duke of
Why, then the
EOF
"$tinylm" --version | sed -n 2p
ppl() { sed -n 's/.*perplexity \([0-9.]*\).*/\1/p'; }
specs="f32 q8_0 q4_0 q8_0/q8_0 q4_0/q8_0"
for spec in $specs; do
  dt=${spec%/*} act=f32 name=${spec//\//_}
  [[ $spec == */* ]] && act=${spec#*/}
  "$tinylm" perplexity --model "$model" --file "$tmp/heldout.txt" --dtype "$dt" \
    --activations "$act" 2>/dev/null | ppl >"$tmp/ppl_$name"
  "$tinylm" generate --model "$model" --prompts "$tmp/prompts.txt" --max-tokens "$new" \
    --temperature 0 --dtype "$dt" --activations "$act" 2>/dev/null >"$tmp/gen_$name"
done
base=$(cat "$tmp/ppl_f32")
echo "held-out: last $bytes bytes of tinyshakespeare"
for spec in $specs; do
  name=${spec//\//_}
  p=$(cat "$tmp/ppl_$name")
  same=$(paste -d '\n' "$tmp/gen_f32" "$tmp/gen_$name" | awk 'NR % 2 {a = $0; next} a == $0 {n++} END {print n + 0}')
  awk -v dt="$spec" -v p="$p" -v b="$base" -v s="$same" \
    'BEGIN {printf "%-9s perplexity %8.4f  (%+.2f%% vs f32)  greedy text equal to f32: %d of 8\n", dt, p, 100 * (p / b - 1), s}'
done
echo "greedy completions, f32 then q8_0 and q4_0 where they differ from it:"
paste -d '\n' "$tmp/gen_f32" "$tmp/gen_q8_0" "$tmp/gen_q4_0" | awk '{t[NR % 3] = $0} NR % 3 == 0 {
  print "  f32:  " t[1]; if (t[2] != t[1]) print "  q8_0: " t[2]; if (t[0] != t[1]) print "  q4_0: " t[0]}'
