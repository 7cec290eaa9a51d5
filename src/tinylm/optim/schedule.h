#pragma once
// Learning-rate schedules: linear warmup from lr/warmup to lr over the first `warmup` steps
// (llm.c's), then constant, linear or cosine decay to min_lr at the last step. With warmup 0
// and min_lr 0, linear gives microgpt.py's lr * (1 - step / steps) to the bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>

#include "tinylm/core/enum_names.h"

namespace tinylm::optim {

enum class LrDecay : uint8_t { constant, linear, cosine };

// In the order the parser's error lists them.
inline constexpr EnumName<LrDecay> kLrDecayNames[] = {
    {LrDecay::cosine, "cosine"}, {LrDecay::linear, "linear"}, {LrDecay::constant, "constant"}};

inline LrDecay parse_lr_decay(std::string_view name) {
  return parse_of(kLrDecayNames, name, "learning-rate schedule");
}
inline std::string_view lr_decay_name(LrDecay d) { return name_of(kLrDecayNames, d); }

struct LrSchedule {
  double lr = 6e-4;
  double min_lr = 0.0;
  int64_t warmup = 0;
  int64_t steps = 1;  // the run's length; the decay ends at its last step
  LrDecay decay = LrDecay::cosine;

  // The rate of 0-based step s.
  double at(int64_t s) const {
    if (s < warmup) return lr * static_cast<double>(s + 1) / static_cast<double>(warmup);
    const double span = static_cast<double>(std::max<int64_t>(1, steps - warmup));
    const double progress = std::min(1.0, static_cast<double>(s - warmup) / span);
    switch (decay) {
      case LrDecay::constant:
        return lr;
      case LrDecay::linear:
        return min_lr + (lr - min_lr) * (1 - progress);
      case LrDecay::cosine:
        return min_lr + (lr - min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
    }
    return lr;
  }
};

}  // namespace tinylm::optim
