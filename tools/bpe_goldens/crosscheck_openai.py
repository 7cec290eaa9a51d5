#!/usr/bin/env python3
"""Cross-check tests/fixtures/bpe/gpt2_goldens.jsonl against a second, independent
encoder: a Python re-implementation of the algorithm of OpenAI's reference
`src/encoder.py` (github.com/openai/gpt-2), using data/gpt2/{encoder.json,vocab.bpe}.

Optional tool: needs the third-party `regex` module (for \\p{L} / \\p{N}), which
the standard library lacks. Run from the repository root:

    python3 tools/bpe_goldens/crosscheck_openai.py

It also checks tests/fixtures/bpe/gpt2_js_whitespace_divergences.jsonl: there
`reference_ids` must equal this reference's output and `ids` must differ.

Exit status 0 when every case agrees (ids and decoded bytes), 1 otherwise.
Inputs are decoded the same way as in the generator: bytes.decode('utf-8',
'replace') substitutes U+FFFD per maximal invalid subpart, like WHATWG.
"""

import json
import os
import sys

import regex

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def byte_to_unicode():
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class Gpt2Bpe:
    def __init__(self, encoder_path, merges_path):
        with open(encoder_path, encoding="utf-8") as f:
            self.encoder = json.load(f)
        self.decoder = {v: k for k, v in self.encoder.items()}
        with open(merges_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        assert lines[0].startswith("#version"), lines[0]
        merges = [tuple(line.split()) for line in lines[1:-1]]
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.b2u = byte_to_unicode()
        self.u2b = {u: b for b, u in self.b2u.items()}
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            best = None
            best_rank = None
            for pair in zip(word, word[1:]):
                r = self.ranks.get(pair)
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = pair, r
            if best is None:
                break
            merged = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == best[0] and word[i + 1] == best[1]:
                    merged.append(best[0] + best[1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        self.cache[token] = word
        return word

    def encode(self, text):
        ids = []
        for piece in PAT.findall(text):
            mapped = "".join(self.b2u[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(mapped))
        return ids

    def decode_bytes(self, ids):
        return bytes(self.u2b[c] for i in ids for c in self.decoder[i])


def main():
    tok = Gpt2Bpe(os.path.join(ROOT, "data", "gpt2", "encoder.json"),
                  os.path.join(ROOT, "data", "gpt2", "vocab.bpe"))
    path = os.path.join(ROOT, "tests", "fixtures", "bpe", "gpt2_goldens.jsonl")
    n = 0
    bad = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            n += 1
            raw = bytes.fromhex(case["bytes_hex"])
            text = raw.decode("utf-8", "replace")
            ids = tok.encode(text)
            decoded = tok.decode_bytes(case["ids"]).decode("utf-8", "replace").encode("utf-8")
            problems = []
            if ids != case["ids"]:
                problems.append(f"ids: reference {ids} vs golden {case['ids']}")
            if decoded.hex() != case["decoded_hex"]:
                problems.append("decoded_hex differs")
            if decoded != text.encode("utf-8"):
                problems.append("golden ids do not decode to the (replaced) input")
            if problems:
                bad.append((case["name"], problems))
    # Divergence fixture: `reference_ids` must match this reference, `ids`
    # (gpt-3-encoder) must not.
    div_path = os.path.join(ROOT, "tests", "fixtures", "bpe", "gpt2_js_whitespace_divergences.jsonl")
    with open(div_path, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            n += 1
            ids = tok.encode(bytes.fromhex(case["bytes_hex"]).decode("utf-8", "replace"))
            problems = []
            if ids != case["reference_ids"]:
                problems.append(f"reference {ids} vs reference_ids {case['reference_ids']}")
            if ids == case["ids"]:
                problems.append("not a divergence: ids agree with the reference")
            if problems:
                bad.append((case["name"], problems))
    for name, problems in bad:
        print(f"MISMATCH {name}: " + "; ".join(problems))
    print(f"{n - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
