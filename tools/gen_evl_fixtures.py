#!/usr/bin/python3
"""Generate the EvermindLM checkpoint (EVL0) and delta (EVD0) fixtures and fuzz seeds.

An independent writer of both formats, from their description in docs/formats.md
("EvermindLM checkpoints"), using only the standard library: struct for little-endian
fields and IEEE half precision (struct's 'e' rounds to nearest, ties to even), zlib.crc32
for the trailer. The C++ tests check that tinylm reads these files and writes the same
bytes.

  tests/fixtures/evl/tiny.json         configuration, parameters as u32 bit patterns (base,
                                       its f16 rounding, a "current" version), CRCs, and the
                                       rows each delta must hold
  tests/fixtures/evl/tiny_f32.evl      the base, version 1 (f32)
  tests/fixtures/evl/tiny_f16.evl      the base, version 2 (f16)
  tests/fixtures/evl/tiny_delta_eps0.evd      current against tiny_f32.evl, eps 0
  tests/fixtures/evl/tiny_delta_eps0.01.evd   the same, eps 0.01 (as f32)
  tests/fuzz/corpus/evl_checkpoint/    seeds for fuzz_evl_checkpoint
  tests/fuzz/corpus/evl_delta/         seeds for fuzz_evl_delta (against the base that
                                       fuzz_evl_delta.cpp builds: the same formula as
                                       fuzz_base() below)

The corpus directories are wholly generated (files already there are removed first). The
output is deterministic.

Usage (from the repository root):
    /usr/bin/python3 tools/gen_evl_fixtures.py
"""

import json
import math
import random
import struct
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "evl"
CORPUS = REPO / "tests" / "fuzz" / "corpus"

EVL_MAGIC = 0x45564C30  # "EVL0"
EVD_MAGIC = 0x45564430  # "EVD0"
TAG = b"CRC1"
FIELDS = ["vocab_size", "d_model", "n_layers", "conv_kernel", "hidden_dim", "n_experts", "top_k"]

TINY = dict(vocab_size=5, d_model=4, n_layers=1, conv_kernel=2, hidden_dim=6, n_experts=2, top_k=1)


def layout(c):
    """(name, numel) in canonical order, from the format description."""
    V, d, L, K, H, E = (c[k] for k in ["vocab_size", "d_model", "n_layers", "conv_kernel",
                                        "hidden_dim", "n_experts"])
    out = [("emb", V * d)]
    for l in range(L):
        p = f"layers.{l}."
        out += [(p + "conv", d * K), (p + "conv_norm", d), (p + "moe_norm", d),
                (p + "router", E * d), (p + "shared.up", H * d), (p + "shared.down", d * H)]
        for e in range(E):
            out += [(p + f"experts.{e}.up", H * d), (p + f"experts.{e}.down", d * H)]
    return out


def n_params(c):
    return sum(n for _, n in layout(c))


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def f16_bits(u):
    """f32 bit pattern -> IEEE half bits, round to nearest even (struct 'e')."""
    x = bits_f32(u)
    if math.isnan(x):
        return 0x7E00 | (0x8000 if u >> 31 else 0)
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:  # rounds past 65504: infinity
        return 0xFC00 if x < 0 else 0x7C00


def f16_widen(h):
    return f32_bits(struct.unpack("<e", struct.pack("<H", h))[0])


def with_trailer(body):
    body += TAG
    return body + struct.pack("<I", zlib.crc32(body))


def evl(c, bits, version=1):
    head = struct.pack("<9I", EVL_MAGIC, version, *(c[k] for k in FIELDS))
    if version == 1:
        data = struct.pack(f"<{len(bits)}I", *bits)
    else:
        data = struct.pack(f"<{len(bits)}H", *(f16_bits(u) for u in bits))
    return with_trailer(head + data)


def rows_of(c):
    """Rows as (first element, width): d_model values of a tensor whose size is a multiple of
    d_model, single values otherwise."""
    rows, off, d = [], 0, c["d_model"]
    for _, n in layout(c):
        w = d if n % d == 0 else 1
        rows += [(off + i * w, w) for i in range(n // w)]
        off += n
    return rows


def changed(b, u, eps):
    if b == u:
        return False
    if eps == 0:
        return True
    diff = abs(bits_f32(u) - bits_f32(b))
    return not diff <= eps


def delta_rows(c, base, cur, eps):
    return [r for r, (e0, w) in enumerate(rows_of(c))
            if any(changed(base[e], cur[e], eps) for e in range(e0, e0 + w))]


def evd(c, base_crc, base, cur, eps_bits, runs=None, rows_field=None, version=1):
    """The delta file. runs: explicit [(first, n)] (for broken seeds); default the maximal
    runs of the changed rows."""
    eps = bits_f32(eps_bits)
    rows = rows_of(c)
    if runs is None:
        runs = []
        for r in delta_rows(c, base, cur, eps):
            if runs and runs[-1][0] + runs[-1][1] == r:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((r, 1))
    n_rows = sum(n for _, n in runs) if rows_field is None else rows_field
    out = struct.pack("<9I", EVD_MAGIC, version, *(c[k] for k in FIELDS))
    out += struct.pack("<4I", base_crc, eps_bits, n_rows, len(runs))
    for first, n in runs:
        out += struct.pack("<2I", first, n)
        for r in range(first, first + n):
            e0, w = rows[r] if r < len(rows) else (0, c["d_model"])
            out += struct.pack(f"<{w}I", *cur[e0:e0 + w])
    return with_trailer(out)


def crc_of(blob):
    return struct.unpack("<I", blob[-4:])[0]


def tiny_base():
    c = TINY
    rng = random.Random(1234)
    bits = [f32_bits(rng.gauss(0.0, 0.5)) for _ in range(n_params(c))]
    specials = [0.0, -0.0, 1.0, -2.5, math.nan, math.inf, -math.inf, 65504.0,
                65519.0, 65520.0, 1 + 2**-11, 1 + 3 * 2**-11, 2**-24, 2**-25, 3 * 2**-25,
                6.0e-5, 1e-8, -1e-30, 1e30, 0.1, 1 / 3, -65536.0]
    for i, x in enumerate(specials):
        bits[4 + i] = f32_bits(x)
    return bits


def tiny_current(base):
    cur = list(base)

    def add(i, dx):
        cur[i] = f32_bits(bits_f32(cur[i]) + dx)

    add(1, 1e-3)                       # row 0: small change
    cur[4] = f32_bits(-0.0)            # row 1: +0.0 -> -0.0
    cur[8] = 0x7FC00001                # row 2: another NaN payload
    for i in range(20, 32):            # rows 5..7: a run of large changes
        add(i, 0.5)
    add(40, 0.02)                      # row 10: just above 0.01
    add(44, 0.009)                     # row 11: just below 0.01
    cur[80] = f32_bits(math.inf)       # row 20
    cur[187] = cur[187] ^ 0x80000000   # row 46 (last): sign flip
    return cur


def fuzz_base_bits(c):
    """The base fuzz_evl_delta.cpp builds: ((7 i) mod 17 - 8) / 16, exact in f32."""
    return [f32_bits(((7 * i) % 17 - 8) / 16) for i in range(n_params(c))]


def write(path, blob):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)


def fixtures():
    c = TINY
    base = tiny_base()
    cur = tiny_current(base)
    f32_file = evl(c, base, 1)
    f16_file = evl(c, base, 2)
    write(FIXTURES / "tiny_f32.evl", f32_file)
    write(FIXTURES / "tiny_f16.evl", f16_file)
    deltas = []
    for name, eps, want in [("tiny_delta_eps0.evd", 0.0, [0, 1, 2, 5, 6, 7, 10, 11, 20, 46]),
                            ("tiny_delta_eps0.01.evd", 0.01, [2, 5, 6, 7, 10, 20, 46])]:
        eps_bits = f32_bits(eps)
        rows = delta_rows(c, base, cur, bits_f32(eps_bits))
        assert rows == want, (name, rows)
        blob = evd(c, crc_of(f32_file), base, cur, eps_bits)
        write(FIXTURES / name, blob)
        deltas.append({"file": name, "eps_bits": eps_bits, "rows": rows, "crc": crc_of(blob)})
    doc = {
        "about": "written by tools/gen_evl_fixtures.py; parameters as u32 bit patterns",
        "config": c,
        "n_params": n_params(c),
        "base_bits": base,
        "base_f16": [f16_bits(u) for u in base],
        "base_f16_widened_bits": [f16_widen(f16_bits(u)) for u in base],
        "current_bits": cur,
        "crc_f32": crc_of(f32_file),
        "crc_f16": crc_of(f16_file),
        "deltas": deltas,
    }
    (FIXTURES / "tiny.json").write_text(json.dumps(doc, indent=1) + "\n")


def corpus():
    ck_dir, d_dir = CORPUS / "evl_checkpoint", CORPUS / "evl_delta"
    for d in (ck_dir, d_dir):
        d.mkdir(parents=True, exist_ok=True)
        for f in d.iterdir():
            f.unlink()
    c = TINY
    base = fuzz_base_bits(c)
    good = evl(c, base, 1)
    write(ck_dir / "valid_tiny_f32.evl", good)
    write(ck_dir / "valid_tiny_f16.evl", evl(c, base, 2))
    two = dict(c, n_layers=2, n_experts=3, top_k=3)
    write(ck_dir / "valid_two_layers.evl", evl(two, fuzz_base_bits(two), 1))
    write(ck_dir / "invalid_truncated.evl", good[:-3])
    write(ck_dir / "invalid_crc.evl", good[:50] + bytes([good[50] ^ 1]) + good[51:])
    write(ck_dir / "invalid_magic.evl", with_trailer(b"0LVX" + good[4:-8]))
    write(ck_dir / "invalid_version.evl", with_trailer(good[:4] + struct.pack("<I", 3) + good[8:-8]))
    bad_k = struct.pack("<9I", EVL_MAGIC, 1, 5, 4, 1, 2, 6, 2, 3)  # top_k > n_experts
    write(ck_dir / "invalid_top_k.evl", with_trailer(bad_k + good[36:-8]))
    huge = struct.pack("<9I", EVL_MAGIC, 1, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                       0xFFFFFFFF, 0xFFFFFFFF, 1)
    write(ck_dir / "invalid_huge_config.evl", with_trailer(huge + good[36:-8]))
    write(ck_dir / "invalid_extra_bytes.evl", with_trailer(good[:-8] + b"\0\0\0\0"))

    base_crc = crc_of(good)
    cur = list(base)
    for i in list(range(8, 16)) + [100, 101, 187]:
        cur[i] = f32_bits(bits_f32(cur[i]) + 0.25)
    cur[40] = f32_bits(-0.0) if base[40] == 0 else base[40] ^ 0x80000000
    eps0 = f32_bits(0.0)
    write(d_dir / "valid_eps0.evd", evd(c, base_crc, base, cur, eps0))
    write(d_dir / "valid_eps.evd", evd(c, base_crc, base, cur, f32_bits(0.2)))
    write(d_dir / "valid_empty.evd", evd(c, base_crc, base, base, eps0))
    write(d_dir / "valid_adjacent_runs.evd", evd(c, base_crc, base, cur, eps0, runs=[(2, 1), (3, 1)]))
    d = evd(c, base_crc, base, cur, eps0)
    write(d_dir / "invalid_truncated.evd", d[:-5])
    write(d_dir / "invalid_crc.evd", d[:60] + bytes([d[60] ^ 0x40]) + d[61:])
    write(d_dir / "invalid_wrong_base.evd", evd(c, base_crc ^ 1, base, cur, eps0))
    write(d_dir / "invalid_overlap.evd", evd(c, base_crc, base, cur, eps0, runs=[(2, 2), (3, 1)]))
    write(d_dir / "invalid_out_of_range.evd", evd(c, base_crc, base, cur, eps0, runs=[(46, 2)]))
    write(d_dir / "invalid_row_count.evd", evd(c, base_crc, base, cur, eps0, rows_field=7))
    write(d_dir / "invalid_version.evd", evd(c, base_crc, base, cur, eps0, version=2))
    write(d_dir / "invalid_other_model.evd", evd(two, base_crc, fuzz_base_bits(two),
                                                   fuzz_base_bits(two), eps0))


if __name__ == "__main__":
    fixtures()
    corpus()
