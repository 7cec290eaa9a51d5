#!/usr/bin/env node
// Generates tests/fixtures/bpe/gpt2_goldens.jsonl: golden GPT-2 BPE encodings
// produced by the independent npm package `gpt-3-encoder` (pinned in
// package.json / package-lock.json).
//
// Usage (from anywhere):
//   cd tools/bpe_goldens && npm ci && node gen_goldens.js
// Options:
//   --out-dir DIR  write somewhere else (default: <repo>/tests/fixtures/bpe)
//   --check        do not write; regenerate in memory and compare with the
//                  existing files, exit 1 if they differ
// Writes gpt2_goldens.jsonl (the goldens) and
// gpt2_js_whitespace_divergences.jsonl (see the "Divergences" section below).
//
// Every case is a BYTE string. The JS string handed to encode() is
// Buffer.from(bytes).toString('utf8'), i.e. WHATWG UTF-8 decoding: every
// maximal invalid subpart becomes U+FFFD. Output line format:
//   {"name": "...", "bytes_hex": "...", "ids": [...], "decoded_hex": "..."}
// where decoded_hex is the hex of the UTF-8 of gpt-3-encoder's decode(ids).
//
// Fully deterministic: the only "random" cases come from a fixed-seed
// mulberry32 generator defined below.

'use strict';

const fs = require('fs');
const path = require('path');
const { encode, decode } = require('gpt-3-encoder');
const encoderPkg = require('gpt-3-encoder/package.json');

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const DEFAULT_OUT_DIR = path.join(REPO_ROOT, 'tests', 'fixtures', 'bpe');
const MAIN_FILE = 'gpt2_goldens.jsonl';
const DIVERGENCE_FILE = 'gpt2_js_whitespace_divergences.jsonl';
const VOCAB_SIZE = 50257;

// Byte-level decode without TextDecoder's BOM stripping. Uses the same
// encoder.json and the same bytes<->unicode table as GPT-2's encoder.py.
const ENCODER = JSON.parse(fs.readFileSync(require.resolve('gpt-3-encoder/encoder.json'), 'utf8'));
const ID_TO_TOKEN = [];
for (const [tok, id] of Object.entries(ENCODER)) ID_TO_TOKEN[id] = tok;
const UNICODE_TO_BYTE = (() => {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  }
  const m = new Map();
  bs.forEach((b, i) => m.set(String.fromCharCode(cs[i]), b));
  return m;
})();
const KEEP_BOM_DECODER = new TextDecoder('utf-8', { ignoreBOM: true });
function decodeKeepBom(ids) {
  const bytes = [];
  for (const id of ids) for (const ch of ID_TO_TOKEN[id]) bytes.push(UNICODE_TO_BYTE.get(ch));
  return KEEP_BOM_DECODER.decode(Uint8Array.from(bytes));
}

// The same gpt-3-encoder code, loaded a second time with `\s` / `\S` in its
// pre-tokenizer regex replaced by the Unicode White_Space set, which is what
// OpenAI's Python reference (`regex` module) and tiktoken use. JavaScript's
// `\s` differs from White_Space in exactly two code points: it includes
// U+FEFF and excludes U+0085. Used only to (a) assert that no main golden
// depends on that difference and (b) fill `reference_ids` in the divergence
// fixture.
const UNICODE_WS = '\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const encodeUnicodeWs = (() => {
  const vm = require('vm');
  const file = require.resolve('gpt-3-encoder/Encoder.js');
  const src = fs.readFileSync(file, 'utf8');
  const orig = String.raw`const pat = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu`;
  const repl = String.raw`const pat = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^WS\p{L}\p{N}]+|[WS]+(?![^WS])|[WS]+/gu`
    .replaceAll('WS', UNICODE_WS);
  if (!src.includes(orig)) throw new Error('unexpected gpt-3-encoder source: pattern not found');
  const mod = { exports: {} };
  const wrapper = vm.runInThisContext(
    `(function (exports, require, module, __filename, __dirname) {${src.replace(orig, repl)}\n})`,
    { filename: file });
  wrapper(mod.exports, require, mod, file, path.dirname(file));
  return mod.exports.encode;
})();

// ---------------------------------------------------------------------------
// Case registry
// ---------------------------------------------------------------------------

const cases = [];
const counters = new Map();
const names = new Set();

function addBytes(category, buf, label) {
  const n = (counters.get(category) || 0) + 1;
  counters.set(category, n);
  let name = `${category}/${String(n).padStart(3, '0')}`;
  if (label) name += `_${label}`;
  if (names.has(name)) throw new Error(`duplicate case name ${name}`);
  names.add(name);
  cases.push({ name, category, bytes: Buffer.from(buf) });
}
const add = (category, str, label) => addBytes(category, Buffer.from(str, 'utf8'), label);
const addHex = (category, hex, label) => addBytes(category, Buffer.from(hex.replace(/\s+/g, ''), 'hex'), label);
const addAll = (category, list) => list.forEach((s) => add(category, s));

// Fixed-seed PRNG (mulberry32). Do not change the seeds: fixtures depend on them.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------
// empty
// ---------------------------------------------------------------------------

add('empty', '', 'empty_string');

// ---------------------------------------------------------------------------
// words: single words, case and leading-space variants, byte-level-alphabet chars
// ---------------------------------------------------------------------------

addAll('words', [
  'Hello world', 'Hello', ' Hello', 'hello', ' hello', 'HELLO', 'world', ' world',
  'the', ' the', 'The', ' The', 'THE', 'a', ' a', 'I', ' I',
  'tokenization', ' tokenizer', 'Tokenizer', 'GPT', ' GPT-2',
  'antidisestablishmentarianism', 'supercalifragilisticexpialidocious',
  'pneumonoultramicroscopicsilicovolcanoconiosis',
  ' SolidGoldMagikarp', 'SolidGoldMagikarp', ' petertodd', ' davidjl',
  'camelCaseIdentifier', 'snake_case_identifier', 'SCREAMING_SNAKE_CASE', 'kebab-case-word',
  'Ġ', 'ĠĠthe', 'Ċ', 'ĉ', 'âĢĶ', // characters of GPT-2's byte-to-unicode alphabet used literally
  'xyzzy', 'qwertyuiop', 'Mississippi', 'bookkeeper',
]);

// ---------------------------------------------------------------------------
// prose
// ---------------------------------------------------------------------------

addAll('prose', [
  'Hello, world!',
  'The quick brown fox jumps over the lazy dog.',
  'THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.',
  'Pack my box with five dozen liquor jugs.',
  'A tokenizer turns raw text into a sequence of integer ids.',
  'It was a bright cold day in the tinkerer\'s workshop, and the clocks were striking thirteen.',
  'She sells sea shells by the sea shore.',
  'Why? Because nobody told us otherwise!',
  'Ask not what the compiler can do for you; ask what you can do for the compiler.',
  'Byte pair encoding merges the most frequent pair of symbols, again and again, until a budget is spent.',
  'In 1994 Philip Gage described byte pair encoding as a data compression technique.',
  'Dr. Smith arrived at 5 p.m. on Tuesday, Jan. 3rd, with the results.',
  'e.g. this, i.e. that, etc.',
  'Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal.',
  'Every sentence ends somewhere. Some end here.',
  'no capital letters at all in this sentence',
  'MiXeD cAsE tExT iS hArD tO rEaD',
  'A "quoted" word and a \'single-quoted\' one.',
  'Semicolons; colons: commas, and full stops.',
  'The end.',
  // paragraphs
  'Once upon a time, in a small village at the edge of a great forest, there lived a clockmaker. ' +
    'Every morning she wound the tower clock, and every evening she listened to it strike the hour. ' +
    'One day the clock stopped, and the village held its breath.',
  'Language models do not see letters. They see tokens: chunks of bytes that were merged ' +
    'because they appeared together often in the training data. Common words become one token; ' +
    'rare words are split into several pieces.\n\nThis paragraph has a blank line above it.',
  'First line of a paragraph.\nSecond line, soft-wrapped.\nThird line.\n',
  '  Indented paragraph with leading spaces.\n  And a second indented line.',
  'Chapter 1\n\nIt began, as these things do, with a question nobody could answer.\n\n' +
    'Chapter 2\n\nThe answer, when it came, raised three more questions.',
  'Dear Sir or Madam,\n\nI am writing to enquire about the position advertised on your website.\n\n' +
    'Yours faithfully,\nA. Applicant\n',
  // Shakespeare (public domain)
  'To be, or not to be, that is the question:',
  'Whether \'tis nobler in the mind to suffer\nThe slings and arrows of outrageous fortune,',
  'Shall I compare thee to a summer\'s day?\nThou art more lovely and more temperate:',
  'All the world\'s a stage,\nAnd all the men and women merely players;',
  'Now is the winter of our discontent\nMade glorious summer by this sun of York;',
  'O Romeo, Romeo! wherefore art thou Romeo?',
  'Friends, Romans, countrymen, lend me your ears;',
  'What\'s in a name? That which we call a rose\nBy any other word would smell as sweet.',
  'Double, double toil and trouble;\nFire burn and cauldron bubble.',
  'Is this a dagger which I see before me,\nThe handle toward my hand? Come, let me clutch thee.',
  'We are such stuff\nAs dreams are made on, and our little life\nIs rounded with a sleep.',
  'Tomorrow, and tomorrow, and tomorrow,\nCreeps in this petty pace from day to day,',
  'KING LEAR. Blow, winds, and crack your cheeks! rage! blow!',
  'HAMLET.\n    Alas, poor Yorick! I knew him, Horatio.',
]);

// ---------------------------------------------------------------------------
// code
// ---------------------------------------------------------------------------

const CPP_SNIPPET = `#include <iostream>
#include <vector>

namespace tinylm {

template <typename T>
T sum(const std::vector<T>& xs) {
    T total{};
    for (const auto& x : xs) {
        total += x;
    }
    return total;
}

}  // namespace tinylm

int main(int argc, char** argv) {
    std::vector<int> v{1, 2, 3};
    std::cout << tinylm::sum(v) << "\\n";
    return argc > 1 ? 1 : 0;
}
`;

const PY_SNIPPET = `import os
import sys


def bytes_to_unicode():
    """Returns a mapping from utf-8 bytes to printable unicode strings."""
    bs = list(range(ord("!"), ord("~") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class Encoder:
    def __init__(self, encoder, bpe_merges, errors='replace'):
        self.encoder = encoder
        self.decoder = {v: k for k, v in self.encoder.items()}

    def __repr__(self):
        return f"Encoder(n={len(self.encoder)})"


if __name__ == "__main__":
    print(bytes_to_unicode()[32], file=sys.stderr)
`;

const JSON_SNIPPET = `{
  "name": "tinylm",
  "version": "0.1.0",
  "config": {
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "dropout": 0.1,
    "tie_weights": true,
    "vocab": null
  },
  "tags": ["gpt", "bpe", "c++20"]
}
`;

const HTML_SNIPPET = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Tokenizer demo &amp; test</title>
  <style>
    body { font-family: sans-serif; margin: 0 auto; max-width: 40em; }
  </style>
</head>
<body>
  <h1 id="title" class="big">Hello, <em>world</em>!</h1>
  <p>Tokens: <code>[15496, 995]</code></p>
  <!-- a comment -->
  <script>document.getElementById("title").textContent += " :)";</script>
</body>
</html>
`;

const SHELL_SNIPPET = `#!/usr/bin/env bash
set -euo pipefail

BUILD_DIR="\${BUILD_DIR:-build}"
for f in src/*.cpp; do
  echo "compiling $f" >&2
done

if [[ -z "\${CI:-}" ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
grep -rn 'TODO' src/ | wc -l
`;

const MAKEFILE_SNIPPET = 'CXX ?= g++\nCXXFLAGS := -O2 -std=c++20 -Wall\n\nall: tinylm\n\ntinylm: main.o bpe.o\n\t$(CXX) $(CXXFLAGS) -o $@ $^\n\n%.o: %.cpp\n\t$(CXX) $(CXXFLAGS) -c $< -o $@\n\nclean:\n\trm -f *.o tinylm\n';

const JS_SNIPPET = `const range = (x, y) => Array.from(Array(y).keys()).slice(x);
export async function fetchTokens(url) {
  const res = await fetch(url, { method: 'POST' });
  if (!res.ok) throw new Error(\`HTTP \${res.status}\`);
  return (await res.json()).tokens ?? [];
}
`;

const RUST_SNIPPET = `fn main() {
    let v: Vec<u32> = (0..10).map(|x| x * x).collect();
    println!("{:?}", v);
    if let Some(&last) = v.last() { assert_eq!(last, 81); }
}
`;

const SQL_SNIPPET = 'SELECT id, name, COUNT(*) AS n\nFROM tokens\nWHERE rank < 50000 AND name LIKE \'%ing\'\nGROUP BY id, name\nORDER BY n DESC\nLIMIT 10;\n';

add('code', CPP_SNIPPET, 'cpp_program');
add('code', '\tif (x) {\n\t\treturn y;\n\t}\n', 'cpp_tabs');
add('code', 'std::unique_ptr<Foo> p = std::make_unique<Foo>(42);', 'cpp_unique_ptr');
add('code', 'auto [it, ok] = map.try_emplace(key, std::move(value));', 'cpp_structured_binding');
add('code', '#define MAX(a, b) ((a) > (b) ? (a) : (b))\n', 'cpp_macro');
add('code', 'int x=0;x+=1;x<<=2;x>>=1;x^=~x;x&&x||!x;', 'cpp_operators');
add('code', PY_SNIPPET, 'python_module');
add('code', 'def f(x):\n    return x + 1\n', 'python_def');
add('code', 'for i in range(10):\n        if i % 2 == 0:\n                print(i)\n', 'python_deep_indent');
add('code', 'xs = [x**2 for x in range(10) if x & 1]  # squares of odd numbers', 'python_comprehension');
add('code', 'print(f"{name!r:>10} = {value:.3f}")', 'python_fstring');
add('code', JSON_SNIPPET, 'json_pretty');
add('code', '{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-1.5e-3}', 'json_compact');
add('code', '[{"id": 1, "text": "hi"}, {"id": 2, "text": "there"}]', 'json_array');
add('code', HTML_SNIPPET, 'html_page');
add('code', '<a href="https://example.com/path?q=1&amp;r=2#frag">link</a>', 'html_anchor');
add('code', '<div class="row"><span>1</span><span>2</span></div>', 'html_nested');
add('code', SHELL_SNIPPET, 'shell_script');
add('code', '$ ls -la /usr/local/bin | grep -v "^d" > /tmp/out.txt 2>&1', 'shell_pipeline');
add('code', 'export PATH="$HOME/.local/bin:$PATH"', 'shell_export');
add('code', MAKEFILE_SNIPPET, 'makefile_tabs');
add('code', JS_SNIPPET, 'javascript');
add('code', RUST_SNIPPET, 'rust');
add('code', SQL_SNIPPET, 'sql');
add('code', '| col A | col B |\n|-------|------:|\n| `x`   | **1** |\n', 'markdown_table');
add('code', '```cpp\nint main() {}\n```\n', 'markdown_fence');
add('code', 'key: value\nlist:\n  - one\n  - two\n    nested: true\n', 'yaml');
add('code', '    4 spaces\n        8 spaces\n            12 spaces\n', 'indent_spaces');
add('code', '\t1 tab\n\t\t2 tabs\n\t\t\t3 tabs\n', 'indent_tabs');
add('code', '/* block comment */ // line comment\n# hash comment\n-- sql comment\n', 'comments');
add('code', 'https://github.com/openai/gpt-2/blob/master/src/encoder.py', 'url');
add('code', 'user.name+tag@example.co.uk', 'email');
add('code', 'C:\\Users\\Public\\Documents\\file.txt', 'windows_path');
add('code', '^(?:[a-z0-9!#$%&\'*+/=?^_`{|}~-]+)$', 'regex');

// ---------------------------------------------------------------------------
// numbers
// ---------------------------------------------------------------------------

addAll('numbers', [
  '0', '7', '42', '123', '1234', '12345', '123456', '1234567890', '9876543210123456789',
  ' 0', ' 42', ' 2024', '007', '-17', '+3', '3.14159', '0.5', '.5', '-0.001', '1e10', '6.022e23', '1E-9',
  '1,000,000', '1.000.000,50', '$1,234.56', '€99.99', '£5', '¥1000', '100%', '50 percent',
  '2024-01-15', '15/01/2024', '01.15.2024', '2024-01-15T12:34:56Z', '12:34:56', '11:59 PM',
  '(555) 123-4567', '+1-800-555-0199', '+44 20 7946 0958',
  '0xDEADBEEF', '0x7fff_ffff', '0b101010', '0o777', '#ff8800', 'deadbeef',
  'v1.2.3', 'version 10.0.19045', '192.168.0.1', '127.0.0.1:8080', 'ISBN 978-3-16-148410-0',
  'The year 1999 and the year 2000.', 'abc123def456', 'A1B2C3', 'x2 y3 z10',
  '3 + 4 = 7', '2^10 = 1024', '1/3 ≈ 0.333',
  '١٢٣٤', '१२३', '১২৩', '１２３', '½ ¾ ² ³', 'Ⅻ ⅻ', '①②③', '𝟘𝟙𝟚',
]);

// ---------------------------------------------------------------------------
// contractions
// ---------------------------------------------------------------------------

addAll('contractions', [
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ll",
  " 's", " 't", "'", "''", "'''", "'s'", "'x", "'sup",
  "it's", "It's", "IT'S", "don't", "DON'T", "can't won't shan't", "you're", "You're", "THEY'RE",
  "we've", "I'm", "I'M", "she'll", "he'd", "I'd've", "y'all'd've", "should've",
  "James's car", "the dog's bone", "the '90s", "'tis the season", "'twas",
  "rock'n'roll", "o'clock", "O'Neil", "l'amour", "D'Artagnan", "'hello'", "'m'm'm", "'d'd",
  "it''s", "don\u2019t", "it\u2019s", "`don't`", "he said: 'll",
]);

// ---------------------------------------------------------------------------
// whitespace (incl. Unicode spaces)
// ---------------------------------------------------------------------------

const WS = [
  [' ', 'space'], ['  ', 'two_spaces'], ['   ', 'three_spaces'], ['        ', 'eight_spaces'],
  ['\t', 'tab'], ['\t\t', 'two_tabs'], ['\n', 'newline'], ['\n\n', 'two_newlines'],
  ['\r', 'cr'], ['\r\n', 'crlf'], ['\r\n\r\n', 'two_crlf'], ['\r\r\n', 'cr_crlf'],
  ['a  b', 'two_spaces_between'], ['a   b', 'three_spaces_between'], ['a    b', 'four_spaces_between'],
  ['x          y', 'ten_spaces_between'], ['  leading', 'leading_spaces'], [' leading', 'leading_space'],
  ['trailing ', 'trailing_space'], ['trailing   ', 'trailing_spaces'], ['  both  ', 'both_sides'],
  ['\t\tindented', 'leading_tabs'], ['line1\nline2', 'lf_lines'], ['line1\r\nline2\r\n', 'crlf_lines'],
  ['a\n\n\nb', 'blank_lines'], ['a \n b', 'space_nl_space'], [' \n ', 'space_nl_space_only'],
  ['\n \n', 'nl_space_nl'], ['\t \t', 'tab_space_tab'], [' \t\n', 'space_tab_nl'],
  ['mixed \t \n\r\n  end', 'mixed_run'], ['word   \n   word', 'spaces_around_newline'],
  ['  \n\n  ', 'only_mixed'], ['a\rb', 'cr_between'], ['hello\n', 'trailing_newline'],
  ['\nhello', 'leading_newline'], ['a\u000bb', 'vertical_tab'], ['a\fb', 'form_feed'],
  ['\u000b\f', 'vt_ff_only'],
  ['a\u00a0b', 'nbsp'], ['a\u00a0\u00a0b', 'two_nbsp'], ['\u00a0word', 'leading_nbsp'],
  ['word\u00a0', 'trailing_nbsp'], ['100\u00a0km', 'nbsp_number'], ['a \u00a0b', 'space_nbsp'],
  ['a\u3000b', 'ideographic_space'], ['日本\u3000語', 'ideographic_space_cjk'], ['\u3000\u3000', 'ideographic_only'],
  ['a\u2028b', 'line_separator'], ['a\u2029b', 'paragraph_separator'],
  ['a\u2009b', 'thin_space'], ['a\u2002\u2003b', 'en_em_space'], ['a\u202fb', 'narrow_nbsp'],
  ['a\u205fb', 'math_space'], ['a\u1680b', 'ogham_space'],
  ['a\u0085b', 'nel_u0085'], ['a\ufeffb', 'bom_u_feff'], ['\ufeffhello', 'leading_bom'],
  ['a\u200bb', 'zero_width_space'], ['a\u180eb', 'mongolian_vowel_sep'],
  ['a\u001cb\u001dc\u001ed\u001ff', 'info_separators_1c_1f'],
  [' '.repeat(5) + 'five', 'five_spaces_word'], ['\n' + ' '.repeat(4) + 'return', 'nl_indent_word'],
];
for (const [s, label] of WS) add('whitespace', s, label);

// ---------------------------------------------------------------------------
// control characters
// ---------------------------------------------------------------------------

add('control', '\u0000', 'nul');
add('control', 'a\u0000b', 'nul_between');
add('control', '\u0001\u0002\u0003', 'soh_stx_etx');
add('control', '\u007f', 'del');
add('control', '\u001b[31mred\u001b[0m', 'ansi_escape');
add('control', 'bell\u0007', 'bell');
add('control', 'back\bspace', 'backspace');
add('control', '\u0080\u009f', 'c1_controls');

// ---------------------------------------------------------------------------
// punctuation
// ---------------------------------------------------------------------------

addAll('punctuation', [
  '!', '!!', '!!!', '?!', '?!?!', '...', '....', '…', '---', '--', '—', '–', '-', '_', '__init__',
  '!@#$%^&*()', '<<>>', '==', '===', '!==', '->', '=>', '::', '//', '/* */', '#!', '~~~', '***',
  '\'\'""', '"quoted"', '«guillemets»', '“smart quotes”', '‘single’', '¿Qué?', '¡Hola!', '„Deutsch“',
  'a,b,c', ',,,', ' ,', ', ,', ',,', ',",",', '",",",', '",,"', '),),', "' ,' ,'", '"},{"', '"],["',
  '[1, 2, 3]', '{"a": 1}', '(((nested)))', 'end.)', 'Hi!!! How are you???', 'wait... what?!',
  '§ ¶ † ‡ •', '© ® ™', '° ± × ÷', '← → ↑ ↓', '∀x∈ℝ: x²≥0', '¬(p ∧ q) ⇔ ¬p ∨ ¬q',
  '@user #hashtag', '$$', '%%', '&&', '||', '+=', '\\\\', '\\n', '`', '```', '^_^', ':-)', '¯\\_(ツ)_/¯',
]);

// ---------------------------------------------------------------------------
// latin: accents, Latin-1, Latin Extended
// ---------------------------------------------------------------------------

addAll('latin', [
  'café', ' café', 'CAFÉ', 'naïve', 'Ångström', 'ß', 'Straße', 'STRASSE', 'Größe', 'façade', 'jalapeño',
  'crème brûlée', 'Œuvre', 'æ ø å', 'Ærø', 'Żółć', 'Łódź', 'İstanbul', 'ığüşöç', 'Dvořák', 'Škoda',
  'ﬁnance', 'ǅ ǈ ǋ', 'Việt Nam', 'ÀÉÎÕÜ', 'ÿ', 'µ', 'ª º', 'Ø', 'ŉ', 'Ẁẃ', 'Þorsteinn', 'ð',
  'São Paulo', 'El niño comió piñata.', 'Où est la bibliothèque ? À gauche !',
  'Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.',
  'Příliš žluťoučký kůň úpěl ďábelské ódy.', 'Pchnąć w tę łódź jeża lub ośm skrzyń fig.',
]);

// ---------------------------------------------------------------------------
// scripts: Greek, Cyrillic, Arabic, Hebrew, Devanagari, Thai
// ---------------------------------------------------------------------------

const SCRIPTS = {
  greek: [
    'Καλημέρα κόσμε', 'Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.', 'αβγδε ΑΒΓΔΕ',
    'ΣΊΣΥΦΟΣ σίσυφος', 'π ≈ 3.14', 'μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος', 'Ελληνικά;',
  ],
  cyrillic: [
    'Привет, мир!', 'Съешь же ещё этих мягких французских булок, да выпей чаю.', 'ПРИВЕТ',
    'Україна, їжак, ґанок', 'Ђорђе, Србија', 'ѣ Ѳ ѵ', 'Москва 2024 г.', 'Я не знаю.',
  ],
  arabic: [
    'مرحبا بالعالم', 'السلام عليكم ورحمة الله', 'العربية ١٢٣ 123', 'كتاب', 'مُحَمَّد', 'هل تتكلم العربية؟',
  ],
  hebrew: [
    'שלום עולם', 'עִבְרִית', 'אבג 123 דהו', 'בְּרֵאשִׁית בָּרָא אֱלֹהִים', 'Hello שלום mixed',
  ],
  devanagari: [
    'नमस्ते दुनिया', 'हिन्दी भाषा', 'क्षत्रिय', '१२३४', 'संस्कृतम्', 'मैं ठीक हूँ।',
  ],
  thai: [
    'สวัสดีชาวโลก', 'ภาษาไทย', '๑๒๓', 'กรุงเทพมหานคร', 'ผมชื่อ สมชาย ครับ',
  ],
};
for (const [script, list] of Object.entries(SCRIPTS)) list.forEach((s) => add(`script_${script}`, s));

// ---------------------------------------------------------------------------
// cjk
// ---------------------------------------------------------------------------

addAll('cjk', [
  '你好，世界！', '我爱北京天安门。', '中文分词测试', '繁體中文字', '中', '人工智能和机器学习',
  'こんにちは世界', 'カタカナとひらがな', '東京都に住んでいます。', 'ｶﾀｶﾅ', 'ラーメン', 'ーーー',
  '안녕하세요 세계', '한국어 텍스트입니다.', 'ㄱㄴㄷ', '\u1100\u1161\u11a8', '한',
  '𠀀𠀁', '漢字ABC123', '日本語 English 混在', '「引用」『二重』【括弧】', '。、・',
]);

// ---------------------------------------------------------------------------
// emoji
// ---------------------------------------------------------------------------

addAll('emoji', [
  '😀', '😀😀', 'Hello 😀', '😀 world', '👍', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇺🇸', '🇯🇵🇫🇷',
  '❤️', '✨🎉🎊', '🤷‍♂️', '🧑🏿‍🚀', '#️⃣', '1️⃣', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '😀a😀', 'emoji😀inside', '☃', '©️',
  ' 🚀', '🔥🔥🔥', '🫠', 'I ❤ NY',
]);

// ---------------------------------------------------------------------------
// combining marks
// ---------------------------------------------------------------------------

addAll('combining', [
  'e\u0301', 'cafe\u0301', 'n\u0303', 'a\u0308\u0304', 'Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307l\u036e\u0312\u036bg\u0301\u0316\u032bo',
  ' \u0301', '\u0301', 'a\u0300\u0301\u0302\u0303', 'x\u20dd', '\u05d1\u05bc', '\u0915\u094d\u0937',
  'Vie\u0323\u0302t', 'A\u030a vs \u212b vs \u00c5', 'ﬃ', '\u0627\u064b', '1\u0301', '!\u0301',
]);

// ---------------------------------------------------------------------------
// invalid UTF-8 (bytes)
// ---------------------------------------------------------------------------

const INVALID = [
  ['80', 'lone_continuation'], ['61 80 62', 'continuation_between'], ['80 80 80', 'three_continuations'],
  ['bf', 'lone_bf'], ['c0', 'lone_c0'], ['c1', 'lone_c1'], ['c0 80', 'overlong_nul'], ['c0 af', 'overlong_slash'],
  ['c1 bf', 'overlong_c1'], ['e0 80 80', 'overlong_3byte'], ['e0 80 af', 'overlong_3byte_slash'],
  ['f0 80 80 80', 'overlong_4byte'], ['f0 80 80 af', 'overlong_4byte_slash'],
  ['f8 88 80 80 80', 'five_byte_form'], ['fc 84 80 80 80 80', 'six_byte_form'],
  ['c2', 'truncated_2byte'], ['61 62 63 c2', 'truncated_2byte_end'], ['e2 82', 'truncated_euro'],
  ['f0 9f 98', 'truncated_emoji3'], ['f0 9f', 'truncated_emoji2'], ['78 f0 9f 98 79', 'truncated_emoji_between'],
  ['e0 a0', 'truncated_e0'], ['c3 a9 c3', 'valid_then_truncated'],
  ['ed a0 80', 'surrogate_d800'], ['ed bf bf', 'surrogate_dfff'], ['ed a0 bd ed b8 80', 'cesu8_pair'],
  ['61 ed a0 80 62', 'surrogate_between'],
  ['f4 90 80 80', 'above_10ffff'], ['f5', 'lone_f5'], ['f5 80 80 80', 'f5_sequence'],
  ['f7 bf bf bf', 'f7_sequence'], ['fe', 'lone_fe'], ['ff', 'lone_ff'], ['fe ff', 'fe_ff'],
  ['ff fe 68 00 69 00', 'utf16le_bom_hi'], ['68 65 6c ff 6c 6f', 'ff_in_word'], ['77 6f 72 c3 6c 64', 'truncated_in_word'],
  ['63 61 66 e9', 'latin1_cafe'], ['6e 61 ef 76 65', 'latin1_naive'], ['e2 82 ac 80', 'euro_then_stray'],
  ['68 65 6c 6c 6f 20 80 80 20 77 6f 72 6c 64', 'stray_between_words'],
  ['20 80', 'space_then_stray'], ['80 20 61', 'stray_space_word'], ['e2 80 20', 'truncated_before_space'],
  ['27 73 80', 'contraction_then_stray'], ['31 32 80 33 34', 'digits_around_stray'],
  ['f0 9f 98 80 f0 9f 98', 'emoji_then_truncated_emoji'], ['c3 28', 'c3_then_paren'],
  ['e2 28 a1', 'e2_then_ascii'], ['f0 28 8c bc', 'f0_then_ascii'],
];
for (const [hex, label] of INVALID) addHex('invalid_utf8', hex, label);
{
  // Pseudo-random byte strings (fixed seed): mostly invalid UTF-8.
  const rnd = mulberry32(0xb17e5);
  for (let k = 0; k < 6; k++) {
    const len = 8 + Math.floor(rnd() * 56);
    const buf = Buffer.alloc(len);
    for (let i = 0; i < len; i++) buf[i] = Math.floor(rnd() * 256);
    addBytes('invalid_utf8', buf, `random_bytes_${k}`);
  }
}

// ---------------------------------------------------------------------------
// <|endoftext|> as plain text (gpt-3-encoder has no special tokens)
// ---------------------------------------------------------------------------

addAll('endoftext', [
  '<|endoftext|>', ' <|endoftext|>', '<|endoftext|> ', 'Hello<|endoftext|>World', '<|endoftext|><|endoftext|>',
  'text\n<|endoftext|>\nmore text', '<|endoftext|', 'endoftext', '<|ENDOFTEXT|>', '<|im_start|>user',
  '<| endoftext |>',
]);

// ---------------------------------------------------------------------------
// long single-character (and short-pattern) runs
// ---------------------------------------------------------------------------

const RUNS = [
  ['a', 1000, 'a_x1000'], [' ', 1000, 'space_x1000'], ['!', 500, 'bang_x500'], ['1', 300, 'one_x300'],
  ['\n', 200, 'newline_x200'], ['😀', 100, 'emoji_x100'], ['\t', 100, 'tab_x100'], ['-', 400, 'dash_x400'],
  ['=', 300, 'equals_x300'], ['.', 300, 'dot_x300'], ['é', 200, 'e_acute_x200'], ['中', 200, 'zhong_x200'],
  ['\r\n', 100, 'crlf_x100'], ['ab', 300, 'ab_x300'], [' a', 300, 'space_a_x300'], ['\u00a0', 100, 'nbsp_x100'],
];
for (const [unit, n, label] of RUNS) add('long_runs', unit.repeat(n), label);
add('long_runs', ' '.repeat(999) + 'x', 'space_x999_then_x');
add('long_runs', 'x' + ' '.repeat(999), 'x_then_space_x999');
addBytes('long_runs', Buffer.alloc(200, 0x80), 'byte80_x200');

// ---------------------------------------------------------------------------
// long mixed documents (a few KB each)
// ---------------------------------------------------------------------------

const MARKDOWN_DOC = `# tinylm: a tiny language model in C++20

tinylm is a small, dependency-free implementation of a GPT-style language model.
It ships a byte-level BPE tokenizer that is compatible with GPT-2's vocabulary
(50,257 tokens: 256 byte tokens, 50,000 merges and \`<|endoftext|>\`).

## Building

\`\`\`sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j8
ctest --test-dir build --output-on-failure
\`\`\`

## Usage

1. Load the vocabulary: \`data/gpt2/encoder.json\` and \`data/gpt2/vocab.bpe\`.
2. Call \`encode("Hello world")\`; you should get \`[15496, 995]\`.
3. Call \`decode\` on the ids to get the text back.

> Note: invalid UTF-8 is replaced with U+FFFD (the replacement character, "\uFFFD")
> before encoding, exactly as a WHATWG decoder would do it.

| Model  | Params | Layers | d_model |
|--------|-------:|-------:|--------:|
| tiny   |   1.2M |      2 |     128 |
| small  |    10M |      6 |     384 |
| base   |   124M |     12 |     768 |

### FAQ

**Why bytes?** Because every string, in every language, is a sequence of bytes, so
there are no unknown tokens. It's that simple — well, almost.

**Is it fast?** It's fast enough: about 1–2 MB/s on a laptop, which isn't bad
for something this small. We've tried; they'd said it couldn't be done; I'm glad
we didn't listen.
`;

const MULTILINGUAL_DOC = [
  'Multilingual sample / Échantillon multilingue / Многоязычный образец',
  '',
  'English: The weather is nice today, isn\'t it? Let\'s go for a walk at 3:30 pm.',
  'Français : Il fait beau aujourd\'hui, n\'est-ce pas ? Allons nous promener à 15 h 30.',
  'Deutsch: Das Wetter ist heute schön, nicht wahr? Gehen wir um 15:30 Uhr spazieren.',
  'Español: Hace buen tiempo hoy, ¿verdad? Vamos a pasear a las 15:30.',
  'Русский: Сегодня хорошая погода, не так ли? Пойдём гулять в 15:30.',
  'Ελληνικά: Ο καιρός είναι ωραίος σήμερα, έτσι δεν είναι;',
  'العربية: الطقس جميل اليوم، أليس كذلك؟',
  'עברית: מזג האוויר נעים היום, נכון?',
  'हिन्दी: आज मौसम अच्छा है, है ना?',
  'ไทย: วันนี้อากาศดีนะ ใช่ไหม',
  '中文：今天天气很好，不是吗？我们三点半去散步吧。',
  '日本語：今日はいい天気ですね。3時半に散歩に行きましょう。',
  '한국어: 오늘 날씨가 좋네요, 그렇죠? 3시 30분에 산책하러 가요.',
  'Tiếng Việt: Hôm nay trời đẹp quá, phải không?',
  'Emoji: ☀️🌤️⛅ 🚶‍♀️🚶🏾‍♂️ 🇫🇷🇩🇪🇪🇸',
  'Math: ∑ᵢ xᵢ² ≤ (∑ᵢ |xᵢ|)², ∀ε>0 ∃δ>0, π≈3.14159, e≈2.71828',
  'Symbols: © ® ™ § ¶ † ‡ • … ‰ ′ ″ ‹ › « » ‘ ’ “ ” – —',
  '',
].join('\n').repeat(2);

const LOG_DOC = (() => {
  const lines = [];
  const levels = ['INFO', 'WARN', 'DEBUG', 'ERROR'];
  for (let i = 0; i < 40; i++) {
    const sec = String(i % 60).padStart(2, '0');
    const lvl = levels[(i * 7) % levels.length];
    lines.push(`2024-03-0${1 + (i % 9)} 12:${String((i * 13) % 60).padStart(2, '0')}:${sec}.${String((i * 137) % 1000).padStart(3, '0')} [${lvl}] worker-${i % 4}: processed batch ${i * 64}/${2560} (loss=${(3.5 / (1 + i * 0.1)).toFixed(4)}, lr=${(6e-4 * (1 - i / 40)).toExponential(2)})`);
  }
  return lines.join('\r\n') + '\r\n';
})();

const CSV_DOC = (() => {
  const rows = ['id,name,city,score,comment'];
  const namesList = ['Ana', 'Björn', 'Chloé', 'Dmitri', 'Émile', 'Fatima', 'Günter', 'Hana', 'Ió', 'Jürgen'];
  const cities = ['Lisboa', 'Göteborg', 'Montréal', 'Москва', 'Zürich', 'القاهرة', 'München', '東京', 'Αθήνα', 'Kraków'];
  for (let i = 0; i < 60; i++) {
    rows.push(`${i + 1},${namesList[i % 10]},${cities[(i * 3) % 10]},${((i * 37) % 100) / 4},"${i % 3 === 0 ? 'he said ""ok""' : i % 3 === 1 ? 'n/a' : 'it\'s fine, really'}"`);
  }
  return rows.join('\n') + '\n';
})();

const CHAT_DOC = (() => {
  const turns = [
    ['user', 'Hi! Can you explain what a tokenizer does?'],
    ['assistant', 'Sure. A tokenizer splits text into tokens and maps each token to an integer id. GPT-2 uses byte-level BPE, so "Hello world" becomes [15496, 995].'],
    ['user', 'What about emoji like 🤖 or text in 日本語?'],
    ['assistant', 'They\'re encoded as UTF-8 bytes first. Rare characters usually take several tokens; common ones may be a single token.'],
    ['user', 'And    lots   of   spaces?\n\n\nOr blank lines?'],
    ['assistant', 'Runs of whitespace are grouped. A space directly before a word is attached to that word, which is why " the" (262) differs from "the" (1169).'],
  ];
  let out = '';
  for (let r = 0; r < 4; r++) for (const [who, msg] of turns) out += `<${who}> ${msg}\n`;
  return out;
})();

add('long_docs', MARKDOWN_DOC, 'markdown_readme');
add('long_docs', MULTILINGUAL_DOC, 'multilingual');
add('long_docs', CPP_SNIPPET + '\n' + PY_SNIPPET + '\n' + JS_SNIPPET + '\n' + RUST_SNIPPET + '\n' + MAKEFILE_SNIPPET, 'source_files');
add('long_docs', LOG_DOC, 'log_crlf');
add('long_docs', CSV_DOC, 'csv');
add('long_docs', CHAT_DOC, 'chat');
add('long_docs', HTML_SNIPPET + JSON_SNIPPET + SHELL_SNIPPET + SQL_SNIPPET, 'web_and_config');
add('long_docs', MARKDOWN_DOC + '\n' + MULTILINGUAL_DOC + '\n' + CHAT_DOC, 'combined_6kb');

// ---------------------------------------------------------------------------
// random strings over a mixed alphabet (fixed seed)
// ---------------------------------------------------------------------------

{
  const ALPHABET = [
    ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
    ' ', ' ', ' ', ' ', ' ', ' ', '  ', '\n', '\t', '\r\n', '\u00a0', '\u3000',
    ...'.,;:!?\'"-_()[]{}<>/\\@#$%^&*+=|~`',
    "'s", "'t", "'re", "'ll", "'S",
    'é', 'ß', 'ñ', 'Å', 'Ж', 'я', 'λ', 'Ω', 'ש', 'ع', 'क', 'ก', '中', '文', 'あ', 'カ', '한', '𠀀',
    '😀', '👍🏽', '🇺🇸', '\u0301', '\u200d', '<|endoftext|>', '½', '١',
  ];
  const rnd = mulberry32(20240229);
  for (let k = 0; k < 14; k++) {
    const len = 10 + Math.floor(rnd() * 190);
    let s = '';
    for (let i = 0; i < len; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
    add('random', s, `seed20240229_${k}`);
  }
  // Random strings over a small alphabet that stresses merge ordering.
  const SMALL = ['a', 'b', 'e', 'r', 't', 'h', 'in', 'the', ' ', ' the', ',', '"', "'"];
  const rnd2 = mulberry32(7);
  for (let k = 0; k < 6; k++) {
    const len = 20 + Math.floor(rnd2() * 80);
    let s = '';
    for (let i = 0; i < len; i++) s += SMALL[Math.floor(rnd2() * SMALL.length)];
    add('random', s, `small_alphabet_seed7_${k}`);
  }
}

// ---------------------------------------------------------------------------
// Divergences (separate file): inputs where gpt-3-encoder's JavaScript `\s`
// gives different ids from OpenAI's reference. Only a space directly before
// U+FEFF or U+0085 shows it with this vocabulary (tokens " \xef" = 27332 and
// " \xc2" = 1587 exist). Each listed case must really differ.
// ---------------------------------------------------------------------------

const divergences = [];
{
  const DIV = [
    ['a \ufeffb', 'space_bom_letter'], ['hello \ufeffworld', 'space_bom_word'],
    ['cost: \ufeff100', 'space_bom_digits'], ['end. \ufeff# Title', 'space_bom_punct'],
    ['a \u0085b', 'space_nel_letter'], ['line one \u0085line two', 'space_nel_word'],
    ['\u0085 \u0085x', 'nel_space_nel'], ['1 \u00852', 'space_nel_digit'],
  ];
  for (const [str, label] of DIV) {
    divergences.push({ name: `divergence_whitespace/${String(divergences.length + 1).padStart(3, '0')}_${label}`,
      bytes: Buffer.from(str, 'utf8') });
  }
}

// ---------------------------------------------------------------------------
// Encode, verify, write
// ---------------------------------------------------------------------------

function main() {
  const args = process.argv.slice(2);
  let outDir = DEFAULT_OUT_DIR;
  let check = false;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out-dir') outDir = path.resolve(args[++i]);
    else if (args[i] === '--check') check = true;
    else {
      console.error(`unknown argument: ${args[i]}`);
      process.exit(2);
    }
  }

  const fatal = new TextDecoder('utf-8', { fatal: true });
  const isValidUtf8 = (buf) => {
    try { fatal.decode(buf); return true; } catch (e) { return false; }
  };

  const problems = [];
  const bomQuirkCases = [];
  function record(c) {
    const text = c.bytes.toString('utf8'); // WHATWG: maximal invalid subparts -> U+FFFD
    const ids = encode(text);
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= VOCAB_SIZE) {
        throw new Error(`${c.name}: gpt-3-encoder produced an invalid id ${id}`);
      }
    }
    // gpt-3-encoder's decode() uses a default TextDecoder, which silently drops
    // a leading U+FEFF (BOM). We record the same decode without that quirk:
    // ids -> token strings -> bytes, then UTF-8 (WHATWG, BOM kept).
    const decoded = decodeKeepBom(ids);
    const libDecoded = decode(ids);
    if (libDecoded !== decoded) {
      if (decoded.startsWith('\ufeff') && libDecoded === decoded.slice(1)) bomQuirkCases.push(c.name);
      else problems.push(`${c.name}: decode() differs from the byte-level decode`);
    }
    const decodedBuf = Buffer.from(decoded, 'utf8');
    const valid = isValidUtf8(c.bytes);
    // Round trip: for valid input decode(encode(s)) must give back the exact
    // bytes; for invalid input it must give the U+FFFD-replaced text.
    const expected = valid ? c.bytes : Buffer.from(text, 'utf8');
    if (!decodedBuf.equals(expected)) problems.push(`${c.name}: round trip failed`);
    return { text, ids, valid, decodedBuf };
  }
  const sameIds = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

  // Main goldens.
  const lines = [];
  const perCategory = new Map();
  let invalidCount = 0;
  for (const c of cases) {
    const { text, ids, valid, decodedBuf } = record(c);
    if (!valid) invalidCount++;
    if (!sameIds(ids, encodeUnicodeWs(text))) {
      problems.push(`${c.name}: depends on JavaScript \\s vs Unicode White_Space (move it to the divergence list)`);
    }
    perCategory.set(c.category, (perCategory.get(c.category) || 0) + 1);
    lines.push(JSON.stringify({
      name: c.name,
      bytes_hex: c.bytes.toString('hex'),
      ids,
      decoded_hex: decodedBuf.toString('hex'),
    }));
  }

  // Divergence fixture.
  const divLines = [];
  for (const c of divergences) {
    const { text, ids, decodedBuf } = record(c);
    const referenceIds = encodeUnicodeWs(text);
    if (sameIds(ids, referenceIds)) problems.push(`${c.name}: listed as a divergence but the ids agree`);
    divLines.push(JSON.stringify({
      name: c.name,
      bytes_hex: c.bytes.toString('hex'),
      ids,
      decoded_hex: decodedBuf.toString('hex'),
      reference_ids: referenceIds,
    }));
  }

  const outputs = [
    [path.join(outDir, MAIN_FILE), lines.join('\n') + '\n'],
    [path.join(outDir, DIVERGENCE_FILE), divLines.join('\n') + '\n'],
  ];

  console.error(`gpt-3-encoder ${encoderPkg.version}, node ${process.version}, unicode ${process.versions.unicode}`);
  console.error(`${cases.length} cases (${invalidCount} with invalid UTF-8), ${divergences.length} divergence cases`);
  for (const [cat, n] of perCategory) console.error(`  ${cat.padEnd(22)} ${n}`);
  if (bomQuirkCases.length) {
    console.error(`note: gpt-3-encoder decode() drops the leading BOM in: ${bomQuirkCases.join(', ')} (decoded_hex keeps it)`);
  }
  if (problems.length) {
    for (const p of problems) console.error(`PROBLEM ${p}`);
  } else {
    console.error('round trip and consistency checks: all OK');
  }

  let stale = false;
  for (const [file, content] of outputs) {
    if (check) {
      const existing = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
      if (existing !== content) {
        console.error(`MISMATCH: ${file} differs from freshly generated goldens`);
        stale = true;
      } else {
        console.error(`${file} is up to date`);
      }
    } else {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, content);
      console.error(`wrote ${file} (${Buffer.byteLength(content)} bytes)`);
    }
  }
  if (problems.length || stale) process.exit(1);
}

main();
