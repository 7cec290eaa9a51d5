#include "tinylm/kernels/vulkan/elementwise.h"

#include <cstring>
#include <span>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

struct CountPush {
  uint32_t n;
};
struct ScalePush {
  uint32_t n;
  float s;
};
// shaders/reduce_common.glsl's push constants.
struct ReducePush {
  uint32_t n, groups, multiply;
  float factor;
};
struct AccumulatePush {
  uint32_t n, round_f16;
};

void check_scratch(std::string_view op, View scratch, int64_t n) {
  check(scratch.bytes() >= static_cast<size_t>(reduce_words(n)) * 4, "vulkan ", op,
        ": scratch holds ", scratch.bytes() / 4, " words, needs ", reduce_words(n));
}

// The first pass over n elements, then the second over its partials; returns word 0.
uint32_t reduce(Context& context, std::string_view first, std::string_view second, View scratch,
                View data, const ReducePush& push) {
  Context::Impl& c = context.impl();
  const Dispatch d[] = {{first, {scratch, data}, bytes_of(push), push.groups},
                        {second, {scratch}, bytes_of(push), 1}};
  c.run(d);
  uint32_t word = 0;  // word 0 alone
  scratch.buffer().download(std::as_writable_bytes(std::span<uint32_t, 1>(&word, 1)),
                            scratch.offset());
  return word;
}

}  // namespace

void fill(Context& context, View y, float value, int64_t n) {
  check_count("fill", "n", n);
  check_floats("fill", "y", y, n);
  if (n == 0) return;
  struct FillPush {
    uint32_t n, bits;
  } push{static_cast<uint32_t>(n), 0};
  std::memcpy(&push.bits, &value, sizeof value);
  Context::Impl& c = context.impl();
  const Dispatch d{"fill", {y}, bytes_of(push), groups_for(c, n, kElementwiseGroup)};
  c.run({&d, 1});
}

void copy(Context& context, Buffer& dst, int64_t dst_first, const Buffer& src, int64_t src_first,
          int64_t n) {
  check_count("copy", "n", n);
  check_count("copy", "dst_first", dst_first);
  check_count("copy", "src_first", src_first);
  check_floats("copy", "dst", dst, dst_first + n);
  check_floats("copy", "src", src, src_first + n);
  check(&dst != &src, "vulkan copy: dst and src are the same buffer");
  if (n == 0) return;
  const struct {
    uint32_t n, dst_first, src_first;
  } push{static_cast<uint32_t>(n), static_cast<uint32_t>(dst_first),
         static_cast<uint32_t>(src_first)};
  Context::Impl& c = context.impl();
  const Dispatch d{"copy", {&dst, &src}, bytes_of(push), groups_for(c, n, kElementwiseGroup)};
  c.run({&d, 1});
}

void add(Context& context, View y, View a, View b, int64_t n) {
  run_elementwise(context, "add", "add", {{"y", y}, {"a", a}, {"b", b}},
                  CountPush{static_cast<uint32_t>(n)}, n);
}

void scale(Context& context, View y, View x, float s, int64_t n) {
  run_elementwise(context, "scale", "scale", {{"y", y}, {"x", x}},
                  ScalePush{static_cast<uint32_t>(n), s}, n);
}

bool scale_and_check(Context& context, View g, View scratch, double factor, int64_t n) {
  check_count("scale_and_check", "n", n);
  check_floats("scale_and_check", "g", g, n);
  check_scratch("scale_and_check", scratch, n);
  if (n == 0) return true;
  const ReducePush push{static_cast<uint32_t>(n), static_cast<uint32_t>(reduce_groups(n)),
                        factor != 1.0 ? 1u : 0u, static_cast<float>(factor)};
  return reduce(context, "scale_check", "all_partials", scratch, g, push) != 0;
}

float sum_squares(Context& context, View scratch, View x, int64_t n) {
  check_count("sum_squares", "n", n);
  check_floats("sum_squares", "x", x, n);
  check_scratch("sum_squares", scratch, n);
  if (n == 0) return 0.0f;
  const ReducePush push{static_cast<uint32_t>(n), static_cast<uint32_t>(reduce_groups(n)), 0, 1.0f};
  const uint32_t bits = reduce(context, "sum_squares", "sum_partials", scratch, x, push);
  float total;
  std::memcpy(&total, &bits, sizeof total);
  return total;
}

void accumulate_and_clear(Context& context, View acc, View src, int64_t n, bool round_f16) {
  run_elementwise(context, "accumulate_and_clear", "accumulate_and_clear",
                  {{"acc", acc}, {"src", src}},
                  AccumulatePush{static_cast<uint32_t>(n), round_f16 ? 1u : 0u}, n);
}

}  // namespace tinylm::kernels::vulkan
