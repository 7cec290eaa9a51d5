#!/usr/bin/env bash
# Side by side: tinylm's GPT-2 generation against ggml's own GPT-2 example
# (examples/gpt-2, binary gpt-2-backend) on the same machine, same model shape,
# same 16-token prompt, greedy, 64 new tokens; prefill and decode tok/s per
# (threads, dtype), medians over rounds. See README.md in this directory.
# With --streams, batched decoding instead: ggml's gpt-2-batched (-np N: N sequences
# continuing one prompt, one graph per step) against tinylm's bench_serve (N concurrent
# requests through the server, and its model-alone figure: N sequences per forward_batch).
#
# q8_0 / q4_0: ggml's model is quantized by its own gpt-2-quantize (every matrix, wte and so
# the tied head too) and its CPU backend quantizes the activations to 8 bits for those
# products; tinylm runs the same type with --activations q8_0, the like-for-like option, and
# keeps wte (the head) in Q8_0 whatever the type (docs/cli.md): for q4_0 it reads ~1.3x the
# bytes per token that ggml does.
#
# A benchmark tool only: ggml is built from a checkout outside this repository
# and nothing here is a build or CI dependency.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PROMPT="The quick brown fox jumps over the lazy dog. The quick brown fox jumps over"
PROMPT_TOKENS=16
PROMPT_FIRST8="464 2068 7586 21831 18045 625 262 16931"
PREFERRED_GGML_COMMIT=d99724f2

GGML_SRC=/tmp/ggml
GGML_COMMIT=""
GGML_BUILD=""
GGML_BIN=""
GGML_AVX2=0
TINYLM=""
MODEL=""
WORK=/tmp/ggml-gpt2-bench
ROUNDS=5
THREADS_LIST="1 2"
DTYPES="f32 f16"
TOKENS=64
STREAMS=""
BENCH_SERVE=""

usage() {
  cat <<EOF
usage: bench/compare/ggml_gpt2.sh [options]

Builds ggml's gpt-2 example outside this repository, writes a GPT-2 model in
its format (f32 and f16) next to a tinylm model directory, then runs ggml's
gpt-2-backend and 'tinylm generate' alternately and prints medians.

  --ggml-src DIR      ggml source: a checkout, or a (bare) git directory such
                      as the one the search tool's fetch brings, which is then
                      cloned to /tmp/ggml-src-COMMIT (default: $GGML_SRC)
  --ggml-commit REV   commit to clone from a git directory (default:
                      $PREFERRED_GGML_COMMIT if present, else HEAD)
  --ggml-build DIR    cmake build directory (default: /tmp/ggml-build, or
                      /tmp/ggml-build-avx2 with --ggml-avx2)
  --ggml-bin PATH     an already built gpt-2-backend (no build)
  --ggml-avx2         build ggml for AVX2 (GGML_NATIVE=OFF, SSE4.2/AVX/AVX2/
                      FMA/F16C/BMI2 on, AVX-512 off) instead of -march=native
  --tinylm PATH       tinylm binary (default: build/release/tinylm, else
                      build/bench/tinylm of this repository)
  --model DIR         Hugging Face GPT-2 directory (default: WORK/gpt2-124M,
                      created with 'tinylm init --arch gpt2 --preset 124M')
  --work DIR          models and logs (default: $WORK)
  --rounds N          timed rounds per (threads, dtype) (default: $ROUNDS)
  --threads-list "L"  thread counts (default: "$THREADS_LIST")
  --dtypes "L"        any of f32 f16 q8_0 q4_0 (default: "$DTYPES")
  --tokens N          new tokens per run (default: $TOKENS)
  --streams "L"       batched decoding at these stream counts (e.g. "8 32")
                      instead of one sequence's prefill and decode
  --bench-serve PATH  tinylm's bench_serve for --streams (default:
                      build/bench/bench/bench_serve of this repository)
  -h, --help

TINYLM_ISA in the environment is passed through to tinylm.
EOF
}

die() { echo "ggml_gpt2.sh: error: $*" >&2; exit 1; }
need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --ggml-src) need_arg "$@"; GGML_SRC=$2; shift 2 ;;
    --ggml-commit) need_arg "$@"; GGML_COMMIT=$2; shift 2 ;;
    --ggml-build) need_arg "$@"; GGML_BUILD=$2; shift 2 ;;
    --ggml-bin) need_arg "$@"; GGML_BIN=$2; shift 2 ;;
    --ggml-avx2) GGML_AVX2=1; shift ;;
    --tinylm) need_arg "$@"; TINYLM=$2; shift 2 ;;
    --model) need_arg "$@"; MODEL=$2; shift 2 ;;
    --work) need_arg "$@"; WORK=$2; shift 2 ;;
    --rounds) need_arg "$@"; ROUNDS=$2; shift 2 ;;
    --threads-list) need_arg "$@"; THREADS_LIST=$2; shift 2 ;;
    --dtypes) need_arg "$@"; DTYPES=$2; shift 2 ;;
    --tokens) need_arg "$@"; TOKENS=$2; shift 2 ;;
    --streams) need_arg "$@"; STREAMS=$2; shift 2 ;;
    --bench-serve) need_arg "$@"; BENCH_SERVE=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ $TOKENS =~ ^[0-9]+$ && $TOKENS -ge 2 ]] || die "--tokens must be an integer >= 2"
for t in $THREADS_LIST; do [[ $t =~ ^[1-9][0-9]*$ ]] || die "--threads-list: '$t' is not a positive integer"; done
for d in $DTYPES; do [[ $d =~ ^(f32|f16|q8_0|q4_0)$ ]] || die "--dtypes: '$d' is not f32, f16, q8_0 or q4_0"; done
[[ -n $THREADS_LIST && -n $DTYPES ]] || die "empty --threads-list or --dtypes"
for n in $STREAMS; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "--streams: '$n' is not a positive integer"; done
if [[ -n $STREAMS ]]; then
  [[ -n $BENCH_SERVE ]] || BENCH_SERVE=$REPO/build/bench/bench/bench_serve
  [[ -x $BENCH_SERVE ]] || die "$BENCH_SERVE not found: cmake --preset bench && cmake --build build/bench, or pass --bench-serve PATH"
fi

# Refuse to put anything of ggml inside this repository.
outside_repo() {
  local p
  p=$(realpath -m "$1")
  [[ $p != "$REPO" && $p != "$REPO"/* ]] || die "$2 ($p) must be outside the repository $REPO"
}

# --- ggml: source, build ------------------------------------------------------
if [[ -z $GGML_BIN ]]; then
  if [[ ! -f $GGML_SRC/examples/gpt-2/main-backend.cpp ]]; then
    # A git directory (bare, as fetch brings it, or a clone): clone the commit.
    git --git-dir="$GGML_SRC" rev-parse --git-dir >/dev/null 2>&1 || [[ -d $GGML_SRC/.git ]] ||
      die "--ggml-src $GGML_SRC is neither a ggml checkout (examples/gpt-2/main-backend.cpp) nor a git directory"
    gitdir=$GGML_SRC; [[ -d $GGML_SRC/.git ]] && gitdir=$GGML_SRC/.git
    if [[ -z $GGML_COMMIT ]]; then
      if git --git-dir="$gitdir" cat-file -e "$PREFERRED_GGML_COMMIT^{commit}" 2>/dev/null; then
        GGML_COMMIT=$PREFERRED_GGML_COMMIT
      else
        GGML_COMMIT=HEAD
      fi
    fi
    full=$(git --git-dir="$gitdir" rev-parse --verify "$GGML_COMMIT^{commit}") ||
      die "commit $GGML_COMMIT not in $GGML_SRC"
    src=/tmp/ggml-src-${full:0:12}
    if [[ ! -f $src/examples/gpt-2/main-backend.cpp ]]; then
      echo "cloning ggml $full to $src" >&2
      rm -rf "$src"
      git clone -q --no-checkout "$gitdir" "$src"
      git -C "$src" checkout -q --detach "$full"
    fi
    GGML_SRC=$src
  elif [[ -n $GGML_COMMIT ]]; then
    [[ $(git -C "$GGML_SRC" rev-parse HEAD 2>/dev/null) == $(git -C "$GGML_SRC" rev-parse --verify "$GGML_COMMIT^{commit}" 2>/dev/null) ]] ||
      die "--ggml-src $GGML_SRC is a checkout not at $GGML_COMMIT (pass its git directory to clone that commit)"
  fi
  outside_repo "$GGML_SRC" "the ggml source"
  if [[ -z $GGML_BUILD ]]; then
    GGML_BUILD=/tmp/ggml-build; [[ $GGML_AVX2 == 1 ]] && GGML_BUILD=/tmp/ggml-build-avx2
  fi
  outside_repo "$GGML_BUILD" "the ggml build directory"
  cmake_flags=(-DCMAKE_BUILD_TYPE=Release)
  if [[ $GGML_AVX2 == 1 ]]; then
    cmake_flags+=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
                  -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF)
  else
    cmake_flags+=(-DGGML_NATIVE=ON)
  fi
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  if [[ -f $GGML_BUILD/CMakeCache.txt ]]; then
    gen=()   # keep the generator it was made with
    was=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$GGML_BUILD/CMakeCache.txt")
    [[ $(realpath -m "$was") == $(realpath -m "$GGML_SRC") ]] ||
      die "$GGML_BUILD was configured for $was, not $GGML_SRC; pass another --ggml-build"
  fi
  echo "building ggml's gpt-2-backend: $GGML_SRC -> $GGML_BUILD (${cmake_flags[*]})" >&2
  cmake -S "$GGML_SRC" -B "$GGML_BUILD" "${gen[@]}" "${cmake_flags[@]}" >"$GGML_BUILD.configure.log" 2>&1 ||
    die "cmake configure of ggml failed, see $GGML_BUILD.configure.log"
  cmake --build "$GGML_BUILD" --target gpt-2-backend gpt-2-batched gpt-2-quantize -j"$(nproc)" >"$GGML_BUILD.build.log" 2>&1 ||
    die "building gpt-2-backend failed, see $GGML_BUILD.build.log"
  GGML_BIN=$GGML_BUILD/bin/gpt-2-backend
fi
[[ -x $GGML_BIN ]] || die "ggml binary $GGML_BIN not found or not executable"
GGML_BATCHED=$(dirname "$GGML_BIN")/gpt-2-batched
[[ -z $STREAMS || -x $GGML_BATCHED ]] || die "$GGML_BATCHED (built beside gpt-2-backend) not found"

# --- tinylm and the models ------------------------------------------------------
if [[ -z $TINYLM ]]; then
  for c in "$REPO/build/release/tinylm" "$REPO/build/bench/tinylm"; do
    [[ -x $c ]] && { TINYLM=$c; break; }
  done
  [[ -n $TINYLM ]] || die "no tinylm binary in build/release or build/bench; build one or pass --tinylm PATH"
fi
[[ -x $TINYLM ]] || die "tinylm binary $TINYLM not found or not executable"

mkdir -p "$WORK"
if [[ -z $MODEL ]]; then
  MODEL=$WORK/gpt2-124M
  if [[ ! -f $MODEL/model.safetensors ]]; then
    echo "creating $MODEL with tinylm init" >&2
    "$TINYLM" init --arch gpt2 --preset 124M --out "$MODEL" >&2 || die "tinylm init failed"
  fi
fi
[[ -f $MODEL/config.json && -f $MODEL/model.safetensors ]] || die "$MODEL has no config.json + model.safetensors"

declare -A GGML_MODEL
ggml_model() {  # dtype -> WORK/ggml-model-DTYPE.bin, made if missing or older than the model
  local out=$WORK/ggml-model-$1.bin
  if [[ ! -f $out || $out -ot $MODEL/model.safetensors ]]; then
    if [[ $1 == q* ]]; then
      local quantize
      quantize=$(dirname "$GGML_BIN")/gpt-2-quantize
      [[ -x $quantize ]] || die "$quantize (ggml's quantizer, built beside gpt-2-backend) not found"
      "$quantize" "$(ggml_model f32)" "$out" "$1" >"$out.log" 2>&1 || die "ggml's quantizer failed, see $out.log"
    else
      /usr/bin/python3 "$HERE/ggml_gpt2_model.py" "$MODEL" "$out" --ftype "$1" >&2 || die "converting $MODEL to $out failed"
    fi
  fi
  echo "$out"
}
for d in $DTYPES; do GGML_MODEL[$d]=$(ggml_model "$d"); done

# --- runs -----------------------------------------------------------------------
LOG=$WORK/logs; mkdir -p "$LOG"
declare -A G_PRE G_DEC T_PRE T_DEC SAME

# ggml's example prints only the total predict time (all graph evaluations,
# sampling excluded). With -n 1 it is one evaluation: the 16-token prompt in
# one batch (default -b 32). With -n N it is that same evaluation plus N-1
# single-token ones. So prefill = 16 / T(-n 1), decode = (N-1) / (T(-n N) - T(-n 1)).
ggml_run() {  # threads dtype n_predict log -> predict ms on stdout
  "$GGML_BIN" -m "${GGML_MODEL[$2]}" -p "$PROMPT" -n "$3" -t "$1" -s 1 --top_k 1 --ignore-eos >"$4" 2>"$4.err" ||
    die "ggml run failed, see $4 and $4.err"
  local n first8
  n=$(sed -n 's/.*number of tokens in prompt = \([0-9]*\),.*/\1/p' "$4")
  first8=$(sed -n 's/.*first 8 tokens: \(.*\)$/\1/p' "$4" | xargs)
  [[ $n == "$PROMPT_TOKENS" && $first8 == "$PROMPT_FIRST8" ]] ||
    die "ggml tokenized the prompt as $n tokens ($first8), expected $PROMPT_TOKENS ($PROMPT_FIRST8); see $4"
  sed -n 's/.*predict time = *\([0-9.]*\) ms.*/\1/p' "$4" | grep . || die "no 'predict time' line in $4"
}

# tinylm's generate prints on stderr:
#   prompt 16 tokens: prefill P ms (X tok/s); 64 tokens: decode D tok/s
# (decode = (generated - 1) / decode time; prefill is recomputed from P ms).
tinylm_run() {  # threads dtype log-prefix -> "prefill_tok_s decode_tok_s"
  local act=f32; [[ $2 == q* ]] && act=q8_0
  "$TINYLM" generate --model "$MODEL" --dtype "$2" --activations "$act" --prompt "$PROMPT" --max-tokens "$TOKENS" \
    --temperature 0 --ignore-eos --threads "$1" >"$3.out" 2>"$3.err" || die "tinylm generate failed, see $3.err"
  local line
  line=$(grep -E '^prompt [0-9]+ tokens: prefill' "$3.err") || die "no prefill/decode line in $3.err"
  awk -v want="$PROMPT_TOKENS" -v gen="$TOKENS" -v f="$3.err" '{
      n = $2; ms = $5; dec = $(NF - 1); ntok = $(NF - 4)
      if (n != want || ntok != gen) { printf "tinylm: %s prompt / %s generated tokens, expected %s / %s (%s)\n", n, ntok, want, gen, f > "/dev/stderr"; exit 1 }
      printf "%.2f %s\n", n * 1000.0 / ms, dec }' <<<"$line" || die "unexpected tinylm output in $3.err"
}

# The generated text of a ggml log (between the prompt-token line and the timings).
ggml_text() { awk '/^main: number of tokens in prompt/ {on = 1; getline; next} /^main: +load time/ {on = 0} on' "$1"; }

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# ggml's batched example evaluates the prompt once, copies its cache to every sequence, then
# decodes all of them in one graph per step over one f32 KV cache of -c cells (the prompt plus
# every sequence's tokens); it prints the decoded count and the graphs' time, sampling excluded.
ggml_batched_run() {  # threads dtype streams log -> aggregate tok/s on stdout
  "$GGML_BATCHED" -m "${GGML_MODEL[$2]}" -p "$PROMPT" -np "$3" -n "$TOKENS" -t "$1" -s 1 --top_k 1 \
    --ignore-eos -c $((PROMPT_TOKENS + $3 * TOKENS + 16)) >"$4" 2>"$4.err" || die "ggml batched run failed, see $4 and $4.err"
  awk -v f="$4" '/n_decoded =/ {n = $NF} /predict time =/ {ms = $(NF - 1)}
    END {if (n == "" || ms == "") {print "no n_decoded / predict time in " f > "/dev/stderr"; exit 1}
         printf "%.1f\n", n * 1000 / ms}' "$4" || die "unexpected ggml output in $4"
}

# bench_serve prints, for N streams, the model alone (N sequences per forward_batch) and N
# concurrent requests through the server; tinylm's KV cache is f32 by default, as ggml's.
tinylm_batched_run() {  # threads dtype streams log -> "model_alone_tok_s server_tok_s"
  local act=f32; [[ $2 == q* ]] && act=q8_0
  "$BENCH_SERVE" --model "$MODEL" --dtype "$2" --activations "$act" --threads "$1" --tokens "$TOKENS" \
    --reps 1 --streams "$3" >"$4" 2>&1 || die "bench_serve failed, see $4"
  awk -v n="$3" -v f="$4" '/^model alone:/ {for (i = 1; i < NF; i++) if ($(i + 1) == "tok/s") {alone = $i; break}} $1 == n && NF >= 6 && !server {server = $2}
    END {if (alone == "" || server == "") {print "no model-alone / aggregate line in " f > "/dev/stderr"; exit 1}
         print alone, server}' "$4" || die "unexpected bench_serve output in $4"
}

batched_comparison() {
  declare -A G T_ALONE T_SERVER
  local r t d n k g tl ta ts
  for ((r = 1; r <= ROUNDS; r++)); do
    for t in $THREADS_LIST; do
      for d in $DTYPES; do
        for n in $STREAMS; do
          k="$t $d $n"
          g=$(ggml_batched_run "$t" "$d" "$n" "$LOG/batched-t$t-$d-np$n-r$r.ggml.log")
          tl=$(tinylm_batched_run "$t" "$d" "$n" "$LOG/batched-t$t-$d-np$n-r$r.tinylm.log"); read -r ta ts <<<"$tl"
          G[$k]+=" $g"; T_ALONE[$k]+=" $ta"; T_SERVER[$k]+=" $ts"
          printf 'round %d threads %d %s %d streams: ggml %s | tinylm model alone %s, through the server %s tok/s\n' \
            "$r" "$t" "$d" "$n" "$g" "$ta" "$ts" >&2
        done
      done
    done
  done
  echo
  echo "medians of $ROUNDS rounds, aggregate tok/s over all streams (ratio = tinylm / ggml; > 1: tinylm faster)"
  printf '%-7s %-5s %-7s | %10s | %12s %13s | %11s %12s\n' threads dtype streams "ggml" "tinylm alone" \
    "tinylm server" "alone ratio" "server ratio"
  for t in $THREADS_LIST; do
    for d in $DTYPES; do
      for n in $STREAMS; do
        k="$t $d $n"
        g=$(median <<<"${G[$k]}"); ta=$(median <<<"${T_ALONE[$k]}"); ts=$(median <<<"${T_SERVER[$k]}")
        awk -v t="$t" -v d="$d" -v n="$n" -v g="$g" -v a="$ta" -v s="$ts" 'BEGIN {
          printf "%-7s %-5s %-7s | %10.1f | %12.1f %13.1f | %11.2f %12.2f\n", t, d, n, g, a, s, a / g, s / g }'
      done
    done
  done
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); logs: $LOG"
}

if [[ -n $GGML_BUILD ]]; then
  echo "== ggml: $GGML_BIN, built from $GGML_SRC at $(git -C "$GGML_SRC" rev-parse HEAD 2>/dev/null || echo '(commit unknown)')"
  echo "   GGML_NATIVE=$(sed -n 's/^GGML_NATIVE:BOOL=//p' "$GGML_BUILD/CMakeCache.txt")" \
       "GGML_AVX2=$(sed -n 's/^GGML_AVX2:BOOL=//p' "$GGML_BUILD/CMakeCache.txt")" \
       "GGML_AVX512=$(sed -n 's/^GGML_AVX512:BOOL=//p' "$GGML_BUILD/CMakeCache.txt")" \
       "GGML_OPENMP=$(sed -n 's/^GGML_OPENMP:BOOL=//p' "$GGML_BUILD/CMakeCache.txt")"
  # The CPU backend's AVX-512 use, as a check of the level (0 zmm instructions with --ggml-avx2).
  lib=$(find "$GGML_BUILD" -name 'libggml-cpu.*' -type f | head -1)
  if [[ -n $lib ]] && command -v objdump >/dev/null; then
    echo "   $(basename "$lib"): $(objdump -d "$lib" | grep -c zmm || true) instructions on zmm registers"
  fi
else
  echo "== ggml: $GGML_BIN (prebuilt)"
fi
echo "== tinylm: $TINYLM; TINYLM_ISA=${TINYLM_ISA:-(unset)}"
"$TINYLM" --version | sed 's/^/   /'
echo "== model: $MODEL; prompt: $PROMPT_TOKENS tokens, greedy, $TOKENS new; $ROUNDS rounds; cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"
# ggml's OpenMP threads spin while they wait: any other load on the cores slows it far more than tinylm.
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg) (keep the machine otherwise idle)"

if [[ -n $STREAMS ]]; then
  batched_comparison
  exit 0
fi

for ((r = 1; r <= ROUNDS; r++)); do
  for t in $THREADS_LIST; do
    for d in $DTYPES; do
      k="$t $d"; base=$LOG/t$t-$d-r$r
      t1=$(ggml_run "$t" "$d" 1 "$base.ggml-n1.log")
      tn=$(ggml_run "$t" "$d" "$TOKENS" "$base.ggml-n$TOKENS.log")
      tl=$(tinylm_run "$t" "$d" "$base.tinylm"); read -r tp td <<<"$tl"
      gp=$(awk -v a="$t1" -v n="$PROMPT_TOKENS" 'BEGIN {printf "%.2f", n * 1000 / a}')
      gd=$(awk -v a="$t1" -v b="$tn" -v n="$TOKENS" 'BEGIN {printf "%.2f", (n - 1) * 1000 / (b - a)}')
      G_PRE[$k]+=" $gp"; G_DEC[$k]+=" $gd"; T_PRE[$k]+=" $tp"; T_DEC[$k]+=" $td"
      if [[ $r == 1 ]]; then
        [[ "$(ggml_text "$base.ggml-n$TOKENS.log")" == "$(cat "$base.tinylm.out")" ]] && SAME[$k]=yes || SAME[$k]=no
      fi
      printf 'round %d threads %d %s: ggml prefill %s decode %s | tinylm prefill %s decode %s tok/s\n' \
        "$r" "$t" "$d" "$gp" "$gd" "$tp" "$td" >&2
    done
  done
done

echo
echo "medians of $ROUNDS rounds, tok/s (ratio = tinylm / ggml; > 1: tinylm faster)"
printf '%-7s %-5s | %13s %12s | %14s %13s | %13s %12s | %s\n' threads dtype "ggml prefill" "ggml decode" \
  "tinylm prefill" "tinylm decode" "prefill ratio" "decode ratio" "same text"
for t in $THREADS_LIST; do
  for d in $DTYPES; do
    k="$t $d"
    gp=$(median <<<"${G_PRE[$k]}"); gd=$(median <<<"${G_DEC[$k]}")
    tp=$(median <<<"${T_PRE[$k]}"); td=$(median <<<"${T_DEC[$k]}")
    awk -v t="$t" -v d="$d" -v gp="$gp" -v gd="$gd" -v tp="$tp" -v td="$td" -v s="${SAME[$k]}" 'BEGIN {
      printf "%-7s %-5s | %13.1f %12.1f | %14.1f %13.1f | %13.2f %12.2f | %s\n", t, d, gp, gd, tp, td, tp / gp, td / gd, s }'
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); logs: $LOG"
