#include "tinylm/kernels/vulkan/ops.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

struct CountPush {
  uint32_t n;
};
struct RowsPush {
  uint32_t rows, C;
};
struct NormPush {
  uint32_t rows, C;
  float eps;
};

}  // namespace

void gelu_forward(Context& context, View y, View x, int64_t n) {
  run_elementwise(context, "gelu_forward", "gelu_forward", {{"y", y}, {"x", x}},
                  CountPush{static_cast<uint32_t>(n)}, n);
}

void gelu_backward(Context& context, View dx, View dy, View x, int64_t n) {
  run_elementwise(context, "gelu_backward", "gelu_backward", {{"dx", dx}, {"dy", dy}, {"x", x}},
                  CountPush{static_cast<uint32_t>(n)}, n);
}

void layernorm_forward(Context& context, View y, View mean, View rstd, View x, View w, View b,
                       int64_t rows, int64_t C, float eps) {
  check_count("layernorm_forward", "rows", rows);
  check_count("layernorm_forward", "C", C);
  check_count("layernorm_forward", "rows * C", rows * C);
  check_floats("layernorm_forward", "y", y, rows * C);
  check_floats("layernorm_forward", "x", x, rows * C);
  check_floats("layernorm_forward", "mean", mean, rows);
  check_floats("layernorm_forward", "rstd", rstd, rows);
  check_floats("layernorm_forward", "w", w, C);
  check_floats("layernorm_forward", "b", b, C);
  if (rows == 0 || C == 0) return;
  Context::Impl& c = context.impl();
  const NormPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(C), eps};
  // One workgroup per row.
  const Dispatch d{
      "layernorm_forward", {y, mean, rstd, x, w, b}, bytes_of(push), groups_for(c, rows, 1)};
  c.run({&d, 1});
}

void layernorm_backward(Context& context, View dx, View dw, View db, View dy, View x, View w,
                        View mean, View rstd, int64_t rows, int64_t C) {
  check_count("layernorm_backward", "rows", rows);
  check_count("layernorm_backward", "C", C);
  check_count("layernorm_backward", "rows * C", rows * C);
  for (const Named& b : {Named{"dx", dx}, Named{"dy", dy}, Named{"x", x}})
    check_floats("layernorm_backward", b.name, b.view, rows * C);
  for (const Named& b : {Named{"dw", dw}, Named{"db", db}, Named{"w", w}})
    check_floats("layernorm_backward", b.name, b.view, C);
  check_floats("layernorm_backward", "mean", mean, rows);
  check_floats("layernorm_backward", "rstd", rstd, rows);
  if (rows == 0 || C == 0) return;
  Context::Impl& c = context.impl();
  const RowsPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(C)};
  // dx: one workgroup per row (its two sums); dw, db: one invocation per column, summing the
  // rows in order. Two dispatches instead of float atomics.
  const Dispatch d[] = {
      {"layernorm_backward_dx", {dx, dy, x, w, mean, rstd}, bytes_of(push), groups_for(c, rows, 1)},
      {"layernorm_backward_params",
       {dw, db, dy, x, mean, rstd},
       bytes_of(push),
       groups_for(c, C, kColumnGroup)}};
  c.run(d);
}

}  // namespace tinylm::kernels::vulkan
