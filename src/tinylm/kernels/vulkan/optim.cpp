#include "tinylm/kernels/vulkan/optim.h"

#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

// shaders/adam_update.comp's push constants: the count, then the CPU's float scalars.
struct AdamPush {
  uint32_t n;
  AdamStepF32 step;
};
static_assert(sizeof(AdamPush) == 11 * 4, "the shader reads a uint and ten floats, packed");
struct SgdPush {
  uint32_t n;
  float lr;
};

}  // namespace

void adam_update(Context& context, View p, View g, View m, View v, int64_t n, const AdamStep& s) {
  const AdamPush push{static_cast<uint32_t>(n), AdamStepF32(s)};
  run_elementwise(context, "adam_update", "adam_update", {{"p", p}, {"g", g}, {"m", m}, {"v", v}},
                  push, n);
}

void sgd_update(Context& context, View p, View g, int64_t n, double lr) {
  run_elementwise(context, "sgd_update", "sgd_update", {{"p", p}, {"g", g}},
                  SgdPush{static_cast<uint32_t>(n), static_cast<float>(lr)}, n);
}

}  // namespace tinylm::kernels::vulkan
