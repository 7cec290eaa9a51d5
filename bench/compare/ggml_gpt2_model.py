#!/usr/bin/python3
"""Write a Hugging Face GPT-2 directory in the format of ggml's gpt-2 example.

Usage: ggml_gpt2_model.py MODEL_DIR OUT_FILE [--ftype f32|f16] [--vocab FILE]

MODEL_DIR holds config.json and model.safetensors (F32, F16 or BF16 tensors,
names with or without "transformer."), e.g. what `tinylm init --arch gpt2`
writes. The vocabulary comes from --vocab (encoder.json, vocab.json or
tokenizer.json), else from MODEL_DIR (encoder.json, vocab.json,
tokenizer.json, in that order), else from this repository's data/gpt2.

The output is what ggml's examples/gpt-2/convert-cerebras-to-ggml.py (the
Hugging Face converter of that example) writes, all little-endian int32:
  magic 0x67676d6c; n_vocab, n_ctx (= n_positions), n_embd, n_head, n_layer,
  ftype (0 = f32, 1 = f16);
  n_vocab, then per token id 0..n_vocab-1: byte length, raw bytes (the
  token string mapped back through GPT-2's byte-to-unicode table);
  per tensor: n_dims, name length, type (0 f32, 1 f16), the dims innermost
  first (numpy shape reversed), the name, the data in C order.
Names: model/wte, model/wpe, model/ln_f/{g,b}, model/lm_head (only if the
checkpoint has an lm_head.weight; otherwise the example ties it to wte),
model/h{i}/{ln_1,ln_2}/{g,b}, model/h{i}/attn/{c_attn,c_proj}/{w,b},
model/h{i}/mlp/{c_fc,c_proj}/{w,b}. The four Conv1D weights are transposed
from [in, out] to [out, in] (so ggml sees ne = [in, out]). With f16, the 2-D
tensors wte, lm_head and the */w matrices are stored as f16 (numpy's
round-to-nearest-even); wpe, biases and layer norms stay f32. The
h.{i}.attn.bias / masked_bias mask buffers are dropped.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GGML_MAGIC = 0x67676D6C
TRANSPOSED = ("/attn/c_attn/w", "/attn/c_proj/w", "/mlp/c_fc/w", "/mlp/c_proj/w")


def read_safetensors(path):
    """name -> numpy array (memory-mapped, F32/F16/BF16 widened lazily)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        buf = raw[begin:end]
        dt = info["dtype"]
        if dt == "F32":
            a = buf.view("<f4")
        elif dt == "F16":
            a = buf.view("<f2")
        elif dt == "BF16":
            a = (buf.view("<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            sys.exit(f"error: {path}: tensor {name} has dtype {dt} (F32, F16 or BF16 expected)")
        out[name] = a.reshape(info["shape"])
    return out


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (openai/gpt-2 encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def load_vocab(model_dir, vocab_path):
    """Token string -> id, from encoder.json / vocab.json / tokenizer.json."""
    candidates = [vocab_path] if vocab_path else [
        os.path.join(model_dir, "encoder.json"), os.path.join(model_dir, "vocab.json"),
        os.path.join(model_dir, "tokenizer.json"), os.path.join(REPO, "data", "gpt2", "encoder.json")]
    for path in candidates:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                vocab = json.load(f)
            if "model" in vocab:  # tokenizer.json
                extra = {t["content"]: t["id"] for t in vocab.get("added_tokens", [])}
                vocab = {**vocab["model"]["vocab"], **extra}
            return vocab, path
    sys.exit("error: no vocabulary found (tried " + ", ".join(candidates) + ")")


def ggml_name(hf):
    """Hugging Face tensor name -> ggml gpt-2 example name (None: skip)."""
    hf = hf.removeprefix("transformer.")
    fixed = {"wte.weight": "model/wte", "wpe.weight": "model/wpe", "ln_f.weight": "model/ln_f/g",
             "ln_f.bias": "model/ln_f/b", "lm_head.weight": "model/lm_head"}
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")  # h.{i}.{ln_1|attn|mlp}...
    if parts[0] != "h" or (parts[-2] == "attn" and parts[-1] in ("bias", "masked_bias")):
        return None
    suffix = {"weight": "g", "bias": "b"} if parts[2].startswith("ln_") else {"weight": "w", "bias": "b"}
    return "model/h" + parts[1] + "/" + "/".join(parts[2:-1]) + "/" + suffix[parts[-1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--ftype", choices=["f32", "f16"], default="f32")
    ap.add_argument("--vocab", help="encoder.json, vocab.json or tokenizer.json")
    a = ap.parse_args()

    with open(os.path.join(a.model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("layer_norm_epsilon", 1e-5) != 1e-5:
        print("warning: layer_norm_epsilon is not 1e-5; ggml's example always uses 1e-5", file=sys.stderr)
    if cfg.get("n_inner") not in (None, 4 * cfg["n_embd"]):
        sys.exit("error: n_inner must be 4*n_embd for ggml's gpt-2 example")
    st = os.path.join(a.model_dir, "model.safetensors")
    if not os.path.isfile(st):
        sys.exit(f"error: {st} not found (single-file safetensors expected)")
    tensors = read_safetensors(st)

    vocab, vocab_src = load_vocab(a.model_dir, a.vocab)
    n_vocab = cfg["vocab_size"]
    by_id = sorted((i, tok) for tok, i in vocab.items())
    if [i for i, _ in by_id] != list(range(n_vocab)):
        sys.exit(f"error: {vocab_src}: ids are not exactly 0..{n_vocab - 1} (config vocab_size)")
    byte_decoder = {c: b for b, c in bytes_to_unicode().items()}

    f16 = a.ftype == "f16"
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as out:
        out.write(struct.pack("<7i", GGML_MAGIC, n_vocab, cfg["n_positions"], cfg["n_embd"],
                              cfg["n_head"], cfg["n_layer"], int(f16)))
        out.write(struct.pack("<i", n_vocab))
        for _, tok in by_id:
            text = bytes(byte_decoder[c] for c in tok)
            out.write(struct.pack("<i", len(text)) + text)
        written = 0
        for hf, data in tensors.items():
            name = ggml_name(hf)
            if name is None:
                continue
            data = data.squeeze()
            half = f16 and data.ndim == 2 and (name in ("model/wte", "model/lm_head") or name.endswith("/w"))
            data = data.astype(np.float16 if half else np.float32)
            if name.endswith(TRANSPOSED):
                data = data.T
            enc = name.encode()
            out.write(struct.pack("<3i", data.ndim, len(enc), int(half)))
            out.write(struct.pack(f"<{data.ndim}i", *reversed(data.shape)) + enc)
            np.ascontiguousarray(data).tofile(out)
            written += 1
    os.replace(tmp, a.out)
    print(f"wrote {a.out}: ftype {a.ftype}, {written} tensors, vocab {n_vocab} from {vocab_src}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
