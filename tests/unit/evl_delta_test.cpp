// EVD0 sparse deltas: tinylm writes byte for byte the deltas an independent Python writer
// produces (tools/gen_evl_fixtures.py) and applies them; with eps 0 the current weights come
// back bit for bit (±0.0 and NaN payloads included); rows within eps are skipped; a delta
// only applies to the base it was made against; every damaged delta is an Error.
#include "tinylm/checkpoints/evl_delta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "evl_test_util.h"
#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/text_file.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using checkpoints::EvlCheckpoint;
using checkpoints::EvlPrecision;
using test::bits_of;
using test::expect_error;
using test::file_bytes;
using test::floats_from_bits;

evermind::Config small_config() {
  evermind::Config c;
  c.vocab_size = 13;
  c.d_model = 8;
  c.n_layers = 2;
  c.conv_kernel = 3;
  c.hidden_dim = 16;
  c.n_experts = 4;
  c.top_k = 2;
  return c;
}

EvlCheckpoint random_checkpoint(const evermind::Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  EvlCheckpoint ck;
  ck.params.resize(evermind::param_layout(c).size());
  for (float& x : ck.params) x = normal(rng);
  // Round trip through the encoder so crc is the checkpoint file's.
  return checkpoints::decode_evl(checkpoints::encode_evl(c, ck.params), "base");
}

// Replaces the 4 bytes at `at` and re-seals the trailer, so a structural check fires rather
// than the CRC.
std::vector<std::byte> sealed(const std::vector<std::byte>& in, size_t at, uint32_t value) {
  std::vector<std::byte> b(in.begin(), in.end() - checkpoints::kEvlTrailerBytes);
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xffu);
  checkpoints::append_evl_trailer(b);
  return b;
}

TEST(EvlDelta, WritesTheSameBytesAsThePythonWriter) {
  const EvlCheckpoint base = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  const std::vector<float> current = floats_from_bits(test::evl_tiny()["current_bits"]);
  for (const auto& d : test::evl_tiny()["deltas"]) {
    const float eps = bits_float(d["eps_bits"].get<uint32_t>());
    checkpoints::EvlDeltaSummary s;
    const std::vector<std::byte> bytes = checkpoints::encode_evl_delta(base, current, eps, &s);
    const std::string file = d["file"].get<std::string>();
    EXPECT_EQ(bytes, file_bytes(test::evl_fixture(file))) << file;
    EXPECT_EQ(s.rows_total, 47u);  // 188 parameters in rows of d_model = 4
    EXPECT_EQ(s.rows_exported, d["rows"].size());
    EXPECT_EQ(s.file_bytes, bytes.size());
    const std::vector<uint64_t> rows = checkpoints::evl_changed_rows(
        evermind::param_layout(base.config), 4, base.params, current, eps);
    EXPECT_EQ(rows, d["rows"].get<std::vector<uint64_t>>());
  }
}

TEST(EvlDelta, EpsZeroReconstructsEveryBit) {
  const EvlCheckpoint base = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  const checkpoints::EvlDeltaApplied a =
      checkpoints::apply_evl_delta(base, test::evl_fixture("tiny_delta_eps0.evd"));
  EXPECT_EQ(a.rows_applied, 10u);
  // Includes +0.0 -> -0.0 (param 4) and one NaN payload replaced by another (param 8).
  EXPECT_EQ(bits_of(a.params), test::evl_tiny()["current_bits"].get<std::vector<uint32_t>>());
  EXPECT_EQ(float_bits(a.params[4]), 0x80000000u);
  EXPECT_EQ(float_bits(a.params[8]), 0x7fc00001u);
}

TEST(EvlDelta, RowsWithinEpsKeepTheBaseValues) {
  const EvlCheckpoint base = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  const auto current = test::evl_tiny()["current_bits"].get<std::vector<uint32_t>>();
  const auto base_bits = test::evl_tiny()["base_bits"].get<std::vector<uint32_t>>();
  const checkpoints::EvlDeltaApplied a =
      checkpoints::apply_evl_delta(base, test::evl_fixture("tiny_delta_eps0.01.evd"));
  const std::set<size_t> rows = {2, 5, 6, 7, 10, 20, 46};  // rows 0, 1, 11 change by <= 0.01
  EXPECT_EQ(a.rows_applied, rows.size());
  for (size_t i = 0; i < current.size(); ++i) {
    EXPECT_EQ(float_bits(a.params[i]), rows.count(i / 4) ? current[i] : base_bits[i]) << i;
  }
  const checkpoints::EvlDeltaInfo info =
      checkpoints::read_evl_delta_info(test::evl_fixture("tiny_delta_eps0.01.evd"));
  EXPECT_EQ(info.base_crc, base.crc);
  EXPECT_EQ(info.eps, 0.01f);
  EXPECT_EQ(info.rows_exported, 7u);
  EXPECT_EQ(info.runs, 5u);  // {2} {5,6,7} {10} {20} {46}
}

TEST(EvlDelta, RoundTripThroughFilesIsExact) {
  const evermind::Config c = small_config();
  test::TempDir dir;
  const std::string base_path = dir.file("base.evl"), delta_path = dir.file("d.evd"),
                    out_path = dir.file("new.evl");
  const EvlCheckpoint base = random_checkpoint(c, 1);
  checkpoints::save_evl(base_path, c, base.params);
  std::vector<float> current = base.params;
  std::mt19937 rng(2);
  for (size_t i = 0; i < current.size(); i += 1 + rng() % 97)
    current[i] += 1e-3f * static_cast<float>(rng() % 7);
  current[3] = -current[3];
  current[100] = std::numeric_limits<float>::quiet_NaN();
  current.back() = std::numeric_limits<float>::infinity();
  if (float_bits(base.params[200]) != 0) current[200] = 0.0f;
  current[201] = -0.0f;

  const checkpoints::EvlDeltaSummary s =
      checkpoints::export_evl_delta(delta_path, base_path, current, 0.0f);
  EXPECT_EQ(s.rows_total, current.size() / 8);
  EXPECT_GT(s.rows_exported, 0u);
  EXPECT_LT(s.rows_exported, s.rows_total);
  EXPECT_EQ(s.file_bytes, std::filesystem::file_size(delta_path));
  // Size: header, trailer, 8 bytes per run, the rows' values.
  EXPECT_EQ(s.file_bytes, checkpoints::kEvlDeltaHeaderBytes + checkpoints::kEvlTrailerBytes +
                              8 * s.runs + 32 * s.rows_exported);

  EXPECT_EQ(checkpoints::apply_evl_delta_to_file(base_path, delta_path, out_path), s.rows_exported);
  EXPECT_EQ(bits_of(checkpoints::load_evl(out_path, c).params), bits_of(current));
  const checkpoints::EvlDeltaApplied a = checkpoints::apply_evl_delta(base_path, delta_path);
  EXPECT_EQ(bits_of(a.params), bits_of(current));
  // Writing the result in f16 is the caller's choice.
  checkpoints::apply_evl_delta_to_file(base_path, delta_path, out_path, EvlPrecision::f16);
  EXPECT_EQ(checkpoints::load_evl(out_path).precision, EvlPrecision::f16);
  // An unchanged model gives an empty delta that applies to itself.
  const checkpoints::EvlDeltaSummary none =
      checkpoints::export_evl_delta(delta_path, base, base.params, 0.0f);
  EXPECT_EQ(none.rows_exported, 0u);
  EXPECT_EQ(bits_of(checkpoints::apply_evl_delta(base, delta_path).params), bits_of(base.params));
}

TEST(EvlDelta, EpsSelectsRowsByTheirLargestChange) {
  const evermind::Config c = small_config();
  const EvlCheckpoint base = random_checkpoint(c, 3);
  const size_t rows = base.params.size() / 8;
  std::vector<float> current = base.params;
  // Row r's largest change is (r % 10) / 1000 (in one element; another gets a smaller one).
  for (size_t r = 0; r < rows; ++r) {
    current[8 * r + r % 8] += static_cast<float>(r % 10) * 1e-3f;
    current[8 * r + (r + 3) % 8] += 1e-4f;
  }
  for (float eps : {0.0f, 0.00251f, 0.00551f, 1.0f}) {
    std::vector<uint64_t> want;
    for (size_t r = 0; r < rows; ++r) {
      float largest = 0;
      for (size_t e = 8 * r; e < 8 * r + 8; ++e)
        largest = std::max(largest, std::fabs(current[e] - base.params[e]));
      if (eps == 0.0f ? largest > 0 : largest > eps) want.push_back(r);
    }
    checkpoints::EvlDeltaSummary s;
    const std::vector<std::byte> d = checkpoints::encode_evl_delta(base, current, eps, &s);
    EXPECT_EQ(s.rows_exported, want.size()) << eps;
    EXPECT_EQ(
        checkpoints::evl_changed_rows(evermind::param_layout(c), 8, base.params, current, eps),
        want)
        << eps;
    const checkpoints::EvlDeltaApplied a = checkpoints::apply_evl_delta(base, d, "d.evd");
    const std::set<uint64_t> exported(want.begin(), want.end());
    for (size_t i = 0; i < current.size(); ++i) {
      ASSERT_EQ(float_bits(a.params[i]),
                float_bits(exported.count(i / 8) ? current[i] : base.params[i]))
          << "eps " << eps << " param " << i;
      ASSERT_LE(std::fabs(a.params[i] - current[i]), eps) << i;
    }
  }
  expect_error([&] { checkpoints::encode_evl_delta(base, current, -1.0f); },
               {"eps must be finite and >= 0"});
  expect_error([&] { checkpoints::encode_evl_delta(base, current, std::nanf("")); }, {"eps"});
  // A NaN appearing is always a change, however large eps is.
  current = base.params;
  current[17] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(
      checkpoints::evl_changed_rows(evermind::param_layout(c), 8, base.params, current, 1e30f),
      std::vector<uint64_t>{2});
}

TEST(EvlDelta, RowsAreDModelValuesOrSingleValuesWhereATensorDoesNotTile) {
  ParamLayout layout;
  layout.add("a", {2, 4});  // 8 values: 2 rows of 4
  layout.add("b", {3});     // 3 values: does not tile, 3 rows of 1
  layout.add("c", {4});     // 1 row of 4
  layout.add("d", {6});     // 6 rows of 1
  const std::vector<checkpoints::EvlRowBlock> blocks = checkpoints::evl_row_blocks(layout, 4);
  ASSERT_EQ(blocks.size(), 4u);
  const uint64_t want[4][4] = {{0, 0, 4, 2}, {2, 8, 1, 3}, {5, 11, 4, 1}, {6, 15, 1, 6}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(blocks[i].first_row, want[i][0]);
    EXPECT_EQ(blocks[i].first_element, want[i][1]);
    EXPECT_EQ(blocks[i].row_width, want[i][2]);
    EXPECT_EQ(blocks[i].n_rows, want[i][3]);
  }
  std::vector<float> base(21, 1.0f), current(21, 1.0f);
  current[5] = 2;   // a, row 1
  current[9] = 2;   // b, value 1: row 3
  current[13] = 2;  // c: row 5
  current[20] = 2;  // d, last value: row 11
  EXPECT_EQ(checkpoints::evl_changed_rows(layout, 4, base, current, 0.0f),
            (std::vector<uint64_t>{1, 3, 5, 11}));
  expect_error([&] { checkpoints::evl_row_blocks(layout, 0); }, {"row width"});
}

TEST(EvlDelta, AppliesOnlyToItsBase) {
  const EvlCheckpoint base = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  const std::vector<std::byte> d = file_bytes(test::evl_fixture("tiny_delta_eps0.evd"));
  // Same model, other weights.
  EvlCheckpoint other = base;
  other.params[0] += 1.0f;
  other = checkpoints::decode_evl(checkpoints::encode_evl(other.config, other.params), "other");
  expect_error(
      [&] { checkpoints::apply_evl_delta(other, d, "d.evd"); },
      {"d.evd: made against a base checkpoint with CRC 0xce6670bb", "has CRC 0x", "wrong base"});
  // The same weights stored in f16 are another file, so another base.
  expect_error(
      [&] {
        checkpoints::apply_evl_delta(test::evl_fixture("tiny_f16.evl"),
                                     test::evl_fixture("tiny_delta_eps0.evd"));
      },
      {"tiny_delta_eps0.evd: made against", "tiny_f16.evl has CRC", "wrong base"});
  // Another model.
  const EvlCheckpoint big = random_checkpoint(small_config(), 4);
  expect_error(
      [&] { checkpoints::apply_evl_delta(big, d, "d.evd"); },
      {"d.evd: made for a different model than the base checkpoint: vocab_size 5 (base 13)"});
  // Current weights of the wrong size.
  expect_error([&] { checkpoints::encode_evl_delta(base, std::vector<float>(10), 0.0f); },
               {"current has 10"});
}

TEST(EvlDelta, EveryCorruptionAndTruncationIsDetected) {
  const EvlCheckpoint base = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  for (const char* name : {"tiny_delta_eps0.evd", "tiny_delta_eps0.01.evd"}) {
    const std::vector<std::byte> good = file_bytes(test::evl_fixture(name));
    ASSERT_NO_THROW(checkpoints::apply_evl_delta(base, good, name));
    for (size_t i = 0; i < good.size(); ++i) {
      std::vector<std::byte> bad = good;
      for (unsigned x = 1; x < 256; ++x) {
        bad[i] = good[i] ^ static_cast<std::byte>(x);
        EXPECT_THROW(checkpoints::apply_evl_delta(base, bad, name), Error)
            << name << " byte " << i << " ^ " << x;
      }
    }
    for (size_t n = 0; n < good.size(); ++n) {
      EXPECT_THROW(
          checkpoints::apply_evl_delta(base, std::span<const std::byte>(good).first(n), name),
          Error)
          << name << " cut to " << n;
    }
  }
}

TEST(EvlDelta, StructuralErrorsSayWhatIsWrong) {
  const EvlCheckpoint base = checkpoints::load_evl(test::evl_fixture("tiny_f32.evl"));
  const std::vector<std::byte> good = file_bytes(test::evl_fixture("tiny_delta_eps0.evd"));
  // eps0: 10 rows in 5 runs: {0,1,2} {5,6,7} {10,11} {20} {46}. The first run sits at byte 52.
  const auto apply = [&](const std::vector<std::byte>& b) {
    checkpoints::apply_evl_delta(base, b, "d.evd");
  };
  expect_error([&] { apply(sealed(good, 0, 0x45564c30)); },
               {"d.evd: not an EVD0 delta (magic 0x45564c30"});
  expect_error([&] { apply(sealed(good, 4, 2)); }, {"d.evd: unsupported EVD0 version 2"});
  expect_error([&] { apply(sealed(good, 40, float_bits(-1.0f))); }, {"d.evd: eps must be finite"});
  expect_error([&] { apply(sealed(good, 44, 11)); },
               {"d.evd: runs hold 10 rows, the header says 11"});
  expect_error([&] { apply(sealed(good, 44, 1000)); }, {"do not fit", "truncated"});
  expect_error([&] { apply(sealed(good, 48, 11)); }, {"11 runs cannot hold 10 rows"});
  expect_error([&] { apply(sealed(good, 48, 4)); }, {"bytes after the last run"});
  expect_error([&] { apply(sealed(good, 52, 45)); },
               {"d.evd: run 0 (rows 45..47) exceeds the model's 47 rows"});
  expect_error([&] { apply(sealed(good, 56, 40)); },
               {"d.evd: run 0 (160 values) lies past the end"});
  expect_error([&] { apply(sealed(good, 56, 0)); }, {"d.evd: run 0 is empty"});
  // Run 1 starts at byte 52 + 8 + 3 rows · 16 bytes = 108; moving it onto run 0 overlaps.
  expect_error([&] { apply(sealed(good, 108, 2)); }, {"d.evd: run 1 (row 2) overlaps or precedes"});
  expect_error([&] { apply(sealed(good, 108, 45)); },
               {"d.evd: run 1 (rows 45..47) exceeds the model's 47 rows"});
  expect_error([&] { apply(sealed(good, 8, 6)); },
               {"made for a different model", "vocab_size 6 (base 5)"});
  std::vector<std::byte> flipped = good;
  flipped[70] ^= std::byte{4};
  expect_error([&] { apply(flipped); }, {"d.evd: CRC-32 mismatch"});
  expect_error([&] { apply(std::vector<std::byte>(good.begin(), good.begin() + 30)); },
               {"d.evd: 30 bytes is shorter than an EVD0 header"});
  expect_error([&] { checkpoints::apply_evl_delta(base, std::string("/nonexistent/d.evd")); },
               {"/nonexistent/d.evd: cannot open"});
  // A checkpoint is not a delta.
  expect_error(
      [&] {
        checkpoints::apply_evl_delta(base, file_bytes(test::evl_fixture("tiny_f32.evl")), "m.evl");
      },
      {"m.evl: not an EVD0 delta"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
