#!/usr/bin/env python3
"""Reference values for the GPT-2 training protocol's number formatting and fingerprints.

Writes tests/fixtures/train/protocol.json:
  repr:     [[float64 bits as hex, Python's repr(x)], ...] for special values, float32 values
            seen through float64 (as losses and weights are printed) and random doubles;
  pairwise: [{"values": [float32 bits as hex], "sum": repr, "abs_sum": repr}, ...] where the
            sums follow the protocol's definition (float64, ranges of <= 128 left to right
            from 0, longer ranges split n/2 | n - n/2), computed here in plain Python.
Run with /usr/bin/python3 (numpy only for float32 rounding).
"""
import json
import random
import struct
import sys

import numpy as np


def f64_hex(x):
    return struct.pack("<d", x).hex()


def f32_hex(x):
    return struct.pack("<f", x).hex()


def pairwise(xs, f):
    if len(xs) <= 128:
        s = 0.0
        for v in xs:
            s += f(v)
        return s
    h = len(xs) // 2
    return pairwise(xs[:h], f) + pairwise(xs[h:], f)


def main(out):
    rng = random.Random(20261129)
    values = [0.0, -0.0, 1.0, -1.0, 100.0, 0.1, 1e-4, 1e-5, 1.5e-7, 1e15, 1e16, 1234567890123456.0,
              12345678901234567.0, 5e-324, 1.7976931348623157e308, 2.0 ** -1074 * 3, 0.3, 2 / 3,
              10.825, 123.456, 1e22, 1e-300, float("inf"), float("-inf")]
    for _ in range(300):
        values.append(float(np.float32(rng.gauss(0, 1) * 10 ** rng.randint(-8, 8))))
    for _ in range(300):
        values.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0])
    values = [v for v in values if v == v]  # NaN has no single repr to compare bits against
    reprs = [[f64_hex(v), repr(v)] for v in values]

    np_rng = np.random.default_rng(7)
    cases = []
    for n in (1, 7, 128, 129, 255, 256, 1000, 3001):
        arr = (np_rng.standard_normal(n) * 0.02).astype(np.float32)
        xs = [float(v) for v in arr]
        cases.append({"values": [f32_hex(v) for v in arr],
                      "sum": repr(pairwise(xs, lambda v: v)),
                      "abs_sum": repr(pairwise(xs, abs))})
    with open(out, "w") as fh:
        json.dump({"repr": reprs, "pairwise": cases}, fh)
        fh.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/train/protocol.json")
