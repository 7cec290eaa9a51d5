#include "tinylm/models/evermind/init.h"

#include <cmath>
#include <numbers>

#include "tinylm/core/error.h"
#include "tinylm/core/philox.h"

namespace tinylm::evermind {

double init_normal(uint64_t key, uint32_t stream, uint64_t index) {
  const PhiloxCounter w =
      philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), stream, 0u},
                    {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  constexpr double kInv53 = 1.0 / 9007199254740992.0;  // 2^-53
  const double u1 =
      (static_cast<double>(w[0] >> 5) * 67108864.0 + static_cast<double>(w[1] >> 6) + 1.0) * kInv53;
  const double u2 =
      (static_cast<double>(w[2] >> 5) * 67108864.0 + static_cast<double>(w[3] >> 6)) * kInv53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

template <class T>
void init_params(const Config& c, uint64_t seed, std::span<T> params) {
  const ParamLayout layout = param_layout(c);
  check(params.size() == layout.size(), "evermind init: parameter buffer holds ", params.size(),
        " values, the layout needs ", layout.size());
  constexpr double kStd = 0.02;
  const auto normal_fill = [&](const ParamEntry& e, uint64_t key, uint32_t stream) {
    for (size_t i = 0; i < e.numel; ++i)
      params[e.offset + i] = static_cast<T>(kStd * init_normal(key, stream, i));
  };
  normal_fill(layout.at("emb"), seed, 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = cat("layers.", l, ".");
    const uint64_t key = seed + 1 + static_cast<uint64_t>(l);
    const ParamEntry& conv = layout.at(p + "conv");
    for (int64_t ch = 0; ch < c.d_model; ++ch) {
      for (int64_t j = 0; j < c.conv_kernel; ++j) {
        params[conv.offset + static_cast<size_t>(ch * c.conv_kernel + j)] = j == 0 ? T(1) : T(0);
      }
    }
    for (const char* gain : {"conv_norm", "moe_norm"}) {
      const ParamEntry& e = layout.at(p + gain);
      for (size_t i = 0; i < e.numel; ++i) params[e.offset + i] = T(1);
    }
    normal_fill(layout.at(p + "router"), key, 0);
    normal_fill(layout.at(p + "shared.up"), key, 1);
    normal_fill(layout.at(p + "shared.down"), key, 2);
    for (int64_t e = 0; e < c.n_experts; ++e) {
      normal_fill(layout.at(cat(p, "experts.", e, ".up")), key, static_cast<uint32_t>(3 + 2 * e));
      normal_fill(layout.at(cat(p, "experts.", e, ".down")), key, static_cast<uint32_t>(4 + 2 * e));
    }
  }
}

template void init_params<float>(const Config&, uint64_t, std::span<float>);
template void init_params<double>(const Config&, uint64_t, std::span<double>);

}  // namespace tinylm::evermind
