#include "tinylm/kernels/quant/int_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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
#include "tinylm/kernels/quant/int_amx.h"

TINYLM_LEVEL_BEGIN

#include "tinylm/kernels/matmul/stream_driver.h"
#include "tinylm/kernels/quant/int_tiles.h"

namespace {

// Block i of the rows as the tiles read it: its Q8_0 integers (quantize_q8_0's bytes) to q,
// its scale (the fp16 value, as a float) to dx[i], and 8 times its integers' sum to sx[i].
void scalar_block(const float* x, int8_t* q, float& dx, int32_t& sx, const float* table) {
  BlockQ8_0 blk;
  quantize_q8_0(x, &blk, kQuantBlock);
  std::memcpy(q, blk.qs, kQuantBlock);
  dx = table[blk.d[0] | (blk.d[1] << 8)];
  int32_t sum = 0;
  for (int8_t v : blk.qs) sum += v;
  sx = 8 * sum;
}

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2 || TINYLM_LEVEL == TINYLM_LEVEL_AVX512
// The same in vectors: quantize_block's operations lane by lane (the scale's division and
// reciprocal stay scalar; rounding halves away from zero is truncation, then a step where the
// fraction reaches a half; the integer's low 8 bits are kept, as ggml's (int8_t) cast of x86's
// cvttss2si). A block with a NaN or an infinity goes through quantize_q8_0, whose NaN handling
// follows the order of ggml's comparisons.
constexpr int kWidth = static_cast<int>(sizeof(VF) / sizeof(float));
TINYLM_INLINE int32_t sum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2
TINYLM_INLINE VF load_f(const float* p) { return _mm256_loadu_ps(p); }
TINYLM_INLINE VF max_f(VF a, VF b) { return _mm256_max_ps(a, b); }
TINYLM_INLINE VF abs_f(VF v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
TINYLM_INLINE VI low_byte(VI v) { return _mm256_srai_epi32(_mm256_slli_epi32(v, 24), 24); }
TINYLM_INLINE bool all_below(VF a, VF b) {
  return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ)) == 0xff;
}
TINYLM_INLINE float max_lane(VF v) { return halve(v, kMax); }
// The nearest integer, halves away from zero, for |v| < 2^31 or not finite (cvttps2dq's).
TINYLM_INLINE VI round_away(VF v) {
  const VF f = _mm256_sub_ps(v, _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
  const VI up = _mm256_castps_si256(_mm256_cmp_ps(f, _mm256_set1_ps(0.5f), _CMP_GE_OQ));
  const VI down = _mm256_castps_si256(_mm256_cmp_ps(f, _mm256_set1_ps(-0.5f), _CMP_LE_OQ));
  return _mm256_add_epi32(_mm256_sub_epi32(_mm256_cvttps_epi32(v), up), down);  // (true is -1)
}
TINYLM_INLINE int32_t sum_lanes(VI v) { return sum8(v); }
// The low bytes of four vectors' lanes, in order.
TINYLM_INLINE void store_low_bytes(int8_t* q, const VI (&r)[4]) {
  const VI m = _mm256_set1_epi32(0xff);
  const VI lo = _mm256_packus_epi32(_mm256_and_si256(r[0], m), _mm256_and_si256(r[1], m));
  const VI hi = _mm256_packus_epi32(_mm256_and_si256(r[2], m), _mm256_and_si256(r[3], m));
  const VI bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(lo, hi),
                                               _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), bytes);
}
#else
// (The masked forms: GCC 12 warns that the unmasked ones' undefined sources may be used.)
TINYLM_INLINE VF load_f(const float* p) { return _mm512_loadu_ps(p); }
TINYLM_INLINE VF max_f(VF a, VF b) { return _mm512_maskz_max_ps(kAll16, a, b); }
TINYLM_INLINE VF abs_f(VF v) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}
TINYLM_INLINE VI low_byte(VI v) {
  return _mm512_maskz_srai_epi32(kAll16, _mm512_maskz_slli_epi32(kAll16, v, 24), 24);
}
TINYLM_INLINE bool all_below(VF a, VF b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) == kAll16; }
TINYLM_INLINE float max_lane(VF v) { return hmax(f32x16{v}); }
TINYLM_INLINE VI round_away(VF v) {
  const VF t = _mm512_maskz_roundscale_ps(kAll16, v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const VF f = _mm512_sub_ps(v, t);
  const VI one = _mm512_set1_epi32(1), i = _mm512_maskz_cvttps_epi32(kAll16, v);
  const VI up =
      _mm512_mask_add_epi32(i, _mm512_cmp_ps_mask(f, _mm512_set1_ps(0.5f), _CMP_GE_OQ), i, one);
  return _mm512_mask_sub_epi32(up, _mm512_cmp_ps_mask(f, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), up,
                               one);
}
TINYLM_INLINE int32_t sum_lanes(VI v) {
  return sum8(_mm256_add_epi32(_mm512_maskz_extracti32x8_epi32(0xff, v, 0),
                               _mm512_maskz_extracti32x8_epi32(0xff, v, 1)));
}
TINYLM_INLINE void store_low_bytes(int8_t* q, const VI (&r)[2]) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_maskz_cvtepi32_epi8(kAll16, r[0]));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_maskz_cvtepi32_epi8(kAll16, r[1]));
}
#endif
constexpr int kBlockVectors = kQuantBlock / kWidth;

void quantize_block(const float* x, int8_t* q, float& dx, int32_t& sx, const float* table) {
  VF v[kBlockVectors];
  VF amax = zero_f();
  bool finite = true;
  for (int j = 0; j < kBlockVectors; ++j) {
    v[j] = load_f(x + j * kWidth);
    const VF a = abs_f(v[j]);
    finite = finite && all_below(a, splat_f(std::numeric_limits<float>::infinity()));
    amax = max_f(amax, a);
  }
  if (!finite) return scalar_block(x, q, dx, sx, table);
  const float d = max_lane(amax) / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  // ggml's fp16 of a finite d (F16C rounds to nearest even, as float_to_f16 does): in
  // registers, where the f16 table's random line missed the cache while the weights streamed.
  dx = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT)));
  VI r[kBlockVectors];
  VI sum = zero_i();
  for (int j = 0; j < kBlockVectors; ++j) {
    r[j] = round_away(mul(v[j], splat_f(id)));
    sum = add32(sum, low_byte(r[j]));  // (the byte's value: its low 8 bits, sign-extended)
  }
  store_low_bytes(q, r);
  sx = 8 * sum_lanes(sum);
}
#else
void quantize_block(const float* x, int8_t* q, float& dx, int32_t& sx, const float* table) {
  scalar_block(x, q, dx, sx, table);
}
#endif

}  // namespace

// Every block on every thread (each block's bytes depend on its 32 inputs alone).
void quantize_activations(const float* x, int8_t* q, float* dx, int32_t* sx, int64_t nblocks) {
  const float* table = f16_table();
  parallel_for(0, nblocks, 64, [&](int64_t i) {
    quantize_block(x + i * kQuantBlock, q + i * kQuantBlock, dx[i], sx[i], table);
  });
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2 || TINYLM_LEVEL == TINYLM_LEVEL_AVX512
// The same products on the level's VNNI (AVX-VNNI at avx2, AVX512-VNNI at avx512), where the CPU
// has it and TINYLM_INT8_UNIT allows: the tiles compiled again for that target. (Defined before
// the level's entry points, which call them: a declaration under the level's target would name
// another version of the function.)
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2
#define TINYLM_VNNI_TARGET ",avxvnni"
#else
#define TINYLM_VNNI_TARGET ",avx512vnni"
#endif
TINYLM_TARGET_PUSH_OF(TINYLM_LEVEL_TARGET TINYLM_VNNI_TARGET)
namespace tinylm::kernels::TINYLM_LEVEL_NS::vnni {
#define TINYLM_INT8_VNNI 1
#include "tinylm/kernels/matmul/stream_driver.h"
#include "tinylm/kernels/quant/int_tiles.h"
#undef TINYLM_INT8_VNNI
// Whether the CPU has this level's VNNI.
bool available() {
  return TINYLM_LEVEL == TINYLM_LEVEL_AVX2 ? cpu_has_avx_vnni() : cpu_has_avx512_vnni();
}
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
}  // namespace tinylm::kernels::TINYLM_LEVEL_NS::vnni
TINYLM_TARGET_POP_OF
#undef TINYLM_VNNI_TARGET
#endif

TINYLM_LEVEL_BEGIN

namespace {

// The products on the unit in use: AMX tiles (avx512 only), the level's VNNI (amx at avx2 takes
// AVX-VNNI, the best that level has), else the plain tiles.
template <class Block, class Packed>
void products(float* y, const int8_t* q, const float* dx, const int32_t* sx, const Packed* w,
              const float* b, int64_t rows, int64_t nin, int64_t nout) {
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
  if (int8_dot_unit() == Int8Unit::amx)
    return amx::quant_matmul_int8(y, q, dx, sx, w, b, rows, nin, nout);
#endif
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2 || TINYLM_LEVEL == TINYLM_LEVEL_AVX512
  if (int8_dot_unit() != Int8Unit::vpmaddubsw && vnni::available())
    return vnni::quant_matmul_int8(y, q, dx, sx, w, b, rows, nin, nout);
#endif
  product<Packed, Block>(y, q, dx, sx, w, b, rows, nin, nout);
}

}  // namespace

void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  products<BlockQ8_0>(y, q, dx, sx, w, b, rows, nin, nout);
}
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  products<BlockQ4_0>(y, q, dx, sx, w, b, rows, nin, nout);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// quant_matmul_int8 below quantizes the rows to 8 bits first.
#define TINYLM_INT_MATMUL_ENTRIES(X)                                                               \
  X(void quantize_activations(const float* x, int8_t* q, float* dx, int32_t* sx, int64_t nblocks), \
    quantize_activations, (x, q, dx, sx, nblocks))                                                 \
  X(void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,          \
                           const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,       \
                           int64_t nout),                                                          \
    quant_matmul_int8, (y, q, dx, sx, w, b, rows, nin, nout))                                      \
  X(void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,          \
                           const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,       \
                           int64_t nout),                                                          \
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
  return u == Int8Unit::amx ? "amx" : u == Int8Unit::vpdpbusd ? "vpdpbusd" : "vpmaddubsw";
}

namespace {
bool cpu_has_vnni() { return cpu_has_avx_vnni() || cpu_has_avx512_vnni(); }

constinit UnitChoice<Int8Unit, 3> unit({
    .env = "TINYLM_INT8_UNIT",
    .units = {Int8Unit::vpmaddubsw, Int8Unit::vpdpbusd, Int8Unit::amx},
    .name = int8_unit_name,
    .best =
        [] {
          return cpu_has_amx_int8() ? Int8Unit::amx
                 : cpu_has_vnni()   ? Int8Unit::vpdpbusd
                                    : Int8Unit::vpmaddubsw;
        },
    .offered =
        [](Int8Unit u) {
          return u == Int8Unit::vpmaddubsw || (u == Int8Unit::vpdpbusd && cpu_has_vnni()) ||
                 (u == Int8Unit::amx && cpu_has_amx_int8());
        },
    .missing = "AVX-VNNI or AVX512-VNNI (vpdpbusd), AMX-INT8 (amx)",
});
}  // namespace

Int8Unit int8_dot_unit() { return unit.get(); }
void set_int8_dot_unit(Int8Unit u) { unit.set(u); }

std::string int8_products_summary() {
  const Isa level = active_isa();
  if (level == Isa::generic) return "scalar";
  const Int8Unit u = int8_dot_unit();
  if (level == Isa::avx512 && u == Int8Unit::amx) return "amx (AMX-INT8)";
  if (u != Int8Unit::vpmaddubsw) {
    if (level == Isa::avx512 && cpu_has_avx512_vnni()) return "vpdpbusd (AVX512-VNNI)";
    if (level == Isa::avx2 && cpu_has_avx_vnni()) return "vpdpbusd (AVX-VNNI)";
  }
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
  const int64_t nb = rows * (nin / kQuantBlock);
  thread_local AlignedVector<int8_t> q;
  thread_local AlignedVector<float> dx;
  thread_local AlignedVector<int32_t> sx;
  q.resize(static_cast<size_t>(rows * nin));
  dx.resize(static_cast<size_t>(nb));
  sx.resize(static_cast<size_t>(nb));
  active::quantize_activations(x, q.data(), dx.data(), sx.data(), nb);
  if (t == DType::q8_0)
    active::quant_matmul_int8(y, q.data(), dx.data(), sx.data(),
                              static_cast<const BlockQ8_0x16*>(w), b, rows, nin, nout);
  else
    active::quant_matmul_int8(y, q.data(), dx.data(), sx.data(),
                              static_cast<const BlockQ4_0x16*>(w), b, rows, nin, nout);
}

}  // namespace tinylm::kernels
#endif
