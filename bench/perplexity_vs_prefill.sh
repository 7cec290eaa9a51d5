#!/usr/bin/env bash
# perplexity runs at prefill speed: the same text (N tokens of tinyshakespeare) once as
# generate's prompt (prefill, --max-tokens 1) and once as one perplexity window
# (--context N --stride N), REPS times each, alternating; prints the median tokens/s of both and
# their ratio (the target: perplexity >= 0.8 x prefill).
# usage: bench/perplexity_vs_prefill.sh TINYLM MODEL_DIR [N=1000] [REPS=5]
set -euo pipefail
tinylm=$1 model=$2 n=${3:-1000} reps=${4:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tinylm" tokenize --file "$here/data/tinyshakespeare.txt" --grid "1x$n" 2>/dev/null |
  tr -d '{}[]"ids:\n' | tr ',' ' ' >"$tmp/ids"
"$tinylm" tokenize --decode --file "$tmp/ids" | head -c -1 >"$tmp/text"
"$tinylm" --version | sed -n 2p
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for i in $(seq "$reps"); do
  "$tinylm" generate --model "$model" --prompt-file "$tmp/text" --max-tokens 1 2>&1 >/dev/null |
    sed -n 's/.*prefill [0-9.]* ms (\([0-9.]*\) tok\/s).*/\1/p' >>"$tmp/prefill"
  "$tinylm" perplexity --model "$model" --file "$tmp/text" --context "$((n + 24))" \
    --stride "$((n + 24))" 2>&1 >/dev/null |
    sed -n 's/.*through the model (\([0-9.]*\) tok\/s).*/\1/p' >>"$tmp/ppl"
done
prefill=$(median <"$tmp/prefill") ppl=$(median <"$tmp/ppl")
echo "prompt of ~$n tokens, $reps runs each, medians: prefill $prefill tok/s," \
  "perplexity $ppl tok/s, ratio $(awk -v a="$ppl" -v b="$prefill" 'BEGIN {printf "%.2f", a / b}')"
