#pragma once
// The Q8_0 and Q4_0 products with the activations quantized too, as ggml computes its own: each
// row of x is quantized per block of 32 to Q8_0 (quantize_q8_0's bytes), and each block's 32
// products are one integer sum, scaled once. An option beside matmul.h's f32 activations: x is
// rounded to 8 bits (a step of 1/127 of its block's largest magnitude), and in return a weight
// costs a fraction of the arithmetic, which lets decode reach the memory's limit where widening
// every weight to f32 could not (AVX2).
//
// The weights are read packed (pack_int8): 16 outputs' blocks interleaved, so that a register's
// lanes are outputs and a block's products sum within a lane (in ggml's layout of whole rows
// they would have to be reduced across lanes, at AVX2 more work than the products themselves).
//
// Contract, for row r, output o, with qw the weight's integers (q for Q8_0, nibble - 8 for Q4_0)
// and qx the row's Q8_0 integers:
//   P[k] = sum of qw[j] * qx[j] over the block's j < 32, in int32 (exact);
//   chain = fma(float(P[k]), dw[k] * dx[k], chain) over blocks k = 0, 1, ... from zero, the
//     two fp16 scales' product exact in f32;
//   y[r][o] = chain + (b ? b[o] : 0).
// The same bits at every level, for any thread count, and for a row computed alone (decode) or
// among others (prefill).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tinylm/core/dtype.h"

namespace tinylm::kernels {

// The packed layout: the first 16 * (nout / 16) outputs in groups of 16, each group its nin / 32
// blocks in turn; block k of a group holds its 16 outputs' block k, their scales first, then
// their integers 4 at a time (steps of 4 weights, each step the 16 outputs' 4 bytes in turn):
//   Q8_0: qs[s][4 o + i] = output o's qs[4 s + i];
//   Q4_0: qs[s][4 o + i] = output o's qs[4 s + i] (nibbles of weights 4 s + i, 4 s + i + 16).
// The last nout % 16 outputs follow as ggml's rows. A group takes the bytes of its 16 rows, so
// the packed matrix is exactly as large as ggml's and can be packed in place.
inline constexpr int kPackedOutputs = 16;  // a group's outputs
struct BlockQ8_0x16 {
  uint8_t d[16][2];   // output o's fp16 scale, little-endian
  uint8_t qs[8][64];  // signed
};
struct BlockQ4_0x16 {
  uint8_t d[16][2];
  uint8_t qs[4][64];
};
static_assert(sizeof(BlockQ8_0x16) == 16 * 34 && alignof(BlockQ8_0x16) == 1);
static_assert(sizeof(BlockQ4_0x16) == 16 * 18 && alignof(BlockQ4_0x16) == 1);
// A packed block's steps (of 4 weights; Q4_0's two nibbles make a step 8 weights).
template <class Packed>
inline constexpr int kSteps = sizeof(Packed::qs) / sizeof(Packed::qs[0]);

// (nout, nin) q8_0 or q4_0 weights (else Error) from ggml's layout to the packed one, and back;
// out may be w (in place). nin: a positive multiple of 32 (else Error).
void pack_int8(DType t, void* out, const void* w, int64_t nin, int64_t nout);
void unpack_int8(DType t, void* out, const void* packed, int64_t nin, int64_t nout);
// Output `row`'s nin / 32 blocks, in ggml's layout, from packed weights (row in [0, nout), else
// Error).
void unpack_int8_row(DType t, void* out, const void* packed, int64_t nin, int64_t nout,
                     int64_t row);

// y: (rows, nout)   x: (rows, nin)   w: q8_0 or q4_0 weights packed (pack_int8); other types are
// an Error   b: (nout) or null. nin: a positive multiple of 32 (else Error).
void quant_matmul_int8(DType t, float* y, const float* x, const void* w, const float* b,
                       int64_t rows, int64_t nin, int64_t nout);

// The unit that sums the byte products: VPDPBUSD where the level has it on this CPU
// (AVX512-VNNI at avx512: Zen 4 and 5, Ice Lake and later Xeons; AVX-VNNI at avx2: Alder Lake
// and later cores, Sapphire Rapids and later Xeons), else VPMADDUBSW, VPMADDWD and an add; at
// avx512, AMX-INT8 tiles where the CPU has them (Sapphire Rapids and later Xeons: 16 rows by 16
// outputs a block in one instruction; rows fewer than 4, such as decode's one, stay on
// VPDPBUSD; quant/int_amx.h). The sums are exact integers on every unit, so the unit changes no
// bits. TINYLM_INT8_UNIT (vpmaddubsw, vpdpbusd or amx) chooses, else the best the CPU offers;
// vpdpbusd is offered where the CPU has either VNNI and amx where it has AMX-INT8, and a level
// without the unit takes the best it has (int8_products_summary says which runs).
enum class Int8Unit { vpmaddubsw, vpdpbusd, amx };
Int8Unit int8_dot_unit();
std::string_view int8_unit_name(Int8Unit u);  // "vpmaddubsw", "vpdpbusd", "amx"
// Switches the unit (tests, benchmarks); throws Error for a unit the CPU lacks.
void set_int8_dot_unit(Int8Unit u);
// What the active level's 8-bit products run on, for --version: "amx (AMX-INT8)",
// "vpdpbusd (AVX512-VNNI)", "vpdpbusd (AVX-VNNI)", "vpmaddubsw" (avx2 and avx512), "scalar"
// (generic).
std::string int8_products_summary();

}  // namespace tinylm::kernels
