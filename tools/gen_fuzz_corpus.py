#!/usr/bin/python3
"""Generate the libFuzzer seed corpora under tests/fuzz/corpus/.

Writes a few small safetensors files, valid and deliberately broken, for the two fuzz
targets:

  tests/fuzz/corpus/safetensors/           fuzz_safetensors (any safetensors file)
  tests/fuzz/corpus/microgpt_checkpoint/   fuzz_microgpt_checkpoint (tinylm microgpt
                                           checkpoints: F64 tensors + __metadata__)

Each corpus directory is wholly generated: files already in it are removed first, so
inputs a fuzzer run added there are dropped too. The output is deterministic.

Usage (from the repository root, standard library only):
    /usr/bin/python3 tools/gen_fuzz_corpus.py [--out DIR]
"""

import argparse
import json
import math
import struct
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fuzz" / "corpus"

DTYPE_SIZES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "F64": 8, "I64": 8, "U64": 8,
}


def image(header, data=b"", declared_len=None):
    """The file: u64 little-endian header length, header bytes, data section."""
    if isinstance(header, str):
        header = header.encode("utf-8")
    n = len(header) if declared_len is None else declared_len
    return struct.pack("<Q", n) + header + data


def safetensors(tensors, metadata=None, align=True):
    """tensors: list of (name, dtype, shape, bytes), laid out in order. With `align`, the
    header is padded with spaces so the data section starts 8-byte aligned."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    data = b""
    for name, dtype, shape, raw in tensors:
        assert len(raw) == math.prod(shape) * DTYPE_SIZES[dtype], name
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if align:
        text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return image(text, data)


def pack(fmt, values):
    return struct.pack("<%d%s" % (len(values), fmt), *values)


def generic_corpus():
    f32 = pack("f", [1.5, -2.0, 0.25, 3.0e38])
    f16 = pack("H", [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x7E00])
    bf16 = pack("H", [0x3F80, 0xC040, 0x4049])
    f64 = pack("d", [math.pi, -1e300])
    mixed = [
        ("f32", "F32", [2, 2], f32),
        ("f16", "F16", [6], f16),
        ("bf16", "BF16", [1, 3], bf16),
        ("f64", "F64", [2], f64),
        ("i32", "I32", [3], pack("i", [7, -8, 9])),
        ("scalar", "F32", [], pack("f", [7.0])),
        ("empty", "F32", [0, 3], b""),
    ]
    one = [("w", "F32", [2], pack("f", [1.0, 2.0]))]
    one_header = '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    files = {
        "valid_mixed": safetensors(mixed, {"format": "pt", "note": "h\u00e9llo"}),
        "valid_unaligned": safetensors([
            ("bytes", "U8", [3], b"\x01\x02\x03"),
            ("w", "F32", [2], pack("f", [-1.25, 6.5])),
            ("d", "F64", [1], pack("d", [0.1])),
        ]),
        "valid_all_dtypes": safetensors(
            [("t_" + d.lower(), d, [2], bytes(range(1, 2 * s + 1))) for d, s in DTYPE_SIZES.items()],
            align=False),
        "valid_metadata_only": safetensors([], {"a": "1", "b": ""}),
        "valid_empty_metadata": safetensors(one, {}),
        "valid_empty_header": image("{}"),
        "valid_unpadded": safetensors(one, align=False),
        "valid_out_of_order": image(
            '{"late":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},'
            '"early":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
            pack("f", [1.0, 2.0, 3.0])),
        "invalid_short": b"\x02\x00\x00",
        "invalid_truncated": safetensors(mixed)[:-5],
        "invalid_header_len": image("{}", b"", declared_len=1 << 40),
        "invalid_not_object": image("[1,2]"),
        "invalid_json": image('{"w":{"dtype":"F32",'),
        "invalid_duplicate": image(one_header[:-1] + ',' + one_header[1:], pack("f", [1.0, 2.0])),
        "invalid_dtype": image(one_header.replace("F32", "F128"), pack("f", [1.0, 2.0])),
        "invalid_missing_shape": image(
            '{"w":{"dtype":"F32","data_offsets":[0,8]}}', pack("f", [1.0, 2.0])),
        "invalid_negative_shape": image(one_header.replace("[2]", "[-2]"), pack("f", [1.0, 2.0])),
        "invalid_offsets": image(one_header.replace("[0,8]", "[8,0]"), pack("f", [1.0, 2.0])),
        "invalid_size": image(one_header.replace("[2]", "[3]"), pack("f", [1.0, 2.0])),
        "invalid_gap": image(
            '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
            '"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}', pack("f", [1.0, 2.0, 3.0])),
        "invalid_overlap": image(
            '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', pack("f", [1.0, 2.0, 3.0])),
        "invalid_trailing": image(one_header, pack("f", [1.0, 2.0]) + b"xyz"),
        "invalid_shape_overflow": image(
            one_header.replace("[2]", "[4611686018427387904,4611686018427387904]"),
            pack("f", [1.0, 2.0])),
        "invalid_metadata_value": image(
            '{"__metadata__":{"k":1},' + one_header[1:], pack("f", [1.0, 2.0])),
        "invalid_extra_field": image(
            one_header.replace('"shape"', '"extra":0,"shape"'), pack("f", [1.0, 2.0])),
    }
    return files


def microgpt_layout(n_embd, n_layer, vocab_size, block_size):
    """microgpt's canonical parameter order and [out][in] shapes."""
    c = n_embd
    entries = [("wte", [vocab_size, c]), ("wpe", [block_size, c]), ("lm_head", [vocab_size, c])]
    for i in range(n_layer):
        p = "layer%d." % i
        entries += [(p + "attn_wq", [c, c]), (p + "attn_wk", [c, c]), (p + "attn_wv", [c, c]),
                    (p + "attn_wo", [c, c]), (p + "mlp_fc1", [4 * c, c]),
                    (p + "mlp_fc2", [c, 4 * c])]
    return entries


def checkpoint(chars, n_embd, n_head, n_layer, block_size, edit=None):
    """A tinylm-microgpt-1 checkpoint with deterministic weights; `edit(tensors, meta)` may
    change either before writing."""
    vocab_size = len(sorted(set(chars))) + 1
    meta = {
        "format": "tinylm-microgpt-1",
        "chars": "".join(sorted(set(chars))),
        "vocab_size": str(vocab_size),
        "n_embd": str(n_embd),
        "n_head": str(n_head),
        "n_layer": str(n_layer),
        "block_size": str(block_size),
    }
    tensors = []
    k = 0
    for name, shape in microgpt_layout(n_embd, n_layer, vocab_size, block_size):
        n = math.prod(shape)
        values = [0.08 * math.sin(0.37 * (k + i) + 0.11) for i in range(n)]
        k += n
        tensors.append((name, "F64", shape, pack("d", values)))
    if edit:
        edit(tensors, meta)
    return safetensors(tensors, dict(sorted(meta.items())))


def checkpoint_corpus():
    def set_meta(key, value):
        def edit(tensors, meta):
            meta[key] = value
        return edit

    def drop_tensor(name):
        def edit(tensors, meta):
            tensors[:] = [t for t in tensors if t[0] != name]
        return edit

    def transpose_wte(tensors, meta):
        for i, (name, dtype, shape, raw) in enumerate(tensors):
            if name == "wte":
                tensors[i] = (name, dtype, shape[::-1], raw)

    def as_f32(tensors, meta):
        for i, (name, dtype, shape, raw) in enumerate(tensors):
            values = struct.unpack("<%dd" % (len(raw) // 8), raw)
            tensors[i] = (name, "F32", shape, pack("f", values))

    tiny = dict(chars="ab", n_embd=2, n_head=1, n_layer=1, block_size=2)
    valid = checkpoint(**tiny)
    return {
        "valid_tiny": valid,
        "valid_two_layers": checkpoint(chars="abc", n_embd=4, n_head=2, n_layer=2, block_size=3),
        "valid_f32_tensors": checkpoint(**tiny, edit=as_f32),
        "invalid_format": checkpoint(**tiny, edit=set_meta("format", "tinylm-microgpt-2")),
        "invalid_vocab_size": checkpoint(**tiny, edit=set_meta("vocab_size", "4")),
        "invalid_not_integer": checkpoint(**tiny, edit=set_meta("n_layer", "1.0")),
        "invalid_n_head": checkpoint(**tiny, edit=set_meta("n_head", "3")),
        "invalid_missing_tensor": checkpoint(**tiny, edit=drop_tensor("layer0.mlp_fc2")),
        "invalid_wrong_shape": checkpoint(**tiny, edit=transpose_wte),
        "invalid_truncated": valid[: len(valid) // 2],
        "invalid_no_metadata": safetensors([("wte", "F64", [1], pack("d", [1.0]))]),
    }


def write_corpus(directory, files):
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if old.is_file():
            old.unlink()
    for name, data in sorted(files.items()):
        (directory / (name + ".safetensors")).write_bytes(data)
    print("%s: %d files" % (directory, len(files)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="corpus root (default: tests/fuzz/corpus)")
    args = parser.parse_args()
    write_corpus(args.out / "safetensors", generic_corpus())
    write_corpus(args.out / "microgpt_checkpoint", checkpoint_corpus())
    return 0


if __name__ == "__main__":
    sys.exit(main())
