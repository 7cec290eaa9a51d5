#!/usr/bin/python3
"""Generate the training-loop fixtures in tests/fixtures/train_loop/.

Reference values from PyTorch (Debian's python3-torch 1.13, one thread) for tinylm's training
loop (issue 13): batches cut from one token stream, the learning-rate schedule and the
optimizer step, all exactly as docs/training.md ("Data", "Optimization")
states them:

  split       n_val = floor(N * val_fraction), n_train = N - n_val
  sequential  step s, micro-batch a, row r: g = a*B + r, c = s*accum*B + g,
              W = (n_train - 1) // T, window start p = (c mod W) * T
  eval        batch k row r: j = k*B + r, W_val = (n_val - 1) // T, p = n_train + (j mod W_val)*T
  window      inputs tok[p .. p+T), targets tok[p+1 .. p+T]
  lr          warmup then cosine to min_lr (the spec's formula, in double)
  step        gradient = mean over the micro-batches of each one's mean-loss gradient
              (loss / accum, backward, accumulated in .grad); torch.nn.utils.clip_grad_norm_;
              torch.optim.AdamW with two parameter groups (the decay set with weight_decay,
              the rest with 0)

Three cases, one JSON file each (schema in tests/fixtures/train_loop/README.md):

  gpt2.json             the tiny GPT-2 of tests/fixtures/gpt2/tiny (model.safetensors) on a
                        3000-token stream; GPT-2 written in plain PyTorch by
                        tools/gen_gpt2_train_fixtures.py (imported, not copied)
  evermind_tiny.json    EvermindLM with the configuration of tests/fixtures/evl/tiny.json
                        (vocab 5, d 4, 1 layer, kernel 2, hidden 6, 2 experts, top 1) on a
                        600-token stream short enough that both window indices wrap around
  evermind_small.json   EvermindLM, vocab 64, d 16, 2 layers, kernel 3, hidden 32, 4 experts,
                        top 2 (so the gates carry gradient), 600 tokens

tests/fixtures/evl/tiny_f32.evl cannot be trained: its base parameters hold the fp16 edge
cases of that fixture (NaN, +-inf, 65504, 1e30, -65536 in emb and conv). The EvermindLM cases
therefore start from finite seeded weights written here as EVL0 version-1 checkpoints
(evermind_<case>_init.evl, by tools/gen_evl_fixtures.py's writer); the model is
bench/compare/evermind_torch.py's Evermind (imported, not copied), which runs over all T+1
tokens of a window: cross-entropy over its T predicted positions, aux over all T+1 routed
positions (as evermind::Model::forward_backward). evermind_<case>_grads.safetensors holds the
gradient of the mean objective of one batch (the first micro-batch of step 1) from the initial
weights: F32 "<name>" (float32 run) and F64 "f64.<name>" (float64 run), param_layout names
and shapes.

Every number comes from a float32 run; a float64 run of the same code (same tokens, same
initial weights widened) cross-checks it, and the differences are recorded in each JSON
("f32_vs_f64") and checked. --verify also checks, independently of torch.optim: the
spec's AdamW and clipping written out by hand in float64 against the float64 torch run, the
EVL0 reader against tests/fixtures/evl/tiny.json, and that the f32 and f64 runs clip on the
same steps and route every position to the same experts.

Usage (from the repository root):
    /usr/bin/python3 tools/gen_train_loop_fixtures.py            # generate, then verify
    /usr/bin/python3 tools/gen_train_loop_fixtures.py --verify   # verify existing files only
"""

import argparse
import json
import math
import random
import struct
import sys
import zlib
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(REPO_ROOT / "bench" / "compare"))
from evermind_torch import Evermind, param_shapes, set_threads  # noqa: E402
from gen_evl_fixtures import evl as evl_bytes  # noqa: E402
from gen_evl_fixtures import f32_bits  # noqa: E402
from gen_gpt2_fixtures import forward as gpt2_forward_one  # noqa: E402
from gen_gpt2_fixtures import read_safetensors, write_safetensors  # noqa: E402
from gen_gpt2_train_fixtures import forward as gpt2_forward  # noqa: E402
from gen_gpt2_train_fixtures import param_names as gpt2_param_names  # noqa: E402

TINY_GPT2 = REPO_ROOT / "tests" / "fixtures" / "gpt2" / "tiny"
EVL_DIR = REPO_ROOT / "tests" / "fixtures" / "evl"
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures" / "train_loop"

# The protocol shared by every case (the defaults of docs/training.md where it names one).
PROTOCOL = {
    "batch_size": 2, "seq_len": 16, "accum": 2, "order": "sequential", "val_fraction": 0.1,
    "eval_batches": 2, "steps": 10, "lr": 1e-3, "min_lr": 1e-4, "warmup": 3, "decay": "cosine",
    "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.0,
    "dtype": "f32",
}
AUX_LOSS_COEF = 0.01
CLIP_MARGIN = 1e-3  # no step's grad norm may lie this close (relative) to the clip threshold
ROUTE_MARGIN = 1e-4  # nor any router probability gap this close to a tie

EVERMIND_CASES = {
    # name: (config, token count, stream seed, weight seed)
    "tiny": (dict(vocab_size=5, d_model=4, n_layers=1, conv_kernel=2, hidden_dim=6, n_experts=2, top_k=1),
             600, 11, 12),
    "small": (dict(vocab_size=64, d_model=16, n_layers=2, conv_kernel=3, hidden_dim=32, n_experts=4, top_k=2),
              600, 12, 7),
}
GPT2_TOKENS, GPT2_STREAM_SEED = 3000, 1313


# ---------------------------------------------------------------------------
# The protocol: token stream, split, windows, learning rate
# ---------------------------------------------------------------------------


def token_stream(n, vocab, seed):
    """A noisy bigram process, so training visibly lowers the loss: with probability 1/2 the
    next id is (7*prev + 3) mod vocab, else uniform (random.Random, stable across CPythons)."""
    rng = random.Random(seed)
    ids = [rng.randrange(vocab)]
    while len(ids) < n:
        ids.append((7 * ids[-1] + 3) % vocab if rng.random() < 0.5 else rng.randrange(vocab))
    return ids


def split(n, p):
    n_val = math.floor(n * p["val_fraction"])
    n_train = n - n_val
    T = p["seq_len"]
    assert n_train >= T + 1 and (p["val_fraction"] == 0 or n_val >= T + 1)
    return n_val, n_train


def train_windows(s, n_train, p):
    """Window starts [accum][B] of 0-based step s, order sequential."""
    B, T, A = p["batch_size"], p["seq_len"], p["accum"]
    W = (n_train - 1) // T
    return [[((s * A * B + a * B + r) % W) * T for r in range(B)] for a in range(A)]


def eval_windows(n_train, n_val, p):
    """Window starts [eval_batches][B], the same at every evaluation."""
    B, T = p["batch_size"], p["seq_len"]
    W_val = (n_val - 1) // T
    return [[n_train + ((k * B + r) % W_val) * T for r in range(B)] for k in range(p["eval_batches"])]


def lr_at(s, p):
    lr, min_lr, warmup, steps = p["lr"], p["min_lr"], p["warmup"], p["steps"]
    if s < warmup:
        return lr * (s + 1) / warmup
    progress = min(1.0, (s - warmup) / max(1, steps - warmup))
    assert p["decay"] == "cosine"
    return min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))


def rows_of(tokens, starts, T):
    """[B, T+1] tensor of the windows at `starts`."""
    return torch.tensor([tokens[q:q + T + 1] for q in starts], dtype=torch.long)


# ---------------------------------------------------------------------------
# The two model families behind one interface: loss(w, rows) -> (objective, ce, extra)
# ---------------------------------------------------------------------------


class Gpt2Case:
    family = "gpt2"

    def __init__(self):
        self.cfg = json.loads((TINY_GPT2 / "config.json").read_text())
        self.cfg["n_inner"] = self.cfg.get("n_inner") or 4 * self.cfg["n_embd"]
        raw, _, _, _ = read_safetensors(TINY_GPT2 / "model.safetensors")
        self.names = gpt2_param_names(self.cfg)
        self.weights = {n: raw[n] for n in self.names}
        self.shapes = {n: list(self.weights[n].shape) for n in self.names}
        self.decay = {n for n in self.names if n.endswith(("attn.c_attn.weight", "attn.c_proj.weight",
                                                           "mlp.c_fc.weight", "mlp.c_proj.weight"))}
        self.tokens = token_stream(GPT2_TOKENS, self.cfg["vocab_size"], GPT2_STREAM_SEED)
        self.vocab = self.cfg["vocab_size"]

    def loss(self, w, rows, record=None):
        logits = gpt2_forward(w, rows[:, :-1], self.cfg)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1))
        return ce, ce, None


class RoutingEvermind(Evermind):
    """evermind_torch's model, noting each routing decision and its distance from a tie."""

    def __init__(self, torch_, cfg, params, aux_coef, record):
        super().__init__(torch_, cfg, params, aux_coef)
        self.record = record

    def route(self, n, router):
        p, top_i, gates = super().route(n, router)
        if self.record is not None:
            k, E = self.cfg["top_k"], self.cfg["n_experts"]
            self.record["choices"].append(top_i.tolist())
            if k < E:
                # distance from a tie in log-probability (= router logit) terms, which is
                # what float32 rounding perturbs
                s = torch.sort(torch.log(p.detach().double()), dim=-1, descending=True).values
                self.record["margin"] = min(self.record["margin"], float((s[:, k - 1] - s[:, k]).min()))
        return p, top_i, gates


def evermind_init(cfg, seed):
    """Finite seeded weights (float32) at scales where the initial loss is near ln(vocab) and
    the router is far from saturated: emb N(0, .25), conv taps N(0, .3), gains 1 + N(0, .1),
    router N(0, .5), up N(0, 1/d), down N(0, .16/hidden) (standard deviations .25, .3, .1, .5,
    1/sqrt(d), .4/sqrt(hidden)); drawn by torch.randn in param_layout order."""
    g = torch.Generator().manual_seed(seed)
    D, H = cfg["d_model"], cfg["hidden_dim"]
    w = {}
    for name, shape in param_shapes(cfg).items():
        x = torch.randn(shape, generator=g, dtype=torch.float32)
        if name == "emb":
            t = 0.25 * x
        elif name.endswith("conv"):
            t = 0.3 * x
        elif name.endswith("norm"):
            t = 1.0 + 0.1 * x
        elif name.endswith("router"):
            t = 0.5 * x
        elif name.endswith("up"):
            t = x / math.sqrt(D)
        else:
            t = 0.4 * x / math.sqrt(H)
        w[name] = t.contiguous()
    return w


class EvermindCase:
    family = "evermind"

    def __init__(self, key):
        cfg, n_tokens, stream_seed, weight_seed = EVERMIND_CASES[key]
        self.key, self.cfg, self.weight_seed = key, dict(cfg), weight_seed
        self.names = list(param_shapes(cfg))
        self.weights = evermind_init(cfg, weight_seed)
        self.shapes = {n: list(self.weights[n].shape) for n in self.names}
        self.decay = {n for n in self.names if self.weights[n].dim() == 2 and n != "emb"}
        self.tokens = token_stream(n_tokens, cfg["vocab_size"], stream_seed)
        self.vocab = cfg["vocab_size"]

    def loss(self, w, rows, record=None):
        total, ce, aux = RoutingEvermind(torch, self.cfg, w, AUX_LOSS_COEF, record).losses(rows)
        return total.mean(), ce.mean(), (total, ce, aux)


# ---------------------------------------------------------------------------
# The training run
# ---------------------------------------------------------------------------


def fingerprint(t):
    xs = [float(v) for v in t.detach().double().reshape(-1).tolist()]
    return {"sum": math.fsum(xs), "abs_sum": math.fsum(abs(v) for v in xs), "first8": xs[:8]}


def evaluate(case, w, tokens, windows, p, record):
    with torch.no_grad():
        out = [case.loss(w, rows_of(tokens, starts, p["seq_len"]), record) for starts in windows]
    return {"objective": [float(o) for o, _, _ in out], "ce": [float(c) for _, c, _ in out]}


def run(case, dtype, p=PROTOCOL):
    """The whole protocol in `dtype`: eval, steps, eval. Returns the records as Python numbers,
    plus each step's gradient before clipping and the final weights as tensors."""
    tokens = case.tokens
    n_val, n_train = split(len(tokens), p)
    evw = eval_windows(n_train, n_val, p)
    w = {n: case.weights[n].to(dtype).clone().requires_grad_(True) for n in case.names}
    params = [w[n] for n in case.names]
    groups = [{"params": [w[n] for n in case.names if n in case.decay], "weight_decay": p["weight_decay"]},
              {"params": [w[n] for n in case.names if n not in case.decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=p["lr"], betas=(p["beta1"], p["beta2"]), eps=p["eps"])
    routing = {"margin": math.inf, "choices": []}
    res = {"eval_before": evaluate(case, w, tokens, evw, p, routing), "steps": [], "step_grads": []}
    for s in range(p["steps"]):
        lr = lr_at(s, p)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        windows = train_windows(s, n_train, p)
        objs, ces = [], []
        for starts in windows:
            obj, ce, _ = case.loss(w, rows_of(tokens, starts, p["seq_len"]), routing)
            (obj / p["accum"]).backward()
            objs.append(float(obj))
            ces.append(float(ce))
        for n in case.names:
            # An expert no position chose has no autograd gradient. tinylm's is zero, and AdamW
            # still decays and moves it (m, v decay); torch.optim skips a None grad entirely.
            if w[n].grad is None:
                w[n].grad = torch.zeros_like(w[n])
        res["step_grads"].append({n: w[n].grad.detach().clone() for n in case.names})
        norm = float(torch.nn.utils.clip_grad_norm_(params, p["clip"]))
        opt.step()
        res["steps"].append({
            "step": s + 1, "lr": lr, "windows": windows,
            "micro_ce": ces, "micro_objective": objs,
            "loss": sum(ces) / len(ces), "objective": sum(objs) / len(objs),
            "grad_norm": norm, "clipped": norm > p["clip"],
            "fingerprints": [fingerprint(w[n]) for n in case.names],
        })
    res["eval_after"] = evaluate(case, w, tokens, evw, p, routing)
    res["final"] = {n: w[n].detach().clone() for n in case.names}
    res["routing"] = routing
    res["split"] = (n_val, n_train)
    res["eval_windows"] = evw
    return res


def first_batch_grads(case, dtype, p=PROTOCOL):
    """Per-row losses and the gradient of the mean objective of step 1's first micro-batch."""
    n_val, n_train = split(len(case.tokens), p)
    starts = train_windows(0, n_train, p)[0]
    rows = rows_of(case.tokens, starts, p["seq_len"])
    w = {n: case.weights[n].to(dtype).clone().requires_grad_(True) for n in case.names}
    obj, ce, (total, ce_rows, aux_rows) = case.loss(w, rows)
    obj.backward()
    return {"windows": starts, "rows": rows.tolist(), "ce": ce_rows.tolist(), "aux": aux_rows.tolist(),
            "total": total.tolist(), "objective": float(obj), "mean_ce": float(ce),
            "grads": {n: w[n].grad.detach().clone() for n in case.names}}


# ---------------------------------------------------------------------------
# JSON document and the f32/f64 comparison
# ---------------------------------------------------------------------------


def r(x):
    return repr(float(x))


def rel(a, b):
    return abs(a - b) / abs(b) if b != 0 else abs(a - b)


def compare(r32, r64, fb32=None, fb64=None):
    """The largest f32-vs-f64 differences, each relative to the f64 value (sums: relative to the
    f64 abs_sum, since a sum may cancel)."""
    d = {"loss_rel": 0.0, "objective_rel": 0.0, "eval_rel": 0.0, "grad_norm_rel": 0.0, "sum_rel": 0.0,
         "abs_sum_rel": 0.0, "first8_abs": 0.0, "first8_rel": 0.0, "final_params_max_abs": 0.0}
    for a, b in zip(r32["steps"], r64["steps"]):
        d["loss_rel"] = max(d["loss_rel"], rel(a["loss"], b["loss"]))
        d["objective_rel"] = max(d["objective_rel"], rel(a["objective"], b["objective"]))
        d["grad_norm_rel"] = max(d["grad_norm_rel"], rel(a["grad_norm"], b["grad_norm"]))
        for fa, fb in zip(a["fingerprints"], b["fingerprints"]):
            scale = fb["abs_sum"] if fb["abs_sum"] > 0 else 1.0
            d["sum_rel"] = max(d["sum_rel"], abs(fa["sum"] - fb["sum"]) / scale)
            d["abs_sum_rel"] = max(d["abs_sum_rel"], abs(fa["abs_sum"] - fb["abs_sum"]) / scale)
            for x, y in zip(fa["first8"], fb["first8"]):
                d["first8_abs"] = max(d["first8_abs"], abs(x - y))
                d["first8_rel"] = max(d["first8_rel"], rel(x, y))
    for key in ("eval_before", "eval_after"):
        for what in ("ce", "objective"):
            for x, y in zip(r32[key][what], r64[key][what]):
                d["eval_rel"] = max(d["eval_rel"], rel(x, y))
    for n in r32["final"]:
        d["final_params_max_abs"] = max(d["final_params_max_abs"],
                                        float((r32["final"][n].double() - r64["final"][n]).abs().max()))
    if fb32 is not None:
        d["first_batch_loss_rel"] = max(rel(x, y) for x, y in zip(fb32["total"] + fb32["ce"],
                                                                 fb64["total"] + fb64["ce"]))
        d["first_batch_aux_rel"] = max(rel(x, y) for x, y in zip(fb32["aux"], fb64["aux"]))
        d["first_batch_grad_rel"] = max(
            float((fb32["grads"][n].double() - fb64["grads"][n]).norm() / fb64["grads"][n].norm())
            for n in fb32["grads"] if float(fb64["grads"][n].norm()) > 0)
    return d


def eval_doc(e32, e64, family):
    doc = {"loss": r(sum(e32["ce"]) / len(e32["ce"])), "loss_f64": r(sum(e64["ce"]) / len(e64["ce"])),
           "batch_losses": [r(v) for v in e32["ce"]]}
    if family == "evermind":
        doc["objective"] = r(sum(e32["objective"]) / len(e32["objective"]))
        doc["objective_f64"] = r(sum(e64["objective"]) / len(e64["objective"]))
        doc["batch_objectives"] = [r(v) for v in e32["objective"]]
    return doc


def document(case, r32, r64, fb32=None, fb64=None, files=None):
    p = PROTOCOL
    tokens = case.tokens
    n_val, n_train = r32["split"]
    u16 = struct.pack(f"<{len(tokens)}H", *tokens)
    doc = {
        "_comment": "Generated by tools/gen_train_loop_fixtures.py; see tests/fixtures/train_loop/README.md. "
                    "Floats are repr() strings of float64 values (float32 results widened); step is 1-based.",
        "generator": {"script": "tools/gen_train_loop_fixtures.py", "torch_version": torch.__version__,
                      "threads": 1},
        "family": case.family,
    }
    if case.family == "gpt2":
        doc["model"] = {"weights": "tests/fixtures/gpt2/tiny/model.safetensors",
                        "config": "tests/fixtures/gpt2/tiny/config.json"}
    else:
        doc["model"] = {"weights": f"tests/fixtures/train_loop/{files['evl']}", "config": case.cfg,
                        "weight_seed": case.weight_seed, "aux_loss_coef": r(AUX_LOSS_COEF)}
    doc["protocol"] = {k: (r(v) if isinstance(v, float) else v) for k, v in p.items()}
    doc["params"] = [{"name": n, "shape": case.shapes[n], "decay": n in case.decay} for n in case.names]
    doc["tokens"] = {"count": len(tokens), "vocab_size": case.vocab, "crc32_u16le": zlib.crc32(u16),
                     "ids": tokens}
    doc["split"] = {"n_val": n_val, "n_train": n_train, "train_windows": (n_train - 1) // p["seq_len"],
                    "val_windows": (n_val - 1) // p["seq_len"]}
    doc["eval_windows"] = r32["eval_windows"]
    doc["eval_before"] = eval_doc(r32["eval_before"], r64["eval_before"], case.family)
    steps = []
    for a, b in zip(r32["steps"], r64["steps"]):
        st = {"step": a["step"], "lr": r(a["lr"]), "windows": a["windows"],
              "loss": r(a["loss"]), "loss_f64": r(b["loss"]), "micro_losses": [r(v) for v in a["micro_ce"]]}
        if case.family == "evermind":
            st["objective"] = r(a["objective"])
            st["objective_f64"] = r(b["objective"])
            st["micro_objectives"] = [r(v) for v in a["micro_objective"]]
        st["grad_norm"] = r(a["grad_norm"])
        st["grad_norm_f64"] = r(b["grad_norm"])
        st["clipped"] = a["clipped"]
        st["fingerprints"] = [{"name": n, "sum": r(f["sum"]), "abs_sum": r(f["abs_sum"]),
                               "first8": [r(v) for v in f["first8"]]}
                              for n, f in zip(case.names, a["fingerprints"])]
        steps.append(st)
    doc["steps"] = steps
    doc["eval_after"] = eval_doc(r32["eval_after"], r64["eval_after"], case.family)
    if fb32 is not None:
        doc["first_batch"] = {
            "comment": "step 1's first micro-batch from the initial weights: per-row ce (mean over the T "
                       "predicted positions), aux (summed over layers, all T+1 positions routed), "
                       "total = ce + aux_loss_coef*aux; objective = mean total over the rows",
            "windows": fb32["windows"], "rows": fb32["rows"],
            "ce": [r(v) for v in fb32["ce"]], "aux": [r(v) for v in fb32["aux"]],
            "total": [r(v) for v in fb32["total"]], "objective": r(fb32["objective"]),
            "objective_f64": r(fb64["objective"]), "mean_ce": r(fb32["mean_ce"]),
            "grads": f"tests/fixtures/train_loop/{files['grads']}"}
        margin = r64["routing"]["margin"]
        doc["routing"] = {"min_margin_f64": r(margin) if margin < math.inf else None,
                          "comment": "smallest gap log p(top_k-th) - log p(next) between router probabilities "
                                     "over every routed position of the float64 run (null when top_k = "
                                     "n_experts)"}
    diffs = compare(r32, r64, fb32, fb64)
    if case.family == "gpt2":
        del diffs["objective_rel"]  # the objective is the cross-entropy
    doc["f32_vs_f64"] = {k: f"{v:.3e}" for k, v in diffs.items()}
    return doc


# ---------------------------------------------------------------------------
# EVL0 reading (verification) and independent checks
# ---------------------------------------------------------------------------


def read_evl(path):
    """EVL0 per docs/formats.md: header, f32 or f16 parameters, CRC1 trailer. Returns
    (config, [f32 values])."""
    raw = Path(path).read_bytes()
    magic, version, *fields = struct.unpack("<9I", raw[:36])
    assert magic == 0x45564C30 and version in (1, 2), path
    assert raw[-8:-4] == b"CRC1" and struct.unpack("<I", raw[-4:])[0] == zlib.crc32(raw[:-4]), path
    cfg = dict(zip(["vocab_size", "d_model", "n_layers", "conv_kernel", "hidden_dim", "n_experts", "top_k"],
                   fields))
    n = sum(math.prod(s) for s in param_shapes(cfg).values())
    size = 2 if version == 2 else 4
    assert len(raw) == 36 + n * size + 8, path
    values = struct.unpack(f"<{n}{'e' if version == 2 else 'f'}", raw[36:36 + n * size])
    return cfg, list(values)


def evl_tensors(cfg, values):
    out, off = {}, 0
    for name, shape in param_shapes(cfg).items():
        k = math.prod(shape)
        out[name] = torch.tensor(values[off:off + k], dtype=torch.float32).reshape(shape)
        off += k
    return out


def manual_replay(case, r64, p=PROTOCOL):
    """The spec's clipping and AdamW written out in float64 on the float64 run's own step
    gradients, against the float64 torch run's fingerprints. Returns the largest difference of
    a parameter (max abs) over all steps and the largest grad-norm relative difference."""
    w = {n: case.weights[n].double().clone() for n in case.names}
    m = {n: torch.zeros_like(w[n]) for n in case.names}
    v = {n: torch.zeros_like(w[n]) for n in case.names}
    b1, b2 = p["beta1"], p["beta2"]
    worst_p, worst_n = 0.0, 0.0
    for s, (grads, rec) in enumerate(zip(r64["step_grads"], r64["steps"])):
        # the step's gradient comes from the torch run (autograd); everything after is ours
        norm = math.sqrt(math.fsum(float((grads[n] ** 2).sum()) for n in case.names))
        worst_n = max(worst_n, rel(norm, rec["grad_norm"]))
        scale = p["clip"] / (norm + 1e-6) if norm > p["clip"] else 1.0
        lr, t = lr_at(s, p), s + 1
        for n in case.names:
            g = grads[n] * scale
            if n in case.decay:
                w[n] -= lr * p["weight_decay"] * w[n]
            m[n] = b1 * m[n] + (1 - b1) * g
            v[n] = b2 * v[n] + (1 - b2) * g * g
            w[n] -= lr * (m[n] / (1 - b1 ** t)) / (torch.sqrt(v[n] / (1 - b2 ** t)) + p["eps"])
        for n, f in zip(case.names, rec["fingerprints"]):
            worst_p = max(worst_p, abs(math.fsum(w[n].reshape(-1).tolist()) - f["sum"]) / max(f["abs_sum"], 1e-300))
    for n in case.names:
        worst_p = max(worst_p, float((w[n] - r64["final"][n]).abs().max()))
    return worst_p, worst_n


class Checker:
    def __init__(self):
        self.failures = 0

    def check(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        self.failures += 0 if ok else 1


def build_case(case):
    r32, r64 = run(case, torch.float32), run(case, torch.float64)
    fb32 = fb64 = None
    files = None
    if case.family == "evermind":
        fb32, fb64 = first_batch_grads(case, torch.float32), first_batch_grads(case, torch.float64)
        files = {"evl": f"evermind_{case.key}_init.evl", "grads": f"evermind_{case.key}_grads.safetensors"}
    doc = document(case, r32, r64, fb32, fb64, files)
    return {"case": case, "r32": r32, "r64": r64, "fb32": fb32, "fb64": fb64, "files": files, "doc": doc}


def json_name(case):
    return "gpt2.json" if case.family == "gpt2" else f"evermind_{case.key}.json"


def grads_tensors(b):
    names = b["case"].names
    return ([(n, b["fb32"]["grads"][n].contiguous()) for n in names]
            + [("f64." + n, b["fb64"]["grads"][n].contiguous()) for n in names])


def write_case(out, b):
    case = b["case"]
    (out / json_name(case)).write_text(json.dumps(b["doc"], indent=1) + "\n")
    if case.family == "evermind":
        flat = [f32_bits(float(x)) for n in case.names for x in case.weights[n].reshape(-1).tolist()]
        (out / b["files"]["evl"]).write_bytes(evl_bytes(case.cfg, flat, 1))
        write_safetensors(out / b["files"]["grads"], grads_tensors(b))


def verify_case(out, b, ck):
    case, r32, r64, doc = b["case"], b["r32"], b["r64"], b["doc"]
    name = json_name(case)
    print(f"-- {name}")
    on_disk = json.loads((out / name).read_text())
    ck.check(on_disk == json.loads(json.dumps(doc)), f"{name} reproduced")
    ck.check(all(0 <= t < case.vocab for t in on_disk["tokens"]["ids"]), "token ids below vocab_size")
    n_val, n_train = r32["split"]
    W, W_val = doc["split"]["train_windows"], doc["split"]["val_windows"]
    used = [q for st in r32["steps"] for mb in st["windows"] for q in mb]
    ck.check(all(0 <= q and q + PROTOCOL["seq_len"] < n_train for q in used),
             f"training windows inside [0, n_train = {n_train}) (W = {W}, {len(used)} windows, "
             f"{'wraps' if len(used) > W else 'no wrap'})")
    ev = [q for bt in r32["eval_windows"] for q in bt]
    ck.check(all(n_train <= q and q + PROTOCOL["seq_len"] < n_train + n_val for q in ev),
             f"eval windows inside the validation split (W_val = {W_val}, {len(ev)} windows, "
             f"{'wraps' if len(ev) > W_val else 'no wrap'})")
    if case.family == "gpt2":
        # the batched forward against gen_gpt2_fixtures.py's one-sequence forward, float64
        worst = 0.0
        for k, starts in enumerate(r64["eval_windows"]):
            nll = []
            for q in starts:
                seq = case.tokens[q:q + PROTOCOL["seq_len"] + 1]
                logp = torch.log_softmax(gpt2_forward_one(case.weights, seq[:-1], case.cfg, torch.float64), -1)
                nll += [-float(logp[i, t]) for i, t in enumerate(seq[1:])]
            worst = max(worst, rel(math.fsum(nll) / len(nll), r64["eval_before"]["ce"][k]))
        ck.check(worst < 1e-12, f"eval losses = gen_gpt2_fixtures.py's per-sequence forward (rel {worst:.1e})")
    if case.family == "evermind":
        cfg, values = read_evl(out / b["files"]["evl"])
        ck.check(cfg == case.cfg, f"{b['files']['evl']}: configuration {cfg}")
        loaded = evl_tensors(cfg, values)
        ck.check(all(torch.equal(loaded[n], case.weights[n]) for n in case.names),
                 f"{b['files']['evl']}: every parameter reads back bit for bit")
        ck.check(all(bool(torch.isfinite(case.weights[n]).all()) for n in case.names), "initial weights finite")
        tensors, _, order, _ = read_safetensors(out / b["files"]["grads"])
        ck.check(all(torch.equal(tensors[n], t) for n, t in grads_tensors(b)) and len(tensors) == 2 * len(case.names),
                 f"{b['files']['grads']}: {len(tensors)} tensors reproduced")
        ck.check(all(list(tensors[n].shape) == case.shapes[n] for n in case.names), "gradient shapes = param_layout")
        # 2a: the first micro-batch of the training run is the same computation
        ck.check(b["fb32"]["objective"] == r32["steps"][0]["micro_objective"][0],
                 "first_batch objective = step 1's first micro-batch objective")
        ck.check(r32["routing"]["choices"] == r64["routing"]["choices"],
                 f"f32 and f64 runs route every position to the same experts "
                 f"({len(r32['routing']['choices'])} routings)")
        m = r64["routing"]["margin"]
        ck.check(m > ROUTE_MARGIN, f"smallest router-probability gap at the top_k boundary: {m:.3e}"
                 + (" (top_k = n_experts)" if m == math.inf else f" (> {ROUTE_MARGIN})"))
        used = {e for ch in r32["routing"]["choices"] for row in ch for e in row}
        ck.check(used == set(range(case.cfg["n_experts"])), f"every expert is routed to (experts used: {sorted(used)})")
        nz = [n for n in case.names if float(b["fb64"]["grads"][n].abs().max()) == 0]
        ck.check(not nz, f"every parameter has a nonzero first-batch gradient {nz if nz else ''}")
    clips32 = [st["clipped"] for st in r32["steps"]]
    ck.check(clips32 == [st["clipped"] for st in r64["steps"]], f"f32 and f64 clip on the same steps: {clips32}")
    near = min(abs(st["grad_norm"] - PROTOCOL["clip"]) / PROTOCOL["clip"] for st in r64["steps"])
    ck.check(near > CLIP_MARGIN, f"no grad norm within {CLIP_MARGIN} of the clip threshold (closest {near:.3e})")
    wp, wn = manual_replay(case, r64)
    ck.check(wp < 1e-12 and wn < 1e-12,
             f"hand-written spec clipping + AdamW (f64) = torch's: params {wp:.1e}, grad norm {wn:.1e}")
    d = compare(r32, r64, b["fb32"], b["fb64"])
    ck.check(d["loss_rel"] < 1e-6 and d["objective_rel"] < 1e-6 and d["eval_rel"] < 1e-6,
             f"losses f32 vs f64: train {d['loss_rel']:.2e}, objective {d['objective_rel']:.2e}, "
             f"eval {d['eval_rel']:.2e}")
    ck.check(d["grad_norm_rel"] < 1e-5, f"grad norms f32 vs f64: {d['grad_norm_rel']:.2e}")
    ck.check(d["sum_rel"] < 1e-5 and d["abs_sum_rel"] < 1e-5,
             f"fingerprint sums f32 vs f64 (over abs_sum): sum {d['sum_rel']:.2e}, abs_sum {d['abs_sum_rel']:.2e}")
    ck.check(d["first8_abs"] < 1e-5, f"fingerprint first8 f32 vs f64: abs {d['first8_abs']:.2e}, "
             f"rel {d['first8_rel']:.2e}; final params max abs {d['final_params_max_abs']:.2e}")
    if b["fb32"] is not None:
        ck.check(d["first_batch_grad_rel"] < 1e-5,
                 f"first-batch gradients f32 vs f64: worst per-tensor norm-wise {d['first_batch_grad_rel']:.2e}; "
                 f"losses {d['first_batch_loss_rel']:.2e}, aux {d['first_batch_aux_rel']:.2e}")
    losses = [float(st["loss"]) for st in doc["steps"]]
    ck.check(losses[-1] < losses[0], "the training loss falls over the run")
    print("  loss  " + " ".join(f"{v:.5f}" for v in losses))
    print("  lr    " + " ".join(f"{float(st['lr']):.3g}" for st in doc["steps"]))
    print("  gnorm " + " ".join(f"{float(st['grad_norm']):.4f}" for st in doc["steps"]))
    print(f"  eval  before {float(doc['eval_before']['loss']):.6f} after {float(doc['eval_after']['loss']):.6f}")


def verify_evl_reader(ck):
    """The EVL0 reader against the EVL fixtures' own JSON (and why they cannot be trained)."""
    tiny = json.loads((EVL_DIR / "tiny.json").read_text())
    cfg, values = read_evl(EVL_DIR / "tiny_f32.evl")
    ck.check(cfg == tiny["config"] and [f32_bits(v) if v == v else None for v in values]
             == [u if (u & 0x7F800000) != 0x7F800000 or (u & 0x7FFFFF) == 0 else None for u in tiny["base_bits"]],
             "EVL0 reader: tests/fixtures/evl/tiny_f32.evl = tiny.json base_bits")
    bad = sum(1 for v in values if not math.isfinite(v) or abs(v) > 1e4)
    ck.check(bad > 0 and cfg == EVERMIND_CASES["tiny"][0],
             f"tiny_f32.evl holds {bad} non-finite or huge values (not trainable); evermind_tiny keeps its config")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--verify", action="store_true", help="check the existing files, write nothing")
    args = ap.parse_args(argv)
    set_threads(torch, 1)  # torch's and OpenBLAS's pools: deterministic float32 sums
    builds = [build_case(Gpt2Case())] + [build_case(EvermindCase(k)) for k in EVERMIND_CASES]
    if not args.verify:
        args.out.mkdir(parents=True, exist_ok=True)
        for b in builds:
            write_case(args.out, b)
        print(f"wrote {args.out}")
    ck = Checker()
    verify_evl_reader(ck)
    for b in builds:
        verify_case(args.out, b, ck)
    if ck.failures:
        print(f"{ck.failures} check(s) FAILED")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
