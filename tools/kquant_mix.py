#!/usr/bin/python3
"""Rewrites a GPT-2 GGUF's matrices as random k-quant blocks in llama.cpp's Q4_K_M or Q5_K_M mix.

For speed measurements of tinylm's k-quant products (docs/performance.md, "K-quant files"):
tinylm has no k-quant quantizer, so the blocks are random bytes with small positive fp16
scales (d ~ 0.001, dmin ~ 0.0005). The logits of such a file mean nothing; its decode speed is
what a real file of the same mix gives. The mix follows llama.cpp's llama_tensor_get_type for
a tied GPT-2: token_embd Q6_K, ffn_down Q6_K (llama.cpp gives it to about half the layers;
here to all), attn_qkv one step wider than the rest.

    q4_k_m: token_embd, ffn_down Q6_K; attn_qkv Q5_K; attn_output, ffn_up Q4_K
    q5_k_m: token_embd, attn_qkv, ffn_down Q6_K; attn_output, ffn_up Q5_K

Every other tensor (position_embd, the 1-D norms and biases) and all metadata are copied as
they are; the file is written by gguf_reference.py's writer. The input: any GPT-2 GGUF whose
matrices' rows are whole 256-weight blocks (as `tinylm convert MODEL OUT.gguf --dtype f16`
writes for 124M).

Usage: /usr/bin/python3 tools/kquant_mix.py IN.gguf OUT.gguf q4_k_m|q5_k_m [--seed N]
"""
import argparse
import struct

import numpy as np

from gguf_reference import gguf_file, pad

Q4_K, Q5_K, Q6_K = 12, 13, 14
BLOCK_BYTES = {Q4_K: 144, Q5_K: 176, Q6_K: 210}
MIXES = {
    "q4_k_m": {"token_embd": Q6_K, "attn_qkv": Q5_K, "attn_output": Q4_K, "ffn_up": Q4_K,
               "ffn_down": Q6_K},
    "q5_k_m": {"token_embd": Q6_K, "attn_qkv": Q6_K, "attn_output": Q5_K, "ffn_up": Q5_K,
               "ffn_down": Q6_K},
}
# Bytes per element of the GGUF value types that have a fixed size (gguf spec).
VALUE_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
# Bytes of n elements of the ggml tensor types a GPT-2 GGUF may hold.
TENSOR_BYTES = {0: lambda n: 4 * n, 1: lambda n: 2 * n, 2: lambda n: n // 32 * 18,
                8: lambda n: n // 32 * 34, Q4_K: lambda n: n // 256 * 144,
                Q5_K: lambda n: n // 256 * 176, Q6_K: lambda n: n // 256 * 210}


class Reader:
    def __init__(self, raw):
        self.raw, self.pos = raw, 0

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.raw, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def string(self):
        (n,) = self.take("Q")
        s = self.raw[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def skip_value(self, kind):
        if kind == 8:
            self.string()
        elif kind == 9:
            element, count = self.take("IQ")
            if element in (8, 9):
                for _ in range(count):
                    self.skip_value(element)
            else:
                self.pos += VALUE_SIZE[element] * count
        else:
            self.pos += VALUE_SIZE[kind]


def random_blocks(kind, n, rng):
    blocks = rng.integers(0, 256, size=(n // 256, BLOCK_BYTES[kind]), dtype=np.uint8)
    if kind == Q6_K:
        blocks[:, 208:210] = (0x19, 0x14)  # d = fp16 0x1419 ~ 0.001, at the block's end
    else:
        blocks[:, 0:4] = (0x19, 0x14, 0x19, 0x10)  # d ~ 0.001, dmin ~ 0.0005
    return blocks.tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("mix", choices=sorted(MIXES))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    raw = open(args.src, "rb").read()
    r = Reader(raw)
    if raw[0:4] != b"GGUF" or struct.unpack_from("<I", raw, 4)[0] != 3:
        raise SystemExit("%s: not a GGUF v3 file" % args.src)
    r.pos = 8
    n_tensors, n_kv = r.take("QQ")
    kv_start, alignment = r.pos, 32
    for _ in range(n_kv):
        key = r.string()
        (kind,) = r.take("I")
        if key == "general.alignment":
            alignment = struct.unpack_from("<I", raw, r.pos)[0]
        r.skip_value(kind)
    kv_bytes = raw[kv_start:r.pos]
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        (dims,) = r.take("I")
        ne = r.take("%dQ" % dims)
        kind, offset = r.take("IQ")
        infos.append((name, list(ne), kind, offset))

    data_start = pad(r.pos, alignment)
    rng = np.random.default_rng(args.seed)
    mix = MIXES[args.mix]
    out = []
    for name, ne, kind, offset in infos:
        n = int(np.prod(ne))
        data = raw[data_start + offset:data_start + offset + TENSOR_BYTES[kind](n)]
        role = name.split(".")[-2] if name.startswith("blk.") else name.split(".")[0]
        if len(ne) == 2 and role in mix:
            if ne[0] % 256:
                raise SystemExit("%s: %s has rows of %d, not whole 256-weight blocks"
                                 % (args.src, name, ne[0]))
            kind = mix[role]
            data = random_blocks(kind, n, rng)
        out.append((name, kind, ne, data))
    body = gguf_file(n_kv, kv_bytes, out, alignment)
    open(args.dst, "wb").write(body)
    print("wrote %s: %d bytes, %s mix" % (args.dst, len(body), args.mix))


if __name__ == "__main__":
    main()
