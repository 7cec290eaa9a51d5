#!/usr/bin/python3
"""Independent pure-Python reference for microgpt (scalar autograd GPT).

Reproduces the Feb 2026 microgpt.py training/sampling procedure bit for bit
(same Value op order, same use of the global `random` module), so that
tinylm's C++ implementation can be tested against its output.

Usage (from the repository root):
    /usr/bin/python3 tools/microgpt_reference.py                       # default run
    /usr/bin/python3 tools/microgpt_reference.py --steps 40 --n-embd 8 ...
    /usr/bin/python3 tools/microgpt_reference.py --check-reference-values [--out FILE]
"""

import argparse
import json
import math
import random
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT / "data" / "names.txt"


# ----------------------------------------------------------------------------
# Scalar autograd


class Value:
    __slots__ = ("data", "grad", "_children", "_local_grads")

    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def __pow__(self, other):
        # other is a plain number
        return Value(self.data ** other, (self,), (other * self.data ** (other - 1),))

    def log(self):
        return Value(math.log(self.data), (self,), (1 / self.data,))

    def exp(self):
        return Value(math.exp(self.data), (self,), (math.exp(self.data),))

    def relu(self):
        return Value(max(0, self.data), (self,), (float(self.data > 0),))

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other ** -1

    def __rtruediv__(self, other):
        return other * self ** -1

    def backward(self):
        # Iterative DFS producing exactly the postorder of the recursive
        #   build(v): if v not visited: mark; for c in children: build(c); topo.append(v)
        topo = []
        visited = {self}
        stack = [(self, iter(self._children))]
        while stack:
            node, it = stack[-1]
            for child in it:
                if child not in visited:
                    visited.add(child)
                    stack.append((child, iter(child._children)))
                    break
            else:
                stack.pop()
                topo.append(node)
        self.grad = 1
        for v in reversed(topo):
            for child, lg in zip(v._children, v._local_grads):
                child.grad += lg * v.grad


# ----------------------------------------------------------------------------
# Model


def linear(x, w):
    return [sum(wi * xi for wi, xi in zip(wo, x)) for wo in w]


def softmax(logits):
    max_val = max(val.data for val in logits)
    exps = [(val - max_val).exp() for val in logits]
    total = sum(exps)
    return [e / total for e in exps]


def rmsnorm(x):
    ms = sum(xi * xi for xi in x) / len(x)
    scale = (ms + 1e-5) ** -0.5
    return [xi * scale for xi in x]


class Config:
    def __init__(self, vocab_size, n_embd=16, n_head=4, n_layer=1, block_size=16):
        self.vocab_size = vocab_size
        self.n_embd = n_embd
        self.n_head = n_head
        self.n_layer = n_layer
        self.block_size = block_size
        self.head_dim = n_embd // n_head


def matrix_shapes(cfg):
    """state_dict keys and shapes, in order."""
    shapes = [
        ("wte", cfg.vocab_size, cfg.n_embd),
        ("wpe", cfg.block_size, cfg.n_embd),
        ("lm_head", cfg.vocab_size, cfg.n_embd),
    ]
    for i in range(cfg.n_layer):
        shapes += [
            (f"layer{i}.attn_wq", cfg.n_embd, cfg.n_embd),
            (f"layer{i}.attn_wk", cfg.n_embd, cfg.n_embd),
            (f"layer{i}.attn_wv", cfg.n_embd, cfg.n_embd),
            (f"layer{i}.attn_wo", cfg.n_embd, cfg.n_embd),
            (f"layer{i}.mlp_fc1", 4 * cfg.n_embd, cfg.n_embd),
            (f"layer{i}.mlp_fc2", cfg.n_embd, 4 * cfg.n_embd),
        ]
    return shapes


def init_random(cfg, std=0.08):
    def matrix(nout, nin):
        return [[Value(random.gauss(0, std)) for _ in range(nin)] for _ in range(nout)]

    return {name: matrix(nout, nin) for name, nout, nin in matrix_shapes(cfg)}


def init_deterministic(cfg):
    """w_i = 0.08*sin(0.37*i + 0.11) over the flat params in order."""
    sd = {}
    i = 0
    for name, nout, nin in matrix_shapes(cfg):
        mat = []
        for _ in range(nout):
            row = []
            for _ in range(nin):
                row.append(Value(0.08 * math.sin(0.37 * i + 0.11)))
                i += 1
            mat.append(row)
        sd[name] = mat
    return sd


def flatten(sd):
    return [p for mat in sd.values() for row in mat for p in row]


def gpt(cfg, sd, token_id, pos_id, keys, values):
    head_dim = cfg.head_dim
    x = [t + p for t, p in zip(sd["wte"][token_id], sd["wpe"][pos_id])]
    x = rmsnorm(x)
    for li in range(cfg.n_layer):
        x_residual = x
        x = rmsnorm(x)
        q = linear(x, sd[f"layer{li}.attn_wq"])
        k = linear(x, sd[f"layer{li}.attn_wk"])
        v = linear(x, sd[f"layer{li}.attn_wv"])
        keys[li].append(k)
        values[li].append(v)
        x_attn = []
        for h in range(cfg.n_head):
            hs = h * head_dim
            q_h = q[hs:hs + head_dim]
            k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
            v_h = [vi[hs:hs + head_dim] for vi in values[li]]
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) / head_dim ** 0.5
                           for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h)))
                        for j in range(head_dim)]
            x_attn.extend(head_out)
        x = linear(x_attn, sd[f"layer{li}.attn_wo"])
        x = [a + b for a, b in zip(x, x_residual)]
        x_residual = x
        x = rmsnorm(x)
        x = linear(x, sd[f"layer{li}.mlp_fc1"])
        x = [xi.relu() for xi in x]
        x = linear(x, sd[f"layer{li}.mlp_fc2"])
        x = [a + b for a, b in zip(x, x_residual)]
    return linear(x, sd["lm_head"])


def doc_loss(cfg, sd, uchars, bos, doc):
    tokens = [bos] + [uchars.index(ch) for ch in doc] + [bos]
    n = min(cfg.block_size, len(tokens) - 1)
    keys = [[] for _ in range(cfg.n_layer)]
    values = [[] for _ in range(cfg.n_layer)]
    losses = []
    for pos_id in range(n):
        logits = gpt(cfg, sd, tokens[pos_id], pos_id, keys, values)
        probs = softmax(logits)
        loss_t = -probs[tokens[pos_id + 1]].log()
        losses.append(loss_t)
    return (1 / n) * sum(losses)


class Adam:
    def __init__(self, params, learning_rate, beta1=0.85, beta2=0.99, eps=1e-8):
        self.params = params
        self.learning_rate = learning_rate
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.m = [0.0] * len(params)
        self.v = [0.0] * len(params)

    def step(self, step, num_steps):
        beta1, beta2, eps_adam = self.beta1, self.beta2, self.eps
        m, v = self.m, self.v
        lr_t = self.learning_rate * (1 - step / num_steps)
        for i, p in enumerate(self.params):
            m[i] = beta1 * m[i] + (1 - beta1) * p.grad
            v[i] = beta2 * v[i] + (1 - beta2) * p.grad ** 2
            m_hat = m[i] / (1 - beta1 ** (step + 1))
            v_hat = v[i] / (1 - beta2 ** (step + 1))
            p.data -= lr_t * m_hat / (v_hat ** 0.5 + eps_adam)
            p.grad = 0


# ----------------------------------------------------------------------------
# Training + sampling (the microgpt script)


def run(args):
    path = Path(args.data)
    docs = [l.strip() for l in open(path).read().strip().split('\n') if l.strip()]
    random.seed(args.seed)
    random.shuffle(docs)
    print(f"num docs: {len(docs)}")

    uchars = sorted(set(''.join(docs)))
    BOS = len(uchars)
    vocab_size = len(uchars) + 1
    print(f"vocab size: {vocab_size}")

    cfg = Config(vocab_size, n_embd=args.n_embd, n_head=args.n_head,
                 n_layer=args.n_layer, block_size=args.block_size)
    sd = init_random(cfg)
    params = flatten(sd)
    print(f"num params: {len(params)}")

    num_steps = args.steps
    opt = Adam(params, args.lr)
    for step in range(num_steps):
        doc = docs[step % len(docs)]
        loss = doc_loss(cfg, sd, uchars, BOS, doc)
        loss.backward()
        opt.step(step, num_steps)
        print(f"step {step+1:4d} / {num_steps:4d} | loss {loss.data:.4f}", flush=True)

    temperature = args.temperature
    print("\n--- inference (new, hallucinated names) ---")
    for sample_idx in range(args.samples):
        keys = [[] for _ in range(cfg.n_layer)]
        values = [[] for _ in range(cfg.n_layer)]
        token_id = BOS
        sample = []
        for pos_id in range(cfg.block_size):
            logits = gpt(cfg, sd, token_id, pos_id, keys, values)
            probs = softmax([l / temperature for l in logits])
            token_id = random.choices(range(vocab_size), weights=[p.data for p in probs])[0]
            if token_id == BOS:
                break
            sample.append(uchars[token_id])
        print(f"sample {sample_idx+1:2d}: {''.join(sample)}", flush=True)
    return 0


# ----------------------------------------------------------------------------
# Section 4: deterministic reference values

REF_LOSS_EMMA = 3.506449207715624
REF_GRADS = {
    64: 0.5013475135105153,
    432: -0.10409231751964869,
    700: 0.12256221981304923,
    1200: -0.003786914738571059,
    1500: -0.0012771713881593858,
    1700: 0.015920736906842876,
    2000: 0.018551333841752494,
    2500: -0.0005752369491939385,
    4191: 0.014184402670265658,
}
REF_ADAM_DOCS = ["emma", "olivia", "ava", "isabella", "sophia"]
REF_ADAM_LOSSES = [3.506449207715624, 3.2498071277112257, 2.7546668273691433,
                   3.496728826446422, 3.056047453583676]
REF_FINAL_PARAM0 = -0.00267390585765643
REF_NUM_PARAMS = 4192
REL_TOL = 1e-9


def check_reference_values(args):
    uchars = sorted(set("abcdefghijklmnopqrstuvwxyz"))
    BOS = len(uchars)
    cfg = Config(len(uchars) + 1)  # default architecture: 16/4/1/16
    ok = True

    def report(label, got, want):
        nonlocal ok
        good = math.isclose(got, want, rel_tol=REL_TOL, abs_tol=0.0)
        ok = ok and good
        print(f"{label:<28} got {got!r:<24} expected {want!r:<24} {'PASS' if good else 'FAIL'}")

    # loss("emma") and its gradients
    sd = init_deterministic(cfg)
    params = flatten(sd)
    if len(params) != REF_NUM_PARAMS:
        print(f"num params {len(params)} != {REF_NUM_PARAMS} FAIL")
        return 1
    print(f"vocab size: {cfg.vocab_size}, num params: {len(params)}")
    loss = doc_loss(cfg, sd, uchars, BOS, "emma")
    loss.backward()
    loss_emma = loss.data
    grad_emma = [float(p.grad) for p in params]
    report("loss(emma)", loss_emma, REF_LOSS_EMMA)
    for idx, want in REF_GRADS.items():
        report(f"grad[{idx}]", grad_emma[idx], want)

    # Five Adam steps from fresh deterministic weights
    sd = init_deterministic(cfg)
    params = flatten(sd)
    opt = Adam(params, 0.01)
    adam_losses = []
    for step, doc in enumerate(REF_ADAM_DOCS):
        loss = doc_loss(cfg, sd, uchars, BOS, doc)
        loss.backward()
        opt.step(step, 1000)
        adam_losses.append(loss.data)
    for step, (got, want) in enumerate(zip(adam_losses, REF_ADAM_LOSSES)):
        report(f"adam loss step {step} ({REF_ADAM_DOCS[step]})", got, want)
    report("final param[0]", params[0].data, REF_FINAL_PARAM0)
    params_after = [float(p.data) for p in params]

    print("ALL PASS" if ok else "SOME CHECKS FAILED")
    if args.out:
        if not ok:
            print(f"not writing {args.out}: checks failed", file=sys.stderr)
        else:
            out = {
                "generator": "tools/microgpt_reference.py --check-reference-values",
                "loss_emma": repr(loss_emma),
                "grad_emma": [repr(g) for g in grad_emma],
                "checked_grad_indices": {str(i): repr(grad_emma[i]) for i in REF_GRADS},
                "adam_docs": REF_ADAM_DOCS,
                "adam_losses": [repr(l) for l in adam_losses],
                "final_param0": repr(params_after[0]),
                "params_after_adam": [repr(p) for p in params_after],
            }
            p = Path(args.out)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(out, separators=(",", ":")) + "\n")
            print(f"wrote {p}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description="Pure-Python microgpt reference")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="training text, one doc per line")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--n-layer", type=int, default=1)
    ap.add_argument("--n-embd", type=int, default=16)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--temperature", type=float, default=0.5)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--check-reference-values", action="store_true",
                    help="run the deterministic Section-4 self-check instead of training")
    ap.add_argument("--out", default=None,
                    help="with --check-reference-values: write the computed values as JSON here")
    args = ap.parse_args()
    if args.out and not args.check_reference_values:
        ap.error("--out only applies with --check-reference-values")
    if args.check_reference_values:
        return check_reference_values(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
