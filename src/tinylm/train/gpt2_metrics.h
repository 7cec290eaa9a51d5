#pragma once
// The GPT-2 fixed-batch reference protocol's bookkeeping (issue "GPT-2 training"): the 4×65
// token grid file, Python-repr number formatting, pairwise-summed weight fingerprints and the
// metrics JSON, so a run can be compared number for number with other implementations.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tinylm/models/gpt2/config.h"

namespace tinylm::train {

// Python's repr of a float64: the shortest of %.1g … %.17g that parses back to the same
// value, laid out as Python does (fixed notation with a ".0" for exponents -4..15, else
// "1.5e-07" / "1e+16"; "inf", "-inf", "nan").
std::string py_repr(double x);

// Sum of x in float64 by pairwise summation: a range of at most 128 elements is summed left
// to right from 0; a longer range of n splits into n/2 and n - n/2, recursively.
double pairwise_sum(std::span<const float> x);
double pairwise_abs_sum(std::span<const float> x);

// A token grid {"ids": [[...], ...]} of exactly rows × cols integer ids below vocab_size,
// row-major. Every other shape, a non-integer or out-of-range id is an Error naming the file.
std::vector<int32_t> load_token_grid(const std::string& path, int64_t rows, int64_t cols,
                                     int64_t vocab_size);

struct Fingerprint {
  std::string name;
  double sum = 0, abs_sum = 0;
  std::vector<float> first8;
};

// The protocol's fingerprinted tensors in their [out, in] layout: wte.weight,
// h.0.attn.c_attn.weight, h.0.mlp.c_fc.weight, h.{L-1}.attn.c_proj.weight (the Conv1D weights
// transposed), ln_f.weight, wpe.weight.
std::vector<Fingerprint> fingerprint_weights(const gpt2::Config& config,
                                             std::span<const float> params);

struct MetricsRecord {
  int64_t step = 0;
  float loss = 0;
  double ms = 0;
  std::vector<Fingerprint> weights;
};

struct RunMetrics {
  int64_t devices = 1;  // shards each step ran on
  std::string gpu;      // the GPU's name when the steps ran on one; empty on the CPU
  int64_t steps = 0, batch_size = 0, seq_len = 0, n_params = 0;
  double lr = 0;
  float initial_loss = 0;
  std::vector<MetricsRecord> records;
};

// The metrics JSON of the protocol, keys in the documented order.
std::string metrics_json(const RunMetrics& m);

}  // namespace tinylm::train
