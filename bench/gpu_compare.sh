#!/usr/bin/env bash
# GPT-2 on one GPU: tinylm (Vulkan) beside PyTorch eager (CUDA) on the same machine, in one run,
# for issue 37's three targets (docs/gpu.md, docs/performance.md):
#   1. greedy decode at batch 1, f16 (and f32): tinylm generate --device gpu against
#      bench/compare/gpt2_torch.py --device cuda, tokens/s and their ratio;
#   2. serving: 32 streams against one through the server on the GPU (bench_serve --device gpu);
#   3. a training step at B=16, T=1024, f32: tinylm train --device gpu against
#      bench/compare/gpt2_train_torch.py --device cuda with TF32 off, ms/step and the ratio.
# The model is made here with `tinylm init` (random weights: speed does not depend on them).
#
#   bench/gpu_compare.sh TINYLM BENCH_SERVE [WORKDIR]
#
# TINYLM and BENCH_SERVE are this build's binaries (carried to the GPU machine with their
# libraries; the Vulkan loader through TINYLM_VULKAN_LOADER where the machine has none).
# PRESET (default 124M) and TORCH_DEVICE (default cuda) change the model and PyTorch's device,
# for a dry run on a machine without a GPU (PRESET=small-test TORCH_DEVICE=cpu on lavapipe).
set -euo pipefail
tl=${1:?usage: bench/gpu_compare.sh TINYLM BENCH_SERVE [WORKDIR]}
serve=${2:?usage: bench/gpu_compare.sh TINYLM BENCH_SERVE [WORKDIR]}
work=${3:-$(mktemp -d)}
preset=${PRESET:-124M}
torch_device=${TORCH_DEVICE:-cuda}
here=$(cd "$(dirname "$0")/.." && pwd)
reps=3
py=${PYTHON:-/usr/bin/python3}  # Debian's, with python3-torch (or PYTHON: one with torch and CUDA)
prompt="The quick brown fox jumps over the lazy dog. The quick brown fox jumps over"

"$tl" --version | tail -1
"$tl" devices | head -3
mkdir -p "$work"
rm -rf "$work/m"
"$tl" init --preset "$preset" --seed 1 --out "$work/m" >/dev/null

echo "== 1. greedy decode, batch 1 (tok/s, medians of $reps after a warm-up)"
torch_dtypes=f16,f32
[ "$torch_device" = cpu ] && torch_dtypes=f32  # PyTorch's CPU kernels have no f16 LayerNorm
"$py" "$here/bench/compare/gpt2_torch.py" --model "$work/m" --device "$torch_device" \
  --dtypes "$torch_dtypes" --reps "$reps" | tee "$work/torch_decode.txt"
for dt in f16 f32; do
  for r in $(seq 0 "$reps"); do  # run 0: the warm-up
    "$tl" generate --model "$work/m" --device gpu --dtype "$dt" --prompt "$prompt" \
      --max-tokens 64 --ignore-eos 2>&1 >/dev/null | grep -o 'decode [0-9.]* tok/s' |
      sed "s/^/$dt run $r: /"
  done
done | tee "$work/tinylm_decode.txt"
"$py" - "$work" <<'EOF'
import re, statistics, sys
work = sys.argv[1]
torch = {}
for line in open(f"{work}/torch_decode.txt"):
    f = line.split()
    if len(f) >= 5 and f[0] in ("f16", "f32"):
        torch[f[0]] = float(f[3])
ours = {}
for line in open(f"{work}/tinylm_decode.txt"):
    m = re.match(r"(f16|f32) run (\d+): decode ([0-9.]+) tok/s", line)
    if m and m.group(2) != "0":
        ours.setdefault(m.group(1), []).append(float(m.group(3)))
for dt in ("f16", "f32"):
    o = statistics.median(ours[dt])
    if dt not in torch:
        print(f"decode {dt}: tinylm {o:.1f} tok/s, PyTorch did not run")
        continue
    print(f"decode {dt}: tinylm {o:.1f} tok/s, PyTorch {torch[dt]:.1f} tok/s, "
          f"ratio {o / torch[dt]:.2f} (target for f16: >= 2)")
EOF

echo "== 2. serving through the server on the GPU: 32 streams against one"
"$serve" --model "$work/m" --device gpu --dtype f16 --streams 1,32 --tokens 64 --reps "$reps"

batch=16 seq=1024
[ "$preset" = 124M ] || batch=4 seq=64  # a dry run: lavapipe binds 128 MiB at most
echo "== 3. training step, B=$batch, T=$seq, f32 (ms/step, medians)"
"$py" "$here/bench/compare/gpt2_train_torch.py" --device "$torch_device" --preset "$preset" \
  --batch "$batch" --seq-len "$seq" --dtypes f32 --steps 5 | tee "$work/torch_train.txt"
rm -rf "$work/run"
"$tl" train --arch gpt2 --preset "$preset" --data "$here/data/tinyshakespeare.txt" \
  --batch "$batch" --seq-len "$seq" --steps 6 --warmup 1 --dropout 0 --device gpu --eval-batches 1 \
  --out "$work/run" >"$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
"$py" - "$work" "$batch" "$seq" <<'EOF'
import json, statistics, sys
work, B, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
steps = [json.loads(l) for l in open(f"{work}/run/metrics.jsonl") if '"loss"' in l]
ms = statistics.median(1e3 * B * T / s["tok_per_s"] for s in steps[1:])  # step 1: warm-up
torch_ms = None
for line in open(f"{work}/torch_train.txt"):
    f = line.split()
    if f and f[0] == "f32":
        torch_ms = float(f[1])
if torch_ms is None:
    print(f"train f32: tinylm {ms:.1f} ms/step, PyTorch did not run")
else:
    print(f"train f32: tinylm {ms:.1f} ms/step, PyTorch {torch_ms:.1f} ms/step, "
          f"ratio {torch_ms / ms:.2f} (target: >= 1)")
EOF
