// Batches: the split, the sequential and evaluation formulas against hand-computed starts,
// random starts against Philox computed here from the spec's formula (one of them a
// Random123 known answer), their range, and their independence from how a step's rows are
// split into micro-batches. The token file holds ids 0..N-1, so a row's tokens name its start.
#include "tinylm/train/batches.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "test_util.h"
#include "tinylm/core/philox.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

using test::expect_error;

TokenFile positions(int64_t n) {
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  return TokenFile::from_bytes(encode_token_file({"positions", n, {}, std::nullopt}, ids),
                               "positions.bin");
}

// The starts of the rows in a filled buffer (each row must be consecutive ids).
std::vector<int64_t> row_starts(const std::vector<int32_t>& buf, int64_t row_tokens) {
  std::vector<int64_t> starts;
  for (size_t r = 0; r * row_tokens < buf.size(); ++r) {
    const int32_t* row = buf.data() + r * row_tokens;
    for (int64_t i = 1; i < row_tokens; ++i) EXPECT_EQ(row[i], row[0] + i) << "row " << r;
    starts.push_back(row[0]);
  }
  return starts;
}

TEST(DataOrder, Names) {
  EXPECT_EQ(parse_data_order("random"), DataOrder::random);
  EXPECT_EQ(parse_data_order("sequential"), DataOrder::sequential);
  EXPECT_EQ(data_order_name(DataOrder::random), "random");
  EXPECT_EQ(data_order_name(DataOrder::sequential), "sequential");
  expect_error([] { parse_data_order("shuffled"); }, {"'shuffled'", "random, sequential"});
}

TEST(DataSplit, FloorOfTheFraction) {
  DataSplit s = split_tokens(105, 0.1, 8);  // 10.5 → 10
  EXPECT_EQ(s.n_val, 10);
  EXPECT_EQ(s.n_train, 95);
  s = split_tokens(100, 0.0, 99);
  EXPECT_EQ(s.n_val, 0);
  EXPECT_EQ(s.n_train, 100);
}

TEST(DataSplit, Errors) {
  for (double f : {1.0, -0.1, 1.5, std::nan("")})
    expect_error([&] { split_tokens(100, f, 8); }, {"val_fraction must be in [0, 1)"});
  expect_error([] { split_tokens(100, 0.0, 0); }, {"seq_len"});
  expect_error([] { split_tokens(8, 0.0, 8); },
               {"the training split holds 8 tokens, fewer than one window of T+1 = 9"});
  expect_error([] { split_tokens(100, 0.05, 8); },
               {"the validation split holds 5 tokens", "fewer than one window of T+1 = 9"});
  EXPECT_NO_THROW(split_tokens(100, 0.09, 8));  // exactly one validation window
}

// N = 100, 20% validation: n_train 80, n_val 20; T = 8, B = 2, accum = 3.
constexpr int64_t kN = 100, kT = 8, kB = 2, kAccum = 3;
const DataSplit kSplit{80, 20};

TEST(WindowSampler, SequentialFormula) {
  const WindowSampler w(kSplit, kB, kT, kAccum, 1234, DataOrder::sequential);
  // W = (80 - 1) / 8 = 9 windows; c = s * 6 + g; p = (c mod 9) * 8.
  EXPECT_EQ(w.train_start(0, 0), 0);
  EXPECT_EQ(w.train_start(0, 5), 40);
  EXPECT_EQ(w.train_start(1, 0), 48);  // c = 6
  EXPECT_EQ(w.train_start(1, 2), 64);  // c = 8, the last window: 64..72 <= 79
  EXPECT_EQ(w.train_start(1, 3), 0);   // c = 9 wraps
  EXPECT_EQ(w.train_start(2, 4), 56);  // c = 16 → 7
  EXPECT_EQ(w.train_start(1000000000000, 1), 8 * ((6000000000000 + 1) % 9));

  const TokenFile tokens = positions(kN);
  std::vector<int32_t> buf(kAccum * kB * (kT + 1));
  w.fill_step(tokens, 1, buf);
  EXPECT_EQ(row_starts(buf, kT + 1), (std::vector<int64_t>{48, 56, 64, 0, 8, 16}));
  std::vector<int32_t> micro(kB * (kT + 1));
  w.fill_micro_batch(tokens, 1, 2, micro);
  EXPECT_EQ(row_starts(micro, kT + 1), (std::vector<int64_t>{8, 16}));
}

TEST(WindowSampler, SequentialWithoutValidation) {
  // n_train 17, T 8: W = 16 / 8 = 2 windows, 0..8 and 8..16.
  const WindowSampler w({17, 0}, 1, 8, 1, 0, DataOrder::sequential);
  EXPECT_EQ(w.train_start(0, 0), 0);
  EXPECT_EQ(w.train_start(1, 0), 8);
  EXPECT_EQ(w.train_start(2, 0), 0);
  expect_error([&] { w.eval_start(0); }, {"no validation windows"});
}

TEST(WindowSampler, EvalWindowsAreFixedAndInTheValidationSplit) {
  const TokenFile tokens = positions(kN);
  // W_val = (20 - 1) / 8 = 2: windows at 80 and 88 (88..96 <= 99), repeating.
  const WindowSampler a(kSplit, kB, kT, kAccum, 1, DataOrder::random);
  EXPECT_EQ(a.eval_start(0), 80);
  EXPECT_EQ(a.eval_start(1), 88);
  EXPECT_EQ(a.eval_start(2), 80);
  EXPECT_EQ(a.eval_start(7), 88);
  // Neither the seed nor the order nor earlier calls change them.
  const WindowSampler b(kSplit, kB, kT, kAccum, 99, DataOrder::sequential);
  std::vector<int32_t> first(kB * (kT + 1)), again(first.size()), other(first.size());
  a.fill_eval_batch(tokens, 1, first);
  a.fill_eval_batch(tokens, 1, again);
  b.fill_eval_batch(tokens, 1, other);
  EXPECT_EQ(row_starts(first, kT + 1), (std::vector<int64_t>{80, 88}));  // j = 2, 3
  EXPECT_EQ(first, again);
  EXPECT_EQ(first, other);
}

TEST(WindowSampler, RandomMatchesPhiloxFromTheSpec) {
  // Seed 0, step 0, row 0 is Philox's all-zero known answer (Random123 kat_vectors):
  // x = {0x6627e8d5, 0xe169c58d, ...}, so u = 0xe169c58d6627e8d5 and p = u mod (80 - 8).
  const WindowSampler zero(kSplit, kB, kT, kAccum, 0, DataOrder::random);
  EXPECT_EQ(zero.train_start(0, 0), static_cast<int64_t>(0xe169c58d6627e8d5ull % 72));

  // Both halves of a 64-bit step and seed: counter {lo(s), hi(s), g, 0}, key {lo, hi}.
  const uint64_t seed = 0x0000000500000007ull;
  const int64_t step = 0x0000000100000002ll;
  const PhiloxCounter x = philox4x32_10({2, 1, 5, 0}, {7, 5});
  const uint64_t u = (static_cast<uint64_t>(x[1]) << 32) | x[0];
  const WindowSampler w(kSplit, kB, kT, kAccum, seed, DataOrder::random);
  EXPECT_EQ(w.train_start(step, 5), static_cast<int64_t>(u % 72));

  const TokenFile tokens = positions(kN);
  std::vector<int32_t> buf(kAccum * kB * (kT + 1));
  w.fill_step(tokens, step, buf);
  EXPECT_EQ(row_starts(buf, kT + 1)[5], static_cast<int64_t>(u % 72));
}

TEST(WindowSampler, RandomStartsDependOnlyOnSeedStepAndRow) {
  const WindowSampler a(kSplit, 2, kT, 3, 42, DataOrder::random);
  const WindowSampler b(kSplit, 6, kT, 1, 42, DataOrder::random);
  const WindowSampler c(kSplit, 3, kT, 2, 42, DataOrder::random);
  const WindowSampler other_seed(kSplit, 2, kT, 3, 43, DataOrder::random);
  std::set<int64_t> seen;
  int differ = 0;
  for (int64_t s = 0; s < 200; ++s) {
    for (int64_t g = 0; g < 6; ++g) {
      const int64_t p = a.train_start(s, g);
      EXPECT_EQ(p, b.train_start(s, g));
      EXPECT_EQ(p, c.train_start(s, g));
      EXPECT_EQ(p, a.train_start(s, g));
      EXPECT_GE(p, 0);
      EXPECT_LE(p + kT, kSplit.n_train - 1);  // targets stay in the training split
      differ += p != other_seed.train_start(s, g);
      seen.insert(p);
    }
  }
  EXPECT_EQ(seen.size(), 72u);  // 1,200 draws cover all 72 starts
  EXPECT_GT(differ, 1000);

  // The same global row through different micro-batch shapes reads the same tokens.
  const TokenFile tokens = positions(kN);
  std::vector<int32_t> a_rows(6 * (kT + 1)), c_rows(a_rows.size());
  a.fill_step(tokens, 7, a_rows);
  c.fill_step(tokens, 7, c_rows);
  EXPECT_EQ(a_rows, c_rows);
}

TEST(WindowSampler, Errors) {
  const TokenFile tokens = positions(kN);
  expect_error(
      [] {
        WindowSampler({8, 0}, 1, 8, 1, 0, DataOrder::random);
      },
      {"fewer than one window"});
  expect_error([] { WindowSampler(kSplit, 0, kT, 1, 0, DataOrder::random); }, {"at least 1"});
  expect_error(
      [] {
        WindowSampler(kSplit, std::numeric_limits<int64_t>::max(), kT, 2, 0, DataOrder::random);
      },
      {"overflows"});
  const WindowSampler w(kSplit, kB, kT, kAccum, 0, DataOrder::random);
  expect_error([&] { w.train_start(0, 6); }, {"row 6 is outside the step's 6 rows"});
  expect_error([&] { w.train_start(-1, 0); }, {"step"});
  std::vector<int32_t> small(5);
  expect_error([&] { w.fill_step(tokens, 0, small); }, {"expected 6 rows of 9"});
  expect_error([&] { w.fill_eval_batch(tokens, 0, small); }, {"expected 2 rows of 9"});
  std::vector<int32_t> micro(kB * (kT + 1));
  expect_error([&] { w.fill_micro_batch(tokens, 0, 3, micro); }, {"micro-batch 3"});
  const TokenFile fewer = positions(kN - 1);
  expect_error([&] { w.fill_micro_batch(fewer, 0, 0, micro); },
               {"positions.bin: holds 99 tokens, but the split was made for 100"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
