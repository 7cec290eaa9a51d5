#include "tinylm/kernels/vulkan/matmul.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

// shaders/matmul.comp's tile edge.
constexpr int64_t kTile = 64;
// Products of at most this many rows take shaders/matmul_rows.comp (its kRows), in workgroups of
// kRowsGroup columns.
constexpr int64_t kFewRows = 8;
constexpr int64_t kRowsGroup = 64;

struct GemmPush {
  uint32_t M, N, K;
  float alpha, beta;
  uint32_t lda, ldb, ldc;
  uint32_t a_offset, b_offset, c_offset;
  uint32_t a_type, b_type;
  uint32_t ta, tb;
};
struct BiasPush {
  uint32_t count, n, b_offset, b_type;
};
struct BiasBackwardPush {
  uint32_t rows, n, db_offset;
};

// shaders/matmul_types.glsl's codes.
uint32_t type_code(std::string_view op, std::string_view name, DType t) {
  check(t == DType::f32 || t == DType::f16 || t == DType::bf16, "vulkan ", op, ": ", name, " is ",
        dtype_name(t), ", not f32, f16 or bf16");
  return t == DType::f32 ? 0 : t == DType::f16 ? 1 : 2;
}

// Elements a rows × cols matrix with row stride ld spans from `offset` (0 when it is empty).
int64_t span_of(int64_t offset, int64_t rows, int64_t cols, int64_t ld) {
  return rows > 0 && cols > 0 ? offset + (rows - 1) * ld + cols : 0;
}

// The buffer holds `count` elements of x.type from its start: f32 as 4 bytes each, f16 and bf16
// as whole 32-bit words of two (the shaders read words).
void check_holds(std::string_view op, std::string_view name, const Operand& x, int64_t count) {
  check(x.buffer != nullptr, "vulkan ", op, ": ", name, " has no buffer");
  check_count(op, cat(name, "'s extent (offset + last element + 1)"), count);
  const size_t words = x.buffer->bytes() / 4;
  const bool half = x.type != DType::f32;
  const int64_t holds = static_cast<int64_t>(half ? words * 2 : words);
  check(holds >= count, "vulkan ", op, ": ", name, " holds ", holds, " ", dtype_name(x.type),
        " values, needs ", count);
}

}  // namespace

void gemm(Context& context, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
          const Operand& A, const Operand& B, float beta, Buffer& C, int64_t ldc,
          int64_t c_offset) {
  constexpr std::string_view op = "gemm";
  check_count(op, "M", M);
  check_count(op, "N", N);
  check_count(op, "K", K);
  // Columns of each matrix as stored (row-major), as gemm.cpp checks them.
  const bool at = ta == Trans::Yes, bt = tb == Trans::Yes;
  const int64_t a_rows = at ? K : M, a_cols = at ? M : K;
  const int64_t b_rows = bt ? N : K, b_cols = bt ? K : N;
  check(A.ld >= std::max<int64_t>(1, a_cols) && A.ld <= kMaxCount, "vulkan gemm: lda ", A.ld, " < ",
        a_cols, " columns of A as stored (or past 2^31 - 1)");
  check(B.ld >= std::max<int64_t>(1, b_cols) && B.ld <= kMaxCount, "vulkan gemm: ldb ", B.ld, " < ",
        b_cols, " columns of B as stored (or past 2^31 - 1)");
  check(ldc >= std::max<int64_t>(1, N) && ldc <= kMaxCount, "vulkan gemm: ldc ", ldc, " < N=", N,
        " (or past 2^31 - 1)");
  check_count(op, "A's offset", A.offset);
  check_count(op, "B's offset", B.offset);
  check_count(op, "C's offset", c_offset);
  const uint32_t a_type = type_code(op, "A", A.type), b_type = type_code(op, "B", B.type);
  const Operand c_operand{&C, ldc, c_offset, DType::f32};
  check_holds(op, "C", c_operand, span_of(c_offset, M, N, ldc));
  // K = 0 or alpha = 0: C = beta·C without reading A or B (which may then have no buffer).
  const bool reads_ab = K > 0 && alpha != 0.0f;
  if (reads_ab) {
    check_holds(op, "A", A, span_of(A.offset, a_rows, a_cols, A.ld));
    check_holds(op, "B", B, span_of(B.offset, b_rows, b_cols, B.ld));
  }
  if (M == 0 || N == 0) return;

  Context::Impl& c = context.impl();
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  const GemmPush push{
      u32(M),    u32(N),       u32(reads_ab ? K : 0), alpha,         beta,          u32(A.ld),
      u32(B.ld), u32(ldc),     u32(A.offset),         u32(B.offset), u32(c_offset), a_type,
      b_type,    at ? 1u : 0u, bt ? 1u : 0u};
  // Unread operands are bound to C's buffer: the shader never touches them.
  const Buffer* a = reads_ab ? A.buffer : &C;
  const Buffer* b = reads_ab ? B.buffer : &C;
  if (M <= kFewRows) {  // a column per invocation (shaders/matmul_rows.comp): the same bits
    const Dispatch d{"matmul_rows", {&C, a, b}, bytes_of(push), groups_for(c, N, kRowsGroup)};
    c.run({&d, 1});
    return;
  }
  const int64_t tiles = ((M + kTile - 1) / kTile) * ((N + kTile - 1) / kTile);
  const Dispatch d{"matmul", {&C, a, b}, bytes_of(push), groups_for(c, tiles, 1)};
  c.run({&d, 1});
}

void add_bias(Context& context, View y, const Operand& b, int64_t rows, int64_t n) {
  constexpr std::string_view op = "add_bias";
  check_count(op, "rows", rows);
  check_count(op, "n", n);
  check_count(op, "rows * n", rows * n);
  check_count(op, "b's offset", b.offset);
  const uint32_t b_type = type_code(op, "b", b.type);
  check_floats(op, "y", y, rows * n);
  check_holds(op, "b", b, n > 0 ? b.offset + n : 0);
  if (rows == 0 || n == 0) return;
  Context::Impl& c = context.impl();
  const BiasPush push{static_cast<uint32_t>(rows * n), static_cast<uint32_t>(n),
                      static_cast<uint32_t>(b.offset), b_type};
  const Dispatch d{
      "matmul_add_bias", {y, b.buffer}, bytes_of(push), groups_for(c, rows * n, kElementwiseGroup)};
  c.run({&d, 1});
}

void bias_backward(Context& context, Buffer& db, View dy, int64_t rows, int64_t n,
                   int64_t db_offset) {
  constexpr std::string_view op = "bias_backward";
  check_count(op, "rows", rows);
  check_count(op, "n", n);
  check_count(op, "rows * n", rows * n);
  check_count(op, "db's offset", db_offset);
  check_count(op, "db_offset + n", db_offset + n);
  check_floats(op, "dy", dy, rows * n);
  check_floats(op, "db", db, n > 0 ? db_offset + n : 0);
  if (rows == 0 || n == 0) return;
  Context::Impl& c = context.impl();
  const BiasBackwardPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(n),
                              static_cast<uint32_t>(db_offset)};
  const Dispatch d{
      "matmul_bias_backward", {&db, dy}, bytes_of(push), groups_for(c, n, kColumnGroup)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
