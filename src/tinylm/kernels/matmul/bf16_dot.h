#pragma once
// Products of bf16 weights with activations rounded to bf16, on AVX512_BF16's VDPBF16PS: two
// multiply-adds per lane and instruction, twice the f32 kernels' (stream.h) at the same rate,
// for the arithmetic-bound products of a batch (a server's streams, a prompt). An opt-in mode
// (gpt2::Model::set_activations(bf16)): rounding the activations changes the results, which
// stay within bf16's precision of stream.h's.
//
// Contract (Bf16Unit::vdpbf16ps): the instruction's arithmetic, fixed by bf16_dot_reference.h's
// plain loops.
//  - Each activation is rounded to bf16 to nearest even; one below 2^-126 in magnitude becomes
//    zero, and a subnormal bf16 weight reads as zero (the instruction reads both so).
//  - A pair step adds input 2p + 1's product to a float chain, then input 2p's, each an exact
//    product and one rounding, a result below 2^-126 in magnitude flushed to +0.
//  - matmul_in_out_bf16: each output sums its inputs in chunks of 64, one chain from +0 over a
//    chunk's 32 pairs in order, the chunks then added to the bias in chunk order.
//  - matmul_out_in_bf16: each output is 16 lane chains from +0, lane j over the pairs
//    (32 k + 2 j, 32 k + 2 j + 1) for k in order, the lanes then summed as vec.h's hsum does.
// So a row's results are the same bits alone or among other rows, at any thread count. Where
// CPUs may part from the reference, all far below real activations (docs/performance-history.md): a
// sum just below 2^-126 that rounds up to it is flushed by AMD Zen 5 (tininess detected before
// rounding) and kept by the reference; and whether a CPU flushes a product below 2^-126 before
// adding it is measured on AMD Zen 5 only (it does not).
//
// These kernels run only where bf16_dot_available(); elsewhere every call throws Error (the
// other levels have no such instruction, and emulating it would be slower than stream.h).
//
// Where the CPU has AMX-BF16 the products run on AMX tiles instead (Bf16Unit::amx, the
// default there): TDPBF16PS multiplies a tile of up to 16 rows by 16 columns in one
// instruction, which makes a batch's products bound by memory, not arithmetic. Its arithmetic
// is another, and not documented past the single pair: one pair a step adds fl(p0 + p1) to the
// sum, but the 8 or 16 pairs of the steps used here come out as no simple model does
// (tools/amx_probe.cpp measures it). So the tests hold these kernels to the exact sums within
// recursive summation's bound, not bit for bit. Each output is one chain from +0 over its
// inputs, 16 (in_out, the bias added after) or 32 (out_in) at a time, whatever the rows: a
// row's results are the same bits alone or among other rows, at any thread count, on one CPU.
#include <cstdint>
#include <string>
#include <string_view>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

// The CPU has AVX512_BF16 and the active level (isa.h) is avx512.
bool bf16_dot_available();
// Throws Error "<what> need(s) ...", saying which of the two is missing, unless available.
void require_bf16_dot(const char* what);

// The instruction the products run on.
enum class Bf16Unit : uint8_t { vdpbf16ps, amx };
std::string_view bf16_unit_name(Bf16Unit unit);
// TINYLM_BF16_UNIT ("vdpbf16ps" or "amx") when set, else amx where cpu_has_amx_bf16(), else
// vdpbf16ps. The first call reads the environment and throws Error for an unknown name or amx
// where the CPU lacks it.
Bf16Unit bf16_dot_unit();
// Switches the unit (tests and benchmarks); throws Error for amx where the CPU lacks it. Not
// meant to race with running kernels.
void set_bf16_dot_unit(Bf16Unit unit);
// What `--activations bf16` runs on at the active level, for --version: the unit's name where
// bf16_dot_available(), else "none (...)" saying what they need.
std::string bf16_products_summary();

// Layout of a Conv1D matrix W (nin, nout) for matmul_in_out_bf16: stream.h's Layout::tiles
// (16 x 16 tiles by band of 16 inputs, then by column), each tile holding its 8 input pairs in
// order, a pair as 16 columns' (W(2p, c), W(2p + 1, c)) side by side: one 64-byte vector is what
// VDPBF16PS multiplies. Converted in place from and back to Layout::tiles (can_tile must hold).
void tiles_to_pairs(Bf16* w, int64_t nin, int64_t nout);
void pairs_to_tiles(Bf16* w, int64_t nin, int64_t nout);

// y = x W + b with W in the pairs layout. y: (rows, nout), x: (rows, nin), b: (nout) or null.
// nin and nout must be multiples of 16.
void matmul_in_out_bf16(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                        int64_t nin, int64_t nout);

// y[r][o] = x[r] . W[o] with W (nout, nin) row-major (the tied head). nin: a multiple of 32.
void matmul_out_in_bf16(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                        int64_t nout);

}  // namespace tinylm::kernels
