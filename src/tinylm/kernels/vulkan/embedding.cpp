#include "tinylm/kernels/vulkan/embedding.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

struct ForwardPush {
  uint32_t rows, C, first, period, has_positions, table_type, vocab, transposed;
};
struct BackwardPush {
  uint32_t rows, C, period, has_positions;
};

// The checks both directions share; returns min(period, rows): the rows of positions used
// (r % period is the same for every row with it).
int64_t check_shape(std::string_view op, View tokens, int64_t rows, int64_t C, int64_t vocab,
                    int64_t period) {
  check_count(op, "rows", rows);
  check_count(op, "C", C);
  check_count(op, "vocab", vocab);
  check_count(op, "rows * C", rows * C);
  check_count(op, "vocab * C", vocab * C);
  check(period >= 1, "vulkan ", op, ": period = ", period, " must be at least 1");
  check(rows == 0 || vocab >= 1, "vulkan ", op, ": vocab = 0 with ", rows, " rows");
  check(tokens.bytes() >= static_cast<size_t>(rows) * sizeof(int32_t), "vulkan ", op,
        ": tokens holds ", tokens.bytes() / sizeof(int32_t), " ints, needs ", rows);
  return std::min(period, rows);
}

// Checks the table holds (vocab, C) values of table_type; the shaders' code for the type.
uint32_t table_code(std::string_view op, View table, DType table_type, int64_t vocab, int64_t C) {
  check(table_type == DType::f32 || table_type == DType::f16 || table_type == DType::bf16,
        "vulkan ", op, ": a table of ", dtype_name(table_type), " (f32, f16 or bf16 only)");
  // The shader reads whole 32-bit words: an odd count of 16-bit values is padded to one.
  const size_t table_bytes = (static_cast<size_t>(vocab * C) * dtype_size(table_type) + 3) / 4 * 4;
  check(table.bytes() >= table_bytes, "vulkan ", op, ": table holds ", table.bytes(),
        " bytes, needs ", table_bytes, " (", vocab, " x ", C, " ", dtype_name(table_type), ")");
  return table_type == DType::f32 ? 0 : table_type == DType::f16 ? 1 : 2;
}

}  // namespace

void embedding_forward(Context& context, View x, View tokens, View table, DType table_type,
                       std::optional<View> positions, int64_t rows, int64_t C, int64_t vocab,
                       int64_t first, int64_t period, TableLayout layout) {
  constexpr std::string_view op = "embedding_forward";
  const int64_t p = check_shape(op, tokens, rows, C, vocab, period);
  check_floats(op, "x", x, rows * C);
  const uint32_t type = table_code(op, table, table_type, vocab, C);
  if (positions) {
    check_count(op, "first", first);
    check_count(op, "(first + period) * C", (first + p) * C);
    check_floats(op, "positions", *positions, (first + p) * C);
  }
  if (rows == 0 || C == 0) return;
  Context::Impl& c = context.impl();
  const ForwardPush push{static_cast<uint32_t>(rows),
                         static_cast<uint32_t>(C),
                         static_cast<uint32_t>(positions ? first : 0),
                         static_cast<uint32_t>(std::max<int64_t>(p, 1)),
                         positions ? 1u : 0u,
                         type,
                         static_cast<uint32_t>(vocab),
                         layout == TableLayout::transposed ? 1u : 0u};
  // Without positions the table stands in at binding 3 (never read).
  const Dispatch d{"embedding_forward",
                   {x, tokens, table, positions ? *positions : table},
                   bytes_of(push),
                   groups_for(c, rows * C, kElementwiseGroup)};
  c.run({&d, 1});
}

void embedding_forward_rows(Context& context, View x, View tokens, View table, DType table_type,
                            TableLayout layout, View positions, View where, int64_t rows, int64_t C,
                            int64_t vocab, int64_t n_positions) {
  constexpr std::string_view op = "embedding_forward_rows";
  check_shape(op, tokens, rows, C, vocab, 1);
  check_floats(op, "x", x, rows * C);
  const uint32_t type = table_code(op, table, table_type, vocab, C);
  check_count(op, "n_positions * C", n_positions * C);
  check_floats(op, "positions", positions, n_positions * C);
  check(where.bytes() >= static_cast<size_t>(rows) * 2 * sizeof(int32_t), "vulkan ", op,
        ": where holds ", where.bytes() / sizeof(int32_t), " ints, needs ", 2 * rows);
  if (rows == 0 || C == 0) return;
  const struct {
    uint32_t rows, C, table_type, vocab, transposed;
  } push{static_cast<uint32_t>(rows), static_cast<uint32_t>(C), type, static_cast<uint32_t>(vocab),
         layout == TableLayout::transposed ? 1u : 0u};
  Context::Impl& c = context.impl();
  const Dispatch d{"embedding_rows",
                   {x, tokens, table, positions, where},
                   bytes_of(push),
                   groups_for(c, rows * C, kElementwiseGroup)};
  c.run({&d, 1});
}

void embedding_backward(Context& context, View dtable, std::optional<View> dpositions, View dx,
                        View tokens, int64_t rows, int64_t C, int64_t vocab, int64_t period) {
  constexpr std::string_view op = "embedding_backward";
  const int64_t p = check_shape(op, tokens, rows, C, vocab, period);
  check_floats(op, "dtable", dtable, vocab * C);
  check_floats(op, "dx", dx, rows * C);
  if (dpositions) check_floats(op, "dpositions", *dpositions, p * C);
  if (rows == 0 || C == 0) return;
  Context::Impl& c = context.impl();
  const BackwardPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(C),
                          static_cast<uint32_t>(std::max<int64_t>(p, 1)), dpositions ? 1u : 0u};
  // One invocation per column; without positions dtable stands in at binding 1 (never touched).
  const Dispatch d{"embedding_backward",
                   {dtable, dpositions ? *dpositions : dtable, dx, tokens},
                   bytes_of(push),
                   groups_for(c, C, kColumnGroup)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
