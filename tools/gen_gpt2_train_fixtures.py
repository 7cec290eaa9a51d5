#!/usr/bin/python3
"""Generate the GPT-2 training fixtures in tests/fixtures/gpt2/train/.

The model is the tiny random GPT-2 of tests/fixtures/gpt2/tiny/ (vocab 1000, 64 positions,
n_embd 64, 2 layers, 4 heads; see that README), read from its model.safetensors. The batch
is a 4 x 65 token grid (the training protocol's shape): inputs are columns 0..63, targets
columns 1..64.

GPT-2 is written out here in plain PyTorch (1.13, no `transformers`): explicit parameters,
autograd for the backward, the tied head `logits = ln_f(x) @ wte.T` so `wte` collects the
gradient of both uses. Everything in float32 with one thread; float64 runs of the same code
cross-check the float32 numbers.

Files written:
    tokens.json           {"ids": [[65 ids] x 4]}  (the protocol's --tokens format)
    expected.json         loss, per-position losses, SGD trajectories, fingerprints
    expected.safetensors  F32: "logits.row1" [64, 1000] (batch row 1's logits) and
                          "grad.<name>" for every parameter (param_layout shapes, Conv1D
                          [in, out]) after one forward/backward of the mean loss

Usage (from the repository root):
    /usr/bin/python3 tools/gen_gpt2_train_fixtures.py            # generate, then verify
    /usr/bin/python3 tools/gen_gpt2_train_fixtures.py --verify   # verify existing files only
"""

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_gpt2_fixtures import gelu_new, read_safetensors, write_safetensors  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
TINY = REPO_ROOT / "tests" / "fixtures" / "gpt2" / "tiny"
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures" / "gpt2" / "train"

TOKENS_SEED = 4242
ROWS, COLS = 4, 65
LOGITS_ROW = 1
SGD_STEPS = 5
SGD_LRS = [1e-4, 0.5]  # the protocol's rate, and one large enough to move the loss visibly
FINGERPRINT_LR = 1e-4


def param_names(cfg):
    names = ["wte.weight", "wpe.weight"]
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        names += [p + s for s in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                  "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                  "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
                                  "mlp.c_proj.bias")]
    return names + ["ln_f.weight", "ln_f.bias"]


def forward(w, inputs, cfg, head=None):
    """Logits [B, T, V] of a batch, in the dtype of w. head: an untied output matrix [V, C]
    (default: the tied wte)."""
    C, H, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    eps = cfg["layer_norm_epsilon"]
    D = C // H
    B, T = inputs.shape
    ln = torch.nn.functional.layer_norm
    x = w["wte.weight"][inputs] + w["wpe.weight"][:T]
    mask = torch.tril(torch.ones((T, T), dtype=torch.bool, device=inputs.device))
    for i in range(L):
        p = f"h.{i}."
        h = ln(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)  # [B, H, T, D]
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + (y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"])
        h = ln(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        h = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + (h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"])
    x = ln(x, (C,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return x @ (w["wte.weight"] if head is None else head).T


def loss_and_grads(weights, grid, cfg, dtype):
    """Mean cross-entropy over all B*T positions, the logits, per-position losses and grads."""
    w = {k: v.detach().to(dtype).clone().requires_grad_(True) for k, v in weights.items()}
    inputs, targets = grid[:, :-1], grid[:, 1:]
    logits = forward(w, inputs, cfg)
    V = logits.shape[-1]
    per_pos = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    loss.backward()
    return loss.detach(), logits.detach(), per_pos.detach(), {k: v.grad.detach() for k, v in w.items()}


def sgd_trajectory(weights, grid, cfg, lr, steps, fingerprint_names=None):
    """Plain SGD w -= lr*g in float32; the loss recorded at step i is computed before update i."""
    w = {k: v.detach().clone() for k, v in weights.items()}
    losses, prints = [], []
    for _ in range(steps):
        loss, _, _, grads = loss_and_grads(w, grid, cfg, torch.float32)
        losses.append(float(loss))
        with torch.no_grad():
            for k in w:
                w[k].add_(grads[k], alpha=-lr)
        if fingerprint_names:
            prints.append(fingerprints(w, cfg))
    return losses, prints


def pairwise(xs):
    if len(xs) <= 128:
        s = 0.0
        for v in xs:
            s += v
        return s
    h = len(xs) // 2
    return pairwise(xs[:h]) + pairwise(xs[h:])


def fingerprints(w, cfg):
    """The protocol's fingerprinted tensors in the [out, in] layout."""
    last = cfg["n_layer"] - 1
    tensors = [
        ("wte.weight", w["wte.weight"]),
        ("h.0.attn.c_attn.weight", w["h.0.attn.c_attn.weight"].T),
        ("h.0.mlp.c_fc.weight", w["h.0.mlp.c_fc.weight"].T),
        (f"h.{last}.attn.c_proj.weight", w[f"h.{last}.attn.c_proj.weight"].T),
        ("ln_f.weight", w["ln_f.weight"]),
        ("wpe.weight", w["wpe.weight"]),
    ]
    out = {}
    for name, t in tensors:
        xs = [float(v) for v in t.contiguous().reshape(-1).tolist()]
        out[name] = {"sum": repr(pairwise(xs)), "abs_sum": repr(pairwise([abs(v) for v in xs])),
                     "first8": [repr(v) for v in xs[:8]]}
    return out


def build(cfg, weights):
    g = torch.Generator().manual_seed(TOKENS_SEED)
    grid = torch.randint(0, cfg["vocab_size"], (ROWS, COLS), generator=g)
    loss32, logits32, per_pos32, grads32 = loss_and_grads(weights, grid, cfg, torch.float32)
    loss64, logits64, _, grads64 = loss_and_grads(weights, grid, cfg, torch.float64)
    trajectories = {}
    prints = None
    for lr in SGD_LRS:
        losses, p = sgd_trajectory(weights, grid, cfg, lr, SGD_STEPS, lr == FINGERPRINT_LR)
        trajectories[repr(lr)] = [repr(v) for v in losses]
        if p:
            prints = p
    names = param_names(cfg)
    tensors = [(f"logits.row{LOGITS_ROW}", logits32[LOGITS_ROW].contiguous())]
    tensors += [(f"grad.{n}", grads32[n].contiguous()) for n in names]
    expected = {
        "_comment": "Generated by tools/gen_gpt2_train_fixtures.py; see tests/fixtures/gpt2/train/README.md. "
                    "Floats are repr() strings of float64 values (float32 values widened).",
        "generator": {"torch_version": torch.__version__, "tokens_seed": TOKENS_SEED, "threads": 1},
        "model": "tests/fixtures/gpt2/tiny/model.safetensors",
        "tokens": "tokens.json",
        "batch_size": ROWS, "seq_len": COLS - 1,
        "loss_f32": repr(float(loss32)),
        "loss_f64": repr(float(loss64)),
        "position_losses_f32": [repr(float(v)) for v in per_pos32],
        "grad_norms_f64": {n: repr(float(grads64[n].norm())) for n in names},
        "sgd": {"steps": SGD_STEPS, "losses": trajectories,
                "comment": "float32, w -= lr*g; entry i is the loss before update i+1"},
        "fingerprints": {"lr": repr(FINGERPRINT_LR), "after_step": prints,
                         "comment": "fingerprints of the weights after updates 1..5 of the lr 1e-4 run, "
                                    "the protocol's [out, in] layout and pairwise float64 sums"},
    }
    return {"grid": grid, "tensors": tensors, "expected": expected, "loss32": loss32, "loss64": loss64,
            "logits32": logits32, "logits64": logits64, "grads32": grads32, "grads64": grads64,
            "names": names}


def verify(out_dir, res, cfg):
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok    " if ok else "FAIL  ") + what)
        failures += 0 if ok else 1

    tokens = json.loads((out_dir / "tokens.json").read_text())["ids"]
    check(tokens == res["grid"].tolist(), "tokens.json holds the 4 x 65 grid")
    check(all(0 <= t < cfg["vocab_size"] for row in tokens for t in row), "token ids below vocab_size")
    tensors, _, _, _ = read_safetensors(out_dir / "expected.safetensors")
    for name, t in res["tensors"]:
        check(torch.equal(tensors[name], t), f"expected.safetensors {name} {list(t.shape)} reproduced")
    exp = json.loads((out_dir / "expected.json").read_text())
    check(exp == json.loads(json.dumps(res["expected"])), "expected.json reproduced")
    # float32 against float64: the fixture's own precision, far inside the C++ tolerances
    rel_loss = abs(float(res["loss32"]) - float(res["loss64"])) / abs(float(res["loss64"]))
    check(rel_loss < 1e-6, f"loss f32 vs f64: rel diff {rel_loss:.2e}")
    worst = 0.0
    for n in res["names"]:
        a, b = res["grads32"][n].double(), res["grads64"][n]
        worst = max(worst, float((a - b).norm() / b.norm()))
    check(worst < 1e-5, f"grads f32 vs f64: worst per-tensor norm-wise rel diff {worst:.2e}")
    dl = float((res["logits32"].double() - res["logits64"]).abs().max())
    check(dl < 1e-5, f"logits f32 vs f64: max abs diff {dl:.2e}")
    # the tied embedding's gradient has both parts: check against an untied model's sum
    w = {k: v.clone() for k, v in read_safetensors(TINY / "model.safetensors")[0].items()
         if k in res["names"]}
    ww = {k: v.double().requires_grad_(True) for k, v in w.items()}
    head = ww["wte.weight"].detach().clone().requires_grad_(True)
    grid = res["grid"]
    logits = forward(ww, grid[:, :-1], cfg, head)
    torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), grid[:, 1:].reshape(-1)).backward()
    tied = ww["wte.weight"].grad + head.grad
    d = float((tied - res["grads64"]["wte.weight"]).abs().max())
    check(d < 1e-12, f"tied wte grad = lookup part + head part (max diff {d:.1e})")
    for lr, losses in res["expected"]["sgd"]["losses"].items():
        print(f"  sgd lr {lr}: " + " ".join(f"{float(v):.7f}" for v in losses))
    print(f"  loss f32 {res['expected']['loss_f32']}  f64 {res['expected']['loss_f64']}")
    return failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--verify", action="store_true", help="check the existing files, write nothing")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    cfg = json.loads((TINY / "config.json").read_text())
    cfg["n_inner"] = cfg.get("n_inner") or 4 * cfg["n_embd"]
    raw, _, _, _ = read_safetensors(TINY / "model.safetensors")
    weights = {n: raw[n] for n in param_names(cfg)}
    res = build(cfg, weights)
    if not args.verify:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "tokens.json").write_text(json.dumps({"ids": res["grid"].tolist()}) + "\n")
        (args.out / "expected.json").write_text(json.dumps(res["expected"], indent=1) + "\n")
        write_safetensors(args.out / "expected.safetensors", res["tensors"])
        print(f"wrote {args.out}")
    failures = verify(args.out, res, cfg)
    if failures:
        print(f"{failures} check(s) FAILED")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
