#include "tinylm/kernels/quant/int_amx.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/amx_tiles.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/matmul/tile_sums.h"
#include "tinylm/kernels/quant/blocks.h"

// Only the avx512 pass has kernels, compiled for AMX-INT8 on top of AVX512-VNNI (whose tiles
// take the groups of few rows): int_matmul.cpp calls them only where the CPU has both and the
// process may use the tiles.
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
TINYLM_TARGET_PUSH_OF(TINYLM_LEVEL_TARGET ",avx512vnni,amx-tile,amx-int8")
namespace tinylm::kernels::avx512::amx {

#define TINYLM_INT8_VNNI 1
#include "tinylm/kernels/matmul/stream_driver.h"
#include "tinylm/kernels/quant/int_tiles.h"
#undef TINYLM_INT8_VNNI

namespace {

// The rows of an AMX tile. Fewer rows take the VPDPBUSD tiles, which were faster for them.
constexpr int kTileRows = 16;

// A batch of up to 4 blocks goes through the tiles together and their sums are stored, then the
// chain takes them block by block: one block at a time, each block waited on the last one's
// sums (stored, read back, the tile zeroed again).
constexpr int kBatch = 4;

// tmm0-3: the batch's sums, 16 rows by 16 outputs (int32); tmm4 and tmm6: 16 rows' 32
// activations (a block); tmm5 and tmm7: a block's 8 steps of 4 weights for 16 outputs (packed
// Q8_0 is that B operand's layout as it is).
void configure() {
  TileConfig c;
  for (int t = 0; t < 4; ++t) c.set(t, kTileRows, 64);
  c.set(4, kTileRows, 32);
  c.set(6, kTileRows, 32);
  c.set(5, 8, 64);
  c.set(7, 8, 64);
  load_tile_config(c);
}

// N blocks' integer sums for 16 rows: block j's activations at xq + 32 j (rows `stride` bytes
// apart), its weights' steps at steps[j], its sums to sums[j]. Signed: TDPBSSD (Q8_0), else
// TDPBSUD (the weights unsigned: Q4_0's nibbles).
#define TINYLM_DP(c, a, b) \
  if constexpr (Signed)    \
    _tile_dpbssd(c, a, b); \
  else                     \
    _tile_dpbsud(c, a, b)
template <int N, bool Signed>
TINYLM_INLINE void batch_sums(int32_t (*sums)[kTileRows][16], const uint8_t* const* steps,
                              const int8_t* xq, long stride) {
  tile_fence();
  _tile_zero(0);
  _tile_loadd(4, xq, stride);
  _tile_loadd(5, steps[0], 64);
  TINYLM_DP(0, 4, 5);
  if constexpr (N > 1) {
    _tile_zero(1);
    _tile_loadd(6, xq + kQuantBlock, stride);
    _tile_loadd(7, steps[1], 64);
    TINYLM_DP(1, 6, 7);
  }
  if constexpr (N > 2) {
    _tile_zero(2);
    _tile_loadd(4, xq + 2 * kQuantBlock, stride);
    _tile_loadd(5, steps[2], 64);
    TINYLM_DP(2, 4, 5);
  }
  if constexpr (N > 3) {
    _tile_zero(3);
    _tile_loadd(6, xq + 3 * kQuantBlock, stride);
    _tile_loadd(7, steps[3], 64);
    TINYLM_DP(3, 6, 7);
  }
  _tile_stored(0, sums[0], 64);
  if constexpr (N > 1) _tile_stored(1, sums[1], 64);
  if constexpr (N > 2) _tile_stored(2, sums[2], 64);
  if constexpr (N > 3) _tile_stored(3, sums[3], 64);
  tile_fence();
}
#undef TINYLM_DP

// The batch's weights as the tiles take them: Q8_0's steps as they are; Q4_0's nibbles unpacked
// to bytes, the low ones (weights 4 s + i) as steps 0-3 and the high ones (16 + 4 s + i) as
// steps 4-7, so that the sums hold 8 times the activations' sum more than the contract's (n, not
// n - 8), which total() takes back.
TINYLM_INLINE const uint8_t* steps_of(const BlockQ8_0x16& blk, uint8_t (*)[64]) {
  return blk.qs[0];
}
TINYLM_INLINE const uint8_t* steps_of(const BlockQ4_0x16& blk, uint8_t (*buf)[64]) {
  const __m512i low = _mm512_set1_epi8(15);
  for (int s = 0; s < 4; ++s) {
    const __m512i w = _mm512_loadu_si512(blk.qs[s]);
    _mm512_store_si512(buf[s], _mm512_and_si512(w, low));
    _mm512_store_si512(buf[4 + s], _mm512_and_si512(_mm512_srli_epi16(w, 4), low));
  }
  return buf[0];
}

// 16 rows of a group (x's integers nin = 32 nb apart) on the tiles: each batch's sums, then the
// contract's chain per row and output, block by block, as tile() does it.
template <class Packed>
void tile_rows_amx(float* out, const Row* x, const Packed* w, int64_t nb) {
  constexpr bool kSigned = std::is_same_v<Packed, BlockQ8_0x16>;
  VF c[kTileRows];
#pragma GCC unroll 16
  for (int r = 0; r < kTileRows; ++r) c[r] = zero_f();
  alignas(64) int32_t sums[kBatch][kTileRows][16];
  alignas(64) uint8_t unpacked[kBatch][8][64];
  const long stride = static_cast<long>(nb * kQuantBlock);
  for (int64_t k0 = 0; k0 < nb; k0 += kBatch) {
    const int n = static_cast<int>(std::min<int64_t>(kBatch, nb - k0));
    const uint8_t* steps[kBatch];
    for (int j = 0; j < n; ++j) {
      const Packed& blk = w[k0 + j];
      for (size_t line = 0; line < sizeof(Packed); line += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(&blk) + 4096 + line, 0, 2);
      steps[j] = steps_of(blk, unpacked[j]);
    }
    const int8_t* xq = x[0].q + k0 * kQuantBlock;
    switch (n) {
      case 4:
        batch_sums<4, kSigned>(sums, steps, xq, stride);
        break;
      case 3:
        batch_sums<3, kSigned>(sums, steps, xq, stride);
        break;
      case 2:
        batch_sums<2, kSigned>(sums, steps, xq, stride);
        break;
      default:
        batch_sums<1, kSigned>(sums, steps, xq, stride);
    }
    for (int j = 0; j < n; ++j) {
      const int64_t k = k0 + j;
      const VF dw = scales(w[k].d[0]);
#pragma GCC unroll 16
      for (int r = 0; r < kTileRows; ++r) {
        const VI p = _mm512_load_si512(sums[j][r]);
        c[r] = fma_f(total(w[k], p, x[r].sx[k]), mul(dw, splat_f(x[r].dx[k])), c[r]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kTileRows; ++r) store_f(out + r * kPackedOutputs, c[r]);
}

// product()'s way through a group's rows: tiles of 16 rows, the rest on the VPDPBUSD tiles.
struct AmxTiles {
  template <class Packed>
  void operator()(float* out, const Row* x, int64_t nrows, const Packed* w, int64_t nb,
                  const float* table) const {
    int64_t r = 0;
    if (nrows >= kTileRows) {
      configure();
      for (; r + kTileRows <= nrows; r += kTileRows)
        tile_rows_amx(out + r * kPackedOutputs, x + r, w, nb);
      _tile_release();
    }
    if (r < nrows) group(out + r * kPackedOutputs, x + r, nrows - r, w, nb, table);
  }
};

}  // namespace

void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  product<BlockQ8_0x16, BlockQ8_0>(y, q, dx, sx, w, b, rows, nin, nout, AmxTiles{});
}
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  product<BlockQ4_0x16, BlockQ4_0>(y, q, dx, sx, w, b, rows, nin, nout, AmxTiles{});
}

}  // namespace tinylm::kernels::avx512::amx
TINYLM_TARGET_POP_OF
#endif
