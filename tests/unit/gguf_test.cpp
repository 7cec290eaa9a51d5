// The GGUF reader and writer (io/gguf.h): values of every type round trip, and malformed files
// (truncations, huge counts, bad offsets, misalignment, unknown types, duplicates, overlaps)
// are one-line errors naming the file and the problem. The malformed files are built byte by
// byte here, from the format's specification, not by the writer under test.
#include "tinylm/io/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "test_util.h"

namespace tinylm::io {
namespace TINYLM_TEST_LOCAL {

// A GGUF image assembled field by field.
struct Raw {
  std::vector<std::byte> b;
  Raw& u8(uint8_t v) {
    b.push_back(static_cast<std::byte>(v));
    return *this;
  }
  Raw& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Raw& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Raw& str(const std::string& s) {
    u64(s.size());
    for (char c : s) u8(static_cast<uint8_t>(c));
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.clear();
    for (char c : std::string("GGUF")) u8(static_cast<uint8_t>(c));
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
  Raw& pad(size_t alignment = 32) {
    while (b.size() % alignment) u8(0);
    return *this;
  }
  Raw& zeros(size_t n) {
    for (size_t i = 0; i < n; ++i) u8(0);
    return *this;
  }
};

GgufFile parse(const Raw& r) { return GgufFile::from_bytes(r.b, "bad.gguf"); }

void expect_bad(const Raw& r, const std::vector<std::string>& phrases) {
  std::vector<std::string> p = phrases;
  p.insert(p.begin(), "bad.gguf: ");
  test::expect_error([&] { parse(r); }, p);
}

TEST(Gguf, WriterValuesAndTensorsRoundTrip) {
  GgufWriter w;
  w.add_u32("a.u32", 7);
  w.add_i32("a.i32", -3);
  w.add_u64("a.u64", uint64_t{1} << 40);
  w.add_f32("a.f32", 0.25f);
  w.add_bool("a.bool", true);
  w.add_string("a.str", "hé");
  const std::vector<std::string> strs = {"x", "", "yz"};
  w.add_string_array("a.strs", strs);
  const std::vector<int32_t> ints = {1, -2, 3};
  w.add_i32_array("a.ints", ints);
  const std::vector<float> f32(6, 1.5f);
  std::vector<std::byte> q8(34 * 2, std::byte{1});
  w.add_tensor("t.f32", GgmlType::f32, {3, 2}, std::as_bytes(std::span(f32)));
  w.add_tensor("t.q8", GgmlType::q8_0, {64}, q8);
  const std::vector<std::byte> bytes = w.bytes();
  EXPECT_EQ(bytes.size() % 32, 0u);
  const GgufFile f = GgufFile::from_bytes(bytes, "w.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_uint("a.u32"), 7u);
  EXPECT_EQ(static_cast<int64_t>(f.find("a.i32")->ints[0]), -3);
  EXPECT_EQ(f.get_uint("a.u64"), uint64_t{1} << 40);
  EXPECT_EQ(f.get_float("a.f32"), 0.25);
  EXPECT_EQ(f.find("a.bool")->ints[0], 1u);
  EXPECT_EQ(f.get_string("a.str"), "hé");
  EXPECT_EQ(f.get_array("a.strs", GgufType::string).strings, strs);
  EXPECT_EQ(f.get_array("a.ints", GgufType::i32).size(), 3u);
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor& t = f.tensors()[0];
  EXPECT_EQ(t.numel, 6u);
  EXPECT_EQ(t.bytes, 24u);
  EXPECT_EQ(std::memcmp(f.data(t).data(), f32.data(), 24), 0);
  EXPECT_EQ(f.tensors()[1].offset, 32u);  // 24 bytes padded to 32
  EXPECT_EQ(f.tensors()[1].bytes, 68u);
  EXPECT_TRUE(std::equal(f.data(f.tensors()[1]).begin(), f.data(f.tensors()[1]).end(), q8.begin()));
  test::expect_error([&] { f.get_string("a.u32"); }, {"w.gguf", "key a.u32", "expected a string"});
  test::expect_error([&] { f.get_uint("nope"); }, {"w.gguf", "no key nope"});
  test::expect_error([&] { f.get_uint("a.i32"); }, {"negative"});
  // An alignment other than 32 is written, read and honoured.
  GgufWriter w64(64);
  w64.add_tensor("t", GgmlType::f32, {3, 2}, std::as_bytes(std::span(f32)));
  const GgufFile g = GgufFile::from_bytes(w64.bytes(), "w64.gguf");
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(w64.bytes().size() % 64, 0u);
  EXPECT_EQ(std::memcmp(g.data(g.tensors()[0]).data(), f32.data(), 24), 0);
}

TEST(Gguf, WriterRefusesWhatItCannotWrite) {
  GgufWriter w;
  w.add_u32("k", 1);
  test::expect_error([&] { w.add_u32("k", 2); }, {"duplicate key k"});
  const std::vector<float> v(33);
  test::expect_error([&] { w.add_tensor("q", GgmlType::q8_0, {33}, std::as_bytes(std::span(v))); },
                     {"not whole blocks"});
  test::expect_error([&] { w.add_tensor("t", GgmlType::f32, {4}, std::as_bytes(std::span(v))); },
                     {"132 bytes of data for 16 bytes"});
  test::expect_error([] { GgufWriter bad(24); }, {"alignment 24"});
}

// A valid file: one u32, one F32 tensor [8] and one Q8_0 tensor [32].
Raw valid() {
  Raw r;
  r.header(2, 1).kv_u32("general.alignment", 32);
  r.tensor("a", {8}, 0, 0).tensor("b", {32}, 8, 32).pad().zeros(32).zeros(34).pad();
  return r;
}

TEST(Gguf, ValidHandBuiltFileParses) {
  const GgufFile f = parse(valid());
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[1].type, GgmlType::q8_0);
  EXPECT_EQ(f.tensors()[1].bytes, 34u);
}

TEST(Gguf, EveryTruncationIsAnError) {
  const Raw full = valid();
  const size_t data_end = full.b.size() - 30;  // the Q8_0 tensor's last byte + 1
  for (size_t n = 0; n < data_end; ++n) {
    Raw r;
    r.b.assign(full.b.begin(), full.b.begin() + static_cast<ptrdiff_t>(n));
    SCOPED_TRACE(n);
    test::expect_error([&] { parse(r); }, {"bad.gguf: "});
  }
  Raw r;
  r.b.assign(full.b.begin(), full.b.begin() + 10);
  expect_bad(r, {"truncated", "the tensor count needs 8 bytes at offset 8"});
}

TEST(Gguf, HeaderErrors) {
  Raw r;
  r.header(0, 0);
  r.b[0] = std::byte{'X'};
  expect_bad(r, {"not a GGUF file"});
  expect_bad(Raw().header(0, 0, 2), {"version 2 is not supported"});
  expect_bad(Raw().header(0, 0, 0x03000000), {"big-endian"});
  expect_bad(Raw().header(0, uint64_t{1} << 62), {"key/value count 4611686018427387904"});
  expect_bad(Raw().header(uint64_t{1} << 62, 0), {"tensor count"});
}

TEST(Gguf, KeyValueErrors) {
  Raw r;
  r.header(0, 1).u64(uint64_t{1} << 60).zeros(16);
  expect_bad(r, {"truncated", "key/value 0: key"});
  r.header(0, 1).str("k").u32(13).zeros(8);
  expect_bad(r, {"key k: type: unknown value type 13"});
  r.header(0, 1).str("k").u32(9).u32(8).u64(uint64_t{1} << 61).zeros(16);
  expect_bad(r, {"key k: array length 2305843009213693952"});
  r.header(0, 1).str("k").u32(9).u32(9).u64(1).zeros(16);
  expect_bad(r, {"arrays of arrays"});
  r.header(0, 1).str("k").u32(8).u64(1000).zeros(16);
  expect_bad(r, {"truncated", "key k of 1000 bytes"});
  r.header(0, 1).str("k").u32(7).u8(2).zeros(16);
  expect_bad(r, {"boolean value 2"});
  // An array's element is named by its index: a string array's third string overruns the file,
  // a boolean array's second value is 3.
  r.header(0, 1).str("k").u32(9).u32(8).u64(3).str("a").str("b").u64(1000).zeros(16);
  expect_bad(r, {"truncated", "key k[2] of 1000 bytes"});
  r.header(0, 1).str("k").u32(9).u32(7).u64(2).u8(1).u8(3).zeros(16);
  expect_bad(r, {"key k[1]: boolean value 3 is neither 0 nor 1"});
  r.header(0, 2).kv_u32("k", 1).kv_u32("k", 2).zeros(16);
  expect_bad(r, {"duplicate key k"});
  r.header(0, 1).str("").u32(4).u32(1);
  expect_bad(r, {"empty key"});
  r.header(0, 1).kv_u32("general.alignment", 24).zeros(8);
  expect_bad(r, {"general.alignment 24 is not a power of two"});
  r.header(0, 1).str("general.alignment").u32(10).u64(32);
  expect_bad(r, {"general.alignment is a u64, expected u32"});
}

TEST(Gguf, TensorInfoErrors) {
  Raw r;
  const auto with = [&](const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                        uint64_t offset) -> Raw& {
    return r.header(1, 0).tensor(name, std::move(ne), type, offset).pad().zeros(64);
  };
  expect_bad(with("t", {8}, 10, 0), {"tensor t: unsupported tensor type Q2_K"});
  expect_bad(with("t", {8}, 99, 0), {"unsupported tensor type type 99"});
  expect_bad(with("t", {8}, 30, 0), {"unsupported tensor type BF16"});
  expect_bad(with("t", {1, 1, 1, 1, 1}, 0, 0), {"tensor t: 5 dimensions"});
  expect_bad(with("t", {}, 0, 0), {"tensor t: 0 dimensions"});
  expect_bad(with("t", {33}, 8, 0), {"tensor t: Q8_0 rows of 33", "not whole blocks of 32"});
  expect_bad(with("t", {128}, 14, 0), {"tensor t: Q6_K rows of 128", "not whole blocks of 256"});
  expect_bad(with("t", {256}, 14, 0), {"tensor t: bytes [0, 210)", "exceed"});
  expect_bad(with("t", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0), {"overflow"});
  expect_bad(with("t", {std::numeric_limits<uint64_t>::max()}, 0, 0), {"overflow"});
  expect_bad(with("t", {8}, 0, 16), {"offset 16 is not a multiple of the alignment 32"});
  expect_bad(with("t", {8}, 0, 64), {"tensor t: bytes [64, 96)", "exceed"});
  expect_bad(with("t", {1000}, 0, 0), {"exceed", "truncated"});
  expect_bad(with("t", {8}, 0, std::numeric_limits<uint64_t>::max() - 31), {"exceed"});
  expect_bad(with(std::string(64, 'n'), {8}, 0, 0), {"name of 64 bytes"});
  r.header(2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).pad().zeros(64);
  expect_bad(r, {"duplicate tensor t"});
  r.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(96);
  expect_bad(r, {"tensors a and b overlap"});
  r.header(1, 0).u64(uint64_t{1} << 40).zeros(40);
  expect_bad(r, {"truncated", "tensor info 0: name"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::io
