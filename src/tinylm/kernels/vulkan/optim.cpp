#include "tinylm/kernels/vulkan/optim.h"

#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

// shaders/adam_update.comp's push constants.
struct AdamPush {
  uint32_t n;
  float lr, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, c1, c2, decay, scale;
};
struct SgdPush {
  uint32_t n;
  float lr;
};

}  // namespace

void adam_update(Context& context, View p, View g, View m, View v, int64_t n, const AdamStep& s) {
  // 1 - beta in double, then rounded: closer to the CPU's than 1 - float(beta).
  const AdamPush push{static_cast<uint32_t>(n),        static_cast<float>(s.lr),
                      static_cast<float>(s.beta1),     static_cast<float>(1 - s.beta1),
                      static_cast<float>(s.beta2),     static_cast<float>(1 - s.beta2),
                      static_cast<float>(s.eps),       static_cast<float>(s.c1),
                      static_cast<float>(s.c2),        static_cast<float>(s.decay),
                      static_cast<float>(s.grad_scale)};
  run_elementwise(context, "adam_update", "adam_update", {{"p", p}, {"g", g}, {"m", m}, {"v", v}},
                  push, n);
}

void sgd_update(Context& context, View p, View g, int64_t n, double lr) {
  run_elementwise(context, "sgd_update", "sgd_update", {{"p", p}, {"g", g}},
                  SgdPush{static_cast<uint32_t>(n), static_cast<float>(lr)}, n);
}

}  // namespace tinylm::kernels::vulkan
