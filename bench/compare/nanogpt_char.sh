#!/usr/bin/env bash
# Side by side: nanoGPT (karpathy/nanoGPT, eager PyTorch, --compile=False) and `tinylm train`
# on nanoGPT's character-level Shakespeare, on the same machine and thread count.
#
#   cpu   nanoGPT README's CPU recipe (config/train_shakespeare_char.py --device=cpu
#         --compile=False --eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12
#         --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000 --lr_decay_iters=2000
#         --dropout=0.0) against configs/shakespeare_char.toml: the final validation loss and
#         the wall time of the whole run, evaluations included.
#   baby  the baby GPT (config/train_shakespeare_char.py: 6 x 384, 256 positions, batch 64,
#         dropout 0.2) against configs/baby.toml: training tokens/s, the median step after the
#         first few, no evaluations.
#
# tinylm runs once per kernel level given (TINYLM_ISA), each beside a nanoGPT run, alternating
# which goes first. At the avx2 level PyTorch is held to AVX2 as well (ATen's kernels and
# OpenBLAS's, which would otherwise use AVX-512 on this CPU), so that the row is what an
# AVX2-only machine runs on both sides; --peer-native leaves it to choose. A benchmark tool only: nanoGPT runs from a checkout outside this repository
# on Debian's python3-torch (scripts/install-deps.sh --bench-compare), which must use OpenBLAS:
# the script prints torch's BLAS and stops if it is the reference BLAS.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
NANOGPT=""
TINYLM="$REPO/build/release/tinylm"
THREADS=2
LEVELS=""
MODE=cpu
STEPS=""
WORK=/tmp/nanogpt-char-bench
PYTHON=/usr/bin/python3
PEER_NATIVE=0

usage() {
  cat <<EOF
usage: bench/compare/nanogpt_char.sh --nanogpt DIR [options]

  --nanogpt DIR   nanoGPT: a checkout, or a (bare) git directory such as the one the search
                  tool's fetch brings (its HEAD is exported to WORK/nanogpt)
  --tinylm BIN    tinylm binary (default: $TINYLM)
  --mode cpu|baby the comparison (above; default: $MODE)
  --threads N     threads for both (default: $THREADS)
  --levels "L..." TINYLM_ISA levels to run tinylm at (default: every level tinylm supports)
  --steps N       baby: steps to time (default 30); cpu: the recipe's 2000 unless given
  --work DIR      scratch directory (default: $WORK)
  --peer-native   at the avx2 level, let PyTorch use what the CPU has (default: hold it to AVX2)
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --nanogpt) NANOGPT=$2; shift 2 ;;
    --tinylm) TINYLM=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --levels) LEVELS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --peer-native) PEER_NATIVE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "nanogpt_char.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$NANOGPT" ] || { usage >&2; exit 2; }
[ "$MODE" = cpu ] || [ "$MODE" = baby ] || { echo "nanogpt_char.sh: --mode cpu or baby" >&2; exit 2; }
[ -x "$TINYLM" ] || { echo "nanogpt_char.sh: no tinylm binary at $TINYLM" >&2; exit 1; }
if [ -z "$LEVELS" ]; then
  LEVELS=$("$TINYLM" --version | sed -n 's/^kernels: .*(supported: \(.*\))$/\1/p')
  LEVELS=${LEVELS#generic }  # the generic level is the portable fallback, not a target
fi

mkdir -p "$WORK"
# nanoGPT, exported where its data/ may be written.
if [ -d "$NANOGPT/.git" ] || [ -f "$NANOGPT/HEAD" ]; then
  GITDIR=$NANOGPT; [ -d "$NANOGPT/.git" ] && GITDIR="$NANOGPT/.git"
  COMMIT=$(git --git-dir="$GITDIR" rev-parse --short HEAD)
  rm -rf "$WORK/nanogpt" && mkdir -p "$WORK/nanogpt"
  git --git-dir="$GITDIR" archive HEAD | tar -x -C "$WORK/nanogpt"
else
  COMMIT="(not a git checkout)"
  rm -rf "$WORK/nanogpt" && cp -r "$NANOGPT" "$WORK/nanogpt"
fi
NG="$WORK/nanogpt"
# prepare.py downloads input.txt unless it is there: the same text, from this repository.
cp "$REPO/data/tinyshakespeare.txt" "$NG/data/shakespeare_char/input.txt"
(cd "$NG/data/shakespeare_char" && "$PYTHON" prepare.py >/dev/null)

# PyTorch's threads: its own (OpenMP) and OpenBLAS's, THREADS each, OpenMP's waiting passively:
# with both spinning, each step took 3x as long here (OpenMP 1 + OpenBLAS 2 ran as fast).
TORCH_ENV=(OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "nanoGPT $COMMIT on PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)'), $THREADS threads (${TORCH_ENV[*]})"
# torch.__config__.show() says BLAS_INFO=generic for Debian's build: the libblas.so.3 that
# update-alternatives points to decides, so the library actually loaded is what counts.
echo "PyTorch's BLAS: $("$PYTHON" -c 'import torch; print(torch.__config__.show())' | grep -o 'BLAS_INFO=[^,]*')"
LOADED=$(env "${TORCH_ENV[@]}" "$PYTHON" -c 'import torch, re; x = torch.ones(64, 64); (x @ x).sum(); print(" ".join(sorted(set(m for m in re.findall(r"\S*blas\S*", open("/proc/self/maps").read())))))')
echo "BLAS libraries loaded by torch: $LOADED"
case "$LOADED" in
  *openblas*) ;;
  *) echo "nanogpt_char.sh: PyTorch runs on the reference BLAS; install libopenblas0-pthread" >&2; exit 1 ;;
esac
echo "tinylm: $("$TINYLM" --version | head -1)"

now() { date +%s.%N; }

# PyTorch's environment beside tinylm at level $1.
peer_env() {
  if [ "$1" = avx2 ] && [ "$PEER_NATIVE" = 0 ]; then
    echo ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell
  fi
}
# What PyTorch runs on in that environment: ATen's vector level and OpenBLAS's kernels.
peer_isa() {
  env "${TORCH_ENV[@]}" $(peer_env "$1") "$PYTHON" -c '
import ctypes, re, torch
(torch.ones(64, 64) @ torch.ones(64, 64)).sum()
aten = re.search(r"CPU capability usage: (\S+)", torch.__config__.show()).group(1)
lib = next(l for l in re.findall(r"/\S*openblas\S*\.so\S*", open("/proc/self/maps").read()))
blas = ctypes.CDLL(lib)
blas.openblas_get_corename.restype = ctypes.c_char_p
print("ATen", aten + ", OpenBLAS", blas.openblas_get_corename().decode())'
}

for level in $LEVELS; do
  echo "beside tinylm's $level: PyTorch on $(peer_isa "$level") $(peer_env "$level")"
done

nanogpt_run() {  # $1: level, $2: log file; the rest: train.py overrides
  local level=$1 log=$2; shift 2
  (cd "$NG" && env "${TORCH_ENV[@]}" $(peer_env "$level") "$PYTHON" train.py \
     config/train_shakespeare_char.py --device=cpu --compile=False --out_dir="$WORK/out-nanogpt" \
     "$@") >"$log" 2>&1
}

tinylm_run() {  # $1: level, $2: log file; the rest: train flags
  local level=$1 log=$2; shift 2
  rm -rf "$WORK/run-tinylm"
  TINYLM_ISA=$level "$TINYLM" train --data "$REPO/data/tinyshakespeare.txt" \
    --out "$WORK/run-tinylm" --threads "$THREADS" "$@" >"$log" 2>&1
}

median() { sort -g | awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

if [ "$MODE" = cpu ]; then
  steps=${STEPS:-2000}
  printf "\n%-7s | %-24s | %-24s | %-10s | %-15s | %s\n" level "nanoGPT val loss, wall" \
    "tinylm val loss, wall" "wall ratio" "difference" "whole split: nanoGPT, tinylm, difference"
  first=nanogpt
  for level in $LEVELS; do
    for side in $first $([ $first = nanogpt ] && echo tinylm || echo nanogpt); do
      t0=$(now)
      if [ $side = nanogpt ]; then
        nanogpt_run "$level" "$WORK/nanogpt-$level.log" --eval_iters=20 --log_interval=1 --block_size=64 \
          --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 --max_iters="$steps" \
          --lr_decay_iters="$steps" --dropout=0.0
        ng_wall=$(echo "$(now) - $t0" | bc)
      else
        tinylm_run "$level" "$WORK/tinylm-$level.log" --config "$REPO/configs/shakespeare_char.toml" \
          --steps "$steps"
        tl_wall=$(echo "$(now) - $t0" | bc)
      fi
    done
    first=$([ $first = nanogpt ] && echo tinylm || echo nanogpt)
    ng_val=$(grep -E "^step $steps: " "$WORK/nanogpt-$level.log" | sed 's/.*val loss \([0-9.]*\).*/\1/')
    tl_val=$(grep '"type":"eval"' "$WORK/run-tinylm/metrics.jsonl" | tail -1 |
             sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
    # Both final models scored by nanoGPT's code on every window of the validation split.
    whole=$(env "${TORCH_ENV[@]}" "$PYTHON" "$HERE/nanogpt_eval.py" --nanogpt "$NG" \
      --ckpt "$WORK/out-nanogpt/ckpt.pt" --tinylm "$WORK/run-tinylm/latest" 2>/dev/null | tail -1)
    whole=$(echo "$whole" | "$PYTHON" -c 'import json, sys; d = json.load(sys.stdin); print("%.4f, %.4f, %+.4f" % (d["nanogpt"], d["tinylm"], d["difference"]))')
    printf "%-7s | %8.4f, %8.1f s      | %8.4f, %8.1f s      | %8.3f   | %+.4f         | %s\n" \
      "$level" "$ng_val" "$ng_wall" "$tl_val" "$tl_wall" "$(echo "$tl_wall / $ng_wall" | bc -l)" \
      "$(echo "$tl_val - $ng_val" | bc -l)" "$whole"
  done
  echo "(wall ratio: tinylm / nanoGPT; difference: tinylm's loss less nanoGPT's, each as its run"
  echo " printed it (their own samples of the validation split), and on the whole split, both scored"
  echo " by nanoGPT's model.py (nanogpt_eval.py); logs in $WORK)"
else
  steps=${STEPS:-30}
  skip=5  # steps before timing starts
  printf "\n%-7s | %-18s | %-18s | %s\n" level "nanoGPT tok/s" "tinylm tok/s" "ratio"
  for level in $LEVELS; do
    nanogpt_run "$level" "$WORK/nanogpt-baby.log" --max_iters="$steps" --eval_interval=100000 \
      --eval_iters=1 --log_interval=1
    ng_ms=$(grep -E '^iter [0-9]+: ' "$WORK/nanogpt-baby.log" | awk -v s=$skip '$2+0 >= s' |
            sed 's/.*time \([0-9.]*\)ms.*/\1/' | median)
    ng_tps=$(echo "64 * 256 * 1000 / $ng_ms" | bc -l)
    tinylm_run "$level" "$WORK/tinylm-baby-$level.log" --config "$REPO/configs/baby.toml" \
      --steps "$steps" --eval-every 0 --eval-batches 1 --save-every 0
    tl_tps=$(grep '"type":"step"' "$WORK/run-tinylm/metrics.jsonl" | awk -v s=$skip -F'"step":' '{split($2,a,","); if (a[1]+0 > s) print}' |
             sed 's/.*"tok_per_s":\([0-9.e+-]*\).*/\1/' | median)
    printf "%-7s | %18.0f | %18.0f | %.2f\n" "$level" "$ng_tps" "$tl_tps" "$(echo "$tl_tps / $ng_tps" | bc -l)"
  done
  echo "(tokens per second of training, median step after the first $skip; ratio: tinylm / PyTorch)"
fi
