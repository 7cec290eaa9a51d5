#!/usr/bin/env bash
# Builds the benchmark preset and prints tinylm's microgpt figures side by side with eager
# PyTorch (float64, same workloads, same thread count). Skips PyTorch cleanly when
# python3-torch is not installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --preset bench >/dev/null
cmake --build build/bench --target bench_microgpt >/dev/null
build/bench/bench/bench_microgpt --reps "${REPS:-11}"
echo
/usr/bin/python3 bench/compare/microgpt_torch.py --full --reps "${REPS:-11}" --ours build/bench/bench/bench_microgpt
