// EVL0 EvermindLM checkpoints: tinylm reads and writes byte for byte what an independent
// Python writer produces (tools/gen_evl_fixtures.py: struct + zlib); f32 round trips bit for
// bit, f16 rounds to nearest even; every single-byte corruption and every truncation is an
// Error naming the file.
#include "tinylm/checkpoints/evl_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "evl_test_util.h"
#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/text_file.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using checkpoints::EvlCheckpoint;
using checkpoints::EvlPrecision;
using test::bits_of;
using test::expect_error;
using test::file_bytes;
using test::floats_from_bits;

void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  test::write_text(path, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

evermind::Config tiny_config() {
  const nlohmann::json& c = test::evl_tiny()["config"];
  evermind::Config config;
  config.vocab_size = c["vocab_size"];
  config.d_model = c["d_model"];
  config.n_layers = c["n_layers"];
  config.conv_kernel = c["conv_kernel"];
  config.hidden_dim = c["hidden_dim"];
  config.n_experts = c["n_experts"];
  config.top_k = c["top_k"];
  return config;
}

// A configuration and parameters holding every kind of f32 a checkpoint must keep exactly.
evermind::Config small_config() {
  evermind::Config c;
  c.vocab_size = 11;
  c.d_model = 8;
  c.n_layers = 2;
  c.conv_kernel = 3;
  c.hidden_dim = 16;
  c.n_experts = 3;
  c.top_k = 2;
  c.seed = 77;
  return c;
}

std::vector<float> awkward_params(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> p(n);
  for (float& x : p) x = bits_float(static_cast<uint32_t>(rng()));  // any bit pattern at all
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity(),
                            bits_float(0x7fc00123u),
                            bits_float(0xff800001u) /* signalling NaN */};
  for (size_t i = 0; i < std::size(specials) && i < n; ++i) p[i] = specials[i];
  return p;
}

TEST(EvlCrc32, MatchesTheStandardCheckValueAndChains) {
  const std::string s = "123456789";
  const auto all = std::as_bytes(std::span<const char>(s));
  EXPECT_EQ(io::crc32(all), 0xcbf43926u);  // the CRC-32/ISO-HDLC check value
  EXPECT_EQ(io::crc32(all.subspan(4), io::crc32(all.first(4))), 0xcbf43926u);
  EXPECT_EQ(io::crc32({}), 0u);
  EXPECT_EQ(io::crc32({}, 0x12345678u), 0x12345678u);
}

TEST(EvlCheckpoint, ReadsThePythonWrittenF32File) {
  const EvlCheckpoint ck = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  const evermind::Config want = tiny_config();
  EXPECT_EQ(checkpoints::evl_config_diff(ck.config, want, "want"), "");
  EXPECT_EQ(ck.config.seed, 0u);
  EXPECT_EQ(ck.precision, EvlPrecision::f32);
  EXPECT_EQ(ck.crc, test::evl_tiny()["crc_f32"].get<uint32_t>());
  EXPECT_EQ(ck.params.size(), evermind::param_layout(want).size());
  EXPECT_EQ(bits_of(ck.params), test::evl_tiny()["base_bits"].get<std::vector<uint32_t>>());
}

TEST(EvlCheckpoint, WritesTheSameBytesAsThePythonWriter) {
  const std::vector<float> base = floats_from_bits(test::evl_tiny()["base_bits"]);
  EXPECT_EQ(checkpoints::encode_evl(tiny_config(), base, EvlPrecision::f32),
            file_bytes(test::evl_fixture("tiny_f32.evl")));
  EXPECT_EQ(checkpoints::encode_evl(tiny_config(), base, EvlPrecision::f16),
            file_bytes(test::evl_fixture("tiny_f16.evl")));

  test::TempDir dir;
  const std::string path = dir.file("m.evl");
  EXPECT_EQ(checkpoints::save_evl(path, tiny_config(), base),
            test::evl_tiny()["crc_f32"].get<uint32_t>());
  EXPECT_EQ(file_bytes(path), file_bytes(test::evl_fixture("tiny_f32.evl")));
  EXPECT_EQ(checkpoints::save_evl(path, tiny_config(), base, EvlPrecision::f16),
            test::evl_tiny()["crc_f16"].get<uint32_t>());
  EXPECT_EQ(file_bytes(path), file_bytes(test::evl_fixture("tiny_f16.evl")));
  EXPECT_EQ(checkpoints::evl_file_bytes(tiny_config(), EvlPrecision::f32),
            file_bytes(test::evl_fixture("tiny_f32.evl")).size());
  EXPECT_EQ(checkpoints::evl_file_bytes(tiny_config(), EvlPrecision::f16),
            file_bytes(test::evl_fixture("tiny_f16.evl")).size());
}

TEST(EvlCheckpoint, F16IsRoundToNearestEvenOfEachValue) {
  const std::vector<float> base = floats_from_bits(test::evl_tiny()["base_bits"]);
  const auto python_f16 = test::evl_tiny()["base_f16"].get<std::vector<uint16_t>>();
  const EvlCheckpoint ck = checkpoints::load_evl(test::evl_fixture("tiny_f16.evl"));
  EXPECT_EQ(ck.precision, EvlPrecision::f16);
  EXPECT_EQ(ck.crc, test::evl_tiny()["crc_f16"].get<uint32_t>());
  EXPECT_EQ(bits_of(ck.params),
            test::evl_tiny()["base_f16_widened_bits"].get<std::vector<uint32_t>>());
  for (size_t i = 0; i < base.size(); ++i) {
    // Python's struct 'e' (round half to even) and ours agree value by value...
    EXPECT_EQ(float_to_f16(base[i]), python_f16[i]) << "param " << i;
    const float x = base[i], y = ck.params[i];
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(y));
      continue;
    }
    // ...and the result is within half an fp16 ulp (or overflowed past 65504 to infinity).
    if (std::fabs(x) >= 65520.0f) {
      EXPECT_EQ(y, std::copysign(std::numeric_limits<float>::infinity(), x)) << x;
    } else if (std::isfinite(x)) {
      const float ulp = std::fabs(x) < 0x1p-14f ? 0x1p-24f : std::ldexp(1.0f, std::ilogb(x) - 10);
      EXPECT_LE(std::fabs(y - x), ulp / 2) << "param " << i << ": " << x << " -> " << y;
      EXPECT_EQ(std::signbit(y), std::signbit(x));
    } else {
      EXPECT_EQ(y, x);
    }
  }
}

TEST(EvlCheckpoint, F32RoundTripsEveryBitPattern) {
  const evermind::Config c = small_config();
  const std::vector<float> p = awkward_params(evermind::param_layout(c).size(), 5);
  test::TempDir dir;
  const std::string path = dir.file("m.evl");
  const uint32_t crc = checkpoints::save_evl(path, c, p);
  const EvlCheckpoint ck = checkpoints::load_evl(path, c);
  EXPECT_EQ(ck.crc, crc);
  EXPECT_EQ(ck.precision, EvlPrecision::f32);
  EXPECT_EQ(bits_of(ck.params), bits_of(p));
  EXPECT_EQ(ck.config.seed, 0u);  // not stored
  EXPECT_EQ(std::filesystem::file_size(path), checkpoints::evl_file_bytes(c, EvlPrecision::f32));
  // And saving what was loaded gives the same file.
  EXPECT_EQ(checkpoints::encode_evl(ck.config, ck.params), file_bytes(path));
}

TEST(EvlCheckpoint, F16RoundTripsThroughItsOwnRounding) {
  const evermind::Config c = small_config();
  std::vector<float> p(evermind::param_layout(c).size());
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& x : p) x = normal(rng);
  test::TempDir dir;
  const std::string path = dir.file("m.evl");
  checkpoints::save_evl(path, c, p, EvlPrecision::f16);
  EXPECT_EQ(std::filesystem::file_size(path), checkpoints::evl_file_bytes(c, EvlPrecision::f16));
  const EvlCheckpoint ck = checkpoints::load_evl(path, c);
  ASSERT_EQ(ck.params.size(), p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    ASSERT_EQ(float_bits(ck.params[i]), float_bits(f16_to_float(float_to_f16(p[i])))) << i;
    ASSERT_LE(std::fabs(ck.params[i] - p[i]), std::fabs(p[i]) * 0x1p-11f + 0x1p-25f) << i;
  }
  // fp16 values survive a second trip unchanged.
  EXPECT_EQ(checkpoints::encode_evl(c, ck.params, EvlPrecision::f16), file_bytes(path));
}

TEST(EvlCheckpoint, EverySingleByteCorruptionIsDetected) {
  for (const char* name : {"tiny_f32.evl", "tiny_f16.evl"}) {
    const std::vector<std::byte> good = file_bytes(test::evl_fixture(name));
    ASSERT_NO_THROW(checkpoints::decode_evl(good, name));
    size_t undetected = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      std::vector<std::byte> bad = good;
      for (unsigned x = 1; x < 256; ++x) {
        bad[i] = good[i] ^ static_cast<std::byte>(x);
        try {
          checkpoints::decode_evl(bad, name);
          ++undetected;
          ADD_FAILURE() << name << ": byte " << i << " ^ " << x << " not detected";
        } catch (const Error& e) {
          ASSERT_EQ(std::string(e.what()).rfind(std::string(name) + ": ", 0), 0u) << e.what();
        }
      }
    }
    EXPECT_EQ(undetected, 0u) << name;
  }
}

TEST(EvlCheckpoint, EveryTruncationIsDetected) {
  test::TempDir dir;
  for (const char* name : {"tiny_f32.evl", "tiny_f16.evl"}) {
    const std::vector<std::byte> good = file_bytes(test::evl_fixture(name));
    const std::string path = dir.file(name);
    for (size_t n = 0; n < good.size(); ++n) {
      const std::span<const std::byte> cut = std::span<const std::byte>(good).first(n);
      EXPECT_THROW(checkpoints::decode_evl(cut, name), Error) << name << " cut to " << n;
      write_bytes(path, cut);
      expect_error([&] { checkpoints::load_evl(path); }, {path + ": "});
      expect_error([&] { checkpoints::read_evl_header(path); }, {path + ": "});
    }
    // A byte too many is as wrong as one too few.
    std::vector<std::byte> longer = good;
    longer.push_back(std::byte{0});
    EXPECT_THROW(checkpoints::decode_evl(longer, name), Error);
  }
}

TEST(EvlCheckpoint, ErrorsSayWhatIsWrong) {
  const std::vector<std::byte> good = file_bytes(test::evl_fixture("tiny_f32.evl"));
  // Rewrites a header field and re-seals the file, so the check under test is the one to fire.
  const auto sealed = [&](size_t at, uint32_t value) {
    std::vector<std::byte> b(good.begin(), good.end() - checkpoints::kEvlTrailerBytes);
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xffu);
    checkpoints::append_evl_trailer(b);
    return b;
  };
  expect_error([&] { checkpoints::decode_evl(sealed(0, 0x45564c31), "m.evl"); },
               {"m.evl: not an EVL0 checkpoint (magic 0x45564c31"});
  expect_error([&] { checkpoints::decode_evl(sealed(4, 3), "m.evl"); },
               {"m.evl: unsupported EVL0 version 3"});
  expect_error([&] { checkpoints::decode_evl(sealed(4, 0), "m.evl"); },
               {"unsupported EVL0 version 0"});
  expect_error([&] { checkpoints::decode_evl(sealed(32, 3), "m.evl"); },
               {"m.evl: invalid configuration in header", "top_k"});
  expect_error([&] { checkpoints::decode_evl(sealed(8, 0), "m.evl"); },
               {"m.evl: invalid configuration", "vocab_size"});
  expect_error([&] { checkpoints::decode_evl(sealed(8, 6), "m.evl"); },
               {"m.evl: 796 bytes", "is 812 bytes", "truncated"});
  expect_error([&] { checkpoints::decode_evl(sealed(8, 4), "m.evl"); },
               {"is 780 bytes", "trailing bytes"});
  // Every shape field at its maximum: refused by the configuration's ceilings
  // (docs/limits.md) before any size is computed from it.
  std::vector<std::byte> huge(good.begin(), good.end() - checkpoints::kEvlTrailerBytes);
  for (size_t at = 8; at < 32; ++at) huge[at] = std::byte{0xff};
  checkpoints::append_evl_trailer(huge);
  expect_error([&] { checkpoints::decode_evl(huge, "m.evl"); },
               {"m.evl: invalid configuration in header", "implausibly large"});

  std::vector<std::byte> flipped = good;
  flipped[100] ^= std::byte{1};
  expect_error([&] { checkpoints::decode_evl(flipped, "m.evl"); },
               {"m.evl: CRC-32 mismatch", "corrupt"});
  expect_error(
      [&] { checkpoints::decode_evl(std::span<const std::byte>(good).first(700), "m.evl"); },
      {"m.evl: no CRC trailer"});
  expect_error(
      [&] { checkpoints::decode_evl(std::span<const std::byte>(good).first(40), "m.evl"); },
      {"m.evl: 40 bytes is shorter than an EVL0 header"});
  const std::string text = "{\"not\": \"a checkpoint\"}";
  expect_error(
      [&] { checkpoints::decode_evl(std::as_bytes(std::span<const char>(text)), "x.json"); },
      {"x.json: not an EVL0 checkpoint"});
  expect_error([&] { checkpoints::load_evl("/nonexistent/m.evl"); },
               {"/nonexistent/m.evl: cannot open"});
}

TEST(EvlCheckpoint, ConfigurationMismatchNamesEveryField) {
  evermind::Config other = tiny_config();
  other.d_model = 8;
  other.top_k = 2;
  other.seed = 123;  // not stored, never compared
  expect_error([&] { checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"), other); },
               {"tiny_f32.evl: checkpoint does not match the model: d_model 4 (model 8), top_k 1 "
                "(model 2)"});
  evermind::Config same = tiny_config();
  same.seed = 99;
  EXPECT_NO_THROW(checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"), same));
}

TEST(EvlCheckpoint, HeaderOnlyReadGivesTheConfiguration) {
  const checkpoints::EvlHeader h = checkpoints::read_evl_header(test::evl_fixture("tiny_f16.evl"));
  EXPECT_EQ(checkpoints::evl_config_diff(h.config, tiny_config(), "want"), "");
  EXPECT_EQ(h.precision, EvlPrecision::f16);
  EXPECT_EQ(h.file_bytes, file_bytes(test::evl_fixture("tiny_f16.evl")).size());
  test::TempDir dir;
  expect_error([&] { checkpoints::read_evl_header(dir.path().string()); }, {"not a regular file"});
}

TEST(EvlCheckpoint, WriterRejectsBadInputAndLeavesTheOldFile) {
  test::TempDir dir;
  const std::string path = dir.file("m.evl");
  const std::vector<float> base = floats_from_bits(test::evl_tiny()["base_bits"]);
  checkpoints::save_evl(path, tiny_config(), base);
  const std::vector<std::byte> before = file_bytes(path);
  const std::vector<float> short_params(base.begin(), base.end() - 1);
  expect_error([&] { checkpoints::save_evl(path, tiny_config(), short_params); },
               {path + ": 187 parameters given", "188"});
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);  // no temp left

  evermind::Config wide = tiny_config();
  wide.vocab_size = int64_t{1} << 32;  // the header field is a u32; the ceiling comes first
  expect_error([&] { checkpoints::encode_evl(wide, {}, EvlPrecision::f32); },
               {"vocab_size 4294967296 is implausibly large"});
  expect_error([&] { checkpoints::save_evl(dir.file("no/such/dir.evl"), tiny_config(), base); },
               {"cannot write"});
  expect_error([&] { checkpoints::encode_evl(tiny_config(), base, static_cast<EvlPrecision>(7)); },
               {"unknown EVL0 precision 7"});
}

TEST(EvlCheckpoint, PrecisionNames) {
  EXPECT_EQ(checkpoints::parse_evl_precision("f16"), EvlPrecision::f16);
  EXPECT_EQ(checkpoints::parse_evl_precision("f32"), EvlPrecision::f32);
  EXPECT_EQ(checkpoints::evl_precision_name(EvlPrecision::f16), "f16");
  expect_error([] { checkpoints::parse_evl_precision("bf16"); }, {"f32 or f16", "bf16"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
