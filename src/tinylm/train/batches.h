#pragma once
// Which windows of the token file each optimizer step and each evaluation reads. Every
// start is a pure function of (seed, step, global row) or of the window index, so a resumed
// run reads exactly what an uninterrupted one would, whatever the thread count, and the
// PyTorch fixture can reproduce the batches from the same formulas.
#include <cstdint>
#include <span>
#include <string_view>

#include "tinylm/train/token_file.h"

namespace tinylm::train {

enum class DataOrder { random, sequential };
DataOrder parse_data_order(std::string_view name);  // Error listing the choices otherwise
std::string_view data_order_name(DataOrder order);

// Training tokens are [0, n_train), validation tokens [n_train, n_train + n_val).
struct DataSplit {
  int64_t n_train = 0, n_val = 0;
};

// n_val = floor(n * val_fraction), val_fraction in [0, 1). The training split, and the
// validation split when val_fraction > 0, must hold at least one window of seq_len + 1 tokens
// (inputs and the targets shifted by one).
DataSplit split_tokens(int64_t n, double val_fraction, int64_t seq_len);

class WindowSampler {
 public:
  // batch: rows per micro-batch (B); seq_len: T; accum: micro-batches per optimizer step.
  WindowSampler(DataSplit split, int64_t batch, int64_t seq_len, int64_t accum, uint64_t seed,
                DataOrder order);

  // Start of global row g = a * batch + r (micro-batch a, row r) of 0-based step `step`:
  //   random:     u = philox4x32_10({lo(step), hi(step), g, 0}, {lo(seed), hi(seed)}),
  //               p = (x[1] << 32 | x[0]) mod (n_train - T)
  //   sequential: c = step * accum * batch + g, W = (n_train - 1) / T, p = (c mod W) * T
  int64_t train_start(int64_t step, int64_t global_row) const;
  // Start of validation window j: n_train + (j mod W_val) * T, W_val = (n_val - 1) / T.
  int64_t eval_start(int64_t j) const;

  // Rows of T + 1 tokens, row-major: micro-batch `micro` of `step` (batch rows), all of the
  // step's micro-batches (accum * batch rows), evaluation batch k (batch rows: windows
  // k * batch + r). `out` must hold exactly that many tokens.
  void fill_micro_batch(const TokenFile& tokens, int64_t step, int64_t micro,
                        std::span<int32_t> out) const;
  void fill_step(const TokenFile& tokens, int64_t step, std::span<int32_t> out) const;
  void fill_eval_batch(const TokenFile& tokens, int64_t k, std::span<int32_t> out) const;

  const DataSplit& split() const { return split_; }
  int64_t row_tokens() const { return seq_len_ + 1; }

 private:
  void check_tokens(const TokenFile& tokens, std::span<int32_t> out, int64_t rows) const;

  DataSplit split_;
  int64_t batch_, seq_len_, accum_;
  uint64_t seed_;
  DataOrder order_;
};

}  // namespace tinylm::train
