#include "tinylm/train/batches.h"

#include <cmath>
#include <cstdint>
#include <optional>

#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"
#include "tinylm/core/philox.h"

namespace tinylm::train {

namespace {
constexpr EnumName<DataOrder> kDataOrderNames[] = {{DataOrder::random, "random"},
                                                   {DataOrder::sequential, "sequential"}};
}  // namespace

DataOrder parse_data_order(std::string_view name) {
  if (const std::optional<DataOrder> order = find_named(kDataOrderNames, name)) return *order;
  fail("unknown data order '", name, "' (choices: ", names_list(kDataOrderNames, ", "), ")");
}

std::string_view data_order_name(DataOrder order) { return name_of(kDataOrderNames, order); }

DataSplit split_tokens(int64_t n, double val_fraction, int64_t seq_len) {
  check(val_fraction >= 0 && val_fraction < 1, "val_fraction must be in [0, 1), got ",
        val_fraction);
  check(seq_len >= 1, "seq_len must be at least 1, got ", seq_len);
  check(n >= 0, "token count must be non-negative, got ", n);
  DataSplit s;
  s.n_val = static_cast<int64_t>(std::floor(static_cast<double>(n) * val_fraction));
  s.n_train = n - s.n_val;
  check(s.n_train >= seq_len + 1, "the training split holds ", s.n_train,
        " tokens, fewer than one window of T+1 = ", seq_len + 1);
  check(val_fraction == 0 || s.n_val >= seq_len + 1, "the validation split holds ", s.n_val,
        " tokens (val_fraction ", val_fraction, " of ", n,
        "), fewer than one window of T+1 = ", seq_len + 1);
  return s;
}

WindowSampler::WindowSampler(DataSplit split, int64_t batch, int64_t seq_len, int64_t accum,
                             uint64_t seed, DataOrder order)
    : split_(split), batch_(batch), seq_len_(seq_len), accum_(accum), seed_(seed), order_(order) {
  check(batch >= 1 && seq_len >= 1 && accum >= 1,
        "batch, seq_len and accum must be at least 1, got ", batch, ", ", seq_len, ", ", accum);
  check(accum <= INT64_MAX / batch, "accum * batch overflows: ", accum, " * ", batch);
  check(split.n_train >= seq_len + 1 && split.n_val >= 0, "the training split holds ",
        split.n_train, " tokens, fewer than one window of T+1 = ", seq_len + 1);
}

int64_t WindowSampler::train_start(int64_t step, int64_t global_row) const {
  check(step >= 0, "step must be non-negative, got ", step);
  check(global_row >= 0 && global_row < accum_ * batch_, "row ", global_row,
        " is outside the step's ", accum_ * batch_, " rows");
  const uint64_t s = static_cast<uint64_t>(step), g = static_cast<uint64_t>(global_row);
  if (order_ == DataOrder::random) {
    const PhiloxCounter x = philox4x32_10(
        {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(g), 0},
        {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
    const uint64_t u = (static_cast<uint64_t>(x[1]) << 32) | x[0];
    return static_cast<int64_t>(u % static_cast<uint64_t>(split_.n_train - seq_len_));
  }
  // c mod W in 128 bits: step * accum * batch may pass 2^63 in a very long run.
  const uint64_t w = static_cast<uint64_t>((split_.n_train - 1) / seq_len_);
  __extension__ using u128 = unsigned __int128;  // (a GCC/clang extension; -Wpedantic)
  const u128 c = static_cast<u128>(s) * static_cast<uint64_t>(accum_ * batch_) + g;
  return static_cast<int64_t>(static_cast<uint64_t>(c % w)) * seq_len_;
}

int64_t WindowSampler::eval_start(int64_t j) const {
  check(split_.n_val >= seq_len_ + 1, "no validation windows: the validation split holds ",
        split_.n_val, " tokens, fewer than T+1 = ", seq_len_ + 1);
  check(j >= 0, "validation window must be non-negative, got ", j);
  const int64_t w = (split_.n_val - 1) / seq_len_;
  return split_.n_train + (j % w) * seq_len_;
}

void WindowSampler::check_tokens(const TokenFile& tokens, std::span<int32_t> out,
                                 int64_t rows) const {
  check(tokens.size() == split_.n_train + split_.n_val, tokens.path(), ": holds ", tokens.size(),
        " tokens, but the split was made for ", split_.n_train + split_.n_val);
  check(static_cast<int64_t>(out.size()) == rows * row_tokens(), "batch buffer holds ", out.size(),
        " tokens, expected ", rows, " rows of ", row_tokens());
}

void WindowSampler::fill_micro_batch(const TokenFile& tokens, int64_t step, int64_t micro,
                                     std::span<int32_t> out) const {
  check_tokens(tokens, out, batch_);
  check(micro >= 0 && micro < accum_, "micro-batch ", micro, " is outside [0, ", accum_, ")");
  for (int64_t r = 0; r < batch_; ++r)
    tokens.copy(train_start(step, micro * batch_ + r), row_tokens(), out.data() + r * row_tokens());
}

void WindowSampler::fill_step(const TokenFile& tokens, int64_t step, std::span<int32_t> out) const {
  check_tokens(tokens, out, accum_ * batch_);
  const size_t micro_tokens = static_cast<size_t>(batch_ * row_tokens());
  for (int64_t a = 0; a < accum_; ++a)
    fill_micro_batch(tokens, step, a, out.subspan(a * micro_tokens, micro_tokens));
}

void WindowSampler::fill_eval_batch(const TokenFile& tokens, int64_t k,
                                    std::span<int32_t> out) const {
  check_tokens(tokens, out, batch_);
  check(k >= 0, "evaluation batch must be non-negative, got ", k);
  for (int64_t r = 0; r < batch_; ++r)
    tokens.copy(eval_start(k * batch_ + r), row_tokens(), out.data() + r * row_tokens());
}

}  // namespace tinylm::train
