#pragma once
// Matrix products and the bias of a linear layer as compute shaders, mirroring the CPU's
// kernels::gemm (kernels/matmul/gemm.h) and kernels::add_bias and bias_backward
// (kernels/matmul/bias.h). Row-major:
//   C[M×N] = alpha · op(A)[M×K] · op(B)[K×N] + beta · C
// op(X) is X or Xᵀ (Trans); ld is the row stride of each matrix as stored. beta = 0 ignores C's
// prior contents (NaNs included); K = 0 or alpha = 0 leave A and B unread (C = beta · C).
//
// Operands. Each of A and B is an Operand: a buffer, its row stride, the index of its first
// element and its element type, one of f32, f16 or bf16 (core/dtype.h's DType), chosen per
// operand at run time (a push constant: one shader for every pair, no variant per pair). f16 and
// bf16 are packed two per 32-bit word, the element at an even index in the low half (the bytes of
// a little-endian uint16_t array), and widened exactly to f32 in the shader. The pairs tinylm uses:
// f32 × f32 (training), f32 activations × f16 or bf16 weights (inference), bf16 × bf16 (the
// trainer's bf16 compute). C is always f32. The offsets let a product use weights that sit inside
// one parameter array (the GPT-2 trainer's mm and linear).
//
// Numerics. f32 accumulation: each output is one chain s = fma(a_ik, b_kj, s) over k = 0..K-1 in
// increasing order (no split K), then C = alpha · s (beta = 0) or fma(beta, C, alpha · s). So the
// result does not depend on the tiling, the workgroup count or scheduling: the same bits run after
// run on a device and driver. Against the exact product of the (widened) inputs, each output is
// within (K + 2) · 2^-24 · |alpha| · Σ_k |a_ik b_kj| + 2 · 2^-24 · |beta · C|: a chain of K
// roundings, then the scale and the add (Higham's γ_K bound). GLSL may run fma unfused (two
// roundings a step) where a device has no fused multiply-add, doubling the chain's term;
// tests/unit/gpu_matmul_test.cpp holds the shaders to twice the bound, which covers both.
//
// Implementation: 64×64 output tiles, one per workgroup of 256 invocations (the workgroups loop
// when there are more tiles than the device allows groups); K in slabs of 16 staged in shared
// memory (8.3 KiB: A's 64×16 and B's 16×64, widened to f32 once as they are staged); each
// invocation a 4×4 micro-tile of accumulators in registers. Elements outside M, N or K are
// staged as zeros and never stored; the K loop stops at K, so no padded term enters a chain.
// Products of at most 8 rows (a decode step) instead give each invocation a column of C and
// its chains, walking k in the same order from the same zero: the same bits as the tiles, which
// would be mostly padding there.
//
// Why no subgroup operations: sharing operands through subgroup shuffles instead of shared
// memory would not change a bit (each output is still one chain in k order), but the tile
// layout would then depend on the subgroup size, which differs by device (8 on lavapipe, 32 on
// NVIDIA, 64 on AMD) and would need a shader per size and a fallback; the shared-memory tile is
// the same on every device, so it is the one portable path tested everywhere. A faster path
// (cooperative matrices) belongs beside it, chosen by device features.
#include <cstdint>

#include "tinylm/core/dtype.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// A matrix (or a vector) in a device buffer. Indices are in elements of `type`, not bytes.
struct Operand {
  const Buffer* buffer = nullptr;
  int64_t ld = 0;           // row stride as stored (≥ its columns)
  int64_t offset = 0;       // index of element (0, 0)
  DType type = DType::f32;  // f32, f16 or bf16
};

// C[c_offset + i·ldc + j] = alpha · Σ_k op(A)[i,k] · op(B)[k,j] + beta · C[...], as gemm.h's
// gemm. A or B may have no buffer when K = 0 or alpha = 0. Bad sizes, strides, offsets, types
// or buffers too small throw tinylm::Error naming the argument ("vulkan gemm: ...").
void gemm(Context& context, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
          const Operand& A, const Operand& B, float beta, Buffer& C, int64_t ldc,
          int64_t c_offset = 0);

// y[r, j] += b[j] for every row r, as bias.h's add_bias. y: (rows, n) f32 from the view's start;
// b: n values from b.offset in b.type (b.ld is not used).
void add_bias(Context& context, View y, const Operand& b, int64_t rows, int64_t n);

// db[db_offset + j] += Σ_r dy[r, j], as bias.h's bias_backward: one invocation per column adds
// the rows to db's value in row order, the CPU kernel's order, so the bits equal the CPU's.
// dy: (rows, n) f32 from the view's start; db: f32.
void bias_backward(Context& context, Buffer& db, View dy, int64_t rows, int64_t n,
                   int64_t db_offset = 0);

}  // namespace tinylm::kernels::vulkan
