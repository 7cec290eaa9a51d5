#include "tinylm/kernels/matmul/bf16_amx.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/amx_tiles.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/matmul/tile_sums.h"

// Only the avx512 pass has kernels, compiled for AMX on top of AVX512_BF16: bf16_dot.cpp calls
// them only where the CPU has both and the process may use the tiles.
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
TINYLM_TARGET_PUSH_OF(
    "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16")
namespace tinylm::kernels::avx512 {

#include "tinylm/kernels/matmul/stream_driver.h"

namespace {

constexpr int64_t kTileElems = kTile * kTile;  // a pairs-layout tile: 8 pairs of 16 columns
constexpr int64_t kRowsPerTile = 16;           // the most rows an AMX tile holds

// The sums tmm0 .. tmm(N - 1) (tile numbers are immediates, hence the spelled-out cases) set to
// zero, and stored: tile q at p + q * step, its rows `stride` bytes apart.
template <int N>
TINYLM_INLINE void zero_sums() {
  tile_fence();
  _tile_zero(0);
  if constexpr (N > 1) _tile_zero(1);
  if constexpr (N > 2) _tile_zero(2);
  if constexpr (N > 3) _tile_zero(3);
}
template <int N>
TINYLM_INLINE void store_sums(float* p, int64_t step, long stride) {
  _tile_stored(0, p, stride);
  if constexpr (N > 1) _tile_stored(1, p + step, stride);
  if constexpr (N > 2) _tile_stored(2, p + 2 * step, stride);
  if constexpr (N > 3) _tile_stored(3, p + 3 * step, stride);
  tile_fence();
}

// tmm q += the product of tmm4 and the tile at p + q * step (rows `stride` bytes apart) for
// q < N: the loaded tiles take tmm5-7 in turn (tmm5 again for the fourth, its product with tmm0
// issued by then). tmm4 is the A operand, or with kLoadedIsA the B operand.
#define TINYLM_AMX_PRODUCT(q, loaded) \
  if constexpr (kLoadedIsA) {         \
    _tile_dpbf16ps(q, loaded, 4);     \
  } else {                            \
    _tile_dpbf16ps(q, 4, loaded);     \
  }
template <int N, bool kLoadedIsA = false, class T>
TINYLM_INLINE void add_products(const T* p, int64_t step, long stride) {
  _tile_loadd(5, p, stride);
  TINYLM_AMX_PRODUCT(0, 5)
  if constexpr (N > 1) {
    _tile_loadd(6, p + step, stride);
    TINYLM_AMX_PRODUCT(1, 6)
  }
  if constexpr (N > 2) {
    _tile_loadd(7, p + 2 * step, stride);
    TINYLM_AMX_PRODUCT(2, 7)
  }
  if constexpr (N > 3) {
    _tile_loadd(5, p + 3 * step, stride);
    TINYLM_AMX_PRODUCT(3, 5)
  }
}
#undef TINYLM_AMX_PRODUCT

// The activations (rows of n) rounded to bf16 (VCVTNEPS2BF16, as bf16_dot.cpp's), the rows from
// `rows` to `padded` zero: a tile of 16 rows may read them.
const uint16_t* round_padded(const float* x, int64_t rows, int64_t n, int64_t padded) {
  thread_local AlignedVector<uint16_t> buf;
  buf.resize(static_cast<size_t>(padded * n));
  uint16_t* out = buf.data();
  int64_t i = 0;
  for (; i + kLanes <= rows * n; i += kLanes) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    std::memcpy(out + i, &h, sizeof h);
  }
  if (i < rows * n) {
    const __m256bh h =
        _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(first_lanes16(rows * n - i), x + i));
    std::memcpy(out + i, &h, static_cast<size_t>(rows * n - i) * sizeof(uint16_t));
  }
  std::fill(out + rows * n, out + padded * n, uint16_t{0});
  return out;
}

// --- in_out ------------------------------------------------------------------------------------

// tmm0-3: the sums of m rows by 4 blocks of 16 columns; tmm4: m rows' band of 16 inputs;
// tmm5-7: a band's tile of one column block (8 pairs x 16 columns), as the pairs layout holds it.
void config_in_out(int64_t m) {
  TileConfig c;
  for (int t = 0; t < 4; ++t) c.set(t, static_cast<int>(m), 64);
  c.set(4, static_cast<int>(m), 32);
  for (int t = 5; t < 8; ++t) c.set(t, 8, 64);
  load_tile_config(c);
}

// Bands of an item's columns prefetched ahead: each band's are a 2 KiB run far from the next
// band's, which the hardware prefetchers did not follow.
constexpr int64_t kAhead = 4;

// y[r, 16 j ..] = m rows of x times NB column blocks of w, from +0, one band after another; then
// the bias added. w: the first band's tile of the first block (the next block's is kTileElems
// on, the next band's `band`).
template <int NB>
void in_out_block(float* y, int64_t ldy, const uint16_t* x, int64_t ldx, const Bf16* w,
                  int64_t band, int64_t nbands, const float* b, int64_t m) {
  zero_sums<NB>();
  const long xstride = static_cast<long>(ldx * 2), wstride = 64;
  for (int64_t k = 0; k < nbands; ++k) {
    const Bf16* wk = w + k * band;
    if (k + kAhead < nbands) {
      const char* next = reinterpret_cast<const char*>(wk + kAhead * band);
#pragma GCC unroll 32
      for (int64_t l = 0; l < NB * 8; ++l) __builtin_prefetch(next + 64 * l, 0, 2);
    }
    _tile_loadd(4, x + k * kTile, xstride);
    add_products<NB>(wk, kTileElems, wstride);
  }
  store_sums<NB>(y, kTile, static_cast<long>(ldy * 4));
  if (!b) return;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < NB * kTile; c += kTile)
      _mm512_storeu_ps(y + r * ldy + c,
                       _mm512_add_ps(_mm512_loadu_ps(b + c), _mm512_loadu_ps(y + r * ldy + c)));
  }
}

}  // namespace

// Items of 64 columns by up to 128 rows, row blocks of 16 within an item (the item's weights,
// 64 columns of every band, stay in L2 between them).
void amx_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows, int64_t nin,
                int64_t nout) {
  constexpr int64_t kGroup = 4 * kTile, kRowGroup = 8 * kRowsPerTile;
  const int64_t padded = (rows + kRowsPerTile - 1) / kRowsPerTile * kRowsPerTile;
  const uint16_t* xb = round_padded(x, rows, nin, padded);
  const int64_t band = kTile * nout, nbands = nin / kTile;
  for_each_item(rows, kRowGroup, nout, kGroup, [&](int64_t g0, int64_t ng, int64_t c0, int64_t n) {
    const int64_t nb = n / kTile, g1 = g0 + ng;
    int64_t configured = 0;
    for (int64_t r0 = g0; r0 < g1; r0 += kRowsPerTile) {
      const int64_t m = std::min(kRowsPerTile, g1 - r0);
      if (m != configured) config_in_out(configured = m);
      float* yr = y + r0 * nout + c0;
      const uint16_t* xr = xb + r0 * nin;
      const Bf16* wc = w + c0 * kTile;
      const float* bc = b ? b + c0 : nullptr;
      switch (nb) {
        case 4:
          in_out_block<4>(yr, nout, xr, nin, wc, band, nbands, bc, m);
          break;
        case 3:
          in_out_block<3>(yr, nout, xr, nin, wc, band, nbands, bc, m);
          break;
        case 2:
          in_out_block<2>(yr, nout, xr, nin, wc, band, nbands, bc, m);
          break;
        default:
          in_out_block<1>(yr, nout, xr, nin, wc, band, nbands, bc, m);
      }
    }
    _tile_release();
  });
}

// --- out_in ------------------------------------------------------------------------------------

namespace {

// tmm0-3: 16 outputs by 16 rows, for 4 blocks of rows; tmm4-7: 16 outputs' weights over 32
// inputs (A), or 16 rows' 32 inputs as 16 pairs (B: a pair of each row side by side). All are
// 16 rows of 64 bytes, so either kind takes tmm4 and the other tmm5-7.
void config_out_in() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.set(t, 16, 64);
  load_tile_config(c);
}

// The rows, rounded, as tiles for the B operand: per block of 16 rows and 32 inputs, row k
// holds pair k of the 16 rows side by side.
const uint32_t* pair_tiles(const uint16_t* xb, int64_t padded, int64_t nin) {
  thread_local AlignedVector<uint32_t> buf;
  const int64_t npairs = nin / 2, nkb = nin / 32;
  buf.resize(static_cast<size_t>(padded * npairs));
  uint32_t* out = buf.data();
  for (int64_t rb = 0; rb < padded / kRowsPerTile; ++rb) {
    for (int64_t n = 0; n < kRowsPerTile; ++n) {
      const uint16_t* row = xb + (rb * kRowsPerTile + n) * nin;
      for (int64_t p = 0; p < npairs; ++p) {
        uint32_t v;
        std::memcpy(&v, row + 2 * p, sizeof v);
        out[((rb * nkb + p / 16) * 16 + p % 16) * kRowsPerTile + n] = v;
      }
    }
  }
  return out;
}

// NQ blocks of 16 rows for 16 outputs: t[q][o][n], output o of row 16 q + n, from +0 over the
// inputs 32 at a time. w: the outputs' weights, nin apart; xp: the first row block's tiles.
template <int NQ>
void out_in_block(float (*t)[16][16], const Bf16* w, int64_t nin, const uint32_t* xp) {
  zero_sums<NQ>();
  const int64_t nkb = nin / 32, qstride = nkb * 256;  // uint32s between row blocks' tiles
  const long wstride = static_cast<long>(nin * 2);
  for (int64_t kb = 0; kb < nkb; ++kb) {
    _tile_loadd(4, w + kb * 32, wstride);
    add_products<NQ>(xp + kb * 256, qstride, 64);
  }
  store_sums<NQ>(t[0][0], 256, 64);
}

// One block of up to 16 rows for NO blocks of 16 outputs: t[q][o][n], output 16 q + o of row n
// (four chains in flight where the rows are too few for out_in_block's). w: the first output's
// weights, the others nin apart; xp: the row block's tiles; ahead: the next outputs' weights,
// prefetched a share per step in order (the tile loads' 16 rows at a time were not followed by
// the hardware prefetchers), or w itself.
template <int NO>
void out_in_outputs(float (*t)[16][16], const Bf16* w, int64_t nin, const uint32_t* xp,
                    const Bf16* ahead) {
  zero_sums<NO>();
  const int64_t nkb = nin / 32, ostride = 16 * nin;  // Bf16s between output blocks' weights
  const long wstride = static_cast<long>(nin * 2);
  for (int64_t kb = 0; kb < nkb; ++kb) {
    const Bf16* wk = w + kb * 32;
    const char* next = reinterpret_cast<const char*>(ahead + kb * NO * 16 * 32);
#pragma GCC unroll 64
    for (int64_t l = 0; l < NO * 16; ++l) __builtin_prefetch(next + 64 * l, 0, 2);
    _tile_loadd(4, xp + kb * 256, 64);
    add_products<NO, true>(wk, ostride, wstride);
  }
  store_sums<NO>(t[0][0], 256, 64);
}

}  // namespace

// Items of 256 outputs by up to 64 rows; within an item 16 outputs at a time (64 where the
// item has at most 16 rows), the last block of outputs (when nout is not a multiple of 16) from
// a copy padded with zero weights.
void amx_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin, int64_t nout) {
  constexpr int64_t kOutBlock = 16, kGroup = 16 * kOutBlock, kRowGroup = 4 * kRowsPerTile;
  const int64_t padded = (rows + kRowsPerTile - 1) / kRowsPerTile * kRowsPerTile;
  const uint32_t* xp = pair_tiles(round_padded(x, rows, nin, padded), padded, nin);
  const int64_t nkb = nin / 32;
  for_each_item(rows, kRowGroup, nout, kGroup, [&](int64_t r0, int64_t nr, int64_t o0, int64_t n) {
    const int64_t o1 = o0 + n;
    const int64_t nq = (nr + kRowsPerTile - 1) / kRowsPerTile;
    const uint32_t* xq = xp + r0 / kRowsPerTile * nkb * 256;
    thread_local AlignedVector<Bf16> tail;
    config_out_in();
    alignas(64) float t[4][16][16];
    int64_t o = o0;
    for (; nq == 1 && o + 4 * kOutBlock <= o1; o += 4 * kOutBlock) {
      const int64_t next = o + 8 * kOutBlock <= nout ? o + 4 * kOutBlock : o;
      out_in_outputs<4>(t, w + o * nin, nin, xq, w + next * nin);
      for (int64_t r = 0; r < nr; ++r) {
        float* yr = y + (r0 + r) * nout + o;
        for (int64_t j = 0; j < 4 * kOutBlock; ++j) yr[j] = t[j / 16][j % 16][r];
      }
    }
    for (; o < o1; o += kOutBlock) {
      const int64_t mo = std::min(kOutBlock, o1 - o);
      const Bf16* wo = w + o * nin;
      if (mo < kOutBlock) {
        tail.assign(static_cast<size_t>(kOutBlock * nin), Bf16{0});
        std::copy(wo, wo + mo * nin, tail.begin());
        wo = tail.data();
      }
      switch (nq) {
        case 4:
          out_in_block<4>(t, wo, nin, xq);
          break;
        case 3:
          out_in_block<3>(t, wo, nin, xq);
          break;
        case 2:
          out_in_block<2>(t, wo, nin, xq);
          break;
        default:
          out_in_block<1>(t, wo, nin, xq);
      }
      for (int64_t r = 0; r < nr; ++r) {
        const float* tr = &t[r / 16][0][r % 16];
        float* yr = y + (r0 + r) * nout + o;
        for (int64_t j = 0; j < mo; ++j) yr[j] = tr[j * 16];
      }
    }
    _tile_release();
  });
}

}  // namespace tinylm::kernels::avx512
TINYLM_TARGET_POP_OF
#endif
