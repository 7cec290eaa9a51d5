#!/usr/bin/python3
"""Time a float64 eager PyTorch microgpt next to tinylm's benchmark binary.

Workloads (see README.md in this directory):
  forward   loss of each of the first 100 names, one doc at a time, no grad
  fwd_bwd   forward + backward over the same 100 docs
  adam      one Adam step per doc over the same 100 docs (steps 0..99)
  full_run  (--full) the default microgpt run: shuffle, gauss init,
            1000 Adam steps, 20 samples at temperature 0.5

Prints the median and min wall time (ms) of each workload and the sum of the
100 forward losses (repr), and, with --ours, a side-by-side table.
Exits 0 with "skip: python3-torch not installed" when torch is missing.
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

N_EMBD = 16
N_HEAD = 4
N_LAYER = 1
BLOCK_SIZE = 16
HEAD_DIM = N_EMBD // N_HEAD
N_DOCS = 100
NUM_STEPS = 1000
N_SAMPLES = 20
TEMPERATURE = 0.5
LR, BETA1, BETA2, EPS = 0.01, 0.85, 0.99, 1e-8


def default_names_path():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "data", "names.txt"))


def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def param_shapes(vocab):
    shapes = [("wte", vocab, N_EMBD), ("wpe", BLOCK_SIZE, N_EMBD),
              ("lm_head", vocab, N_EMBD)]
    for i in range(N_LAYER):
        shapes += [(f"layer{i}.attn_wq", N_EMBD, N_EMBD),
                   (f"layer{i}.attn_wk", N_EMBD, N_EMBD),
                   (f"layer{i}.attn_wv", N_EMBD, N_EMBD),
                   (f"layer{i}.attn_wo", N_EMBD, N_EMBD),
                   (f"layer{i}.mlp_fc1", 4 * N_EMBD, N_EMBD),
                   (f"layer{i}.mlp_fc2", N_EMBD, 4 * N_EMBD)]
    return shapes


class MicroGPT:
    """Parameters are separate leaf matrices ([nout][nin], row-major) whose
    storage is one flat float64 vector, and whose .grad tensors are views of
    one flat gradient vector (autograd accumulates into them in place).  So
    the forward/backward sees ordinary per-matrix leaves, and Adam is a
    handful of vector ops on the flat buffers."""

    def __init__(self, torch, vocab, bos):
        self.torch = torch
        self.F = torch.nn.functional
        self.vocab = vocab
        self.bos = bos
        self.shapes = param_shapes(vocab)
        self.n_params = sum(r * c for _, r, c in self.shapes)
        f64 = torch.float64
        self.flat = torch.zeros(self.n_params, dtype=f64)
        self.grad = torch.zeros(self.n_params, dtype=f64)
        self.m = torch.zeros(self.n_params, dtype=f64)
        self.v = torch.zeros(self.n_params, dtype=f64)
        self.p, off = {}, 0
        for name, r, c in self.shapes:
            leaf = self.flat[off:off + r * c].view(r, c).detach().requires_grad_(True)
            leaf.grad = self.grad[off:off + r * c].view(r, c)
            self.p[name] = leaf
            off += r * c
        # mask[i, j] is True where key j is in the future of query i
        self.mask = torch.ones(BLOCK_SIZE, BLOCK_SIZE, dtype=torch.bool).triu(1)

    def set_weights(self, values):
        with self.torch.no_grad():
            self.flat.copy_(values)
            self.grad.zero_()
            self.m.zero_()
            self.v.zero_()

    def zero_grad(self):
        self.grad.zero_()

    def check_grad_storage(self):
        """autograd must have accumulated into our flat gradient in place."""
        for leaf in self.p.values():
            if leaf.grad is None or leaf.grad.storage().data_ptr() != self.grad.storage().data_ptr():
                raise RuntimeError("gradients were not accumulated into the flat buffer")

    @staticmethod
    def rmsnorm(x):
        return x * (x.pow(2).mean(-1, keepdim=True) + 1e-5).pow(-0.5)

    def logits(self, tokens):
        """tokens: 1-D int64 tensor of n <= BLOCK_SIZE inputs -> [n][vocab]."""
        F = self.F
        p = self.p
        n = tokens.shape[0]
        x = p["wte"][tokens] + p["wpe"][:n]
        x = self.rmsnorm(x)
        mask = self.mask[:n, :n]
        scale = 1.0 / math.sqrt(HEAD_DIM)
        for i in range(N_LAYER):
            r = x
            x = self.rmsnorm(x)
            q = F.linear(x, p[f"layer{i}.attn_wq"]).view(n, N_HEAD, HEAD_DIM).transpose(0, 1)
            k = F.linear(x, p[f"layer{i}.attn_wk"]).view(n, N_HEAD, HEAD_DIM).transpose(0, 1)
            v = F.linear(x, p[f"layer{i}.attn_wv"]).view(n, N_HEAD, HEAD_DIM).transpose(0, 1)
            att = (q @ k.transpose(-2, -1)) * scale          # [head][n][n]
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ v).transpose(0, 1).reshape(n, N_EMBD)  # concat heads
            x = F.linear(y, p[f"layer{i}.attn_wo"]) + r
            r = x
            x = self.rmsnorm(x)
            x = F.linear(F.relu(F.linear(x, p[f"layer{i}.mlp_fc1"])),
                         p[f"layer{i}.mlp_fc2"]) + r
        return F.linear(x, p["lm_head"])

    def loss(self, inputs, targets):
        return self.F.cross_entropy(self.logits(inputs), targets)

    def adam_step(self, step):
        torch = self.torch
        lr_t = LR * (1 - step / NUM_STEPS)
        with torch.no_grad():
            g = self.grad
            self.m.mul_(BETA1).add_(g, alpha=1 - BETA1)
            self.v.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
            mhat = self.m / (1 - BETA1 ** (step + 1))
            vhat = self.v / (1 - BETA2 ** (step + 1))
            self.flat.sub_(lr_t * mhat / (vhat.sqrt() + EPS))
            g.zero_()


def encode(torch, stoi, bos, doc):
    tokens = [bos] + [stoi[ch] for ch in doc] + [bos]
    n = min(BLOCK_SIZE, len(tokens) - 1)
    return (torch.tensor(tokens[:n], dtype=torch.int64),
            torch.tensor(tokens[1:n + 1], dtype=torch.int64))


def time_it(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def run_ours(path, reps):
    cmd = [path, "--json", "--reps", str(reps)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
    text = proc.stdout.strip()
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                    break
                except ValueError:
                    pass
    if not isinstance(obj, dict):
        raise RuntimeError(f"no JSON object on stdout of {' '.join(cmd)}")
    return obj


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default=default_names_path(),
                    help="names file (default: data/names.txt of the repo)")
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--full", action="store_true",
                    help="also time the full 1000-step run + sampling")
    ap.add_argument("--ours", metavar="PATH",
                    help="tinylm benchmark binary (run as PATH --json --reps N)")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be >= 1")

    try:
        import torch
    except Exception:
        print("skip: python3-torch not installed")
        return 0

    torch.set_num_threads(args.threads)
    all_docs = load_docs(args.names)
    uchars = sorted(set("".join(all_docs)))
    stoi = {ch: i for i, ch in enumerate(uchars)}
    bos = len(uchars)
    vocab = len(uchars) + 1
    model = MicroGPT(torch, vocab, bos)

    det = torch.tensor([0.08 * math.sin(0.37 * i + 0.11)
                        for i in range(model.n_params)], dtype=torch.float64)
    # Token tensors are the workload's input data: built once, outside timing.
    batch = [encode(torch, stoi, bos, d) for d in all_docs[:N_DOCS]]
    model.set_weights(det)

    def w_forward():
        losses = []
        with torch.no_grad():
            for inp, tgt in batch:
                losses.append(model.loss(inp, tgt).item())
        return losses

    def w_fwd_bwd():
        model.zero_grad()
        for inp, tgt in batch:
            model.loss(inp, tgt).backward()

    def w_adam():
        model.set_weights(det)
        for step, (inp, tgt) in enumerate(batch):
            model.loss(inp, tgt).backward()
            model.adam_step(step)

    def w_full():
        docs = list(all_docs)
        random.seed(42)
        random.shuffle(docs)
        init = [random.gauss(0, 0.08) for _ in range(model.n_params)]
        model.set_weights(torch.tensor(init, dtype=torch.float64))
        for step in range(NUM_STEPS):
            inp, tgt = encode(torch, stoi, bos, docs[step % len(docs)])
            model.loss(inp, tgt).backward()
            model.adam_step(step)
        samples = []
        with torch.no_grad():
            for _ in range(N_SAMPLES):
                ids = [bos]
                out = []
                for _pos in range(BLOCK_SIZE):
                    lg = model.logits(torch.tensor(ids, dtype=torch.int64))[-1]
                    probs = (lg / TEMPERATURE).softmax(-1).tolist()
                    tok = random.choices(range(vocab), weights=probs)[0]
                    if tok == bos:
                        break
                    out.append(uchars[tok])
                    ids.append(tok)
                samples.append("".join(out))
        return samples

    loss_sum = sum(w_forward())
    results = {}
    results["forward"] = time_it(w_forward, args.reps)
    results["fwd_bwd"] = time_it(w_fwd_bwd, args.reps)
    results["adam"] = time_it(w_adam, args.reps)
    model.check_grad_storage()
    samples = None
    if args.full:
        results["full_run"] = time_it(w_full, args.reps)
        samples = w_full()

    print(f"torch {torch.__version__}, float64, threads={args.threads}, "
          f"reps={args.reps}, vocab={vocab}, params={model.n_params}, "
          f"docs={len(all_docs)}")
    print(f"forward_loss_sum = {loss_sum!r}")
    if samples is not None:
        print("samples: " + " ".join(samples))

    if not args.ours:
        print(f"{'workload':<10} {'median ms':>12} {'min ms':>12}")
        for name, (med, mn) in results.items():
            print(f"{name:<10} {med:12.3f} {mn:12.3f}")
        return 0

    try:
        ours = run_ours(args.ours, args.reps)
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{'workload':<10} {'torch ms':>12} {'tinylm ms':>12} {'speed-up':>10}")
    for name, (med, _mn) in results.items():
        theirs = ours.get(f"{name}_ms")
        speed = f"{med / theirs:.2f}x" if theirs else "n/a"
        print(f"{name:<10} {med:12.3f} {fmt(theirs):>12} {speed:>10}")
    if ours.get("process_start_ms") is not None:
        print(f"tinylm process_start_ms = {fmt(ours['process_start_ms'])}")
    other = ours.get("forward_loss_sum")
    if other is None:
        print("forward_loss_sum: tinylm reported none")
        return 0
    other = float(other)
    agree = abs(loss_sum - other) <= 1e-9 * max(abs(loss_sum), abs(other))
    print(f"forward_loss_sum: torch {loss_sum!r} tinylm {other!r} -> "
          f"{'agree' if agree else 'DISAGREE'} (1e-9 relative)")
    return 0 if agree else 2


if __name__ == "__main__":
    sys.exit(main())
