#!/usr/bin/python3
"""Generate src/tinylm/tokenizers/unicode_classes.cpp from Python's unicodedata.

The GPT-2 pre-tokenizer (a JavaScript regex with the `u` flag) needs three code point
classes:

  \\p{L}  general category L* (Lu, Ll, Lt, Lm, Lo)
  \\p{N}  general category N* (Nd, Nl, No)
  \\s     JavaScript's WhiteSpace + LineTerminator: U+0009, U+000B, U+000C, U+FEFF, every
         Zs code point, and U+000A, U+000D, U+2028, U+2029

Each class becomes a sorted table of inclusive code point ranges, looked up by binary
search (ASCII through a 128-entry table). The whole output file is generated, the lookup
functions included; do not edit it by hand. The Unicode version is that of the Python
running this script, and the file records it.

Usage (from the repository root, standard library only):
    /usr/bin/python3 tools/gen_unicode_tables.py           # rewrite the file
    /usr/bin/python3 tools/gen_unicode_tables.py --check   # exit 1 if it is out of date
"""

import argparse
import sys
import unicodedata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT = REPO_ROOT / "src" / "tinylm" / "tokenizers" / "unicode_classes.cpp"

# JavaScript's \s besides the Zs category (ECMA-262, WhiteSpace and LineTerminator).
JS_SPACE_EXTRA = [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x2028, 0x2029, 0xFEFF]

# \s as listed in the tinylm tokenizer specification, to catch a Unicode version that
# adds a Zs character (the generated file would then need a second look).
JS_SPACE_EXPECTED = (
    list(range(0x09, 0x0E)) + [0x20, 0xA0, 0x1680] + list(range(0x2000, 0x200B))
    + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF])


def ranges(pred):
    """Sorted inclusive [first, last] ranges of the code points where pred holds."""
    out = []
    for c in range(0x110000):
        if pred(c):
            if out and out[-1][1] == c - 1:
                out[-1][1] = c
            else:
                out.append([c, c])
    return out


def table(name, rs):
    """A C++ array of the ranges, packed into lines of at most 100 columns."""
    lines = [f"constexpr Range {name}[] = {{"]
    line = "   "
    for a, b in rs:
        item = f" {{0x{a:X}, 0x{b:X}}},"
        if len(line) + len(item) > 100:
            lines.append(line)
            line = "   "
        line += item
    if line.strip():
        lines.append(line)
    lines.append("};")
    return "\n".join(lines)


def generate():
    cat = unicodedata.category
    letters = ranges(lambda c: cat(chr(c)).startswith("L"))
    numbers = ranges(lambda c: cat(chr(c)).startswith("N"))
    space_set = set(JS_SPACE_EXTRA) | {c for c in range(0x110000) if cat(chr(c)) == "Zs"}
    if sorted(space_set) != JS_SPACE_EXPECTED:
        sys.exit("gen_unicode_tables.py: this Unicode version's Zs differs from the "
                 "specified JavaScript \\s list; review JS_SPACE_EXPECTED")
    spaces = ranges(lambda c: c in space_set)
    ascii_class = []
    for c in range(128):
        if c in space_set:
            ascii_class.append("CharClass::kSpace")
        elif cat(chr(c)).startswith("L"):
            ascii_class.append("CharClass::kLetter")
        elif cat(chr(c)).startswith("N"):
            ascii_class.append("CharClass::kNumber")
        else:
            ascii_class.append("CharClass::kOther")
    ascii_rows = []
    for i in range(0, 128, 4):
        names = "".join(chr(c) if 0x20 < c < 0x7F and c != 0x5C else "." for c in range(i, i + 4))
        ascii_rows.append("    " + ", ".join(ascii_class[i:i + 4]) + f",  // {i:3d} {names}")
    version = unicodedata.unidata_version
    py = ".".join(str(x) for x in sys.version_info[:3])
    return f"""\
// GENERATED FILE, do not edit: produced by tools/gen_unicode_tables.py from Python's
// unicodedata (Python {py}, Unicode {version}). Regenerate with
//   /usr/bin/python3 tools/gen_unicode_tables.py
// Tables: \\p{{L}} = general category L*, \\p{{N}} = N*, \\s = JavaScript's WhiteSpace and
// LineTerminator (Zs plus U+0009-U+000D, U+2028, U+2029, U+FEFF). Inclusive ranges, sorted.
#include "tinylm/tokenizers/unicode_classes.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace tinylm {{

namespace {{

struct Range {{
  char32_t first, last;
}};

// clang-format off
// {len(letters)} ranges.
{table("kLetterRanges", letters)}

// {len(numbers)} ranges.
{table("kNumberRanges", numbers)}

// {len(spaces)} ranges.
{table("kSpaceRanges", spaces)}

constexpr CharClass kAsciiClass[128] = {{
{chr(10).join(ascii_rows)}
}};
// clang-format on

template <size_t N>
bool in_ranges(const Range (&table)[N], char32_t c) {{
  // The first range whose last code point is >= c.
  const Range* it = std::lower_bound(std::begin(table), std::end(table), c,
                                     [](const Range& r, char32_t v) {{ return r.last < v; }});
  return it != std::end(table) && it->first <= c;
}}

}}  // namespace

const char* unicode_tables_version() {{ return "{version}"; }}

bool is_unicode_letter(char32_t c) {{
  return c < 128 ? kAsciiClass[c] == CharClass::kLetter : in_ranges(kLetterRanges, c);
}}

bool is_unicode_number(char32_t c) {{
  return c < 128 ? kAsciiClass[c] == CharClass::kNumber : in_ranges(kNumberRanges, c);
}}

bool is_js_space(char32_t c) {{
  return c < 128 ? kAsciiClass[c] == CharClass::kSpace : in_ranges(kSpaceRanges, c);
}}

CharClass char_class(char32_t c) {{
  if (c < 128) return kAsciiClass[c];
  if (in_ranges(kLetterRanges, c)) return CharClass::kLetter;
  if (in_ranges(kNumberRanges, c)) return CharClass::kNumber;
  if (in_ranges(kSpaceRanges, c)) return CharClass::kSpace;
  return CharClass::kOther;
}}

}}  // namespace tinylm
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the file differs from what would be generated")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    text = generate()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            sys.exit(f"{args.out} is out of date: run tools/gen_unicode_tables.py")
        print(f"{args.out} is up to date")
        return
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
