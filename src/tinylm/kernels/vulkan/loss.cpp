#include "tinylm/kernels/vulkan/loss.h"

#include <string_view>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

struct RowsPush {
  uint32_t rows, V;
};
struct ScalePush {
  uint32_t rows, V;
  float scale;
};

// The shape's checks, and the targets': int32, one per row.
void check_shape(std::string_view op, View logits, View targets, int64_t rows, int64_t V) {
  check_count(op, "rows", rows);
  check_count(op, "V", V);
  check_count(op, "rows * V", rows * V);
  check(rows == 0 || V >= 1, "vulkan ", op, ": V = 0 with ", rows, " rows (a row needs a class)");
  check_floats(op, "logits", logits, rows * V);
  check(targets.bytes() >= static_cast<size_t>(rows) * sizeof(int32_t), "vulkan ", op,
        ": targets holds ", targets.bytes() / sizeof(int32_t), " ints, needs ", rows);
}

}  // namespace

void cross_entropy_forward(Context& context, View losses, View lse, View logits, View targets,
                           int64_t rows, int64_t V) {
  check_shape("cross_entropy_forward", logits, targets, rows, V);
  check_floats("cross_entropy_forward", "losses", losses, rows);
  check_floats("cross_entropy_forward", "lse", lse, rows);
  if (rows == 0) return;
  Context::Impl& c = context.impl();
  const RowsPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(V)};
  // One workgroup per row.
  const Dispatch d{"cross_entropy_forward",
                   {losses, lse, logits, targets},
                   bytes_of(push),
                   groups_for(c, rows, 1)};
  c.run({&d, 1});
}

double sum_losses(View losses, int64_t rows) {
  check_count("sum_losses", "rows", rows);
  check_floats("sum_losses", "losses", losses, rows);
  double total = 0;
  for (const float loss : download_floats(losses, static_cast<size_t>(rows))) total += loss;
  return total;
}

void cross_entropy_backward(Context& context, View dlogits, View logits, View lse, View targets,
                            int64_t rows, int64_t V, float scale) {
  check_shape("cross_entropy_backward", logits, targets, rows, V);
  check_floats("cross_entropy_backward", "dlogits", dlogits, rows * V);
  check_floats("cross_entropy_backward", "lse", lse, rows);
  if (rows == 0) return;
  Context::Impl& c = context.impl();
  const ScalePush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(V), scale};
  const Dispatch d{"cross_entropy_backward",
                   {dlogits, logits, lse, targets},
                   bytes_of(push),
                   groups_for(c, rows, 1)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
