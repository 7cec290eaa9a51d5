#include "tinylm/kernels/vulkan/cast.h"

#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

// shaders/cast_*.comp's push constants.
struct CastPush {
  uint32_t n;
  uint32_t kind;  // 0: f16, 1: bf16
};

void check_halves(std::string_view op, std::string_view name, View b, int64_t n) {
  check(b.bytes() >= static_cast<size_t>(half_words(n)) * 4, "vulkan ", op, ": ", name, " holds ",
        b.bytes() / 2, " halves, needs ", half_words(n) * 2);
}

void run_cast(Context& context, std::string_view shader, View dst, View src, int64_t n,
              int64_t items, Half type) {
  if (n == 0) return;
  const CastPush push{static_cast<uint32_t>(n), type == Half::f16 ? 0u : 1u};
  Context::Impl& c = context.impl();
  const Dispatch d{shader, {dst, src}, bytes_of(push), groups_for(c, items, kElementwiseGroup)};
  c.run({&d, 1});
}

}  // namespace

void convert_to_half(Context& context, View dst, View src, int64_t n, Half type) {
  check_count("convert_to_half", "n", n);
  check_halves("convert_to_half", "dst", dst, n);
  check_floats("convert_to_half", "src", src, n);
  run_cast(context, "cast_narrow", dst, src, n, half_words(n), type);
}

void convert_from_half(Context& context, View dst, View src, int64_t n, Half type) {
  check_count("convert_from_half", "n", n);
  check_floats("convert_from_half", "dst", dst, n);
  check_halves("convert_from_half", "src", src, n);
  run_cast(context, "cast_widen", dst, src, n, n, type);
}

void round_to_half(Context& context, View dst, View src, int64_t n, Half type) {
  check_count("round_to_half", "n", n);
  check_floats("round_to_half", "dst", dst, n);
  check_floats("round_to_half", "src", src, n);
  run_cast(context, "cast_round", dst, src, n, n, type);
}

}  // namespace tinylm::kernels::vulkan
