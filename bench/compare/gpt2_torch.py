#!/usr/bin/python3
"""Time eager PyTorch GPT-2 inference (KV cache) next to tinylm's bench_gpt2.

Workload (the same as tinylm's bench_gpt2, see README.md in this directory):
batch 1, a fixed 16-token prompt, greedy decode of 64 new tokens, for float32
and bfloat16 weights and activations. Prefill tok/s = 16 / (time of the
16-token forward that fills the cache); decode tok/s = (generated - 1) /
(time of the decode loop), as tinylm counts it.

--device cuda runs it on a GPU (each token's argmax read by the host, as tinylm's
sampler reads it), for the side-by-side with `tinylm generate --device gpu`
(bench/gpu_compare.sh).

Prints a table of PyTorch figures, the greedy ids of the f32 model for the
prompt (the ids `tinylm generate --temperature 0` should produce on the same
directory) and, with --ours, a side-by-side table with tinylm's figures.
Exits 0 with "skip: python3-torch not installed" when torch is missing.
"""

import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

# "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over"
PROMPT = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13, 383, 2068,
          7586, 21831, 18045, 625]
PROMPT_TEXT = ("The quick brown fox jumps over the lazy dog. "
               "The quick brown fox jumps over")

PRESETS = {
    "124M": dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                 n_head=12, n_inner=None, layer_norm_epsilon=1e-5),
    "small-test": dict(vocab_size=50257, n_positions=128, n_embd=64,
                       n_layer=2, n_head=4, n_inner=None,
                       layer_norm_epsilon=1e-5),
}

DTYPES = ["f32", "bf16", "f16"]
TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def default_threads():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", metavar="DIR",
                    help="Hugging Face GPT-2 directory (config.json + "
                         "model.safetensors); default: random N(0, 0.02) "
                         "weights of --preset, built in memory")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="124M",
                    help="shape of the in-memory model without --model "
                         "(default 124M)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (default: all cores)")
    ap.add_argument("--reps", type=int, default=3,
                    help="timed runs per dtype after 1 warm-up (default 3)")
    ap.add_argument("--tokens", type=int, default=64,
                    help="new tokens per run (default 64)")
    ap.add_argument("--dtypes", default="f32,bf16",
                    help="comma-separated subset of f32,bf16,f16 (default f32,bf16; PyTorch's "
                         "bf16 on a CPU needs AVX-512 oneDNN kernels)")
    ap.add_argument("--device", default="cpu",
                    help="torch device: cpu (default) or cuda[:N]")
    ap.add_argument("--ours", metavar="PATH",
                    help="tinylm's bench_gpt2 binary, run as "
                         "'PATH --reps N --threads T'")
    a = ap.parse_args()
    if a.threads <= 0:
        a.threads = default_threads()
    if a.reps < 1:
        ap.error("--reps must be >= 1")
    if a.tokens < 2:
        ap.error("--tokens must be >= 2")
    return a


# ---------------------------------------------------------------------------
# safetensors

ST_DTYPES = {"F32": ("float32", 4), "F16": ("float16", 2),
             "BF16": ("bfloat16", 2), "F64": ("float64", 8)}


def read_safetensors(torch, path):
    """{name: tensor} of one .safetensors file (8-byte little-endian header
    length, JSON header, raw little-endian data). Tensors are copied out of
    the file buffer, in their stored dtype."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors file")
        n = struct.unpack("<Q", raw)[0]
        if n > size - 8:
            raise ValueError(f"{path}: header length {n} past the end of the file")
        header = json.loads(f.read(n).decode("utf-8"))
        data = bytearray(size - 8 - n)
        if f.readinto(memoryview(data)) != len(data):
            raise ValueError(f"{path}: short read")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in ST_DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {info['dtype']}")
        tname, item = ST_DTYPES[info["dtype"]]
        shape = [int(d) for d in info["shape"]]
        begin, end = (int(x) for x in info["data_offsets"])
        numel = math.prod(shape)
        if end - begin != numel * item or not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {info['data_offsets']}")
        dt = getattr(torch, tname)
        if numel == 0:
            out[name] = torch.empty(shape, dtype=dt)
        else:
            out[name] = torch.frombuffer(data, dtype=dt, count=numel,
                                         offset=begin).reshape(shape).clone()
    return out


def load_model_dir(torch, path):
    """(config dict, {name: float32 tensor}) of a GPT-2 directory (or a
    .safetensors file with config.json beside it)."""
    d = os.path.dirname(path) if os.path.isfile(path) else path
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        j = json.load(f)
    cfg = dict(vocab_size=int(j["vocab_size"]),
               n_positions=int(j.get("n_positions", j.get("n_ctx", 0))),
               n_embd=int(j["n_embd"]), n_layer=int(j["n_layer"]),
               n_head=int(j["n_head"]),
               n_inner=None if j.get("n_inner") is None else int(j["n_inner"]),
               layer_norm_epsilon=float(j.get("layer_norm_epsilon", 1e-5)))
    act = j.get("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError(f"unsupported activation_function '{act}'")
    if os.path.isfile(path):
        files = [path]
    elif os.path.isfile(os.path.join(d, "model.safetensors")):
        files = [os.path.join(d, "model.safetensors")]
    else:  # sharded checkpoint
        with open(os.path.join(d, "model.safetensors.index.json"), encoding="utf-8") as f:
            files = [os.path.join(d, s) for s in sorted(set(json.load(f)["weight_map"].values()))]
    params = {}
    for fn in files:
        for name, t in read_safetensors(torch, fn).items():
            if name.startswith("transformer."):
                name = name[len("transformer."):]
            if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
                continue  # causal-mask buffers
            params[name] = t.float()
    return cfg, params


def param_shapes(cfg):
    C, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    F = cfg["n_inner"] or 4 * C
    s = {"wte.weight": [V, C], "wpe.weight": [P, C],
         "ln_f.weight": [C], "ln_f.bias": [C]}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        s.update({p + "ln_1.weight": [C], p + "ln_1.bias": [C],
                  p + "attn.c_attn.weight": [C, 3 * C], p + "attn.c_attn.bias": [3 * C],
                  p + "attn.c_proj.weight": [C, C], p + "attn.c_proj.bias": [C],
                  p + "ln_2.weight": [C], p + "ln_2.bias": [C],
                  p + "mlp.c_fc.weight": [C, F], p + "mlp.c_fc.bias": [F],
                  p + "mlp.c_proj.weight": [F, C], p + "mlp.c_proj.bias": [C]})
    return s


def random_params(torch, cfg):
    """Every parameter N(0, 0.02), like bench_gpt2 (values do not matter for
    timing)."""
    g = torch.Generator().manual_seed(1)
    return {name: torch.empty(shape).normal_(0.0, 0.02, generator=g)
            for name, shape in param_shapes(cfg).items()}


def check_params(cfg, params):
    for name, shape in param_shapes(cfg).items():
        if name not in params:
            raise ValueError(f"missing tensor {name}")
        if list(params[name].shape) != shape:
            raise ValueError(f"tensor {name}: shape {list(params[name].shape)}, expected {shape}")
    if "lm_head.weight" in params and list(params["lm_head.weight"].shape) != param_shapes(cfg)["wte.weight"]:
        raise ValueError("tensor lm_head.weight: wrong shape")


def preset_of(cfg):
    for name, p in PRESETS.items():
        if all(cfg[k] == v for k, v in p.items() if k != "layer_norm_epsilon"):
            return name
    return None


# ---------------------------------------------------------------------------
# model


class GPT2:
    """GPT-2 with Conv1D weights (y = x @ W + b), pre-LN blocks, tanh GELU,
    a preallocated per-layer KV cache [H, capacity, D], tied head."""

    def __init__(self, torch, cfg, params, dtype, device="cpu"):
        self.torch, self.F = torch, torch.nn.functional
        self.device = torch.device(device)
        self.C, self.H = cfg["n_embd"], cfg["n_head"]
        self.D = self.C // self.H
        self.n_positions = cfg["n_positions"]
        self.eps = cfg["layer_norm_epsilon"]
        self.dtype = dtype
        p = {k: v.to(device=self.device, dtype=dtype).contiguous() for k, v in params.items()}
        self.wte, self.wpe = p["wte.weight"], p["wpe.weight"]
        self.head = p.get("lm_head.weight", self.wte)
        self.ln_f = (p["ln_f.weight"], p["ln_f.bias"])
        self.layers = []
        for i in range(cfg["n_layer"]):
            q = lambda n: p[f"h.{i}.{n}"]
            self.layers.append((q("ln_1.weight"), q("ln_1.bias"),
                                q("attn.c_attn.weight"), q("attn.c_attn.bias"),
                                q("attn.c_proj.weight"), q("attn.c_proj.bias"),
                                q("ln_2.weight"), q("ln_2.bias"),
                                q("mlp.c_fc.weight"), q("mlp.c_fc.bias"),
                                q("mlp.c_proj.weight"), q("mlp.c_proj.bias")))
        tensors = {id(t): t for t in p.values()}
        self.weight_bytes = sum(t.numel() * t.element_size() for t in tensors.values())

    def new_cache(self, capacity):
        z = lambda: self.torch.zeros(self.H, capacity, self.D, dtype=self.dtype,
                                     device=self.device)
        return {"length": 0, "kv": [(z(), z()) for _ in self.layers]}

    def forward(self, ids, cache):
        """Logits [vocab] of the last of `ids`, appending their keys and
        values to the cache."""
        torch, F = self.torch, self.F
        C, H, D = self.C, self.H, self.D
        T, p0 = len(ids), cache["length"]
        L = p0 + T
        x = self.wte[torch.tensor(ids, device=self.device)] + self.wpe[p0:L]  # [T, C]
        scale = 1.0 / math.sqrt(D)
        mask = None
        if T > 1:  # query i (position p0+i) sees keys 0..p0+i
            mask = torch.ones(T, L, dtype=torch.bool, device=self.device).triu_(p0 + 1)
        for (l1w, l1b, wa, ba, wp, bp, l2w, l2b, wf, bf, wm, bm), (kc, vc) in zip(self.layers, cache["kv"]):
            h = F.layer_norm(x, (C,), l1w, l1b, self.eps)
            q, k, v = torch.addmm(ba, h, wa).split(C, dim=1)
            q = q.view(T, H, D).transpose(0, 1) * scale  # [H, T, D]
            kc[:, p0:L].copy_(k.view(T, H, D).transpose(0, 1))
            vc[:, p0:L].copy_(v.view(T, H, D).transpose(0, 1))
            att = torch.bmm(q, kc[:, :L].transpose(1, 2))  # [H, T, L]
            if mask is not None:
                att.masked_fill_(mask, float("-inf"))
            att = torch.softmax(att, dim=-1)
            y = torch.bmm(att, vc[:, :L]).transpose(0, 1).reshape(T, C)
            x = x + torch.addmm(bp, y, wp)
            h = F.layer_norm(x, (C,), l2w, l2b, self.eps)
            h = F.gelu(torch.addmm(bf, h, wf), approximate="tanh")
            x = x + torch.addmm(bm, h, wm)
        cache["length"] = L
        x = F.layer_norm(x[-1:], (C,), self.ln_f[0], self.ln_f[1], self.eps)
        return F.linear(x, self.head)[0]  # x @ wte.T


def generate(model, prompt, new_tokens):
    """Greedy decode as tinylm's generate::generate does it: cache allocated
    before timing, prefill, then sample / forward one token at a time (the
    last sampled token is not fed back). Returns (ids, prefill s, decode s)."""
    torch = model.torch
    cap = min(model.n_positions, len(prompt) + new_tokens)
    cache = model.new_cache(cap)
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    logits = model.forward(prompt, cache)
    sync()
    t1 = time.perf_counter()
    ids = []
    for i in range(new_tokens):
        nxt = int(torch.argmax(logits))
        ids.append(nxt)
        if i + 1 == new_tokens or cache["length"] >= model.n_positions:
            break
        logits = model.forward([nxt], cache)
    sync()
    t2 = time.perf_counter()
    return ids, t1 - t0, t2 - t1


def bench_dtype(torch, cfg, params, dtype, reps, new_tokens, device):
    model = GPT2(torch, cfg, params, dtype, device)
    pre, dec, first_ids = [], [], None
    for r in range(reps + 1):
        ids, tp, td = generate(model, PROMPT, new_tokens)
        if r == 0:
            first_ids = ids
            continue  # warm-up
        pre.append(tp)
        dec.append(td / max(len(ids) - 1, 1))
    return dict(weights_mb=model.weight_bytes / 1e6,
                prefill=len(PROMPT) / statistics.median(pre),
                decode=1.0 / statistics.median(dec),
                ms_per_token=1000.0 * statistics.median(dec),
                ids=first_ids)


# ---------------------------------------------------------------------------
# tinylm side


def run_ours(path, reps, threads, preset, tokens, dtypes):
    cmd = [path, "--reps", str(reps), "--threads", str(threads)]
    if preset != "124M":
        cmd += ["--preset", preset]
    if tokens != 64:
        cmd += ["--tokens", str(tokens)]
    print("running: " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        print(f"error: cannot run {path}: {e}", file=sys.stderr)
        return None
    if p.returncode != 0:
        print(f"error: {path} exited with status {p.returncode}\n{p.stderr}", file=sys.stderr)
        return None
    rows, title = {}, []
    for line in p.stdout.splitlines():
        # The kernel level ("kernels: avx2 (supported: ...)") and the workload.
        if line.startswith(("kernels:", "GPT-2 ")):
            title.append(line.strip())
        # bench_gpt2's rows: level, dtype, weight MB, load ms, 1st fwd ms, prefill/s, decode/s, ...
        # (builds before 91cf6fb have no level column).
        f = line.split()
        d = 1 if len(f) > 1 and f[1] in DTYPES else 0
        if len(f) >= d + 6 and f[d] in DTYPES:
            try:
                rows[f[d]] = (float(f[d + 4]), float(f[d + 5]))
            except ValueError:
                pass
    missing = [d for d in dtypes if d not in rows]
    if missing:
        print(f"error: no {', '.join(missing)} row in the output of {path}:\n{p.stdout}",
              file=sys.stderr)
        return None
    return title, rows


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        print("skip: python3-torch not installed")
        return 0
    torch.set_num_threads(args.threads)
    on_gpu = args.device.startswith("cuda")
    if on_gpu and not torch.cuda.is_available():
        print(f"error: --device {args.device}: torch sees no CUDA device", file=sys.stderr)
        return 1

    if args.model:
        cfg, params = load_model_dir(torch, args.model)
        source = args.model
    else:
        cfg = dict(PRESETS[args.preset])
        params = random_params(torch, cfg)
        source = f"random N(0, 0.02) weights, preset {args.preset}"
    check_params(cfg, params)
    if len(PROMPT) + 1 > cfg["n_positions"]:
        print("error: the model's context is shorter than the prompt", file=sys.stderr)
        return 1
    preset = preset_of(cfg)
    n_params = sum(t.numel() for t in params.values())
    where = (f"on {torch.cuda.get_device_name(torch.device(args.device))}" if on_gpu
             else f"{torch.get_num_threads()} threads")
    print(f"PyTorch {torch.__version__}, {where}; GPT-2 "
          f"{preset or 'custom'} ({n_params / 1e6:.1f}M parameters) from {source}")
    print(f"batch 1, prompt {len(PROMPT)} tokens, {args.tokens} new tokens (greedy), "
          f"1 warm-up + {args.reps} timed runs, medians")

    dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        print(f"error: --dtypes takes a subset of {','.join(DTYPES)}", file=sys.stderr)
        return 2
    res = {}
    with torch.inference_mode():
        for name in dtypes:
            dt = getattr(torch, TORCH_DTYPES[name])
            res[name] = bench_dtype(torch, cfg, params, dt, args.reps, args.tokens, args.device)
    print(f"{'dtype':<6} {'weights MB':>12} {'prefill tok/s':>14} {'decode tok/s':>14} {'ms/token':>10}")
    for name in dtypes:
        r = res[name]
        print(f"{name:<6} {r['weights_mb']:>12.1f} {r['prefill']:>14.1f} {r['decode']:>14.1f} "
              f"{r['ms_per_token']:>10.1f}")

    ids = res[dtypes[0]]["ids"]
    print(f"\ngreedy ids, PyTorch {dtypes[0]} ({len(ids)} tokens):")
    print(" ".join(str(i) for i in ids))
    if args.model:
        print(f"compare: tinylm generate --model {args.model} --prompt '{PROMPT_TEXT}' "
              f"--max-tokens {args.tokens} --temperature 0 --ignore-eos")

    if not args.ours:
        return 0
    print()
    if preset is None:
        print("warning: the model matches no bench_gpt2 preset; tinylm runs its 124M model",
              file=sys.stderr)
    ours = run_ours(args.ours, args.reps, args.threads, preset or "124M", args.tokens, dtypes)
    if ours is None:
        return 1
    title, rows = ours
    for t in title:
        print(f"tinylm: {t}")
    print("ratio = tinylm / torch (tok/s; > 1: tinylm faster)")
    print(f"{'dtype':<6} {'torch prefill':>14} {'tinylm prefill':>15} {'ratio':>7} "
          f"{'torch decode':>13} {'tinylm decode':>14} {'ratio':>7}")
    for name in dtypes:
        t, (op, od) = res[name], rows[name]
        print(f"{name:<6} {t['prefill']:>14.1f} {op:>15.1f} {op / t['prefill']:>7.2f} "
              f"{t['decode']:>13.1f} {od:>14.1f} {od / t['decode']:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
