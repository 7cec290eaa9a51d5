#include "tinylm/kernels/vulkan/sample.h"

#include <cmath>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

struct RowsPush {
  uint32_t rows, V;
};
struct TemperaturePush {
  uint32_t rows, V;
  float temperature;
};

void check_logits(std::string_view op, View logits, int64_t rows, int64_t V) {
  check_count(op, "rows", rows);
  check_count(op, "V", V);
  check_count(op, "rows * V", rows * V);
  check(rows == 0 || V >= 1, "vulkan ", op, ": V = 0 with ", rows, " rows");
  check_floats(op, "logits", logits, rows * V);
}

}  // namespace

void argmax_rows(Context& context, View best, View logits, int64_t rows, int64_t V) {
  check_logits("argmax_rows", logits, rows, V);
  check(best.bytes() >= static_cast<size_t>(rows) * sizeof(int32_t),
        "vulkan argmax_rows: best holds ", best.bytes() / sizeof(int32_t), " ints, needs ", rows);
  if (rows == 0) return;
  Context::Impl& c = context.impl();
  const RowsPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(V)};
  // One workgroup per row.
  const Dispatch d{"argmax_rows", {best, logits}, bytes_of(push), groups_for(c, rows, 1)};
  c.run({&d, 1});
}

void softmax_temperature(Context& context, View probs, View logits, int64_t rows, int64_t V,
                         float temperature) {
  check_logits("softmax_temperature", logits, rows, V);
  check_floats("softmax_temperature", "probs", probs, rows * V);
  check(temperature > 0 && std::isfinite(temperature),
        "vulkan softmax_temperature: temperature = ", temperature,
        " must be > 0 and finite (0 is greedy: argmax_rows)");
  if (rows == 0) return;
  Context::Impl& c = context.impl();
  const TemperaturePush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(V), temperature};
  const Dispatch d{"softmax_temperature", {probs, logits}, bytes_of(push), groups_for(c, rows, 1)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
