// Token files (tokens.bin): the byte layout against an image built here from the spec, round
// trips through the cache builder, reuse only while the tokenizer and every source's bytes are
// unchanged, separators, 2- and 4-byte ids, every malformed header, size, padding, CRC and
// metadata case (one-line errors naming the file), source errors, and data path expansion.
#include "tinylm/train/token_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/io/crc32.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using test::expect_error;
using test::TempDir;
using test::write_text;

const std::string kName = "case.bin";  // stands for the path in from_bytes errors

// ---- an independent writer: the spec's layout, byte by byte ---------------------------------

void set_le(std::string& s, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_le(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}
uint32_t crc(const std::string& s, size_t at, size_t n) {
  return io::crc32(std::as_bytes(std::span(s.data() + at, n)));
}
size_t data_offset(size_t meta_bytes) { return (64 + meta_bytes + 63) / 64 * 64; }

// Recomputes the three CRCs from the header's own sizes, so a test can change one field and
// reach the checks behind the checksums.
// Sizes that run past the end leave their CRC as it is.
void reseal(std::string& f) {
  const uint64_t meta = get_le(f, 24, 8);
  if (meta <= f.size() - 64) set_le(f, 36, crc(f, 64, meta), 4);
  if (meta <= f.size() - 64 && data_offset(meta) <= f.size())
    set_le(f, 32, crc(f, data_offset(meta), f.size() - data_offset(meta)), 4);
  set_le(f, 60, crc(f, 0, 60), 4);
}

std::string image(const std::string& meta, const std::vector<uint32_t>& ids, int width) {
  std::string f(data_offset(meta.size()), '\0');
  std::memcpy(f.data(), "TLMTOK01", 8);
  set_le(f, 8, 1, 4);
  set_le(f, 12, width, 4);
  set_le(f, 16, ids.size(), 8);
  set_le(f, 24, meta.size(), 8);
  std::memcpy(f.data() + 64, meta.data(), meta.size());
  for (uint32_t id : ids) {
    f.append(width, '\0');
    set_le(f, f.size() - width, id, width);
  }
  reseal(f);
  return f;
}

std::string meta_text(int64_t vocab, const std::string& separator = "null") {
  return R"({"tokenizer":"chars-v1","vocab_size":)" + std::to_string(vocab) +
         R"(,"sources":[{"path":"a.txt","bytes":3,"crc32":7}],"separator":)" + separator + "}";
}

TokenFile parse(const std::string& f) {
  return TokenFile::from_bytes(std::as_bytes(std::span(f.data(), f.size())), kName);
}

std::vector<int32_t> all_tokens(const TokenFile& f) {
  std::vector<int32_t> out(f.size());
  f.copy(0, f.size(), out.data());
  return out;
}

// A byte-level "tokenizer": id = byte + offset (offset 65536 forces 4-byte ids).
Encoder bytes_encoder(int offset = 0) {
  return [offset](std::string_view s) {
    std::vector<int> ids;
    for (char c : s) ids.push_back(static_cast<uint8_t>(c) + offset);
    return ids;
  };
}

// ---- layout and round trips -----------------------------------------------------------------

TEST(TokenFile, LayoutMatchesTheSpec) {
  const TokenFileMeta meta{"chars-v1", 300, {{"a.txt", 3, 7}}, std::nullopt};
  const std::vector<std::byte> got = encode_token_file(meta, std::vector<int32_t>{1, 299, 0});
  const std::string want = image(meta_text(300), {1, 299, 0}, 2);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0);
  EXPECT_EQ(want.size() % 64, 6u);  // 64-byte aligned token data, 3 ids of 2 bytes

  const TokenFile f = parse(want);
  EXPECT_EQ(f.size(), 3);
  EXPECT_EQ(f.token_bytes(), 2);
  EXPECT_EQ(f.meta().tokenizer, "chars-v1");
  EXPECT_EQ(f.meta().vocab_size, 300);
  ASSERT_EQ(f.meta().sources.size(), 1u);
  EXPECT_EQ(f.meta().sources[0].path, "a.txt");
  EXPECT_EQ(f.meta().sources[0].bytes, 3u);
  EXPECT_EQ(f.meta().sources[0].crc32, 7u);
  EXPECT_FALSE(f.meta().separator);
  EXPECT_EQ(all_tokens(f), (std::vector<int32_t>{1, 299, 0}));
}

TEST(TokenFile, WidthFollowsVocabSize) {
  EXPECT_EQ(token_width(65536), 2);
  EXPECT_EQ(token_width(65537), 4);
  const TokenFileMeta meta{"big", 70000, {}, 69999};
  const std::vector<int32_t> ids{65535, 65536, 69999, 0};
  const std::vector<std::byte> bytes = encode_token_file(meta, ids);
  const TokenFile f = TokenFile::from_bytes(bytes, kName);
  EXPECT_EQ(f.token_bytes(), 4);
  EXPECT_EQ(bytes.size() % 64, 16u);
  EXPECT_EQ(all_tokens(f), ids);
  EXPECT_EQ(f.meta().separator, 69999);
  // A 4-byte file of a small vocabulary is still a valid file.
  EXPECT_EQ(all_tokens(parse(image(meta_text(300), {5, 6}, 4))), (std::vector<int32_t>{5, 6}));
}

TEST(TokenFile, BuildsThenReuses) {
  TempDir dir;
  write_text(dir.file("a.txt"), "hi");
  write_text(dir.file("b.txt"), "xyz");
  const std::vector<std::string> sources{dir.file("a.txt"), dir.file("b.txt")};
  const TokenizerIdentity id{"bytes-v1", 256, 255};
  const std::string cache = dir.file("tokens.bin");

  TokenFileBuild built = build_or_reuse_token_file(cache, sources, id, bytes_encoder());
  EXPECT_FALSE(built.reused);
  // The separator follows every file, the last one included.
  EXPECT_EQ(all_tokens(built.file), (std::vector<int32_t>{'h', 'i', 255, 'x', 'y', 'z', 255}));
  EXPECT_EQ(built.file.path(), cache);
  ASSERT_EQ(built.file.meta().sources.size(), 2u);
  EXPECT_EQ(built.file.meta().sources[1].path, sources[1]);
  EXPECT_EQ(built.file.meta().sources[1].bytes, 3u);
  EXPECT_EQ(built.file.meta().sources[1].crc32, crc("xyz", 0, 3));

  int calls = 0;
  const Encoder counting = [&](std::string_view s) {
    ++calls;
    return bytes_encoder()(s);
  };
  const TokenFileBuild again = build_or_reuse_token_file(cache, sources, id, counting);
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(all_tokens(again.file), all_tokens(built.file));
}

TEST(TokenFile, NoSeparatorConcatenates) {
  TempDir dir;
  write_text(dir.file("a"), "ab");
  write_text(dir.file("b"), "c");
  const TokenFileBuild b = build_or_reuse_token_file(
      dir.file("t.bin"), std::vector<std::string>{dir.file("b"), dir.file("a")},
      {"bytes-v1", 256, std::nullopt}, bytes_encoder());
  EXPECT_EQ(all_tokens(b.file), (std::vector<int32_t>{'c', 'a', 'b'}));
}

TEST(TokenFile, FourByteIdsThroughTheBuilder) {
  TempDir dir;
  write_text(dir.file("a"), "A\xc3\xbf");  // "Aÿ"
  const TokenFileBuild b =
      build_or_reuse_token_file(dir.file("t.bin"), std::vector<std::string>{dir.file("a")},
                                {"offset", 70000, 65536}, bytes_encoder(65536));
  EXPECT_EQ(b.file.token_bytes(), 4);
  EXPECT_EQ(all_tokens(b.file),
            (std::vector<int32_t>{65536 + 'A', 65536 + 0xc3, 65536 + 0xbf, 65536}));
}

TEST(TokenFile, RebuildsWhenContentOrTokenizerChanges) {
  TempDir dir;
  const std::string src = dir.file("a.txt"), cache = dir.file("tokens.bin");
  write_text(src, "abc");
  const std::vector<std::string> sources{src};
  const TokenizerIdentity id{"bytes-v1", 256, std::nullopt};
  auto build = [&](const TokenizerIdentity& t) {
    return build_or_reuse_token_file(cache, sources, t, bytes_encoder());
  };
  EXPECT_FALSE(build(id).reused);

  // Same size and modification time, different bytes: the CRC notices.
  const auto mtime = fs::last_write_time(src);
  write_text(src, "abd");
  fs::last_write_time(src, mtime);
  TokenFileBuild b = build(id);
  EXPECT_FALSE(b.reused);
  EXPECT_EQ(all_tokens(b.file), (std::vector<int32_t>{'a', 'b', 'd'}));

  // A touched file with the same bytes is reused.
  fs::last_write_time(src, mtime + std::chrono::hours(1));
  EXPECT_TRUE(build(id).reused);

  EXPECT_FALSE(build({"bytes-v2", 256, std::nullopt}).reused);
  EXPECT_FALSE(build({"bytes-v2", 256, 0}).reused);
  EXPECT_FALSE(build({"bytes-v2", 300, 0}).reused);
  EXPECT_TRUE(build({"bytes-v2", 300, 0}).reused);

  // One more source: rebuilt.
  write_text(dir.file("b.txt"), "z");
  const std::vector<std::string> two{src, dir.file("b.txt")};
  EXPECT_FALSE(build_or_reuse_token_file(cache, two, id, bytes_encoder()).reused);
  EXPECT_TRUE(build_or_reuse_token_file(cache, two, id, bytes_encoder()).reused);

  // A damaged cache is rebuilt, not reported.
  std::string bytes = test::read_text(cache);
  bytes.back() ^= 1;
  write_text(cache, bytes);
  b = build_or_reuse_token_file(cache, two, id, bytes_encoder());
  EXPECT_FALSE(b.reused);
  EXPECT_EQ(all_tokens(b.file), (std::vector<int32_t>{'a', 'b', 'd', 'z'}));
}

TEST(TokenFile, MovesKeepTheMapping) {
  TempDir dir;
  write_text(dir.file("a"), "hello");
  TokenFileBuild b =
      build_or_reuse_token_file(dir.file("t.bin"), std::vector<std::string>{dir.file("a")},
                                {"bytes-v1", 256, std::nullopt}, bytes_encoder());
  TokenFile moved = std::move(b.file);
  TokenFile assigned = parse(image(meta_text(300), {1}, 2));
  assigned = std::move(moved);
  EXPECT_EQ(all_tokens(assigned), (std::vector<int32_t>{'h', 'e', 'l', 'l', 'o'}));
  TokenFile from_memory = parse(image(meta_text(300), {7, 8}, 2));
  TokenFile moved_memory = std::move(from_memory);
  EXPECT_EQ(all_tokens(moved_memory), (std::vector<int32_t>{7, 8}));
}

// ---- source errors --------------------------------------------------------------------------

TEST(TokenFile, SourceErrorsNameTheFile) {
  TempDir dir;
  const std::string cache = dir.file("t.bin");
  const TokenizerIdentity id{"bytes-v1", 256, std::nullopt};
  auto build = [&](const std::string& src, const Encoder& enc = bytes_encoder()) {
    build_or_reuse_token_file(cache, std::vector<std::string>{src}, id, enc);
  };
  write_text(dir.file("empty"), "");
  expect_error([&] { build(dir.file("empty")); }, {dir.file("empty") + ": empty"});
  write_text(dir.file("bad"),
             "ab\xff"
             "cd");
  expect_error([&] { build(dir.file("bad")); }, {dir.file("bad") + ": invalid UTF-8 at byte 2"});
  // é is two good bytes; then a truncated three-byte sequence starts at byte 3.
  write_text(dir.file("cut"), "a\xc3\xa9\xe2\x82");
  expect_error([&] { build(dir.file("cut")); }, {dir.file("cut") + ": invalid UTF-8 at byte 3"});
  expect_error([&] { build(dir.file("missing")); }, {dir.file("missing"), "cannot open"});
  write_text(dir.file("ok"), "ok");
  expect_error([&] { build(dir.file("ok"), bytes_encoder(200)); },
               {dir.file("ok"), "id 311", "outside [0, 256)"});
  EXPECT_FALSE(fs::exists(cache));  // nothing written on failure
  expect_error(
      [&] {
        build_or_reuse_token_file(cache, std::vector<std::string>{dir.file("ok")}, {"x", 256, 256},
                                  bytes_encoder());
      },
      {cache, "separator id 256"});
}

// ---- malformed files ------------------------------------------------------------------------

TEST(TokenFile, MalformedFilesAreOneLineErrorsNamingTheFile) {
  const std::string good = image(meta_text(300, "299"), {1, 2, 3}, 2);
  ASSERT_NO_THROW(parse(good));
  ASSERT_LT(64 + get_le(good, 24, 8), data_offset(get_le(good, 24, 8)));  // there is padding
  struct Case {
    const char* what;
    std::function<void(std::string&)> mutate;
    std::string phrase;
  };
  auto field = [](size_t at, uint64_t v, int n, bool seal = true) {
    return [=](std::string& f) {
      set_le(f, at, v, n);
      if (seal) reseal(f);
    };
  };
  const std::vector<Case> cases = {
      {"empty", [](std::string& f) { f.clear(); }, "0 bytes, too short"},
      {"short", [](std::string& f) { f.resize(63); }, "63 bytes, too short"},
      {"magic", [](std::string& f) { f[7] = '2'; }, "magic"},
      {"version", field(8, 2, 4), "version 2 is not supported"},
      {"header crc", field(16, 4, 8, false), "header CRC mismatch"},
      {"width 3", field(12, 3, 4), "token width 3"},
      {"width 0", field(12, 0, 4), "token width 0"},
      {"reserved", field(44, 1, 1), "reserved header bytes"},
      {"meta past end", field(24, 1u << 20, 8), "metadata length 1048576 runs past the end"},
      {"meta huge", field(24, ~0ull, 8), "runs past the end"},
      {"count", field(16, 4, 8), "header says 4 tokens of 2 bytes"},
      {"count huge", field(16, ~0ull >> 1, 8), "tokens of 2 bytes"},
      {"odd data",
       [](std::string& f) {
         f.push_back('\0');
         reseal(f);
       },
       "7 bytes of token data"},
      {"truncated", [](std::string& f) { f.pop_back(); }, "5 bytes of token data"},
      {"meta crc",
       [](std::string& f) {
         f[36] ^= 1;
         set_le(f, 60, crc(f, 0, 60), 4);
       },
       "metadata CRC mismatch"},
      {"token crc", [](std::string& f) { f.back() ^= 1; }, "token data CRC mismatch"},
      {"padding",
       [](std::string& f) {
         f[64 + get_le(f, 24, 8)] = 'x';
         reseal(f);
       },
       "padding is not zero"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::string f = good;
    c.mutate(f);
    expect_error([&] { parse(f); }, {kName + ": ", c.phrase});
  }
}

TEST(TokenFile, MalformedMetadata) {
  const std::string src = R"(,"sources":[{"path":"a","bytes":1,"crc32":2}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "metadata"},
      {"[]", "not a JSON object"},
      {"{\"tokenizer\":\"t\"", "metadata"},
      {R"({"tokenizer":"t","vocab_size":300)" + src + "}", "missing field 'separator'"},
      {R"({"vocab_size":300,"separator":null)" + src + "}", "missing field 'tokenizer'"},
      {R"({"tokenizer":"t","separator":null)" + src + "}", "missing field 'vocab_size'"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":null})", "missing field 'sources'"},
      {R"({"tokenizer":1,"vocab_size":300,"separator":null)" + src + "}", "'tokenizer'"},
      {R"({"tokenizer":"t","vocab_size":-1,"separator":null)" + src + "}", "'vocab_size'"},
      {R"({"tokenizer":"t","vocab_size":0,"separator":null)" + src + "}", "at least 1"},
      {R"({"tokenizer":"t","vocab_size":3.5,"separator":null)" + src + "}", "'vocab_size'"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":300)" + src + "}", "separator 300"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":"x")" + src + "}", "'separator'"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":null,"x":1)" + src + "}",
       "unexpected field 'x'"},
      {R"({"tokenizer":"t","tokenizer":"u","vocab_size":300,"separator":null)" + src + "}",
       "duplicate key"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":null,"sources":{}})", "'sources'"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":null,"sources":[1]})", "source"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":null,"sources":[{"path":"a"}]})",
       "missing field 'bytes'"},
      {R"({"tokenizer":"t","vocab_size":300,"separator":null,"sources":[{"path":"a","bytes":1,"crc32":4294967296}]})",
       "'crc32'"},
      {R"({"tokenizer":"t","vocab_size":70000,"separator":null)" + src + "}",
       "2-byte ids cannot hold vocab_size 70000"},
  };
  for (const auto& c : cases) {  // not a structured binding: clang 14 cannot capture those
    SCOPED_TRACE(c.first);
    expect_error([&] { parse(image(c.first, {1}, 2)); }, {kName + ": ", c.second});
  }
}

TEST(TokenFile, CopyChecksRangeAndIds) {
  // A file whose CRCs are right but whose id 300 is outside its vocabulary of 300.
  const TokenFile f = parse(image(meta_text(300), {1, 300, 2}, 2));
  std::vector<int32_t> out(3);
  f.copy(0, 1, out.data());
  EXPECT_EQ(out[0], 1);
  expect_error([&] { f.copy(0, 3, out.data()); }, {kName + ": token 1 has id 300"});
  expect_error([&] { f.copy(2, 2, out.data()); }, {kName + ": 2 tokens at position 2"});
  expect_error([&] { f.copy(-1, 1, out.data()); }, {kName + ": "});
  expect_error([&] { f.copy(0, -1, out.data()); }, {kName + ": "});
}

TEST(TokenFile, OpenErrorsNameThePath) {
  TempDir dir;
  expect_error([&] { TokenFile::open(dir.file("none.bin")); }, {dir.file("none.bin"), "open"});
  write_text(dir.file("bad.bin"), std::string(100, 'x'));
  expect_error([&] { TokenFile::open(dir.file("bad.bin")); }, {dir.file("bad.bin") + ": not a"});
  write_text(dir.file("empty.bin"), "");
  expect_error([&] { TokenFile::open(dir.file("empty.bin")); }, {dir.file("empty.bin") + ": 0"});
  expect_error([&] { TokenFile::open(dir.path().string()); }, {"not a regular file"});
}

// ---- data paths ------------------------------------------------------------------------------

TEST(DataPaths, DirectoriesExpandSortedWithoutDotfiles) {
  TempDir dir;
  const fs::path d = dir.path() / "data";
  fs::create_directories(d / "a");
  fs::create_directories(d / ".git");
  fs::create_directories(d / "empty");
  for (const char* f : {"b.txt", "a/c.txt", "a-d.txt", ".hidden", "a/.swp", ".git/x"})
    write_text((d / f).string(), "x");
  write_text(dir.file(".solo"), "x");
  fs::create_symlink(d / "gone", d / "dangling");   // not a regular file: skipped
  fs::create_symlink(d / "b.txt", d / "link.txt");  // a link to one: listed

  const std::vector<std::string> args{d.string(), dir.file(".solo")};
  const std::vector<std::string> got = expand_data_paths(args);
  // Byte order of the whole path: '-' (0x2d) sorts before '/' (0x2f).
  const std::vector<std::string> want{(d / "a-d.txt").string(), (d / "a/c.txt").string(),
                                      (d / "b.txt").string(), (d / "link.txt").string(),
                                      dir.file(".solo")};
  EXPECT_EQ(got, want);
}

TEST(DataPaths, Errors) {
  TempDir dir;
  const std::vector<std::string> missing{dir.file("nope")};
  expect_error([&] { expand_data_paths(missing); }, {dir.file("nope") + ": no such file"});
  fs::create_directories(dir.path() / "e" / ".hidden");
  write_text(dir.file("e/.hidden/x"), "x");
  const std::vector<std::string> empty{dir.file("e")};
  expect_error([&] { expand_data_paths(empty); }, {dir.file("e") + ": no data files"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
