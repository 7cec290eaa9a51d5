#include "tinylm/models/gpt2/init.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tinylm/core/parallel.h"
#include "tinylm/core/philox.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

std::vector<float> init_params(const Config& config, uint64_t seed,
                               const std::function<void(int64_t, int64_t)>& progress) {
  const ParamLayout layout = gpt2::param_layout(config);
  std::vector<float> params(layout.size(), 0.0f);
  const auto total = static_cast<int64_t>(params.size());
  const auto report = [&](const ParamEntry& e, int64_t done_in_entry) {
    if (progress) progress(static_cast<int64_t>(e.offset) + done_in_entry, total);
  };
  const double residual_std = 0.02 / std::sqrt(2.0 * config.n_layer);
  const std::vector<TensorSpec> specs = tensor_specs(config);  // in the layout's order
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamEntry& e = layout.entries()[i];
    double std = 0.0;
    if (specs[i].role == ParamRole::matrix || specs[i].role == ParamRole::embedding) {
      std = specs[i].residual ? residual_std : 0.02;
    } else if (specs[i].role == ParamRole::norm) {
      std::fill_n(params.begin() + static_cast<std::ptrdiff_t>(e.offset), e.numel, 1.0f);
      report(e, static_cast<int64_t>(e.numel));
      continue;
    } else {
      report(e, static_cast<int64_t>(e.numel));
      continue;  // biases stay 0
    }
    float* out = params.data() + e.offset;
    // Box-Muller on pairs of counter-based uniforms: element i uses counter (i / 2, offset).
    // In slices of about a million values, so that progress moves within large tensors; each
    // value depends on its index alone.
    const int64_t pairs = static_cast<int64_t>((e.numel + 1) / 2);
    constexpr int64_t kSlice = int64_t{1} << 19;
    for (int64_t lo = 0; lo < pairs; lo += kSlice) {
      const int64_t hi = std::min(pairs, lo + kSlice);
      parallel_for(lo, hi, 4096, [&](int64_t k) {
        const PhiloxCounter c =
            philox4x32_10({static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32),
                           static_cast<uint32_t>(e.offset), static_cast<uint32_t>(e.offset >> 32)},
                          {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
        const double u1 = (static_cast<double>(c[0]) + 1.0) / 4294967296.0;  // (0, 1]
        const double u2 = static_cast<double>(c[1]) / 4294967296.0;
        const double r = std::sqrt(-2.0 * std::log(u1)) * std;
        out[2 * k] = static_cast<float>(r * std::cos(2 * std::numbers::pi * u2));
        if (static_cast<size_t>(2 * k + 1) < e.numel) {
          out[2 * k + 1] = static_cast<float>(r * std::sin(2 * std::numbers::pi * u2));
        }
      });
      report(e, std::min(2 * hi, static_cast<int64_t>(e.numel)));
    }
  }
  return params;
}

}  // namespace tinylm::gpt2
