// Text handling: strict UTF-8, Python's str.isspace(), the character tokenizer and the
// document reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "special_files.h"
#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/char_tokenizer.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The code points c for which Python's chr(c).isspace() is True, produced by running
//   /usr/bin/python3 -c "print([c for c in range(0x110000) if chr(c).isspace()])"
// with Python 3.11.2 (Unicode 14.0), pasted verbatim.
const std::vector<char32_t> kPythonSpaces = {
    9,    10,   11,   12,   13,   28,   29,   30,   31,   32,   133,  160,  5760, 8192, 8193,
    8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288};

// ---------------------------------------------------------------------------------------------
// UTF-8

struct Good {
  char32_t cp;
  std::string bytes;  // hand-encoded per RFC 3629
};

const std::vector<Good> kGood = {
    {U'\0', std::string("\0", 1)},
    {0x41, "A"},
    {0x7F, "\x7F"},
    {0x80, "\xC2\x80"},
    {0xE9, "\xC3\xA9"},  // é
    {0x7FF, "\xDF\xBF"},
    {0x800, "\xE0\xA0\x80"},
    {0x20AC, "\xE2\x82\xAC"},  // €
    {0x65E5, "\xE6\x97\xA5"},  // 日
    {0xD7FF, "\xED\x9F\xBF"},  // last before the surrogates
    {0xE000, "\xEE\x80\x80"},  // first after the surrogates
    {0xFFFF, "\xEF\xBF\xBF"},
    {0x10000, "\xF0\x90\x80\x80"},
    {0x1D11E, "\xF0\x9D\x84\x9E"},  // musical G clef
    {0x1F600, "\xF0\x9F\x98\x80"},
    {0x10FFFF, "\xF4\x8F\xBF\xBF"},
};

TEST(Utf8, DecodesAndEncodesOneToFourByteChars) {
  for (const Good& g : kGood) {
    std::u32string out;
    size_t bad = 12345;
    ASSERT_TRUE(decode_utf8(g.bytes, out, &bad)) << "U+" << std::hex << static_cast<uint32_t>(g.cp);
    EXPECT_EQ(out, std::u32string(1, g.cp));
    EXPECT_EQ(to_utf8(std::u32string(1, g.cp)), g.bytes)
        << "U+" << std::hex << static_cast<uint32_t>(g.cp);
    std::string appended = "x";
    append_utf8(appended, g.cp);
    EXPECT_EQ(appended, "x" + g.bytes);
  }
  // All of them in one string.
  std::string all;
  std::u32string cps;
  for (const Good& g : kGood) {
    all += g.bytes;
    cps += g.cp;
  }
  std::u32string out = U"stale";
  size_t bad = 0;
  ASSERT_TRUE(decode_utf8(all, out, &bad));
  EXPECT_EQ(out, cps);
  EXPECT_EQ(to_utf8(cps), all);
  EXPECT_TRUE(decode_utf8("", out, &bad));
  EXPECT_TRUE(out.empty());
}

TEST(Utf8, RoundTripsEveryScalarValue) {
  std::u32string all;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    all += c;
  }
  const std::string bytes = to_utf8(all);
  // 128 one-byte, 1920 two-byte, 63488 - 2048 surrogates = 61440 three-byte, 1048576 four-byte.
  EXPECT_EQ(bytes.size(), 128u + 1920u * 2 + 61440u * 3 + 1048576u * 4);
  std::u32string back;
  size_t bad = 0;
  ASSERT_TRUE(decode_utf8(bytes, back, &bad)) << "at byte " << bad;
  EXPECT_TRUE(back == all);
}

struct Bad {
  const char* what;
  std::string bytes;
  size_t offset;
};

TEST(Utf8, RejectsInvalidSequencesAtTheRightOffset) {
  const std::string p = "ab";        // a valid prefix, so offsets are not trivially 0
  const std::string e = "\xC3\xA9";  // é, two bytes
  const std::vector<Bad> cases = {
      {"overlong 2-byte NUL", p + "\xC0\x80", 2},
      {"overlong 2-byte C1", p + "\xC1\xBF", 2},
      {"overlong 3-byte NUL", p + "\xE0\x80\x80", 2},
      {"overlong 3-byte U+7FF", p + "\xE0\x9F\xBF", 2},
      {"overlong 4-byte NUL", p + "\xF0\x80\x80\x80", 2},
      {"overlong 4-byte U+FFFF", p + "\xF0\x8F\xBF\xBF", 2},
      {"surrogate U+D800", p + "\xED\xA0\x80", 2},
      {"surrogate U+DFFF", p + "\xED\xBF\xBF", 2},
      {"above U+10FFFF", p + "\xF4\x90\x80\x80", 2},
      {"F5 lead byte", p + "\xF5\x80\x80\x80", 2},
      {"FF byte", p + "\xFF", 2},
      {"FE byte", p + "\xFE" + "x", 2},
      {"truncated 2-byte at end", p + "\xC3", 2},
      {"truncated 3-byte at end", p + "\xE2\x82", 2},
      {"truncated 4-byte at end", p + "\xF0\x9F\x98", 2},
      {"truncated 3-byte before ASCII", p + "\xE2\x82" + "c", 2},
      {"truncated 4-byte before lead", p + "\xF0\x9F" + e, 2},
      {"stray continuation first", "\x80" + p, 0},
      {"stray continuation after ASCII", "a\xBF", 1},
      {"stray continuation after 2-byte char", p + e + "\xBF", 4},
      {"invalid after valid multibyte", e + "\xE2\x82\xAC" + "\xC0\x80", 5},
  };
  for (const Bad& b : cases) {
    std::u32string out;
    size_t bad = 999;
    EXPECT_FALSE(decode_utf8(b.bytes, out, &bad)) << b.what;
    EXPECT_EQ(bad, b.offset) << b.what;
  }
}

TEST(Utf8, IsPythonSpaceMatchesPython) {
  const std::set<char32_t> spaces(kPythonSpaces.begin(), kPythonSpaces.end());
  ASSERT_EQ(spaces.size(), 29u);
  int mismatches = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    const bool want = spaces.count(c) > 0;
    if (is_python_space(c) != want && ++mismatches <= 10)
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(c) << ": got " << !want;
  }
  EXPECT_EQ(mismatches, 0);
  // A few that look like spaces but are not, per Python.
  for (char32_t c : {char32_t{0x200B}, char32_t{0xFEFF}, char32_t{0x180E}, char32_t{0x00AD}})
    EXPECT_FALSE(is_python_space(c)) << std::hex << static_cast<uint32_t>(c);
}

// ---------------------------------------------------------------------------------------------
// CharTokenizer

TEST(CharTokenizer, FromDocumentsSortsUniqueChars) {
  const std::vector<std::string_view> docs = {"emma", "olivia"};
  const CharTokenizer t = CharTokenizer::from_documents(docs);
  EXPECT_EQ(t.chars_utf8(), "aeilmov");
  EXPECT_EQ(t.bos(), 7);
  EXPECT_EQ(t.vocab_size(), 8);
  // a=0 e=1 i=2 l=3 m=4 o=5 v=6
  EXPECT_EQ(t.encode_document("emma"), (std::vector<int>{7, 1, 4, 4, 0, 7}));
  EXPECT_EQ(t.encode_document("olivia"), (std::vector<int>{7, 5, 3, 2, 6, 2, 0, 7}));
  EXPECT_EQ(t.encode_document(""), (std::vector<int>{7, 7}));
}

TEST(CharTokenizer, DecodeSkipsBos) {
  const std::vector<std::string_view> docs = {"emma", "olivia"};
  const CharTokenizer t = CharTokenizer::from_documents(docs);
  const std::vector<int> ids = {7, 1, 4, 4, 0, 7};
  EXPECT_EQ(t.decode(ids), "emma");
  const std::vector<int> mid = {5, 7, 3, 7, 7, 2};
  EXPECT_EQ(t.decode(mid), "oli");
  const std::vector<int> out_of_range = {8};
  EXPECT_THROW(t.decode(out_of_range), Error);
  const std::vector<int> negative = {-1};
  EXPECT_THROW(t.decode(negative), Error);
}

TEST(CharTokenizer, OutOfVocabularyNamesTheChar) {
  const std::vector<std::string_view> docs = {"emma", "olivia"};
  const CharTokenizer t = CharTokenizer::from_documents(docs);
  try {
    t.encode_document("emmax");
    FAIL() << "out-of-vocabulary char accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'x'")) << e.what();
  }
  try {
    t.encode_document("zoé");
    FAIL() << "out-of-vocabulary char accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'z'")) << "first offending char: " << e.what();
  }
  try {
    t.encode_document("emmaé");
    FAIL() << "out-of-vocabulary char accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'\xC3\xA9'")) << e.what();
  }
}

TEST(CharTokenizer, NonAsciiSortsByCodePoint) {
  // 日 U+65E5, é U+00E9, 😀 U+1F600, Ā U+0100, ÿ U+00FF: ids in code point order
  // a b é ÿ Ā 日 😀 = 0..6, not in order of first appearance.
  const std::vector<std::string_view> docs = {"\xE6\x97\xA5\xC3\xA9", "ba",
                                              "\xF0\x9F\x98\x80\xC4\x80\xC3\xBF"};
  const CharTokenizer t = CharTokenizer::from_documents(docs);
  EXPECT_EQ(t.chars_utf8(), "ab\xC3\xA9\xC3\xBF\xC4\x80\xE6\x97\xA5\xF0\x9F\x98\x80");
  EXPECT_EQ(t.bos(), 7);
  EXPECT_EQ(t.vocab_size(), 8);
  EXPECT_EQ(t.encode_document("\xC3\xA9\xE6\x97\xA5"), (std::vector<int>{7, 2, 5, 7}));
  const std::vector<int> ids = {7, 6, 4, 0, 7};
  EXPECT_EQ(t.decode(ids),
            "\xF0\x9F\x98\x80\xC4\x80"
            "a");
}

TEST(CharTokenizer, FromCharsSortsAndDeduplicates) {
  const CharTokenizer t = CharTokenizer::from_chars(
      "cba\xC3\xA9"
      "ab ");
  EXPECT_EQ(t.chars_utf8(), " abc\xC3\xA9");
  EXPECT_EQ(t.vocab_size(), 6);
  EXPECT_EQ(t.encode_document("a c"), (std::vector<int>{5, 1, 0, 3, 5}));
}

TEST(CharTokenizer, InvalidUtf8Throws) {
  const std::vector<std::string_view> docs = {"ok", "bad\xFF"};
  EXPECT_THROW(CharTokenizer::from_documents(docs), Error);
  EXPECT_THROW(CharTokenizer::from_chars("\xC0\x80"), Error);
  const CharTokenizer t = CharTokenizer::from_chars("abc");
  EXPECT_THROW(t.encode_document("a\xE2\x82"), Error);
}

// ---------------------------------------------------------------------------------------------
// read_documents

using Docs = std::vector<std::string>;

Docs read_text_docs(const test::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("docs.txt");
  test::write_text(path, text);
  const io::Documents d = io::read_documents(path);
  return Docs(d.views().begin(), d.views().end());
}

TEST(ReadDocuments, StripsAndDropsBlankLines) {
  test::TempDir dir;
  // Expected values checked with Python: [l.strip() for l in text.split('\n') if l.strip()]
  // after universal-newline decoding, as microgpt.py reads its input.
  EXPECT_EQ(read_text_docs(dir, "  emma  \n\n\tolivia\t\n   \nava"),
            (Docs{"emma", "olivia", "ava"}));
  EXPECT_EQ(read_text_docs(dir, "emma\nolivia\n"), (Docs{"emma", "olivia"}));
  EXPECT_EQ(read_text_docs(dir, "\n\n  emma\n\n\n"), (Docs{"emma"}));
  EXPECT_EQ(read_text_docs(dir, "mary ann\n"), (Docs{"mary ann"}));  // inner space kept
}

TEST(ReadDocuments, NoTrailingNewline) {
  test::TempDir dir;
  EXPECT_EQ(read_text_docs(dir, "emma"), (Docs{"emma"}));
  EXPECT_EQ(read_text_docs(dir, "emma\nzz"), (Docs{"emma", "zz"}));
}

TEST(ReadDocuments, CrLfAndLoneCr) {
  test::TempDir dir;
  EXPECT_EQ(read_text_docs(dir, "emma\r\nolivia\r\n"), (Docs{"emma", "olivia"}));
  EXPECT_EQ(read_text_docs(dir, "emma\rolivia\rava"), (Docs{"emma", "olivia", "ava"}));
  EXPECT_EQ(read_text_docs(dir, "a\r\n\r\nb\n\rc"), (Docs{"a", "b", "c"}));
  EXPECT_EQ(read_text_docs(dir, "a\r"), (Docs{"a"}));
}

TEST(ReadDocuments, UnicodeWhitespace) {
  test::TempDir dir;
  // U+3000 and U+00A0 are stripped at the ends; U+2028 and U+0085 are not line breaks for
  // Python's universal newlines (only \n, \r, \r\n are), so they stay inside a line and are
  // stripped only at its ends; \v and \f do not split lines either.
  EXPECT_EQ(read_text_docs(dir,
                           "\xE3\x80\x80"
                           "emma\xC2\xA0\nmary ann\na\xE2\x80\xA8"
                           "b\n\xC2\x85x\x1C\n"),
            (Docs{"emma", "mary ann",
                  "a\xE2\x80\xA8"
                  "b",
                  "x"}));
  EXPECT_EQ(read_text_docs(dir,
                           "a\x0B"
                           "b\x0C"
                           "c"),
            (Docs{"a\x0B"
                  "b\x0C"
                  "c"}));
}

TEST(ReadDocuments, MissingFileNamesThePath) {
  test::TempDir dir;
  const std::string path = dir.file("does_not_exist.txt");
  try {
    io::read_documents(path);
    FAIL() << "missing file accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
  }
}

TEST(ReadDocuments, EmptyOrBlankFileHasNoDocuments) {
  test::TempDir dir;
  for (const std::string& text :
       {std::string(), std::string("\n"), std::string("  \n\t\r\n \xE3\x80\x80\n")}) {
    const std::string path = dir.file("blank.txt");
    test::write_text(path, text);
    try {
      io::read_documents(path);
      FAIL() << "blank file accepted: '" << text << "'";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "no documents")) << e.what();
      EXPECT_TRUE(contains(e.what(), path)) << e.what();
    }
  }
}

TEST(ReadDocuments, InvalidUtf8NamesPathAndEncoding) {
  test::TempDir dir;
  const std::string path = dir.file("latin1.txt");
  test::write_text(path, "emma\nzo\xE9\n");  // Latin-1 é
  try {
    io::read_documents(path);
    FAIL() << "invalid UTF-8 accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
    EXPECT_TRUE(contains(e.what(), "UTF-8")) << e.what();
  }
}

TEST(ReadDocuments, NamesDataset) {
  const io::Documents file = io::read_documents(test::source_path("data/names.txt"));
  const Docs docs(file.views().begin(), file.views().end());
  // Counted with Python: len([l.strip() for l in open(p).read().strip().split('\n') if l.strip()])
  ASSERT_EQ(docs.size(), 32033u);
  EXPECT_EQ(docs.front(), "emma");
  EXPECT_EQ(docs[1], "olivia");
  EXPECT_EQ(docs.back(), "zzyzx");
}

// ---------------------------------------------------------------------------------------------
// Bounded reads (issue 35, finding 6): read_file checks what it reads and how much.

TEST(ReadFile, ARegularFileOverTheLimitIsRefusedBeforeItIsRead) {
  test::TempDir dir;
  const std::string path = dir.file("big.txt");
  test::write_text(path, std::string(1001, 'a'));
  EXPECT_EQ(io::read_file(path, 1001).size(), 1001u);
  test::expect_error([&] { io::read_file(path, 1000); }, {"big.txt", "more than 1000 bytes"});
  // The whole limit: a sparse file of 16 GiB + 1 is refused at once, nothing allocated.
  std::filesystem::resize_file(path, io::kMaxFileBytes + 1);
  test::expect_error([&] { io::read_file(path); }, {"big.txt", "more than 16 GiB"});
}

TEST(ReadFile, AFifoIsReadUntilItPassesTheLimit) {
  test::TempDir dir;
  const std::string fifo = dir.file("pipe");
  test::make_fifo(fifo);
  for (const size_t n : {size_t{1000}, size_t{5000}}) {
    // Fits the pipe's buffer: the writer is done before the reader stops.
    std::thread writer([&] {
      const int fd = ::open(fifo.c_str(), O_WRONLY);
      const std::string text(n, 'p');
      EXPECT_EQ(::write(fd, text.data(), n), static_cast<ssize_t>(n));
      ::close(fd);
    });
    if (n <= 1000) {
      EXPECT_EQ(io::read_file(fifo, 1000), std::string(n, 'p'));
    } else {
      test::expect_error([&] { io::read_file(fifo, 1000); }, {"pipe", "more than 1000 bytes"});
    }
    writer.join();
  }
}

TEST(ReadFile, DevicesDirectoriesAndSocketsAreRefusedBeforeTheyAreOpened) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.file("sub"));
  test::make_socket(dir.file("sock"));
  test::expect_error([&] { io::read_file(dir.file("sub")); }, {"sub", "is a directory"});
  test::expect_error([&] { io::read_file(dir.file("sock")); }, {"sock", "is a socket"});
  test::expect_error([&] { io::read_documents(dir.file("sub")); }, {"sub", "is a directory"});
  test::expect_error([&] { io::read_file(dir.file("missing")); }, {"missing", "cannot open"});
  if (::geteuid() != 0) GTEST_SKIP() << "making device nodes (mknod) needs root";
  test::make_memory_device(dir.file("zero"), test::kZeroMinor);
  test::make_memory_device(dir.file("null"), test::kNullMinor);
  test::make_block_device(dir.file("block"));
  test::expect_error([&] { io::read_file(dir.file("zero")); }, {"zero", "is a character device"});
  test::expect_error([&] { io::read_file(dir.file("block")); }, {"block", "is a block device"});
  EXPECT_EQ(io::read_file(dir.file("null")), "");  // /dev/null: an empty input
}

TEST(ReadFile, SizeTextNamesWholeUnits) {
  EXPECT_EQ(io::size_text(uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(io::size_text(uint64_t{16} << 30), "16 GiB");
  EXPECT_EQ(io::size_text(uint64_t{3} << 20), "3 MiB");
  EXPECT_EQ(io::size_text(1000), "1000 bytes");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
