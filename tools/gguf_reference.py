#!/usr/bin/python3
"""Independent GGUF files of the tiny GPT-2 fixture, for tinylm's GGUF tests.

Written from the GGUF v3 specification (ggml's docs/gguf.md) and from what llama.cpp's
convert_hf_to_gguf.py does for its `gpt2` architecture, with numpy only (Debian's
python3-numpy): its own safetensors reader, its own GGUF writer and reader, and its own
Q8_0 / Q4_0 block quantizers following ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref.
Nothing here shares code with tinylm.

Input: tests/fixtures/gpt2/tiny/{config.json, model.safetensors} and the vendored GPT-2
vocabulary data/gpt2/{encoder.json, vocab.bpe}. The tiny model has 1,000 tokens, so its
tokenizer is GPT-2's first 999 tokens (the 256 bytes and the tokens of the first 743 merges:
GPT-2's merge r makes token 256 + r) and <|endoftext|> as id 999 (the config's bos/eos).

Output (tests/fixtures/gguf/):
    tokenizer/vocab.json, tokenizer/merges.txt   that tokenizer, for the Hugging Face side
    tiny_f32.gguf, tiny_f16.gguf, tiny_q8_0.gguf, tiny_q4_0.gguf

With --corpus it writes instead the seed corpus of the fuzz_gguf target
(tests/fuzz/corpus/gguf/, emptied first): a micro GPT-2 (1 layer of 32, 258 tokens) in each
type, and broken variants of it.

Usage (from the repository root):
    /usr/bin/python3 tools/gguf_reference.py            # write, then verify
    /usr/bin/python3 tools/gguf_reference.py --verify   # re-read and check, write nothing
    /usr/bin/python3 tools/gguf_reference.py --corpus   # the fuzz seeds
"""

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "gpt2" / "tiny"
VOCAB = ROOT / "data" / "gpt2"
OUT = ROOT / "tests" / "fixtures" / "gguf"

ALIGNMENT = 32
# GGUF value types and ggml tensor types (numbers from the specification).
T_U32, T_I32, T_F32, T_STRING, T_ARRAY = 4, 5, 6, 8, 9
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0 = 0, 1, 2, 8
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7}  # llama.cpp's LLAMA_FTYPE_*
GGML_TYPE = {"f32": GGML_F32, "f16": GGML_F16, "q4_0": GGML_Q4_0, "q8_0": GGML_Q8_0}
QK = 32


# ---------------------------------------------------------------------------------------------
# safetensors (reader only)

def read_safetensors(path):
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[base + b:base + e], dtype="<f4").reshape(info["shape"])
    return out


# ---------------------------------------------------------------------------------------------
# Block quantizers (ggml's reference semantics)

def round_half_away(v):
    """C's roundf on float32 values: halves away from zero, computed exactly in float64."""
    a = np.floor(np.abs(v.astype(np.float64)) + 0.5)
    return np.where(v < 0, -a, a)


def quantize_q8_0(x):
    """x: float32 of n (a multiple of 32) -> bytes: per block fp16 d, 32 int8."""
    blocks = x.astype(np.float32).reshape(-1, QK)
    amax = np.max(np.abs(blocks), axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = round_half_away((blocks * inv[:, None]).astype(np.float32)).astype(np.int8)
    out = np.zeros((blocks.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def quantize_q4_0(x):
    """x: float32 of n (a multiple of 32) -> bytes: per block fp16 d, 16 bytes of nibbles."""
    blocks = x.astype(np.float32).reshape(-1, QK)
    first_max = np.argmax(np.abs(blocks), axis=1)  # the first element of largest magnitude
    m = blocks[np.arange(blocks.shape[0]), first_max]
    d = (m / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = ((blocks * inv[:, None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.minimum(np.trunc(v), 15).astype(np.uint8)
    out = np.zeros((blocks.shape[0], 18), dtype=np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def dequantize(kind, raw, n):
    if kind == GGML_F32:
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if kind == GGML_F16:
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    size = 34 if kind == GGML_Q8_0 else 18
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)
    if kind == GGML_Q8_0:
        q = b[:, 2:].view(np.int8).astype(np.float32)
    else:
        lo = (b[:, 2:] & 15).astype(np.float32) - 8
        hi = (b[:, 2:] >> 4).astype(np.float32) - 8
        q = np.concatenate([lo, hi], axis=1)
    return (q * d).astype(np.float32).reshape(n)


# ---------------------------------------------------------------------------------------------
# GGUF writer and reader

def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, vtype, value):
    out = gguf_string(key) + struct.pack("<I", vtype)
    if vtype == T_U32:
        return out + struct.pack("<I", value)
    if vtype == T_F32:
        return out + struct.pack("<f", value)
    if vtype == T_STRING:
        return out + gguf_string(value)
    elem, items = value
    out += struct.pack("<IQ", elem, len(items))
    if elem == T_STRING:
        return out + b"".join(gguf_string(s) for s in items)
    assert elem == T_I32
    return out + struct.pack("<%di" % len(items), *items)


def pad(n, alignment=ALIGNMENT):
    return (n + alignment - 1) // alignment * alignment


def gguf_file(n_kv, kv_bytes, tensors, alignment=ALIGNMENT):
    """A GGUF v3 file's bytes: n_kv metadata entries already encoded (kv_bytes), then tensors
    [(name, ggml_type, ne, bytes)], each padded to `alignment`, the last one too."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), n_kv) + kv_bytes
    offset = 0
    for name, kind, ne, data in tensors:
        head += gguf_string(name) + struct.pack("<I", len(ne))
        head += struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", kind, offset)
        offset += pad(len(data), alignment)
    body = bytearray(head)
    body += bytes(pad(len(body), alignment) - len(body))
    for _, _, _, data in tensors:
        body += data
        body += bytes(pad(len(body), alignment) - len(body))
    return bytes(body)


def gguf_bytes(kvs, tensors):
    """kvs: [(key, type, value)]; tensors: [(name, ggml_type, ne, bytes)]."""
    return gguf_file(len(kvs), b"".join(gguf_kv(*kv) for kv in kvs), tensors)


def write_gguf(path, kvs, tensors):
    path.write_bytes(gguf_bytes(kvs, tensors))


def read_gguf(path):
    raw = path.read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, raw, pos)
        pos += struct.calcsize("<" + fmt)
        return v

    def string():
        nonlocal pos
        (n,) = take("Q")
        s = raw[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t == T_STRING:
            return string()
        if t == T_ARRAY:
            elem, n = take("IQ")
            return [value(elem) for _ in range(n)]
        fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
               12: "d"}[t]
        return take(fmt)[0]

    assert raw[:4] == b"GGUF"
    pos = 4
    version, n_tensors, n_kv = take("IQQ")
    assert version == 3
    kv = {}
    for _ in range(n_kv):
        key = string()
        (t,) = take("I")
        kv[key] = value(t)
    infos = []
    for _ in range(n_tensors):
        name = string()
        (nd,) = take("I")
        ne = take("%dQ" % nd)
        kind, off = take("IQ")
        infos.append((name, kind, list(ne), off))
    base = pad(pos)
    tensors = {}
    for name, kind, ne, off in infos:
        n = int(np.prod(ne))
        size = n * 4 if kind == GGML_F32 else n * 2 if kind == GGML_F16 else \
            n // QK * (34 if kind == GGML_Q8_0 else 18)
        assert off % ALIGNMENT == 0
        tensors[name] = (kind, ne, dequantize(kind, raw[base + off:base + off + size], n))
    return kv, tensors


# ---------------------------------------------------------------------------------------------
# The tiny GPT-2 as llama.cpp's converter writes it

def tiny_tokenizer(n_vocab):
    enc = json.loads((VOCAB / "encoder.json").read_text(encoding="utf-8"))
    by_id = {i: t for t, i in enc.items()}
    lines = (VOCAB / "vocab.bpe").read_text(encoding="utf-8").split("\n")[1:]
    tokens = [by_id[i] for i in range(n_vocab - 1)] + ["<|endoftext|>"]
    merges = lines[:n_vocab - 1 - 256]
    for r, m in enumerate(merges):
        a, b = m.split(" ")
        assert enc[a + b] == 256 + r, m  # GPT-2's merge r makes token 256 + r
    types = [1] * (n_vocab - 1) + [3]  # NORMAL, and CONTROL for the special token
    return tokens, types, merges


def tensor_plan(cfg, w):
    """(gguf name, row-major array, stays F32) in Hugging Face parameter order."""
    plan = [("token_embd.weight", w["wte.weight"], False),
            ("position_embd.weight", w["wpe.weight"], True)]
    block = [("ln_1", "attn_norm"), ("attn.c_attn", "attn_qkv"), ("attn.c_proj", "attn_output"),
             ("ln_2", "ffn_norm"), ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down")]
    for i in range(cfg["n_layer"]):
        for hf, gg in block:
            for part in ("weight", "bias"):
                a = w["h.%d.%s.%s" % (i, hf, part)]
                if part == "weight" and not hf.startswith("ln_"):
                    a = a.T  # Conv1D [in, out] -> [out, in]
                plan.append(("blk.%d.%s.%s" % (i, gg, part), np.ascontiguousarray(a),
                             a.ndim == 1))
    plan += [("output_norm.weight", w["ln_f.weight"], True),
             ("output_norm.bias", w["ln_f.bias"], True)]
    return plan


def encode(kind, a):
    x = a.astype(np.float32).reshape(-1)
    if kind == GGML_F32:
        return x.astype("<f4").tobytes()
    if kind == GGML_F16:
        return x.astype("<f2").tobytes()
    return quantize_q8_0(x) if kind == GGML_Q8_0 else quantize_q4_0(x)


def expected_kind(ftype, name, keep):
    """F32 for 1-D tensors and position_embd; the tied head (token_embd) of a Q4_0 file is Q8_0,
    as llama.cpp's quantizer gives the output head a wider type; the rest in the file's type."""
    if keep:
        return GGML_F32
    if ftype == "q4_0" and name == "token_embd.weight":
        return GGML_Q8_0
    return GGML_TYPE[ftype]


def build(ftype, cfg, w):
    tokens, types, merges = tiny_tokenizer(cfg["vocab_size"])
    kvs = [("general.architecture", T_STRING, "gpt2"),
           ("general.type", T_STRING, "model"),
           ("gpt2.block_count", T_U32, cfg["n_layer"]),
           ("gpt2.context_length", T_U32, cfg["n_positions"]),
           ("gpt2.embedding_length", T_U32, cfg["n_embd"]),
           ("gpt2.feed_forward_length", T_U32, 4 * cfg["n_embd"]),
           ("gpt2.attention.head_count", T_U32, cfg["n_head"]),
           ("gpt2.attention.layer_norm_epsilon", T_F32, cfg["layer_norm_epsilon"]),
           ("general.file_type", T_U32, FILE_TYPE[ftype]),
           ("general.quantization_version", T_U32, 2),
           ("tokenizer.ggml.model", T_STRING, "gpt2"),
           ("tokenizer.ggml.pre", T_STRING, "gpt-2"),
           ("tokenizer.ggml.tokens", T_ARRAY, (T_STRING, tokens)),
           ("tokenizer.ggml.token_type", T_ARRAY, (T_I32, types)),
           ("tokenizer.ggml.merges", T_ARRAY, (T_STRING, merges)),
           ("tokenizer.ggml.bos_token_id", T_U32, cfg["bos_token_id"]),
           ("tokenizer.ggml.eos_token_id", T_U32, cfg["eos_token_id"])]
    tensors = []
    for name, a, keep in tensor_plan(cfg, w):
        kind = expected_kind(ftype, name, keep)
        ne = list(reversed(a.shape))  # ne[0] fastest-varying
        tensors.append((name, kind, ne, encode(kind, a)))
    return kvs, tensors


def verify(cfg, w):
    expected_tokens, expected_types, expected_merges = tiny_tokenizer(cfg["vocab_size"])
    # The fp16 scale adds up to 2^-11 relative on q * d.
    # Relative to a block's largest magnitude: |error| <= d / 2 (Q8_0, d = amax / 127) or |d|
    # (Q4_0, d = amax / 8, the clamp at 15), plus up to 2^-11 of q * d from the fp16 scale.
    bound = {"f32": 0.0, "f16": 1e-3, "q8_0": 1.0 / 254 + 1.0 / 2048, "q4_0": 1.0 / 8 + 1.0 / 2048}
    for ftype in FILE_TYPE:
        kv, tensors = read_gguf(OUT / ("tiny_%s.gguf" % ftype))
        assert kv["general.architecture"] == "gpt2" and kv["general.file_type"] == FILE_TYPE[ftype]
        assert kv["tokenizer.ggml.tokens"] == expected_tokens
        assert kv["tokenizer.ggml.token_type"] == expected_types
        assert kv["tokenizer.ggml.merges"] == expected_merges
        assert "output.weight" not in tensors  # tied head
        for name, a, keep in tensor_plan(cfg, w):
            kind, ne, values = tensors[name]
            assert ne == list(reversed(a.shape)), name
            assert kind == expected_kind(ftype, name, keep), name
            x = a.astype(np.float32).reshape(-1)
            err = np.abs(values - x)
            if kind in (GGML_Q8_0, GGML_Q4_0):
                amax = np.max(np.abs(x.reshape(-1, QK)), axis=1).repeat(QK)
                b = bound["q8_0" if kind == GGML_Q8_0 else "q4_0"]
                assert np.all(err <= amax * b + 1e-7), (ftype, name, err.max())
            elif ftype == "f16" and not keep:
                assert np.all(err <= np.abs(x) * bound[ftype] + 1e-7), (name, err.max())
            else:
                assert np.array_equal(values, x), (ftype, name)
    # The tokenizer files for the Hugging Face side.
    vocab = json.loads((OUT / "tokenizer" / "vocab.json").read_text(encoding="utf-8"))
    assert [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])] == expected_tokens
    merges = (OUT / "tokenizer" / "merges.txt").read_text(encoding="utf-8").split("\n")
    assert merges[0].startswith("#version") and merges[1:-1] == expected_merges
    print("verified", ", ".join("tiny_%s.gguf" % f for f in FILE_TYPE))


def write_corpus():
    """Seeds for fuzz_gguf: a micro GPT-2 in every type, and broken copies of it."""
    corpus = ROOT / "tests" / "fuzz" / "corpus" / "gguf"
    corpus.mkdir(parents=True, exist_ok=True)
    for old in corpus.iterdir():
        old.unlink()
    cfg = {"vocab_size": 258, "n_positions": 8, "n_embd": 32, "n_layer": 1, "n_head": 2,
           "layer_norm_epsilon": 1e-5, "bos_token_id": 257, "eos_token_id": 257}
    rng = np.random.default_rng(5)
    C, V, P = 32, 258, 8
    shapes = {"wte.weight": (V, C), "wpe.weight": (P, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for hf, shape in (("ln_1", (C,)), ("attn.c_attn", (C, 3 * C)), ("attn.c_proj", (C, C)),
                      ("ln_2", (C,)), ("mlp.c_fc", (C, 4 * C)), ("mlp.c_proj", (4 * C, C))):
        shapes["h.0.%s.weight" % hf] = shape
        shapes["h.0.%s.bias" % hf] = (shape[-1],)
    w = {k: (rng.standard_normal(v) * 0.02).astype(np.float32) for k, v in shapes.items()}
    valid = {}
    for ftype in FILE_TYPE:
        valid[ftype] = gguf_bytes(*build(ftype, cfg, w))
        (corpus / ("valid_gpt2_%s.gguf" % ftype)).write_bytes(valid[ftype])
    base = valid["q4_0"]
    kvs, tensors = build("q4_0", cfg, w)
    broken = {
        "truncated": base[:len(base) // 2],
        "huge_kv_count": base[:16] + struct.pack("<Q", 1 << 62) + base[24:],
        "huge_tensor_count": base[:8] + struct.pack("<Q", 1 << 62) + base[16:],
        "version_2": base[:4] + struct.pack("<I", 2) + base[8:],
        "unknown_tensor_type": gguf_bytes(kvs, [(n, 10 if i == 0 else k, ne, d)
                                                for i, (n, k, ne, d) in enumerate(tensors)]),
        "duplicate_key": gguf_bytes(kvs + [kvs[0]], tensors),
        "duplicate_tensor": gguf_bytes(kvs, tensors + [tensors[0]]),
        "wrong_dims": gguf_bytes(kvs, [(n, k, list(reversed(ne)) if n == "blk.0.attn_qkv.weight"
                                        else ne, d) for n, k, ne, d in tensors]),
        "llama_architecture": gguf_bytes([("general.architecture", T_STRING, "llama")] + kvs[1:],
                                         tensors),
        "no_tensors": gguf_bytes(kvs, []),
    }
    for name, raw in broken.items():
        (corpus / ("invalid_%s.gguf" % name)).write_bytes(raw)
    # The k-quants tinylm reads (Q4_K 12, Q5_K 13, Q6_K 14: 144, 176, 210 bytes per 256 values),
    # as extra tensors of random bytes beside the micro GPT-2, which the target decodes.
    kquants = [("kquant.%d" % kind, kind, [256], rng.integers(0, 256, size, np.uint8).tobytes())
               for kind, size in ((12, 144), (13, 176), (14, 210))]
    (corpus / "valid_gpt2_q4_0_with_k_quants.gguf").write_bytes(gguf_bytes(kvs, tensors + kquants))
    print("wrote", len(valid) + len(broken) + 1, "seeds to", corpus.relative_to(ROOT))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verify", action="store_true", help="check the files; write nothing")
    ap.add_argument("--corpus", action="store_true", help="write the fuzz_gguf seed corpus")
    args = ap.parse_args()
    if args.corpus:
        write_corpus()
        return 0
    cfg = json.loads((TINY / "config.json").read_text())
    w = read_safetensors(TINY / "model.safetensors")
    if not args.verify:
        (OUT / "tokenizer").mkdir(parents=True, exist_ok=True)
        tokens, _, merges = tiny_tokenizer(cfg["vocab_size"])
        (OUT / "tokenizer" / "vocab.json").write_text(
            json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False), encoding="utf-8")
        (OUT / "tokenizer" / "merges.txt").write_text(
            "#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
        for ftype in FILE_TYPE:
            kvs, tensors = build(ftype, cfg, w)
            write_gguf(OUT / ("tiny_%s.gguf" % ftype), kvs, tensors)
    verify(cfg, w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
