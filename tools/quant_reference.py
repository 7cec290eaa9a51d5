#!/usr/bin/python3
"""An independent numpy implementation of ggml's Q8_0 and Q4_0 blocks (and Q6_K's, Q4_K's and
Q5_K's decoding), and the fixture that tests/unit/quant_blocks_test.cpp compares tinylm's quantizer
with, byte for byte.

Written from the formats' definition (ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref and
the block structs), not from tinylm's code:

  Q8_0, 34 bytes: fp16 d (little-endian), 32 int8 q.   Weight j = q[j] * d.
    amax = MAX(amax, |x|) over the block (C's MAX(a, b) = a > b ? a : b, so a NaN is kept
    only until a later element replaces it); d = amax / 127; id = 1 / d if d != 0 else 0;
    q = roundf(x * id), halves away from zero.
  Q4_0, 18 bytes: fp16 d, 16 bytes qs; qs[j] = q[j] | q[j + 16] << 4. Weight = (q - 8) * d.
    max = the first element of largest |x| (strict <), with its sign; d = max / -8;
    id = 1 / d if d != 0 else 0; q = min(15, (int8_t)(x * id + 8.5)).
  All arithmetic in float32; the stored d is float16(d), nearest even, a NaN written as
  sign | 0x7e00.
  Q6_K, 210 bytes (read only; from block_q6_K and dequantize_row_q6_K): ql[128] (low four
    bits), qh[64] (high two bits), int8 scales[16], fp16 d; 256 weights. For half h and
    l < 32 (L = ql[64h:], H = qh[32h:], S = scales[8h:], g = l // 16):
      y[128h + l]      = d * S[g]     * ((L[l] & 15      | (H[l] & 3) << 4) - 32)
      y[128h + l + 32] = d * S[g + 2] * ((L[l + 32] & 15 | (H[l] >> 2 & 3) << 4) - 32)
      y[128h + l + 64] = d * S[g + 4] * ((L[l] >> 4      | (H[l] >> 4 & 3) << 4) - 32)
      y[128h + l + 96] = d * S[g + 6] * ((L[l + 32] >> 4 | (H[l] >> 6) << 4) - 32)
    each product in float32, left to right.
  Q4_K, 144 bytes (read only; from block_q4_K, get_scale_min_k4 and dequantize_row_q4_K):
    fp16 d, fp16 dmin, uint8 scales[12], uint8 qs[128]; 256 weights. Scale and min j < 8,
    six bits each (S = scales):
      j < 4: sc = S[j] & 63, m = S[j + 4] & 63
      j > 3: sc = S[j + 4] & 15 | (S[j - 4] >> 6) << 4, m = S[j + 4] >> 4 | (S[j] >> 6) << 4
    For chunk c < 4 and l < 32 (Q = qs[32c:], (sc1, m1) = pair 2c, (sc2, m2) = pair 2c + 1):
      y[64c + l]      = (d * sc1) * (Q[l] & 15) - dmin * m1
      y[64c + l + 32] = (d * sc2) * (Q[l] >> 4) - dmin * m2
    each product and then the difference rounded to float32 (two roundings, no fused
    multiply-add; the products are exact, 11 + 6 + 5 bits, so a fused one gives the same).
  Q5_K, 176 bytes (read only; from block_q5_K and dequantize_row_q5_K): fp16 d, fp16 dmin,
    uint8 scales[12], uint8 qh[32], uint8 qs[128]; as Q4_K, with 16 added to the quant where
    bit 2c of qh[l] is set (y[64c + l]) or bit 2c + 1 (y[64c + l + 32]).
  Where C converts a float outside int8's range (NaN, inf, or an id that overflowed), ggml's
  x86 build truncates to int32 with cvttss2si (INT32_MIN when out of range) and keeps the low
  byte; this script does the same, so those edge blocks have defined expected bytes.

Writes, under the output directory (default tests/fixtures/quant):
  inputs.f32        the input floats (little-endian float32), a multiple of 32
  q8_0.bin          their Q8_0 blocks       q8_0_dequant.f32   those blocks dequantized
  q4_0.bin          their Q4_0 blocks       q4_0_dequant.f32   those blocks dequantized
  q6_k.bin          Q6_K blocks of random bits and edge scales   q6_k_dequant.f32   decoded
  q4_k.bin          Q4_K blocks of random bits and edge d, dmin  q4_k_dequant.f32   decoded
  q5_k.bin          Q5_K blocks of random bits and edge d, dmin  q5_k_dequant.f32   decoded

Usage: /usr/bin/python3 tools/quant_reference.py [--out DIR]
"""
import argparse
import os

import numpy as np

F32 = np.float32
QK = 32


def fp16_bits(d):
    """float32 -> IEEE half bits, nearest even; NaN -> sign | 0x7e00 (as ggml writes it)."""
    d = F32(d)
    sign = 0x8000 if np.signbit(d) else 0
    if np.isnan(d):
        return sign | 0x7E00
    with np.errstate(over="ignore"):
        h = np.array([d], dtype=np.float32).astype(np.float16)
    return int(h.view(np.uint16)[0])


def fp16_value(bits):
    return F32(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def to_int8_x86(v):
    """C's (int8_t)v as x86 computes it: truncate to int32 (INT32_MIN if NaN or outside), low
    byte, as a signed value."""
    v = F32(v)
    if np.isfinite(v) and -2147483648.0 <= float(v) < 2147483648.0:
        i = int(np.trunc(float(v)))
    else:
        i = -2147483648
    b = i & 0xFF
    return b - 256 if b >= 128 else b


def roundf(v):
    """C's roundf: nearest integer, halves away from zero (exact in float64 for a float32)."""
    v = float(v)
    if not np.isfinite(v):
        return v
    t = np.trunc(abs(v))
    r = t + 1.0 if abs(v) - t >= 0.5 else t
    return -r if v < 0 else r


def quantize_q8_0(x):
    out = bytearray()
    with np.errstate(all="ignore"):
        for blk in x.reshape(-1, QK):
            amax = F32(0)
            for v in blk:
                a = F32(abs(v))
                amax = amax if amax > a else a
            d = F32(amax / F32(127))
            idv = F32(F32(1) / d) if d != 0 or np.isnan(d) else F32(0)
            out += fp16_bits(d).to_bytes(2, "little")
            for v in blk:
                q = to_int8_x86(F32(roundf(F32(v * idv))))
                out += (q & 0xFF).to_bytes(1, "little")
    return bytes(out)


def quantize_q4_0(x):
    out = bytearray()
    with np.errstate(all="ignore"):
        for blk in x.reshape(-1, QK):
            amax, mx = F32(0), F32(0)
            for v in blk:
                if amax < abs(v):
                    amax, mx = F32(abs(v)), F32(v)
            d = F32(mx / F32(-8))
            idv = F32(F32(1) / d) if d != 0 or np.isnan(d) else F32(0)
            out += fp16_bits(d).to_bytes(2, "little")
            qs = []
            for v in blk:
                q = to_int8_x86(F32(F32(v * idv) + F32(8.5)))
                qs.append(min(15, q) & 0xFF)  # signed min, then the byte C stores
            for j in range(QK // 2):
                out += ((qs[j] | (qs[j + QK // 2] << 4)) & 0xFF).to_bytes(1, "little")
    return bytes(out)


def dequantize_q8_0(b):
    y = []
    for i in range(0, len(b), 34):
        d = fp16_value(int.from_bytes(b[i:i + 2], "little"))
        q = np.frombuffer(b[i + 2:i + 34], dtype=np.int8)
        with np.errstate(all="ignore"):
            y.extend(F32(int(v)) * d for v in q)
    return np.array(y, dtype=np.float32)


def dequantize_q4_0(b):
    y = []
    for i in range(0, len(b), 18):
        d = fp16_value(int.from_bytes(b[i:i + 2], "little"))
        qs = b[i + 2:i + 18]
        with np.errstate(all="ignore"):
            lo = [F32((v & 15) - 8) * d for v in qs]
            hi = [F32((v >> 4) - 8) * d for v in qs]
        y.extend(lo + hi)
    return np.array(y, dtype=np.float32)


def dequantize_q6_k(b):
    y = []
    with np.errstate(all="ignore"):
        for i in range(0, len(b), 210):
            blk = b[i:i + 210]
            ql, qh = blk[0:128], blk[128:192]
            sc = np.frombuffer(blk[192:208], dtype=np.int8)
            d = fp16_value(int.from_bytes(blk[208:210], "little"))
            out = [F32(0)] * 256
            for h in range(2):
                L, H, S = ql[64 * h:], qh[32 * h:], sc[8 * h:]
                for l in range(32):
                    g = l // 16
                    q1 = ((L[l] & 15) | (H[l] & 3) << 4) - 32
                    q2 = ((L[l + 32] & 15) | (H[l] >> 2 & 3) << 4) - 32
                    q3 = ((L[l] >> 4) | (H[l] >> 4 & 3) << 4) - 32
                    q4 = ((L[l + 32] >> 4) | (H[l] >> 6) << 4) - 32
                    for off, s_, q in ((0, S[g], q1), (32, S[g + 2], q2), (64, S[g + 4], q3),
                                       (96, S[g + 6], q4)):
                        out[128 * h + l + off] = F32(F32(d * F32(int(s_))) * F32(q))
            y.extend(out)
    return np.array(y, dtype=np.float32)


def get_scale_min_k4(j, q):
    """Scale and min j (0..7) of a Q4_K / Q5_K block's 12 scale bytes q, six bits each."""
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 15) | (q[j - 4] >> 6) << 4, (q[j + 4] >> 4) | (q[j] >> 6) << 4


def dequantize_k(b, with_qh):
    """Q4_K blocks (144 bytes), or Q5_K blocks (176 bytes, with qh: a fifth bit, 16)."""
    size = 176 if with_qh else 144
    y = []
    with np.errstate(all="ignore"):
        for i in range(0, len(b), size):
            blk = b[i:i + size]
            d = fp16_value(int.from_bytes(blk[0:2], "little"))
            dmin = fp16_value(int.from_bytes(blk[2:4], "little"))
            scales = blk[4:16]
            qh = blk[16:48] if with_qh else bytes(32)
            qs = blk[size - 128:size]
            for c in range(4):
                L = qs[32 * c:32 * c + 32]
                sc1, m1 = get_scale_min_k4(2 * c, scales)
                sc2, m2 = get_scale_min_k4(2 * c + 1, scales)
                d1, dm1 = F32(d * F32(sc1)), F32(dmin * F32(m1))
                d2, dm2 = F32(d * F32(sc2)), F32(dmin * F32(m2))
                lo = [(v & 15) + (16 if h >> (2 * c) & 1 else 0) for v, h in zip(L, qh)]
                hi = [(v >> 4) + (16 if h >> (2 * c + 1) & 1 else 0) for v, h in zip(L, qh)]
                y.extend(F32(F32(d1 * F32(q)) - dm1) for q in lo)
                y.extend(F32(F32(d2 * F32(q)) - dm2) for q in hi)
    return np.array(y, dtype=np.float32)


def dequantize_q4_k(b):
    return dequantize_k(b, with_qh=False)


def dequantize_q5_k(b):
    return dequantize_k(b, with_qh=True)


def q6_k_blocks():
    """Q6_K blocks of random quants and scales, with ordinary, zero, negative, subnormal,
    largest, infinite and NaN d."""
    rng = np.random.default_rng(20261203)
    out = bytearray()
    ds = [0.001, 0.0123, -0.02, 0.0, -0.0, 6e-8, 65504.0, np.inf, np.nan, 1.0]
    for k, d in enumerate(ds):
        body = rng.integers(0, 256, size=208, dtype=np.uint8)
        if k == len(ds) - 1:  # every q extreme with the extreme scales
            body[0:192] = [0x00, 0xFF] * 96
            body[192:208] = [0x80, 0x7F] * 8
        out += body.tobytes() + fp16_bits(d).to_bytes(2, "little")
    return bytes(out)


def k4_blocks(seed, body_bytes):
    """Q4_K (body_bytes 140) or Q5_K (172) blocks: random scales, qh and qs under every pair of
    ordinary, zero, negative, subnormal and largest d and dmin; then infinite and NaN ones (as
    Q6_K's); then two blocks of extreme bits: every scale and min 63 with every quant 0 or its
    largest (d = dmin = 1.0), and the same quants under scales and mins of 0 and 63 with
    d = -65504, dmin = 65504."""
    rng = np.random.default_rng(seed)
    finite = [0.001, 0.0123, -0.02, 0.0, -0.0, 6e-8, -3e-5, 65504.0]
    pairs = [(d, dmin) for d in finite for dmin in finite]
    pairs += [(np.inf, 0.0123), (0.0123, -np.inf), (np.nan, 0.001), (0.001, np.nan)]
    pairs += [(1.0, 1.0), (-65504.0, 65504.0)]
    out = bytearray()
    for k, (d, dmin) in enumerate(pairs):
        body = rng.integers(0, 256, size=body_bytes, dtype=np.uint8)
        if k >= len(pairs) - 2:  # scales 0xFF (then 0x00, 0xFF, ...), quants 0x00, 0xFF, ...
            body[0:12] = [0xFF] * 12 if k == len(pairs) - 2 else [0x00, 0xFF] * 6
            body[12:] = [0x00, 0xFF] * ((body_bytes - 12) // 2)
        out += fp16_bits(d).to_bytes(2, "little") + fp16_bits(dmin).to_bytes(2, "little")
        out += body.tobytes()
    return bytes(out)


def inputs():
    rng = np.random.default_rng(20261202)
    blocks = []

    def add(vals):
        v = np.asarray(vals, dtype=np.float32)
        assert v.size == QK
        blocks.append(v)

    add(np.zeros(QK))                                    # Q4_0: d = 0 / -8 = -0.0
    add(-np.zeros(QK))                                   # negative zeros
    add(np.linspace(-1, 1, QK))                          # a ramp
    # Q8_0 ties: amax 127 gives d = 1, id = 1, so k + 0.5 lands on a half.
    add([127.0, -127.0] + [k + 0.5 for k in range(-15, 15)])
    # Q4_0 ties: max -8 gives d = 1, id = 1: x + 8.5 hits integers and 16.5.
    add([-8.0, 8.0, 7.5, -7.5, 0.5, -0.5, 1.5, -1.5] + [k * 0.25 for k in range(-12, 12)])
    # Largest magnitude twice with both signs: the first one wins in Q4_0.
    add([-3.0] + [0.1 * k for k in range(1, 30)] + [3.0, 2.0])
    add([3.0] + [0.1 * k for k in range(1, 30)] + [-3.0, 2.0])
    # Values whose x * id + 8.5 rounds up to an integer in float32.
    add([8.0] + [np.nextafter(F32(-0.5), F32(0)) * k for k in range(1, 32)])
    # Subnormal scales: d below float16's range (stored 0) but id finite.
    add(rng.standard_normal(QK) * 1e-36)
    # Subnormal inputs: id overflows to inf (ggml's undefined conversion; see the docstring).
    add(rng.standard_normal(QK) * 1e-39)
    # Large values: d beyond float16's range (stored inf), and near it.
    add(rng.standard_normal(QK) * 1e10)
    add(np.concatenate([[65504.0 * 127], rng.standard_normal(QK - 1) * 1e5]))
    # NaN and inf: Q8_0's amax keeps a NaN only until a later element; Q4_0 never picks one.
    add([5.0, np.nan, 1.0] + [0.25] * 29)
    add([5.0] + [0.25] * 30 + [np.nan])
    add([np.inf, -1.0, 0.5] + [0.0] * 29)
    add([-np.inf, 2.0, np.nan] + [1.0] * 29)
    add([np.nan] * QK)
    # Ordinary weights at several scales.
    for scale in (0.02, 0.1, 1.0, 3.0):
        for _ in range(8):
            add(rng.standard_normal(QK) * scale)
    # A block where one outlier dominates.
    add(np.concatenate([[40.0], rng.standard_normal(QK - 1) * 0.05]))
    return np.concatenate(blocks).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/fixtures/quant")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    x = inputs()
    q8 = quantize_q8_0(x)
    q4 = quantize_q4_0(x)
    q6k = q6_k_blocks()
    q4k = k4_blocks(20261204, 140)
    q5k = k4_blocks(20261205, 172)
    # Spot checks of the definition on blocks whose bytes are known by hand.
    assert q8[:2] == b"\x00\x00" and q8[2:34] == bytes(32)
    assert q4[:2] == b"\x00\x80" and q4[2:18] == bytes([0x88] * 16)  # d = -0.0, q = 8
    tie = q8[3 * 34:4 * 34]
    assert tie[:2] == b"\x00\x3c"  # d = 1.0
    assert np.frombuffer(tie[4:6], dtype=np.int8).tolist() == [-15, -14]  # -14.5 -> -15
    sc = bytes([0xC1, 0x42, 0x03, 0xC4, 0x05, 0x06, 0x07, 0x88, 0x9A, 0xBC, 0xDE, 0xF0])
    assert [get_scale_min_k4(j, sc) for j in (0, 3, 4, 5, 7)] == [
        (1, 5), (4, 8), (0x3A, 9), (0x1C, 0xB), (0x30, 0x2F)]
    y4k, y5k = dequantize_q4_k(q4k), dequantize_q5_k(q5k)
    # The d = dmin = 1.0 block: quants 0 and 15 (31 with Q5_K's fifth bit) times 63, minus 63.
    assert y4k[-512:-256].tolist() == [-63.0, 15 * 63 - 63.0] * 128
    assert y5k[-512:-256].tolist() == [-63.0, 31 * 63 - 63.0] * 128
    outputs = {
        "inputs.f32": x.astype("<f4").tobytes(),
        "q8_0.bin": q8,
        "q8_0_dequant.f32": dequantize_q8_0(q8).astype("<f4").tobytes(),
        "q4_0.bin": q4,
        "q4_0_dequant.f32": dequantize_q4_0(q4).astype("<f4").tobytes(),
        "q6_k.bin": q6k,
        "q6_k_dequant.f32": dequantize_q6_k(q6k).astype("<f4").tobytes(),
        "q4_k.bin": q4k,
        "q4_k_dequant.f32": y4k.astype("<f4").tobytes(),
        "q5_k.bin": q5k,
        "q5_k_dequant.f32": y5k.astype("<f4").tobytes(),
    }
    for name, data in outputs.items():
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    print(f"{x.size // QK} blocks written to {args.out}")


if __name__ == "__main__":
    main()
