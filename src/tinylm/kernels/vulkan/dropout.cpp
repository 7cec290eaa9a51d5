#include "tinylm/kernels/vulkan/dropout.h"

#include <cmath>
#include <string_view>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

// shaders/dropout_common.glsl's push constants.
struct MaskPush {
  uint32_t n, first_quad, first_rem, site, step_lo, step_hi, seed_lo, seed_hi, threshold;
  float scale;
};
struct BackwardPush {
  uint32_t n;
  float scale;
};

void check_rate(std::string_view op, float rate) {
  check(rate >= 0.0f && rate < 1.0f, "vulkan ", op, ": rate must be in [0, 1), got ", rate);
}

void check_mask(std::string_view op, View mask, int64_t n) {
  check(mask.bytes() >= static_cast<size_t>(mask_words(n)) * 4, "vulkan ", op, ": mask holds ",
        mask.bytes(), " bytes, needs ", mask_words(n) * 4);
}

// The CPU's threshold and float scale (kernels/activation/dropout.cpp), and where the counters
// start.
MaskPush mask_push(std::string_view op, int64_t n, float rate, const DropoutSite& w) {
  check_rate(op, rate);
  constexpr uint64_t kMax = uint64_t{1} << 34;  // the counter's word holds g / 4
  check(w.first <= kMax && static_cast<uint64_t>(n) <= kMax - w.first, "vulkan ", op, ": elements ",
        w.first, " + ", n, " are out of range");
  return MaskPush{static_cast<uint32_t>(n),           static_cast<uint32_t>(w.first >> 2),
                  static_cast<uint32_t>(w.first & 3), w.site,
                  static_cast<uint32_t>(w.step),      static_cast<uint32_t>(w.step >> 32),
                  static_cast<uint32_t>(w.seed),      static_cast<uint32_t>(w.seed >> 32),
                  dropout_keep_threshold(rate),       dropout_keep_scale(rate)};
}

}  // namespace

void dropout_mask(Context& context, View mask, int64_t n, float rate, DropoutSite where) {
  check_count("dropout_mask", "n", n);
  check_mask("dropout_mask", mask, n);
  const MaskPush push = mask_push("dropout_mask", n, rate, where);
  if (n == 0) return;
  Context::Impl& c = context.impl();
  const Dispatch d{
      "dropout_mask", {mask}, bytes_of(push), groups_for(c, mask_words(n), kElementwiseGroup)};
  c.run({&d, 1});
}

void dropout_forward(Context& context, View y, View mask, View x, int64_t n, float rate,
                     DropoutSite where) {
  check_count("dropout_forward", "n", n);
  check_floats("dropout_forward", "y", y, n);
  check_floats("dropout_forward", "x", x, n);
  check_mask("dropout_forward", mask, n);
  const MaskPush push = mask_push("dropout_forward", n, rate, where);
  if (n == 0) return;
  Context::Impl& c = context.impl();
  const Dispatch d{"dropout_forward",
                   {y, mask, x},
                   bytes_of(push),
                   groups_for(c, mask_words(n), kElementwiseGroup)};
  c.run({&d, 1});
}

void dropout_backward(Context& context, View dx, View dy, View mask, int64_t n, float rate) {
  check_count("dropout_backward", "n", n);
  check_floats("dropout_backward", "dx", dx, n);
  check_floats("dropout_backward", "dy", dy, n);
  check_mask("dropout_backward", mask, n);
  check_rate("dropout_backward", rate);
  if (n == 0) return;
  const BackwardPush push{static_cast<uint32_t>(n), 1.0f / (1.0f - rate)};
  Context::Impl& c = context.impl();
  const Dispatch d{
      "dropout_backward", {dx, dy, mask}, bytes_of(push), groups_for(c, n, kElementwiseGroup)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
