#!/usr/bin/python3
"""Time eager PyTorch GPT-2 training steps next to tinylm's bench_gpt2_train.

Workload (the same as bench_gpt2_train): a 124M-shaped GPT-2 with random N(0, 0.02)
weights, one fixed batch B=4, T=64 of random tokens, a step = forward, mean cross-entropy,
backward, SGD (w -= lr g). The model is the plain-PyTorch GPT-2 of
tools/gen_gpt2_train_fixtures.py (the one the training fixtures come from). f32, and bf16
through torch.autocast (master weights f32, as tinylm's --compute-dtype bf16).
Prints the median ms/step after a warm-up; with --ours PATH it also runs tinylm's
bench_gpt2_train with the same thread count and prints the ratios. --device cuda runs the
steps on a GPU (TF32 off: f32 products in f32), --batch and --seq-len set the batch
(bench/gpu_compare.sh: B=16, T=1024 beside `tinylm train --device gpu`).
Exits 0 with "skip: python3-torch not installed" when torch is missing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PRESETS = {
    "124M": dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, layer_norm_epsilon=1e-5),
    "small-test": dict(vocab_size=50257, n_positions=128, n_embd=64, n_layer=2, n_head=4, layer_norm_epsilon=1e-5),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--preset", default="124M", choices=sorted(PRESETS))
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--ours", metavar="PATH", help="tinylm's bench_gpt2_train binary")
    ap.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda[:N]")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skip: python3-torch not installed")
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from gen_gpt2_train_fixtures import forward, param_names

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            print(f"error: --device {a.device}: torch sees no CUDA device", file=sys.stderr)
            return 1
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    cfg = PRESETS[a.preset]
    C, V, P, F = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"], 4 * cfg["n_embd"]
    shapes = {"wte.weight": (V, C), "wpe.weight": (P, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        shapes.update({p + "ln_1.weight": (C,), p + "ln_1.bias": (C,), p + "attn.c_attn.weight": (C, 3 * C),
                       p + "attn.c_attn.bias": (3 * C,), p + "attn.c_proj.weight": (C, C), p + "attn.c_proj.bias": (C,),
                       p + "ln_2.weight": (C,), p + "ln_2.bias": (C,), p + "mlp.c_fc.weight": (C, F),
                       p + "mlp.c_fc.bias": (F,), p + "mlp.c_proj.weight": (F, C), p + "mlp.c_proj.bias": (C,)})
    w = {n: (torch.randn(shapes[n]) * 0.02).to(dev).requires_grad_(True) for n in param_names(cfg)}
    grid = torch.randint(0, V, (a.batch, a.seq_len + 1)).to(dev)
    inputs, targets = grid[:, :-1], grid[:, 1:]

    def step(dtype):
        if dtype == "bf16":
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                logits = forward(w, inputs, cfg)
            logits = logits.float()
        else:
            logits = forward(w, inputs, cfg)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
        loss.backward()
        with torch.no_grad():
            for t in w.values():
                t.add_(t.grad, alpha=-1e-4)
                t.grad = None
        return float(loss)

    ours = {}
    if a.ours:
        out = subprocess.run([a.ours, "--json", "--threads", str(a.threads), "--steps", str(a.steps), "--preset",
                              a.preset, "--dtypes", a.dtypes], capture_output=True, text=True, check=True).stdout
        ours = {r["dtype"]: r["ms_per_step"] for r in json.loads(out)["rows"]}
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"{a.threads} threads"
    print(f"GPT-2 {a.preset} training step, B={a.batch} T={a.seq_len}, {where}, "
          f"torch {torch.__version__}, medians of {a.steps} after a warm-up")
    print(f"{'dtype':6} {'torch ms':>10} {'tinylm ms':>10} {'speed-up':>9}")
    for dtype in a.dtypes.split(","):
        step(dtype)  # warm-up
        ms = []
        for _ in range(a.steps):
            sync()
            t0 = time.perf_counter()
            step(dtype)
            sync()
            ms.append((time.perf_counter() - t0) * 1e3)
        torch_ms = statistics.median(ms)
        mine = ours.get(dtype)
        print(f"{dtype:6} {torch_ms:10.1f} " + (f"{mine:10.1f} {torch_ms / mine:8.2f}x" if mine else f"{'-':>10}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
