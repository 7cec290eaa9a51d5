// safetensors reader and writer: valid files of every shape the format allows, every
// malformed case the reader must reject (with an Error naming the file, the tensor and the
// problem), unaligned tensors, and the writer's round trip and atomic replacement.
#include "tinylm/io/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"

namespace tinylm::io {
namespace TINYLM_TEST_LOCAL {

static_assert(std::endian::native == std::endian::little,
              "the byte images below are little-endian");

const std::string kName = "case.safetensors";  // stands for the path in from_bytes errors

// ---- building byte images ------------------------------------------------------------------

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (const T& v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file image: the 8-byte length (of `header`, unless `declared_len` overrides it), the
// header text and the data section.
std::string file_image(const std::string& header, const std::string& data,
                       std::optional<uint64_t> declared_len = std::nullopt) {
  return le64(declared_len.value_or(header.size())) + header + data;
}

std::span<const std::byte> as_span(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

SafetensorsFile parse(const std::string& image) {
  return SafetensorsFile::from_bytes(as_span(image), kName);
}

// Assembles a header from tensors whose JSON fields can each be replaced or dropped, so a
// test can corrupt exactly one thing in an otherwise valid file.
class Builder {
 public:
  struct Tensor {
    std::string name;
    std::string dtype;    // JSON value, e.g. "\"F32\""; empty: field left out
    std::string shape;    // JSON value, e.g. "[2,3]"
    std::string offsets;  // JSON value, e.g. "[0,24]"
    std::string extra;    // extra "key":value pairs appended to the entry
  };

  // Appends a tensor whose offsets follow the previous tensor's and whose bytes are `bytes`.
  Builder& add(const std::string& name, const std::string& dtype, const std::string& shape,
               const std::string& bytes) {
    const size_t b = data.size();
    data += bytes;
    tensors.push_back({name, "\"" + dtype + "\"", shape,
                       "[" + std::to_string(b) + "," + std::to_string(data.size()) + "]", ""});
    return *this;
  }
  Tensor& last() { return tensors.back(); }

  std::string header() const {
    std::string h = "{";
    bool first = true;
    const auto sep = [&] {
      if (!first) h += ",";
      first = false;
    };
    if (!metadata.empty()) {
      sep();
      h += "\"__metadata__\":" + metadata;
    }
    for (const Tensor& t : tensors) {
      sep();
      h += "\"" + t.name + "\":{";
      std::string fields;
      const auto field = [&](const char* k, const std::string& v) {
        if (v.empty()) return;
        if (!fields.empty()) fields += ",";
        fields += std::string("\"") + k + "\":" + v;
      };
      field("dtype", t.dtype);
      field("shape", t.shape);
      field("data_offsets", t.offsets);
      if (!t.extra.empty()) fields += (fields.empty() ? "" : ",") + t.extra;
      h += fields + "}";
    }
    return h + "}" + std::string(padding, ' ');
  }
  std::string image() const { return file_image(header(), data); }

  std::vector<Tensor> tensors;
  std::string metadata;  // JSON value of __metadata__; empty: left out
  std::string data;
  size_t padding = 0;  // trailing spaces after the JSON object
};

// The reference file: a bit of every dtype the reader converts, plus the odd shapes.
Builder reference_builder() {
  Builder b;
  b.metadata = R"({"format":"pt","note":"h\u00e9llo"})";
  b.add("f32", "F32", "[2,2]", raw<float>({1.5f, -2.0f, 0.25f, 3.0e38f}));
  b.add("f16", "F16", "[6]", raw<uint16_t>({0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001, 0x7C00}));
  b.add("bf16", "BF16", "[1,3]", raw<uint16_t>({0x3F80, 0xC040, 0x4049}));
  b.add("f64", "F64", "[2]", raw<double>({3.141592653589793, -1e300}));
  b.add("i32", "I32", "[3]", raw<int32_t>({7, -8, 9}));
  b.add("scalar", "F32", "[]", raw<float>({7.0f}));
  b.add("empty", "F32", "[0,3]", "");
  return b;
}

// Expects parse(image) to throw a one-line Error naming the file and every phrase.
void expect_error(const std::string& image, std::initializer_list<std::string> phrases) {
  std::vector<std::string> all(phrases);
  all.push_back(kName);
  test::expect_error([&] { parse(image); }, all);
}

// A builder holding one valid F32 [2] tensor "w", for single-knob corruption.
Builder one_tensor() {
  Builder b;
  b.add("w", "F32", "[2]", raw<float>({1.0f, 2.0f}));
  return b;
}

// ---- valid files ------------------------------------------------------------------------

TEST(Safetensors, ParsesEveryDtypeAndShape) {
  const SafetensorsFile f = parse(reference_builder().image());
  EXPECT_EQ(f.path(), kName);
  ASSERT_EQ(f.entries().size(), 7u);
  const SafetensorsEntry* e = f.find("f32");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, "F32");
  EXPECT_EQ(e->shape, (Shape{2, 2}));
  EXPECT_EQ(e->begin, 0u);
  EXPECT_EQ(e->end, 16u);
  EXPECT_EQ(f.find("bf16")->shape, (Shape{1, 3}));
  EXPECT_EQ(f.find("i32")->dtype, "I32");
  EXPECT_EQ(f.find("scalar")->shape, Shape{});
  EXPECT_EQ(f.find("empty")->shape, (Shape{0, 3}));
  EXPECT_EQ(f.find("empty")->begin, f.find("empty")->end);
  EXPECT_EQ(f.find("nope"), nullptr);

  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "h\xc3\xa9llo"}};
  EXPECT_EQ(f.metadata(), meta);

  const auto i32 = f.bytes(*f.find("i32"));
  ASSERT_EQ(i32.size(), 12u);
  int32_t v[3];
  std::memcpy(v, i32.data(), 12);
  EXPECT_EQ(v[0], 7);
  EXPECT_EQ(v[1], -8);
  EXPECT_EQ(v[2], 9);
}

TEST(Safetensors, ConvertsFloatTypes) {
  const SafetensorsFile f = parse(reference_builder().image());
  EXPECT_EQ(f.read_f64("f32"),
            (std::vector<double>{1.5, -2.0, 0.25, static_cast<double>(3.0e38f)}));
  EXPECT_EQ(f.read_f32("f32", {2, 2}), (std::vector<float>{1.5f, -2.0f, 0.25f, 3.0e38f}));

  const std::vector<double> h = f.read_f64("f16");
  ASSERT_EQ(h.size(), 6u);
  EXPECT_EQ(h[0], 1.0);
  EXPECT_EQ(h[1], -2.0);
  EXPECT_EQ(h[2], 0.333251953125);
  EXPECT_EQ(h[3], 65504.0);
  EXPECT_EQ(h[4], std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(h[5]) && h[5] > 0);

  EXPECT_EQ(f.read_f32("bf16", {1, 3}), (std::vector<float>{1.0f, -3.0f, 3.140625f}));
  EXPECT_EQ(f.read_f64("f64"), (std::vector<double>{3.141592653589793, -1e300}));
  // F64 to f32 rounds; -1e300 overflows to -inf as a float conversion does.
  const std::vector<float> d = f.read_f32("f64");
  EXPECT_EQ(d[0], static_cast<float>(3.141592653589793));
  EXPECT_TRUE(std::isinf(d[1]) && d[1] < 0);

  EXPECT_EQ(f.read_f64("scalar", {}), std::vector<double>{7.0});
  EXPECT_TRUE(f.read_f32("empty", {0, 3}).empty());
}

// entries() keeps the header's order (a JSON parser with sorted objects would not).
TEST(Safetensors, EntriesComeInFileOrder) {
  Builder b;
  b.add("b", "U8", "[1]", "x");
  b.add("a", "U8", "[1]", "y");
  b.add("c", "U8", "[1]", "z");
  const SafetensorsFile f = parse(b.image());
  ASSERT_EQ(f.entries().size(), 3u);
  EXPECT_EQ(f.entries()[0].name, "b");
  EXPECT_EQ(f.entries()[1].name, "a");
  EXPECT_EQ(f.entries()[2].name, "c");
}

TEST(Safetensors, EmptyMetadataObjectAndEmptyHeader) {
  Builder b = one_tensor();
  b.metadata = "{}";
  const SafetensorsFile f = parse(b.image());
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_EQ(f.read_f32("w"), (std::vector<float>{1.0f, 2.0f}));

  const SafetensorsFile g = parse(file_image("{}", ""));
  EXPECT_TRUE(g.entries().empty());
  EXPECT_TRUE(g.metadata().empty());
}

TEST(Safetensors, MetadataOnlyFile) {
  Builder b;
  b.metadata = R"({"a":"1","b":""})";
  const SafetensorsFile f = parse(b.image());
  EXPECT_TRUE(f.entries().empty());
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"a", "1"}, {"b", ""}}));
}

TEST(Safetensors, HeaderPaddedWithSpaces) {
  for (size_t pad : {1u, 5u, 7u, 64u}) {
    Builder b = reference_builder();
    b.padding = pad;
    const SafetensorsFile f = parse(b.image());
    EXPECT_EQ(f.entries().size(), 7u);
    EXPECT_EQ(f.read_f64("f64"), (std::vector<double>{3.141592653589793, -1e300})) << pad;
  }
}

TEST(Safetensors, OffsetsNeedNotFollowHeaderOrder) {
  // The second tensor in the header holds the first bytes of the data section.
  Builder b;
  b.data = raw<float>({1.0f, 2.0f, 3.0f});
  b.tensors.push_back({"late", "\"F32\"", "[1]", "[8,12]", ""});
  b.tensors.push_back({"early", "\"F32\"", "[2]", "[0,8]", ""});
  const SafetensorsFile f = parse(b.image());
  EXPECT_EQ(f.read_f32("early"), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(f.read_f32("late"), (std::vector<float>{3.0f}));
}

TEST(Safetensors, ZeroSizeTensorsBetweenOthers) {
  Builder b;
  b.add("z0", "F32", "[0]", "");
  b.add("a", "F32", "[1]", raw<float>({1.0f}));
  b.add("z1", "BF16", "[4,0,2]", "");
  b.add("b", "F32", "[1]", raw<float>({2.0f}));
  b.add("z2", "U8", "[0]", "");
  const SafetensorsFile f = parse(b.image());
  EXPECT_EQ(f.entries().size(), 5u);
  EXPECT_EQ(f.read_f32("b"), std::vector<float>{2.0f});
  EXPECT_TRUE(f.read_f64("z1", {4, 0, 2}).empty());
}

TEST(Safetensors, EveryListedDtypeIsKnown) {
  const std::pair<const char*, size_t> sizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  Builder b;
  for (const auto& [name, size] : sizes) {
    EXPECT_EQ(safetensors_dtype_size(name), size) << name;
    b.add(std::string("t_") + name, name, "[3]", std::string(3 * size, '\x01'));
  }
  EXPECT_EQ(safetensors_dtype_size("f32"), 0u);
  EXPECT_EQ(safetensors_dtype_size("F128"), 0u);
  EXPECT_EQ(parse(b.image()).entries().size(), std::size(sizes));
}

// An F32 tensor after a 3-byte U8 tensor sits at an odd address, in memory and in a map.
Builder unaligned_builder() {
  Builder b;
  b.add("bytes", "U8", "[3]", "\x01\x02\x03");
  b.add("w", "F32", "[2]", raw<float>({-1.25f, 6.5f}));
  b.add("d", "F64", "[1]", raw<double>({0.1}));  // at data offset 11
  // Pad the header so the data section starts at a multiple of 8 bytes from the file start.
  b.padding = (8 - (8 + b.header().size()) % 8) % 8;
  return b;
}

TEST(Safetensors, ReadsUnalignedTensorFromBytes) {
  const SafetensorsFile f = parse(unaligned_builder().image());
  ASSERT_NE(reinterpret_cast<uintptr_t>(f.bytes(*f.find("w")).data()) % 4, 0u);
  EXPECT_EQ(f.read_f32("w", {2}), (std::vector<float>{-1.25f, 6.5f}));
  EXPECT_EQ(f.read_f64("w"), (std::vector<double>{-1.25, 6.5}));
  EXPECT_EQ(f.read_f64("d"), std::vector<double>{0.1});
}

TEST(Safetensors, ReadsUnalignedTensorFromMappedFile) {
  test::TempDir dir;
  const std::string path = dir.file("unaligned.safetensors");
  test::write_text(path, unaligned_builder().image());
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.path(), path);
  ASSERT_NE(reinterpret_cast<uintptr_t>(f.bytes(*f.find("w")).data()) % 4, 0u);
  EXPECT_EQ(f.read_f32("w"), (std::vector<float>{-1.25f, 6.5f}));
  EXPECT_EQ(f.read_f64("d", {1}), std::vector<double>{0.1});
}

TEST(Safetensors, NanAndInfinitySurvive) {
  Builder b;
  b.add("w", "F32", "[3]",
        raw<float>({std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -0.0f}));
  const std::vector<double> v = parse(b.image()).read_f64("w");
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isinf(v[1]));
  EXPECT_TRUE(v[2] == 0.0 && std::signbit(v[2]));
}

// ---- malformed files ----------------------------------------------------------------------

TEST(SafetensorsMalformed, FileShorterThanEightBytes) {
  for (size_t n = 0; n < 8; ++n) expect_error(std::string(n, '\0'), {"too short"});
}

TEST(SafetensorsMalformed, EveryTruncationIsRejected) {
  const std::string full = reference_builder().image();
  ASSERT_NO_THROW(parse(full));
  for (size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE("cut at " + std::to_string(n) + " of " + std::to_string(full.size()));
    expect_error(full.substr(0, n), {});
  }
  const std::string header = reference_builder().header();
  expect_error(full.substr(0, 7), {"too short"});
  expect_error(full.substr(0, 8), {"runs past the end of the file"});
  expect_error(full.substr(0, 8 + header.size() - 1), {"runs past the end of the file"});
  // The header intact, the data cut: the last tensor's range exceeds the data section.
  expect_error(full.substr(0, full.size() - 1), {"tensor", "exceed the data section"});
}

TEST(SafetensorsMalformed, HeaderLengthPastEndOfFile) {
  const std::string h = "{}";
  expect_error(file_image(h, "", 3), {"header length 3", "runs past the end of the file"});
  expect_error(file_image(h, "", 100'000'000), {"runs past the end"});
  expect_error(file_image(h, "", std::numeric_limits<uint64_t>::max()), {"header length"});
}

TEST(SafetensorsMalformed, HeaderLengthOverLimit) {
  expect_error(file_image("{}", "", 100'000'001), {"100000001", "exceeds the 100 MB limit"});
  expect_error(file_image("{}", "", uint64_t{1} << 63), {"exceeds the 100 MB limit"});
}

TEST(SafetensorsMalformed, HeaderTooShort) {
  expect_error(file_image("", ""), {"header too short"});
  expect_error(file_image("{", ""), {"header too short"});
}

TEST(SafetensorsMalformed, HeaderNotStartingWithBrace) {
  expect_error(file_image(" {}", ""), {"does not start with '{'"});
  expect_error(file_image("[1,2]", ""), {"does not start with '{'"});
  expect_error(file_image("\"{}\"", ""), {"does not start with '{'"});
  expect_error(file_image(std::string("\0{}", 3), ""), {"does not start with '{'"});
}

TEST(SafetensorsMalformed, InvalidJson) {
  expect_error(file_image("{\"w\":", ""), {"header", "invalid JSON"});
  expect_error(file_image("{} {}", ""), {"invalid JSON"});
  expect_error(file_image("{'a':1}", ""), {"invalid JSON"});
  expect_error(file_image("{\"\xff\":{}}", ""), {"invalid JSON"});  // invalid UTF-8
}

// nlohmann's parser takes a raw NUL byte for the end of its input, so without a check a
// header whose JSON object is followed by NUL and anything at all (here another object)
// would parse as if the header ended there. Padding may only be spaces, and raw NUL is
// never valid JSON.
TEST(SafetensorsMalformed, NulByteInHeader) {
  expect_error(file_image(std::string("{}\0", 3), ""),
               {"header", "invalid JSON", "NUL byte at offset 2"});
  Builder b = one_tensor();
  const std::string h = b.header() + std::string("\0", 1) + R"({"x":{"dtype":"F32"}})";
  expect_error(file_image(h, b.data), {"header", "NUL byte"});
  expect_error(file_image(std::string("{\0}", 3), ""), {"NUL byte at offset 1"});
}

TEST(SafetensorsMalformed, HeaderNotAnObject) {
  // Every header that starts with '{' and parses is an object, so a non-object header is
  // caught by the first-byte rule; an array or a string must never get further.
  expect_error(file_image("[]", ""), {"does not start with '{'"});
  expect_error(file_image("12", ""), {"does not start with '{'"});
}

TEST(SafetensorsMalformed, DuplicateTensorName) {
  Builder b = one_tensor();
  b.add("x", "F32", "[1]", raw<float>({3.0f}));
  b.last().name = "w";
  expect_error(b.image(), {"duplicate key 'w'"});
  // Also within an entry, and within the metadata.
  Builder c = one_tensor();
  c.last().extra = R"("dtype":"F32")";
  expect_error(c.image(), {"duplicate key 'dtype'"});
  Builder m = one_tensor();
  m.metadata = R"({"k":"1","k":"2"})";
  expect_error(m.image(), {"duplicate key 'k'"});
}

TEST(SafetensorsMalformed, UnknownDtype) {
  for (const char* dtype : {"F128", "f32", "", "F32 ", "float32"}) {
    Builder b = one_tensor();
    b.last().dtype = std::string("\"") + dtype + "\"";
    expect_error(b.image(), {"tensor w", "unknown dtype '" + std::string(dtype) + "'"});
  }
  Builder b = one_tensor();
  b.last().dtype = "4";
  expect_error(b.image(), {"tensor w", "missing or non-string dtype"});
}

TEST(SafetensorsMalformed, UnknownDtypeOfZeroSizeTensorIsStillAnError) {
  Builder b = one_tensor();
  b.add("z", "F128", "[0]", "");
  expect_error(b.image(), {"tensor z", "unknown dtype 'F128'"});
}

TEST(SafetensorsMalformed, MissingFields) {
  Builder b = one_tensor();
  b.last().dtype.clear();
  expect_error(b.image(), {"tensor w", "missing or non-string dtype"});
  b = one_tensor();
  b.last().shape.clear();
  expect_error(b.image(), {"tensor w", "missing or invalid shape"});
  b = one_tensor();
  b.last().offsets.clear();
  expect_error(b.image(), {"tensor w", "data_offsets must be two non-negative integers"});
  b = one_tensor();
  b.last().shape = "2";
  expect_error(b.image(), {"tensor w", "missing or invalid shape"});
}

TEST(SafetensorsMalformed, EntryNotAnObject) {
  expect_error(file_image(R"({"w":[1,2]})", ""), {"tensor w", "entry is not an object"});
  expect_error(file_image(R"({"w":null})", ""), {"tensor w", "entry is not an object"});
}

TEST(SafetensorsMalformed, BadShapeEntries) {
  for (const char* shape : {"[-2]", "[2.0]", "[1.5]", "[\"2\"]", "[null]", "[[2]]", "[true]",
                            "[-0]", "[18446744073709551616]", "[2e0]"}) {
    Builder b = one_tensor();
    b.last().shape = shape;
    SCOPED_TRACE(shape);
    expect_error(b.image(), {"tensor w", "shape entries must be non-negative integers"});
  }
}

TEST(SafetensorsMalformed, BadDataOffsets) {
  for (const char* offs :
       {"[0]", "[0,8,8]", "[]", "[-1,8]", "[0,8.0]", "[\"0\",8]", "{}", "8", "null"}) {
    Builder b = one_tensor();
    b.last().offsets = offs;
    SCOPED_TRACE(offs);
    expect_error(b.image(), {"tensor w", "data_offsets must be two non-negative integers"});
  }
  Builder b = one_tensor();
  b.last().offsets = "[8,0]";
  expect_error(b.image(), {"tensor w", "data_offsets begin 8 is after end 0"});
}

TEST(SafetensorsMalformed, SizeShapeMismatch) {
  Builder b = one_tensor();
  b.last().shape = "[3]";
  expect_error(b.image(), {"tensor w", "span 8 bytes", "[3]", "needs 12"});
  b = one_tensor();
  b.last().dtype = "\"F64\"";
  expect_error(b.image(), {"tensor w", "needs 16"});
  b = one_tensor();
  b.last().shape = "[]";
  expect_error(b.image(), {"tensor w", "needs 4"});
  b = one_tensor();
  b.last().shape = "[0]";
  expect_error(b.image(), {"tensor w", "needs 0"});
}

TEST(SafetensorsMalformed, GapBetweenTensors) {
  Builder b;
  b.data = raw<float>({1.0f, 2.0f, 3.0f});
  b.tensors.push_back({"a", "\"F32\"", "[1]", "[0,4]", ""});
  b.tensors.push_back({"b", "\"F32\"", "[1]", "[8,12]", ""});
  expect_error(b.image(), {"tensor b", "gap in the data section before offset 8"});
  // A gap at the very start.
  Builder c;
  c.data = raw<float>({1.0f, 2.0f});
  c.tensors.push_back({"a", "\"F32\"", "[1]", "[4,8]", ""});
  expect_error(c.image(), {"tensor a", "gap"});
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  Builder b;
  b.data = raw<float>({1.0f, 2.0f, 3.0f});
  b.tensors.push_back({"a", "\"F32\"", "[2]", "[0,8]", ""});
  b.tensors.push_back({"b", "\"F32\"", "[2]", "[4,12]", ""});
  expect_error(b.image(), {"tensor b", "overlaps the previous tensor"});
  // Two tensors on the same bytes.
  Builder c;
  c.data = raw<float>({1.0f});
  c.tensors.push_back({"a", "\"F32\"", "[1]", "[0,4]", ""});
  c.tensors.push_back({"b", "\"F32\"", "[1]", "[0,4]", ""});
  expect_error(c.image(), {"overlaps"});
}

TEST(SafetensorsMalformed, TrailingBytesAfterLastTensor) {
  Builder b = one_tensor();
  b.data += "xyz";
  expect_error(b.image(), {"3 bytes of data after the last tensor"});
  // A metadata-only file, or an empty header, followed by data.
  expect_error(file_image("{}", "\x01"), {"1 bytes of data after the last tensor"});
}

TEST(SafetensorsMalformed, OffsetsPastDataSection) {
  Builder b = one_tensor();
  b.last().offsets = "[4,12]";
  expect_error(b.image(), {"tensor w", "[4, 12) exceed the data section (8 bytes)"});
  b = one_tensor();
  b.last().offsets = "[18446744073709551608,18446744073709551615]";
  expect_error(b.image(), {"tensor w", "exceed the data section"});
}

TEST(SafetensorsMalformed, MetadataValues) {
  for (const char* meta :
       {R"({"k":1})", R"({"k":null})", R"({"k":["a"]})", R"({"k":{}})", R"({"k":true})"}) {
    Builder b = one_tensor();
    b.metadata = meta;
    SCOPED_TRACE(meta);
    expect_error(b.image(), {"__metadata__ value of 'k' is not a string"});
  }
  for (const char* meta : {"[]", "\"x\"", "null", "3"}) {
    Builder b = one_tensor();
    b.metadata = meta;
    expect_error(b.image(), {"__metadata__ is not an object"});
  }
}

TEST(SafetensorsMalformed, ShapeOverflow) {
  const std::string p62 = std::to_string(uint64_t{1} << 62);
  Builder b = one_tensor();
  b.last().shape = "[" + p62 + "," + p62 + "]";
  expect_error(b.image(), {"tensor w", "shape overflows"});
  // The element count fits 64 bits, the byte size does not.
  b = one_tensor();
  b.last().shape = "[" + p62 + ",2]";
  expect_error(b.image(), {"tensor w", "byte size overflows"});
  // A dimension past int64.
  b = one_tensor();
  b.last().shape = "[9223372036854775808]";
  expect_error(b.image(), {"tensor w", "dimension too large"});
  // Huge but fitting: the size check, not an allocation, rejects it.
  b = one_tensor();
  b.last().shape = "[" + std::to_string(uint64_t{1} << 40) + "]";
  expect_error(b.image(), {"tensor w", "needs 4398046511104"});
}

TEST(SafetensorsMalformed, UnexpectedField) {
  Builder b = one_tensor();
  b.last().extra = R"("offsets":[0,8])";
  expect_error(b.image(), {"tensor w", "unexpected field 'offsets'"});
}

// ---- reading tensors ----------------------------------------------------------------------

TEST(Safetensors, ReadErrorsNameTheTensor) {
  const SafetensorsFile f = parse(reference_builder().image());
  test::expect_error([&] { f.read_f32("nope"); }, {kName, "missing tensor nope"});
  test::expect_error([&] { f.read_f64("nope", {1}); }, {kName, "missing tensor nope"});
  test::expect_error([&] { f.read_f32("f32", {4}); },
                     {kName, "tensor f32", "shape [2, 2], expected [4]"});
  test::expect_error([&] { f.read_f32("scalar", {1}); }, {kName, "tensor scalar", "expected [1]"});
  test::expect_error([&] { f.read_f64("i32"); },
                     {kName, "tensor i32", "dtype I32", "not a floating-point"});

  Builder b = one_tensor();
  b.add("u8", "U8", "[2]", "\x01\x02");
  const SafetensorsFile g = parse(b.image());
  test::expect_error([&] { g.read_f32("u8"); }, {kName, "tensor u8", "dtype U8"});
  test::expect_error([&] { g.read_f32("u8", {2}); }, {kName, "tensor u8", "dtype U8"});
}

TEST(Safetensors, OpenErrorsNameThePath) {
  test::TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  test::expect_error([&] { SafetensorsFile::open(missing); }, {missing, "cannot open"});
  test::expect_error([&] { SafetensorsFile::open(dir.path().string()); },
                     {dir.path().string(), "not a regular file"});
  const std::string empty = dir.file("empty.safetensors");
  test::write_text(empty, "");
  test::expect_error([&] { SafetensorsFile::open(empty); }, {empty, "too short", "(0 bytes)"});
  const std::string cut = dir.file("cut.safetensors");
  const std::string image = reference_builder().image();
  test::write_text(cut, image.substr(0, image.size() - 5));
  test::expect_error([&] { SafetensorsFile::open(cut); }, {cut, "exceed the data section"});
}

TEST(Safetensors, FileStaysReadableAfterCopy) {
  // Copies share the mapping; it must outlive the original object.
  test::TempDir dir;
  const std::string path = dir.file("a.safetensors");
  test::write_text(path, reference_builder().image());
  std::optional<SafetensorsFile> copy;
  {
    const SafetensorsFile f = SafetensorsFile::open(path);
    copy = f;
  }
  EXPECT_EQ(copy->read_f64("f64"), (std::vector<double>{3.141592653589793, -1e300}));
}

// ---- writing ---------------------------------------------------------------------------------

struct OwnedTensor {
  std::string name, dtype;
  Shape shape;
  std::string bytes;
};

std::vector<SafetensorsWriteEntry> write_entries(const std::vector<OwnedTensor>& ts) {
  std::vector<SafetensorsWriteEntry> out;
  for (const OwnedTensor& t : ts) out.push_back({t.name, t.dtype, t.shape, as_span(t.bytes)});
  return out;
}

std::vector<OwnedTensor> sample_tensors() {
  return {
      {"embed.weight", "F32", {2, 3}, raw<float>({1, 2, 3, 4, 5, 6})},
      {"odd", "U8", {3}, "\x07\x08\x09"},
      {"half", "BF16", {2}, raw<uint16_t>({0x3F80, 0x4000})},
      {"big", "I64", {1}, raw<int64_t>({-5})},
      {"scalar", "F64", {}, raw<double>({2.5})},
      {"none", "F16", {0, 4}, ""},
      {"double", "F64", {2}, raw<double>({1e-310, -0.0})},
  };
}

std::string read_file(const std::string& path) { return test::read_text(path); }

std::vector<std::string> dir_listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SafetensorsWrite, RoundTrips) {
  test::TempDir dir;
  const std::string path = dir.file("out.safetensors");
  const std::vector<OwnedTensor> ts = sample_tensors();
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"empty", ""}, {"utf8", "\xc3\xa9\xe2\x82\xac"}, {"quote", "a\"b\\c\nd"}};
  write_safetensors(path, write_entries(ts), meta);

  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata(), meta);
  ASSERT_EQ(f.entries().size(), ts.size());
  for (const OwnedTensor& t : ts) {
    SCOPED_TRACE(t.name);
    const SafetensorsEntry* e = f.find(t.name);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->dtype, t.dtype);
    EXPECT_EQ(e->shape, t.shape);
    const auto b = f.bytes(*e);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), t.bytes);
  }
  // Written in the given order: offsets increase along the list.
  size_t pos = 0;
  for (const OwnedTensor& t : ts) {
    EXPECT_EQ(f.find(t.name)->begin, pos) << t.name;
    pos += t.bytes.size();
  }

  // The data section starts 8-byte aligned, padded with spaces.
  const std::string file = read_file(path);
  ASSERT_GE(file.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(file[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(file[8], '{');
  EXPECT_EQ(file.size(), 8 + n + pos);
  EXPECT_EQ(dir_listing(dir.path()), std::vector<std::string>{"out.safetensors"});
}

TEST(SafetensorsWrite, EmptyMetadataAndNoTensors) {
  test::TempDir dir;
  const std::string path = dir.file("e.safetensors");
  write_safetensors(path, {}, {});
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_TRUE(f.entries().empty());
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_EQ(read_file(path).size() % 8, 0u);

  write_safetensors(path, {}, {{"only", "metadata"}});
  const SafetensorsFile g = SafetensorsFile::open(path);
  EXPECT_TRUE(g.entries().empty());
  EXPECT_EQ(g.metadata().at("only"), "metadata");
}

TEST(SafetensorsWrite, ReplacesExistingFileAtomically) {
  test::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const std::vector<OwnedTensor> first = {{"w", "F32", {2}, raw<float>({1, 2})}};
  const std::vector<OwnedTensor> second = {{"v", "F64", {3}, raw<double>({7, 8, 9})}};
  write_safetensors(path, write_entries(first), {{"gen", "1"}});
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  // A reader holding the old file keeps seeing it whole while it is replaced.
  const SafetensorsFile old = SafetensorsFile::open(path);
  write_safetensors(path, write_entries(second), {{"gen", "2"}});
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino) << "the file was rewritten in place, not renamed over";
  EXPECT_EQ(old.read_f32("w"), (std::vector<float>{1, 2}));
  EXPECT_EQ(old.metadata().at("gen"), "1");

  const SafetensorsFile now = SafetensorsFile::open(path);
  EXPECT_EQ(now.metadata().at("gen"), "2");
  EXPECT_EQ(now.find("w"), nullptr);
  EXPECT_EQ(now.read_f64("v", {3}), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(dir_listing(dir.path()), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsWrite, FailedWriteLeavesExistingFile) {
  test::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  write_safetensors(path, write_entries({{"w", "F32", {2}, raw<float>({1, 2})}}), {});
  const std::string before = read_file(path);

  const std::vector<OwnedTensor> dup = {{"a", "F32", {1}, raw<float>({1})},
                                        {"a", "F32", {1}, raw<float>({2})}};
  test::expect_error([&] { write_safetensors(path, write_entries(dup), {}); },
                     {path, "duplicate tensor name a"});
  const std::vector<OwnedTensor> mismatch = {{"m", "F32", {3}, raw<float>({1, 2})}};
  test::expect_error([&] { write_safetensors(path, write_entries(mismatch), {}); },
                     {path, "tensor m", "data size does not match shape [3]"});
  const std::vector<OwnedTensor> unknown = {{"u", "F128", {1}, std::string(16, '\0')}};
  test::expect_error([&] { write_safetensors(path, write_entries(unknown), {}); },
                     {path, "tensor u", "unknown dtype F128"});
  const std::vector<OwnedTensor> negative = {{"n", "F32", {-1}, ""}};
  EXPECT_THROW(write_safetensors(path, write_entries(negative), {}), Error);

  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(dir_listing(dir.path()), std::vector<std::string>{"model.safetensors"});
}

// A tensor named "__metadata__" would be written as a file the reader rejects (its fields
// read as non-string metadata values), with or without metadata.
TEST(SafetensorsWrite, RejectsTensorNamedMetadata) {
  test::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const std::vector<OwnedTensor> ts = {{"__metadata__", "F64", {1}, raw<double>({1.0})}};
  test::expect_error(
      [&] {
        write_safetensors(path, write_entries(ts), {{"k", "v"}});
      },
      {path, "__metadata__"});
  test::expect_error([&] { write_safetensors(path, write_entries(ts), {}); },
                     {path, "__metadata__"});
  EXPECT_TRUE(dir_listing(dir.path()).empty());
}

TEST(SafetensorsWrite, NonexistentDirectory) {
  test::TempDir dir;
  const std::string path = dir.file("no/such/dir/out.safetensors");
  test::expect_error([&] { write_safetensors(path, write_entries(sample_tensors()), {}); },
                     {path, "cannot write"});
  EXPECT_TRUE(dir_listing(dir.path()).empty());
}

// read_into converts to the storage dtype with round-to-nearest-even and copies equal dtypes.
TEST(SafetensorsReadInto, ConvertsAndCopies) {
  std::vector<float> v = {1.0f, -2.5f, 1.00390625f, 3.0e-8f, 65504.0f, 1e6f, -0.0f};
  // 10 MB: spans conversion chunks and several page drops.
  for (int i = 0; i < 2'500'000; ++i) v.push_back(static_cast<float>(i % 5000) * 0.37f - 900.0f);
  std::vector<uint16_t> bf(v.size());
  for (size_t i = 0; i < v.size(); ++i) bf[i] = float_to_bf16(v[i]);
  test::TempDir dir;
  const std::string path = dir.file("t.safetensors");
  const SafetensorsWriteEntry entries[] = {
      {"f", "F32", {static_cast<int64_t>(v.size())}, std::as_bytes(std::span(v))},
      {"b", "BF16", {static_cast<int64_t>(bf.size())}, std::as_bytes(std::span(bf))}};
  write_safetensors(path, entries, {});
  const SafetensorsFile f = SafetensorsFile::open(path);
  std::vector<uint16_t> out(v.size());
  f.read_into("f", DType::bf16, out.data(), out.size());
  EXPECT_EQ(out, bf);
  f.read_into("f", DType::f16, out.data(), out.size());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], float_to_f16(v[i])) << i;
  f.read_into("b", DType::bf16, out.data(), out.size());
  EXPECT_EQ(out, bf);
  std::vector<float> back(v.size());
  f.read_into("b", DType::f32, back.data(), back.size());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(back[i], bf16_to_float(bf[i])) << i;
  // Dropping the source pages while reading changes nothing read, then or later.
  f.read_into("f", DType::bf16, out.data(), out.size(), {}, SafetensorsFile::DropPages::Yes);
  EXPECT_EQ(out, bf);
  f.read_into("f", DType::f32, back.data(), back.size(), {}, SafetensorsFile::DropPages::Yes);
  EXPECT_EQ(back, v);
  f.read_into("f", DType::f32, back.data(), back.size());
  EXPECT_EQ(back, v);
  EXPECT_THROW(f.read_into("f", DType::f32, back.data(), back.size() - 1), Error);
  EXPECT_THROW(f.read_into("f", DType::i32, back.data(), back.size()), Error);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::io
