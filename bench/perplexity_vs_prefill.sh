#!/usr/bin/env bash
# Does perplexity run at prefill speed? Tokens/s through the model, medians of REPS runs each,
# alternating, on the same machine in one go:
#   prefill   generate's prompt of N tokens of tinyshakespeare (--max-tokens 1): logits of the
#             last position only
#   ppl-all   one perplexity window over the same N tokens (--stride = --context): every
#             position scored, so the output head (77 GFLOP per 1,000 tokens on 124M, against
#             ~190 for the rest) runs for every row; by FLOPs it can reach ~0.7 of prefill
#   ppl-half  4 N tokens with --context N and the default stride N/2 (the README's usage):
#             half the rows scored after the first window
# Target (issue 18): perplexity >= 0.8 x prefill.
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
through() { sed -n 's/.*through the model (\([0-9.]*\) tok\/s).*/\1/p'; }
for i in $(seq "$reps"); do
  "$tinylm" generate --model "$model" --prompt-file "$tmp/text" --max-tokens 1 2>&1 >/dev/null |
    sed -n 's/.*prefill [0-9.]* ms (\([0-9.]*\) tok\/s).*/\1/p' >>"$tmp/prefill"
  "$tinylm" perplexity --model "$model" --file "$tmp/text" --context "$((n + 24))" \
    --stride "$((n + 24))" 2>&1 >/dev/null | through >>"$tmp/all"
  "$tinylm" perplexity --model "$model" --file "$here/data/tinyshakespeare.txt" \
    --limit "$((4 * n))" --context "$n" 2>&1 >/dev/null | through >>"$tmp/half"
done
prefill=$(median <"$tmp/prefill") all=$(median <"$tmp/all") half=$(median <"$tmp/half")
ratio() { awk -v a="$1" -v b="$prefill" 'BEGIN {printf "%.2f", a / b}'; }
echo "N=$n, $reps runs each, median tok/s through the model: prefill $prefill," \
  "ppl-all $all (ratio $(ratio "$all")), ppl-half $half (ratio $(ratio "$half"))"
