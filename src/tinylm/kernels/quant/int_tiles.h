// (No include guard: included once in each region that compiles the tiles.)
// The int8 products' tiles and their driver (quant/int_matmul.cpp), included inside a level
// region: at each level, and a second time in the avx2 and avx512 passes under AVX-VNNI's or
// AVX512-VNNI's target with TINYLM_INT8_VNNI defined, where one VPDPBUSD does what VPMADDUBSW,
// VPMADDWD and an add do (and a third time under AMX-INT8's, quant/int_amx.cpp, for the rows
// its tiles leave). Either way a block's products are one exact integer sum, so the unit changes
// no bits. The includer includes first: <algorithm>, <cmath>, <cstring>, core/parallel.h,
// kernels/cpu/vec.h, quant/blocks.h, quant/int_matmul.h and matmul/stream_driver.h.
#if !defined(TINYLM_LEVEL_NS)
#error "int_tiles.h belongs inside a level region"
#endif

namespace {

// One row's activations: q, its Q8_0 integers (32 a block); dx, each block's scale; sx, 8 times
// each block's sum of q (for Q4_0's offset: (n - 8) x = n x - 8 x).
struct Row {
  const int8_t* q;
  const float* dx;
  const int32_t* sx;
};

// Weight j's integer in ggml's block.
TINYLM_INLINE int weight(const BlockQ8_0& b, int j) { return b.qs[j]; }
TINYLM_INLINE int weight(const BlockQ4_0& b, int j) {
  return (j < 16 ? b.qs[j] & 15 : b.qs[j - 16] >> 4) - 8;
}

// The contract's chain for one output, by plain loops: block(k, P, dw) gives block k's integer
// sum against the row and the weights' scale.
template <class Block>
TINYLM_INLINE float chain(const Row& x, int64_t nb, const Block& block) {
  float c = 0.0f;
  for (int64_t k = 0; k < nb; ++k) {
    int32_t p = 0;
    float dw = 0.0f;
    block(k, p, dw);
    c = std::fma(static_cast<float>(p), dw * x.dx[k], c);
  }
  return c;
}

// The last nout % 16 outputs, still ggml's rows: the plain loops at every level.
template <class Block>
float tail_output(const Row& x, const Block* row, int64_t nb, const float* table) {
  return chain(x, nb, [&](int64_t k, int32_t& p, float& dw) {
    for (int j = 0; j < kQuantBlock; ++j) p += weight(row[k], j) * x.q[k * kQuantBlock + j];
    dw = table[row[k].d[0] | (row[k].d[1] << 8)];
  });
}

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2 || TINYLM_LEVEL == TINYLM_LEVEL_AVX512
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2
// Two registers of 8 outputs ("parts") cover a packed block's 16.
using VI = __m256i;
using VF = __m256;
constexpr int kParts = 2;
#define TINYLM_MM(op) _mm256_##op          // an operation at this width
#define TINYLM_SI(op) _mm256_##op##_si256  // a whole-register integer operation
TINYLM_INLINE VI abs8(VI w) { return _mm256_sign_epi8(w, w); }
TINYLM_INLINE VI sign8(VI x, VI w) { return _mm256_sign_epi8(x, w); }  // x with w's sign
TINYLM_INLINE VF to_float(VI a) { return _mm256_cvtepi32_ps(a); }
TINYLM_INLINE VF scales(const uint8_t* d) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
}
#if defined(TINYLM_INT8_VNNI)
TINYLM_INLINE VI dpbusd(VI acc, VI u, VI s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
#endif
#else
using VI = __m512i;
using VF = __m512;
constexpr int kParts = 1;
#define TINYLM_MM(op) _mm512_##op
#define TINYLM_SI(op) _mm512_##op##_si512
TINYLM_INLINE VI abs8(VI w) { return _mm512_abs_epi8(w); }
TINYLM_INLINE VI sign8(VI x, VI w) {  // (no byte sign at AVX-512: x negated where w < 0)
  return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
}
TINYLM_INLINE VF to_float(VI a) { return _mm512_maskz_cvtepi32_ps(kAll16, a); }
TINYLM_INLINE VF scales(const uint8_t* d) {
  return _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d)));
}
#if defined(TINYLM_INT8_VNNI)
TINYLM_INLINE VI dpbusd(VI acc, VI u, VI s) { return _mm512_dpbusd_epi32(acc, u, s); }
#endif
#endif
// The operations both widths spell alike.
TINYLM_INLINE VI load_q(const uint8_t* p) {
  return TINYLM_SI(loadu)(reinterpret_cast<const VI*>(p));
}
TINYLM_INLINE VI splat(int32_t v) { return TINYLM_MM(set1_epi32)(v); }
TINYLM_INLINE VI zero_i() { return TINYLM_SI(setzero)(); }
TINYLM_INLINE VI byte_mask(uint8_t m) { return TINYLM_MM(set1_epi8)(static_cast<char>(m)); }
TINYLM_INLINE VI and_i(VI a, VI b) { return TINYLM_SI(and)(a, b); }
TINYLM_INLINE VI xor_i(VI a, VI b) { return TINYLM_SI(xor)(a, b); }
TINYLM_INLINE VI shift4(VI a) { return TINYLM_MM(srli_epi16)(a, 4); }
TINYLM_INLINE VI add16(VI a, VI b) { return TINYLM_MM(add_epi16)(a, b); }
TINYLM_INLINE VI add32(VI a, VI b) { return TINYLM_MM(add_epi32)(a, b); }
TINYLM_INLINE VI sub32(VI a, VI b) { return TINYLM_MM(sub_epi32)(a, b); }
TINYLM_INLINE VI dot_pairs(VI u, VI s) { return TINYLM_MM(maddubs_epi16)(u, s); }  // u unsigned
TINYLM_INLINE VI pair_sums(VI a) { return TINYLM_MM(madd_epi16)(a, TINYLM_MM(set1_epi16)(1)); }
TINYLM_INLINE VF splat_f(float v) { return TINYLM_MM(set1_ps)(v); }
TINYLM_INLINE VF zero_f() { return TINYLM_MM(setzero_ps)(); }
TINYLM_INLINE VF mul(VF a, VF b) { return TINYLM_MM(mul_ps)(a, b); }
TINYLM_INLINE VF fma_f(VF a, VF b, VF c) { return TINYLM_MM(fmadd_ps)(a, b, c); }
TINYLM_INLINE void store_f(float* p, VF v) { TINYLM_MM(storeu_ps)(p, v); }
#undef TINYLM_SI
#undef TINYLM_MM
constexpr int kPartOuts = kPackedOutputs / kParts;

TINYLM_INLINE VI splat4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return splat(v);
}

// One step of 4 weights (Q4_0: 4 + 4, both nibbles) of a part against row x's block at xq, into
// the part's sums; start: a block's sums before its first step; operand: the weights as the
// steps take them, made once for all rows; total: the block's sums.
#if defined(TINYLM_INT8_VNNI)
// VPDPBUSD: four products of unsigned by signed bytes and their sum into each int32 lane, one
// instruction, the activations broadcast from memory. Q8_0's weights go in offset to unsigned
// (w + 128: the sign bit flipped) and its sums start at -128 times the block's sum of x (-16 sx)
// to take the offset back; Q4_0's nibbles are unsigned already, and its total takes 8 times
// that sum (sx) for the nibbles' -8. The integers are exact, so the sums equal the plain path's.
TINYLM_INLINE VI operand(const BlockQ8_0x16&, VI w) { return xor_i(w, byte_mask(0x80)); }
TINYLM_INLINE VI operand(const BlockQ4_0x16&, VI w) { return w; }
TINYLM_INLINE VI start(const BlockQ8_0x16&, int32_t sx) { return splat(-16 * sx); }
TINYLM_INLINE VI start(const BlockQ4_0x16&, int32_t) { return zero_i(); }
TINYLM_INLINE void step(const BlockQ8_0x16&, int s, VI w, const int8_t* xq, VI& acc) {
  acc = dpbusd(acc, w, splat4(xq + 4 * s));
}
TINYLM_INLINE void step(const BlockQ4_0x16&, int s, VI w, const int8_t* xq, VI& acc) {
  const VI lo = and_i(w, byte_mask(15)), hi = and_i(shift4(w), byte_mask(15));
  acc = dpbusd(dpbusd(acc, lo, splat4(xq + 4 * s)), hi, splat4(xq + 16 + 4 * s));
}
TINYLM_INLINE VF total(const BlockQ8_0x16&, VI acc, int32_t) { return to_float(acc); }
TINYLM_INLINE VF total(const BlockQ4_0x16&, VI acc, int32_t sx) {
  return to_float(sub32(acc, splat(sx)));
}
#else
// Q8_0's weights go in as magnitudes, the inputs taking their signs (the instructions multiply
// unsigned by signed bytes). Q4_0 in int16 (16 products of a nibble and |q| <= 127 a lane
// cannot overflow), Q8_0 in int32 (two products already reach 2 * 128 * 127).
template <class Packed>
TINYLM_INLINE VI operand(const Packed&, VI w) {
  return w;
}
template <class Packed>
TINYLM_INLINE VI start(const Packed&, int32_t) {
  return zero_i();
}
TINYLM_INLINE void step(const BlockQ8_0x16&, int s, VI w, const int8_t* xq, VI& acc) {
  acc = add32(acc, pair_sums(dot_pairs(abs8(w), sign8(splat4(xq + 4 * s), w))));
}
TINYLM_INLINE void step(const BlockQ4_0x16&, int s, VI w, const int8_t* xq, VI& acc) {
  const VI lo = and_i(w, byte_mask(15)), hi = and_i(shift4(w), byte_mask(15));
  acc =
      add16(acc, add16(dot_pairs(lo, splat4(xq + 4 * s)), dot_pairs(hi, splat4(xq + 16 + 4 * s))));
}
TINYLM_INLINE VF total(const BlockQ8_0x16&, VI acc, int32_t) { return to_float(acc); }
TINYLM_INLINE VF total(const BlockQ4_0x16&, VI acc, int32_t sx) {
  return to_float(sub32(pair_sums(acc), splat(sx)));
}
#endif

// Rows x[0 .. NR - 1] against parts p0 .. p0 + NP - 1 of one group (w: its nb packed blocks),
// into out (NR rows of 16).
template <int NR, int NP, class Packed>
TINYLM_INLINE void tile(float* out, const Row* x, const Packed* w, int64_t nb, int p0) {
  VF c[NR][NP];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) c[r][p] = zero_f();
  }
  for (int64_t k = 0; k < nb; ++k) {
    const Packed& blk = w[k];
    for (size_t line = 0; line < sizeof(Packed); line += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(&blk) + 4096 + line, 0, 2);
    VI acc[NR][NP];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) acc[r][p] = start(blk, x[r].sx[k]);
    }
#pragma GCC unroll 8
    for (int s = 0; s < kSteps<Packed>; ++s) {
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) {
        const VI q = operand(blk, load_q(blk.qs[s] + (p0 + p) * kPartOuts * 4));
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) step(blk, s, q, x[r].q + k * kQuantBlock, acc[r][p]);
      }
    }
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) {
      const VF dw = scales(blk.d[(p0 + p) * kPartOuts]);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        c[r][p] = fma_f(total(blk, acc[r][p], x[r].sx[k]), mul(dw, splat_f(x[r].dx[k])), c[r][p]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    for (int p = 0; p < NP; ++p) store_f(out + r * kPackedOutputs + (p0 + p) * kPartOuts, c[r][p]);
  }
}

// Rows r, r + 1, ... of a group through tiles of N rows while N are left, one part at a time
// (to keep the tile's registers); the first row not taken.
template <int N, class Packed>
TINYLM_INLINE int64_t tile_rows(float* out, const Row* x, int64_t r, int64_t nrows, const Packed* w,
                                int64_t nb) {
  for (; r + N <= nrows; r += N) {
    for (int p = 0; p < kParts; ++p) tile<N, 1>(out + r * kPackedOutputs, x + r, w, nb, p);
  }
  return r;
}

// A group's rows: tiles of 8 rows on AVX-512, then of 4 (AVX2's), the last rows one at a time,
// both parts at once (a row's activations loaded once). AVX-VNNI's one instruction a step leaves
// the broadcasts and the per-block scaling to bound it, so there the tiles take 3 rows (2 for the
// last two) by both parts, each row's activations broadcast once for both: 15 registers of 16.
template <class Packed>
TINYLM_INLINE void group(float* out, const Row* x, int64_t nrows, const Packed* w, int64_t nb,
                         const float*) {
  int64_t r = 0;
  if constexpr (TINYLM_LEVEL == TINYLM_LEVEL_AVX512) r = tile_rows<8>(out, x, r, nrows, w, nb);
#if defined(TINYLM_INT8_VNNI) && TINYLM_LEVEL == TINYLM_LEVEL_AVX2
  for (; r + 3 <= nrows; r += 3) tile<3, kParts>(out + r * kPackedOutputs, x + r, w, nb, 0);
  if (r + 2 == nrows) {
    tile<2, kParts>(out + r * kPackedOutputs, x + r, w, nb, 0);
    r += 2;
  }
#else
  r = tile_rows<4>(out, x, r, nrows, w, nb);
#endif
  for (; r < nrows; ++r) tile<1, kParts>(out + r * kPackedOutputs, x + r, w, nb, 0);
}
#else
// Weight j's integer in lane o of a packed block.
TINYLM_INLINE int weight(const BlockQ8_0x16& b, int o, int j) {
  return static_cast<int8_t>(b.qs[j / 4][4 * o + j % 4]);
}
TINYLM_INLINE int weight(const BlockQ4_0x16& b, int o, int j) {
  const uint8_t byte = b.qs[j % 16 / 4][4 * o + j % 4];
  return (j < 16 ? byte & 15 : byte >> 4) - 8;
}

template <class Packed>
TINYLM_INLINE void group(float* out, const Row* x, int64_t nrows, const Packed* w, int64_t nb,
                         const float* table) {
  for (int64_t r = 0; r < nrows; ++r) {
    for (int o = 0; o < kPackedOutputs; ++o) {
      out[r * kPackedOutputs + o] = chain(x[r], nb, [&](int64_t k, int32_t& p, float& dw) {
        for (int j = 0; j < kQuantBlock; ++j) p += weight(w[k], o, j) * x[r].q[k * kQuantBlock + j];
        dw = table[w[k].d[o][0] | (w[k].d[o][1] << 8)];
      });
    }
  }
}
#endif

// group() as product()'s default way through a group's rows.
struct RegisterTiles {
  template <class Packed>
  void operator()(float* out, const Row* x, int64_t nrows, const Packed* w, int64_t nb,
                  const float* table) const {
    group(out, x, nrows, w, nb, table);
  }
};

// The driver's items of (a block of rows) x (a few groups), as the f32-activation products: a
// thread's groups' blocks stay in cache while its rows pass over them. The last items take the
// tail. rows_of_group(out, x, nrows, w, nb, table) computes a group's rows as group() does
// (the rows' integers are nin apart, one matrix).
constexpr int64_t kGroupsPerItem = 4, kRowBlock = 64;
template <class Packed, class Block, class Group = RegisterTiles>
void product(float* y, const int8_t* q, const float* dx, const int32_t* sx, const Packed* w,
             const float* b, int64_t rows, int64_t nin, int64_t nout,
             const Group& rows_of_group = {}) {
  const int64_t nb = nin / kQuantBlock, ngroups = nout / kPackedOutputs,
                tail = nout % kPackedOutputs;
  const float* table = f16_table();
  // (The tail's item counts as a whole item of groups past the last.)
  const int64_t ncols = ngroups + (tail ? kGroupsPerItem : 0);
  for_each_item(rows, kRowBlock, ncols, kGroupsPerItem,
                [&](int64_t r0, int64_t nr, int64_t g0, int64_t) {
                  const int64_t g1 = std::min(ngroups, g0 + kGroupsPerItem), r1 = r0 + nr;
                  Row xs[kRowBlock];
                  for (int64_t r = r0; r < r1; ++r)
                    xs[r - r0] = {q + r * nin, dx + r * nb, sx + r * nb};
                  if (g0 >= ngroups) {
                    const auto* rest = reinterpret_cast<const Block*>(w + ngroups * nb);
                    for (int64_t r = r0; r < r1; ++r) {
                      for (int64_t o = 0; o < tail; ++o) {
                        const int64_t at = ngroups * kPackedOutputs + o;
                        y[r * nout + at] =
                            tail_output(xs[r - r0], rest + o * nb, nb, table) + (b ? b[at] : 0.0f);
                      }
                    }
                    return;
                  }
                  alignas(64) float out[kRowBlock * kPackedOutputs];
                  for (int64_t g = g0; g < g1; ++g) {
                    rows_of_group(out, xs, r1 - r0, w + g * nb, nb, table);
                    for (int64_t r = r0; r < r1; ++r) {
                      for (int64_t o = 0; o < kPackedOutputs; ++o) {
                        const int64_t at = g * kPackedOutputs + o;
                        y[r * nout + at] = out[(r - r0) * kPackedOutputs + o] + (b ? b[at] : 0.0f);
                      }
                    }
                  }
                });
}

}  // namespace
