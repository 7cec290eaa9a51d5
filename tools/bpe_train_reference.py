#!/usr/bin/python3
"""A naive, independent byte-level BPE trainer: the reference for src/tinylm/tokenizers/bpe_trainer.

It follows the rules documented in bpe_trainer.h, written the obvious way: every step recounts
every pair of every word and takes the best one with min(); nothing is incremental.

  1. Words: the corpus bytes decoded as UTF-8 with errors='replace' (each maximal invalid
     subpart becomes one U+FFFD, as WHATWG decoders do); the special tokens cut out, leftmost
     first and the longest there; each text between them split by the GPT-2 pre-tokenizer
     regex (the JavaScript one, with JavaScript's \\s spelled out, run by the `regex` module);
     equal pieces counted together.
  2. Pair count: sum over words of count * adjacent positions (overlaps count separately).
  3. Best pair: highest count, then the smallest (bytes(a), bytes(b)); a pair whose merged bytes
     are already a token, or whose byte-level form is a special token's text, is refused.
  4. Merge left to right without overlap.  5. Stop at vocab_size or when nothing is left.

Needs the `regex` module (Debian: python3-regex). Usage, from the repository root:

    /usr/bin/python3 tools/bpe_train_reference.py --write   # writes tests/fixtures/bpe_trainer/expected.json
    /usr/bin/python3 tools/bpe_train_reference.py --check   # recomputes and compares
    /usr/bin/python3 tools/bpe_train_reference.py --corpus FILE --vocab-size N [--special TOK ...]
        # prints the merges, one "a b" per line in the byte-level alphabet
"""
import argparse
import json
import os
import sys

import regex

FIXTURE_DIR = os.path.join("tests", "fixtures", "bpe_trainer")

# JavaScript's \s: WhiteSpace and LineTerminator of ECMA-262.
JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu
GPT2_PATTERN = regex.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+"
    rf"| ?[^{JS_SPACE}\p{{L}}\p{{N}}]+|[{JS_SPACE}]+(?![^{JS_SPACE}])|[{JS_SPACE}]+"
)


def byte_to_unicode():
    """GPT-2's bytes_to_unicode(), as in OpenAI's encoder.py."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TO_UNICODE = byte_to_unicode()


def byte_level(bs):
    return "".join(BYTE_TO_UNICODE[b] for b in bs)


def count_words(corpus_bytes, specials):
    text = corpus_bytes.decode("utf-8", errors="replace")
    if specials:
        # Python's alternation tries the alternatives in order at the leftmost position that
        # matches at all: longest first gives leftmost-longest.
        alts = sorted(specials, key=len, reverse=True)
        parts = regex.split("|".join(regex.escape(s) for s in alts), text)
    else:
        parts = [text]
    counts = {}  # insertion order = first occurrence
    for part in parts:
        pieces = GPT2_PATTERN.findall(part)
        assert "".join(pieces) == part, "the pre-tokenizer pieces must tile the text"
        for p in pieces:
            w = p.encode("utf-8")
            counts[w] = counts.get(w, 0) + 1
    return counts


def train(words, vocab_size, specials):
    if vocab_size < 256 + len(specials):
        raise ValueError("vocab_size below 256 + specials")
    tokens = [bytes([b]) for b in range(256)]
    refused_forms = set(specials)
    seqs = [([bytes([b]) for b in w], c) for w, c in words.items()]
    merges, refused = [], []
    while len(tokens) + len(specials) < vocab_size:
        counts = {}
        for s, c in seqs:
            for i in range(len(s) - 1):
                counts[(s[i], s[i + 1])] = counts.get((s[i], s[i + 1]), 0) + c
        taken = set(tokens)
        candidates = []
        for (a, b), c in counts.items():
            if a + b in taken or byte_level(a + b) in refused_forms:
                if (a, b) not in refused:
                    refused.append((a, b))
                continue
            candidates.append(((a, b), c))
        if not candidates:
            break
        (a, b), _ = min(candidates, key=lambda pc: (-pc[1], pc[0][0], pc[0][1]))
        merges.append((a, b))
        tokens.append(a + b)
        new_seqs = []
        for s, c in seqs:
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            new_seqs.append((out, c))
        seqs = new_seqs
    return merges, refused, len(tokens) + len(specials)


CASES = [
    {"vocab_size": 300, "special_tokens": ["<|endoftext|>"]},
    {"vocab_size": 400, "special_tokens": ["<|endoftext|>"]},
    # " the" (byte-level "Ġthe") would be merged, but a special token has that text.
    {"vocab_size": 400, "special_tokens": ["<|endoftext|>", "\u0120the"]},
    # No special tokens: <|endoftext|> is trained on as text.
    {"vocab_size": 300, "special_tokens": []},
    # Far more than the corpus can give: training stops when every word is one token.
    {"vocab_size": 100000, "special_tokens": ["<|endoftext|>"]},
]


def build_fixture():
    corpus = open(os.path.join(FIXTURE_DIR, "corpus.txt"), "rb").read()
    word_sets, seen = [], set()
    cases = []
    for case in CASES:
        specials = case["special_tokens"]
        words = count_words(corpus, specials)
        if tuple(specials) not in seen:
            seen.add(tuple(specials))
            word_sets.append({"special_tokens": specials,
                              "words": [[w.hex(), c] for w, c in words.items()]})
        merges, refused, reached = train(words, case["vocab_size"], specials)
        cases.append({
            "vocab_size": case["vocab_size"],
            "special_tokens": specials,
            "reached_vocab_size": reached,
            "merges": [[a.hex(), b.hex()] for a, b in merges],
            "merges_byte_level": [byte_level(a) + " " + byte_level(b) for a, b in merges],
            "refused": [[a.hex(), b.hex()] for a, b in refused],
        })
    return {
        "generator": "tools/bpe_train_reference.py",
        "python": sys.version.split()[0],
        "regex": regex.__version__,
        "corpus": "corpus.txt",
        "word_sets": word_sets,
        "cases": cases,
    }


def dump_fixture(fixture):
    """JSON with one word, merge or refused pair per line (readable diffs, a small file)."""
    def dump(v, indent):
        pad = " " * indent
        if isinstance(v, dict):
            items = [f"{pad} {json.dumps(k)}: {dump(x, indent + 1)}" for k, x in v.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and isinstance(v[0], (list, dict)):
            items = [pad + " " + dump(x, indent + 1) for x in v]
            return "[\n" + ",\n".join(items) + "\n" + pad + "]"
        return json.dumps(v, ensure_ascii=False)
    return dump(fixture, 0) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--corpus")
    ap.add_argument("--vocab-size", type=int)
    ap.add_argument("--special", action="append", default=[])
    args = ap.parse_args()
    if args.write or args.check:
        fixture = build_fixture()
        path = os.path.join(FIXTURE_DIR, "expected.json")
        text = dump_fixture(fixture)
        if args.write:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            for c in fixture["cases"]:
                print(f"vocab {c['vocab_size']} specials {c['special_tokens']}: "
                      f"{len(c['merges'])} merges, reached {c['reached_vocab_size']}, "
                      f"{len(c['refused'])} refused")
        else:
            old = json.load(open(path, encoding="utf-8"))
            for key in ("word_sets", "cases"):
                if old[key] != fixture[key]:
                    sys.exit(f"{path}: {key} differ from a fresh run")
            print(f"{path}: matches")
        return
    if not args.corpus or not args.vocab_size:
        ap.error("give --write, --check, or --corpus and --vocab-size")
    words = count_words(open(args.corpus, "rb").read(), args.special)
    merges, _, _ = train(words, args.vocab_size, args.special)
    for a, b in merges:
        print(byte_level(a) + " " + byte_level(b))


if __name__ == "__main__":
    main()
