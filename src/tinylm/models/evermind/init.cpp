#include "tinylm/models/evermind/init.h"

#include <cmath>
#include <numbers>

#include "tinylm/core/error.h"
#include "tinylm/core/philox.h"
#include "tinylm/models/evermind/tensors.h"

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
  ParamIndex index;
  for_each_tensor(c, index, [&](const TensorSpec& t, size_t&) {
    const ParamEntry& e = layout.at(t.name);
    switch (t.init) {
      case Init::normal:
        normal_fill(e, t.layer < 0 ? seed : seed + 1 + static_cast<uint64_t>(t.layer), t.stream);
        break;
      case Init::ones:
        for (size_t i = 0; i < e.numel; ++i) params[e.offset + i] = T(1);
        break;
      case Init::first_tap:  // [channels, taps]: tap 0 = 1, the others 0 (the identity)
        for (int64_t ch = 0; ch < e.shape[0]; ++ch) {
          for (int64_t j = 0; j < e.shape[1]; ++j)
            params[e.offset + static_cast<size_t>(ch * e.shape[1] + j)] = j == 0 ? T(1) : T(0);
        }
        break;
    }
  });
}

template void init_params<float>(const Config&, uint64_t, std::span<float>);
template void init_params<double>(const Config&, uint64_t, std::span<double>);

}  // namespace tinylm::evermind
