#pragma once
// What every op (kernels/vulkan/*.cpp) does with its arguments before it records a dispatch:
// range checks that name the op, workgroup counts, push constants as bytes. Internal to
// kernels/vulkan/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"

namespace tinylm::kernels::vulkan {

// The shaders' local_size_x (shaders/*.comp).
constexpr int64_t kElementwiseGroup = 256;
constexpr int64_t kColumnGroup = 64;

// Shaders index with 32-bit unsigned ints and step by the whole grid: sizes stay below 2^31 so
// no index wraps.
constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();

inline void check_count(std::string_view op, std::string_view what, int64_t value) {
  check(value >= 0 && value <= kMaxCount, "vulkan ", op, ": ", what, " = ", value,
        " is out of range (0 to 2^31 - 1)");
}

inline void check_floats(std::string_view op, std::string_view name, const View& b, int64_t count) {
  check(b.bytes() >= static_cast<size_t>(count) * sizeof(float), "vulkan ", op, ": ", name,
        " holds ", b.bytes() / sizeof(float), " floats, needs ", count);
}

// Workgroups for `items` of work, `per_group` each; the shaders loop over the rest.
inline uint32_t groups_for(const Context::Impl& c, int64_t items, int64_t per_group) {
  const int64_t g = (items + per_group - 1) / per_group;
  return static_cast<uint32_t>(std::clamp<int64_t>(g, 1, c.max_groups));
}

template <class Push>
std::span<const std::byte> bytes_of(const Push& p) {
  return std::as_bytes(std::span<const Push, 1>(&p, 1));
}

// A buffer an op takes, by the name its errors use.
struct Named {
  std::string_view name;
  View view;
};

// An op over n elements, one invocation each (workgroups of kElementwiseGroup): n checked, each
// buffer checked to hold n floats, then `shader` dispatched over them, bound in order, with
// `push`; nothing is recorded when n is 0.
template <class Push>
void run_elementwise(Context& context, std::string_view op, std::string_view shader,
                     std::initializer_list<Named> buffers, const Push& push, int64_t n) {
  check_count(op, "n", n);
  std::vector<View> views;
  for (const Named& b : buffers) {
    check_floats(op, b.name, b.view, n);
    views.push_back(b.view);
  }
  if (n == 0) return;
  Context::Impl& c = context.impl();
  const Dispatch d{shader, std::move(views), bytes_of(push), groups_for(c, n, kElementwiseGroup)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
