#!/usr/bin/env python3
"""Scores nanoGPT's and tinylm's character-level Shakespeare models on the same windows.

Each run's own validation figure is an estimate on a sample of the validation split (nanoGPT:
20 random batches; tinylm: the same 20 batches from the split's start each time). This scores
both final models with one piece of code, nanoGPT's own model.py, on every non-overlapping
window of the whole validation split, so the two numbers differ only by the models.

tinylm's checkpoint (a Hugging Face GPT-2 directory: config.json, model.safetensors with Conv1D
weights [in, out], tokenizer.json) is loaded into nanoGPT's GPT class: its Conv1D weights
transposed into nn.Linear's [out, in]; its biases, zero (--bias false), left out. Its character
ids must be nanoGPT's (both are the sorted characters of the text): checked.

    /usr/bin/python3 bench/compare/nanogpt_eval.py --nanogpt NANOGPT_DIR \\
        --ckpt OUT/ckpt.pt --tinylm RUN/latest

A benchmark tool (bench/compare/nanogpt_char.sh runs it), not a build or test dependency.
"""
import argparse
import json
import os
import pickle
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ggml_gpt2_model import bytes_to_unicode, read_safetensors  # noqa: E402 (this directory's)


def tinylm_model(GPT, GPTConfig, run, stoi):
    config = json.load(open(os.path.join(run, "config.json")))
    vocab = json.load(open(os.path.join(run, "tokenizer.json")))["model"]["vocab"]
    alphabet = {c: b for b, c in bytes_to_unicode().items()}
    ids = {bytes(alphabet[c] for c in tok).decode("utf-8"): i for tok, i in vocab.items()}
    for ch, i in stoi.items():
        if ids.get(ch) != i:
            sys.exit(f"nanogpt_eval.py: tinylm's id of {ch!r} is {ids.get(ch)}, nanoGPT's {i}")
    gpt = GPT(GPTConfig(block_size=config["n_positions"], vocab_size=config["vocab_size"],
                        n_layer=config["n_layer"], n_head=config["n_head"],
                        n_embd=config["n_embd"], dropout=0.0, bias=False))
    weights = read_safetensors(os.path.join(run, "model.safetensors"))
    weights = {k[len("transformer."):] if k.startswith("transformer.") else k:
               torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in weights.items()}
    state = gpt.state_dict()
    for name in state:
        if not name.startswith("transformer.") or name.endswith(".attn.bias"):
            continue  # lm_head (tied to wte) and the causal mask
        w = weights[name[len("transformer."):]]
        if name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            w = w.t()  # Conv1D [in, out] -> nn.Linear [out, in]
        assert state[name].shape == w.shape, (name, state[name].shape, w.shape)
        state[name].copy_(w)
    for name, w in weights.items():
        if name.endswith(".bias") and not name.endswith((".attn.bias", ".attn.masked_bias")):
            assert float(w.abs().max()) == 0.0, f"{name} is not zero: trained with biases?"
    gpt.load_state_dict(state)
    return gpt


def nanogpt_model(GPT, GPTConfig, ckpt_path):
    ckpt = torch.load(ckpt_path, map_location="cpu")
    gpt = GPT(GPTConfig(**ckpt["model_args"]))
    state = {k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k: v
             for k, v in ckpt["model"].items()}
    gpt.load_state_dict(state)
    return gpt, ckpt.get("iter_num")


@torch.no_grad()
def score(gpt, val, T, batch=64):
    """Mean cross-entropy over every window val[s : s + T] -> val[s + 1 : s + T + 1], s = 0, T, ..."""
    gpt.eval()
    starts = list(range(0, len(val) - T - 1 + 1, T))
    total, count = 0.0, 0
    for i in range(0, len(starts), batch):
        s = starts[i:i + batch]
        x = torch.stack([torch.from_numpy(val[a:a + T].astype(np.int64)) for a in s])
        y = torch.stack([torch.from_numpy(val[a + 1:a + T + 1].astype(np.int64)) for a in s])
        _, loss = gpt(x, y)
        total += float(loss) * len(s)
        count += len(s)
    return total / count, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nanogpt", required=True, help="nanoGPT's directory (model.py, data/)")
    ap.add_argument("--ckpt", required=True, help="nanoGPT's ckpt.pt")
    ap.add_argument("--tinylm", required=True, help="tinylm's checkpoint directory")
    args = ap.parse_args()
    sys.path.insert(0, args.nanogpt)
    from model import GPT, GPTConfig  # nanoGPT's
    data = os.path.join(args.nanogpt, "data", "shakespeare_char")
    meta = pickle.load(open(os.path.join(data, "meta.pkl"), "rb"))
    val = np.memmap(os.path.join(data, "val.bin"), dtype=np.uint16, mode="r")
    ng, it = nanogpt_model(GPT, GPTConfig, args.ckpt)
    tl = tinylm_model(GPT, GPTConfig, args.tinylm, meta["stoi"])
    T = ng.config.block_size
    assert tl.config.block_size == T, "the two models' positions differ"
    ng_loss, windows = score(ng, val, T)
    tl_loss, _ = score(tl, val, T)
    print(json.dumps({"windows": windows, "tokens": windows * T, "nanogpt_iter": it,
                      "nanogpt": round(ng_loss, 4), "tinylm": round(tl_loss, 4),
                      "difference": round(tl_loss - ng_loss, 4)}))


if __name__ == "__main__":
    main()
