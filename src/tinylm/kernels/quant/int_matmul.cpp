#include "tinylm/kernels/quant/int_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/cpu/unit_choice.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/matmul/tile_sums.h"
#include "tinylm/kernels/quant/blocks.h"

TINYLM_LEVEL_BEGIN

#include "tinylm/kernels/matmul/stream_driver.h"
#include "tinylm/kernels/quant/int_tiles.h"

TINYLM_LEVEL_END

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
// The same products on AVX512-VNNI, where the CPU has it and TINYLM_INT8_UNIT allows: the
// tiles compiled again for that target. (Defined before the level's entry points, which call
// them: a declaration under the level's target would name another version of the function.)
TINYLM_TARGET_PUSH_OF(TINYLM_LEVEL_TARGET ",avx512vnni")
namespace tinylm::kernels::avx512::vnni {
#define TINYLM_INT8_VNNI 1
#include "tinylm/kernels/matmul/stream_driver.h"
#include "tinylm/kernels/quant/int_tiles.h"
#undef TINYLM_INT8_VNNI
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  product<BlockQ8_0x16, BlockQ8_0>(y, q, dx, sx, w, b, rows, nin, nout);
}
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  product<BlockQ4_0x16, BlockQ4_0>(y, q, dx, sx, w, b, rows, nin, nout);
}
}  // namespace tinylm::kernels::avx512::vnni
TINYLM_TARGET_POP_OF
#define TINYLM_INT8_VNNI_FIRST(...) \
  if (int8_dot_unit() == Int8Unit::vpdpbusd) return vnni::quant_matmul_int8(__VA_ARGS__)
#else
#define TINYLM_INT8_VNNI_FIRST(...)
#endif

TINYLM_LEVEL_BEGIN

void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  TINYLM_INT8_VNNI_FIRST(y, q, dx, sx, w, b, rows, nin, nout);
  product<BlockQ8_0x16, BlockQ8_0>(y, q, dx, sx, w, b, rows, nin, nout);
}
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  TINYLM_INT8_VNNI_FIRST(y, q, dx, sx, w, b, rows, nin, nout);
  product<BlockQ4_0x16, BlockQ4_0>(y, q, dx, sx, w, b, rows, nin, nout);
}
#undef TINYLM_INT8_VNNI_FIRST

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// quant_matmul_int8 below quantizes the rows to 8 bits first.
#define TINYLM_INT_MATMUL_ENTRIES(X)                                                         \
  X(void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,    \
                           const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin, \
                           int64_t nout),                                                    \
    quant_matmul_int8, (y, q, dx, sx, w, b, rows, nin, nout))                                \
  X(void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,    \
                           const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin, \
                           int64_t nout),                                                    \
    quant_matmul_int8, (y, q, dx, sx, w, b, rows, nin, nout))
TINYLM_ACTIVE_ENTRIES(TINYLM_INT_MATMUL_ENTRIES)

namespace {

void check_args(const char* what, DType t, int64_t nin) {
  check(t == DType::q8_0 || t == DType::q4_0, "[", what, "] ", dtype_name(t),
        " weights: 8-bit activations meet q8_0 or q4_0 blocks");
  check(nin > 0 && nin % kQuantBlock == 0, "[", what, "] ", nin,
        " inputs: the inputs must be a positive multiple of 32 (one block)");
}

// One block of output `lane` of a group between ggml's block and the packed one.
template <class Block, class Packed>
void to_packed_block(const Block& native, Packed& packed, int lane) {
  std::memcpy(packed.d[lane], native.d, 2);
  for (int s = 0; s < kSteps<Packed>; ++s)
    std::memcpy(packed.qs[s] + 4 * lane, native.qs + 4 * s, 4);
}
template <class Block, class Packed>
void to_native_block(const Packed& packed, Block& native, int lane) {
  std::memcpy(native.d, packed.d[lane], 2);
  for (int s = 0; s < kSteps<Packed>; ++s)
    std::memcpy(native.qs + 4 * s, packed.qs[s] + 4 * lane, 4);
}

// Each group's 16 rows (or its packed blocks, to_packed false) copied aside, then rewritten in
// the other layout over the same bytes of out; the tail rows copied as they are.
template <class Block, class Packed>
void relayout(void* out, const void* in, int64_t nin, int64_t nout, bool to_packed) {
  const int64_t nb = nin / kQuantBlock, ngroups = nout / kPackedOutputs;
  const auto group_bytes = static_cast<size_t>(nb) * sizeof(Packed);
  auto* dst = static_cast<std::byte*>(out);
  const auto* src = static_cast<const std::byte*>(in);
  parallel_for(0, ngroups, grain_for(static_cast<int64_t>(group_bytes)), [&](int64_t g) {
    std::vector<std::byte> copy(src + g * group_bytes, src + (g + 1) * group_bytes);
    auto* rows = reinterpret_cast<Block*>(to_packed ? copy.data() : dst + g * group_bytes);
    auto* packed = reinterpret_cast<Packed*>(to_packed ? dst + g * group_bytes : copy.data());
    for (int lane = 0; lane < kPackedOutputs; ++lane) {
      for (int64_t k = 0; k < nb; ++k) {
        if (to_packed)
          to_packed_block(rows[lane * nb + k], packed[k], lane);
        else
          to_native_block(packed[k], rows[lane * nb + k], lane);
      }
    }
  });
  const size_t done = static_cast<size_t>(ngroups) * group_bytes;
  if (out != in)
    std::memcpy(dst + done, src + done,
                static_cast<size_t>(nout % kPackedOutputs * nb) * sizeof(Block));
}

template <class Block, class Packed>
void unpack_row(void* out, const void* packed, int64_t nin, int64_t nout, int64_t row) {
  const int64_t nb = nin / kQuantBlock, ngroups = nout / kPackedOutputs;
  auto* dst = static_cast<Block*>(out);
  if (row >= ngroups * kPackedOutputs) {
    const auto* rest =
        reinterpret_cast<const Block*>(static_cast<const Packed*>(packed) + ngroups * nb);
    std::memcpy(dst, rest + (row - ngroups * kPackedOutputs) * nb,
                static_cast<size_t>(nb) * sizeof(Block));
    return;
  }
  const Packed* group = static_cast<const Packed*>(packed) + row / kPackedOutputs * nb;
  for (int64_t k = 0; k < nb; ++k) {
    to_native_block(group[k], dst[k], static_cast<int>(row % kPackedOutputs));
  }
}

void relayout(DType t, void* out, const void* in, int64_t nin, int64_t nout, bool to_packed) {
  check_args(to_packed ? "pack_int8" : "unpack_int8", t, nin);
  check(nout >= 0, "[pack_int8] ", nout, " outputs");
  if (t == DType::q8_0)
    relayout<BlockQ8_0, BlockQ8_0x16>(out, in, nin, nout, to_packed);
  else
    relayout<BlockQ4_0, BlockQ4_0x16>(out, in, nin, nout, to_packed);
}

}  // namespace

std::string_view int8_unit_name(Int8Unit u) {
  return u == Int8Unit::vpdpbusd ? "vpdpbusd" : "vpmaddubsw";
}

namespace {
constinit UnitChoice<Int8Unit> unit({
    .env = "TINYLM_INT8_UNIT",
    .units = {Int8Unit::vpmaddubsw, Int8Unit::vpdpbusd},
    .name = int8_unit_name,
    .best = [] { return cpu_has_avx512_vnni() ? Int8Unit::vpdpbusd : Int8Unit::vpmaddubsw; },
    .offered = [](Int8Unit u) { return u != Int8Unit::vpdpbusd || cpu_has_avx512_vnni(); },
    .missing = "AVX512-VNNI",
});
}  // namespace

Int8Unit int8_dot_unit() { return unit.get(); }
void set_int8_dot_unit(Int8Unit u) { unit.set(u); }

std::string int8_products_summary() {
  const Isa level = active_isa();
  if (level == Isa::generic) return "scalar";
  if (level == Isa::avx512 && int8_dot_unit() == Int8Unit::vpdpbusd)
    return "vpdpbusd (AVX512-VNNI)";
  return "vpmaddubsw";
}

void pack_int8(DType t, void* out, const void* w, int64_t nin, int64_t nout) {
  relayout(t, out, w, nin, nout, true);
}
void unpack_int8(DType t, void* out, const void* packed, int64_t nin, int64_t nout) {
  relayout(t, out, packed, nin, nout, false);
}

void unpack_int8_row(DType t, void* out, const void* packed, int64_t nin, int64_t nout,
                     int64_t row) {
  check_args("unpack_int8_row", t, nin);
  check(row >= 0 && row < nout, "[unpack_int8_row] row ", row, " of ", nout);
  if (t == DType::q8_0)
    unpack_row<BlockQ8_0, BlockQ8_0x16>(out, packed, nin, nout, row);
  else
    unpack_row<BlockQ4_0, BlockQ4_0x16>(out, packed, nin, nout, row);
}

void quant_matmul_int8(DType t, float* y, const float* x, const void* w, const float* b,
                       int64_t rows, int64_t nin, int64_t nout) {
  check_args("quant_matmul_int8", t, nin);
  check(rows >= 0 && nout >= 0, "[quant_matmul_int8] ", rows, " rows to ", nout, " outputs");
  if (rows == 0) return;
  // The rows as Q8_0 blocks: their integers, each block's scale and 8 times its sum.
  const int64_t nb = nin / kQuantBlock;
  thread_local std::vector<BlockQ8_0> blocks;
  thread_local AlignedVector<int8_t> q;
  thread_local AlignedVector<float> dx;
  thread_local AlignedVector<int32_t> sx;
  blocks.resize(static_cast<size_t>(rows * nb));
  q.resize(static_cast<size_t>(rows * nin));
  dx.resize(blocks.size());
  sx.resize(blocks.size());
  const float* table = f16_table();
  // Block by block on every thread (each block's bytes depend on its 32 inputs alone): on one,
  // the other waited for it through a good part of a batch's step. (Pointers: the buffers are
  // this thread's.)
  BlockQ8_0* bp = blocks.data();
  int8_t* qp = q.data();
  float* dp = dx.data();
  int32_t* sp = sx.data();
  parallel_for(0, static_cast<int64_t>(blocks.size()), 64, [&](int64_t i) {
    BlockQ8_0& blk = bp[i];
    quantize_q8_0(x + i * kQuantBlock, &blk, kQuantBlock);
    std::copy_n(blk.qs, kQuantBlock, qp + i * kQuantBlock);
    dp[i] = table[blk.d[0] | (blk.d[1] << 8)];
    int32_t sum = 0;
    for (int8_t v : blk.qs) sum += v;
    sp[i] = 8 * sum;
  });
  if (t == DType::q8_0)
    active::quant_matmul_int8(y, q.data(), dx.data(), sx.data(),
                              static_cast<const BlockQ8_0x16*>(w), b, rows, nin, nout);
  else
    active::quant_matmul_int8(y, q.data(), dx.data(), sx.data(),
                              static_cast<const BlockQ4_0x16*>(w), b, rows, nin, nout);
}

}  // namespace tinylm::kernels
#endif
