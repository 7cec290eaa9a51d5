#pragma once
// What every op (kernels/vulkan/*.cpp) does with its arguments before it records a dispatch:
// range checks that name the op, workgroup counts, push constants as bytes. Internal to
// kernels/vulkan/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

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

}  // namespace tinylm::kernels::vulkan
