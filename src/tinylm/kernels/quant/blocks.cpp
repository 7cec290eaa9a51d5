// The block formats are plain scalar code, the same at every level: compiled once.
#include "tinylm/kernels/quant/blocks.h"

#include <cmath>
#include <limits>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/level.h"

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {
namespace {

// ggml's GGML_FP32_TO_FP16: nearest even, overflow to inf, every NaN to sign | 0x7e00.
uint16_t ggml_fp16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u);
  return float_to_f16(f);
}

void store_scale(uint8_t (&d)[2], float scale) {
  const uint16_t h = ggml_fp16(scale);
  d[0] = static_cast<uint8_t>(h & 0xffu);
  d[1] = static_cast<uint8_t>(h >> 8);
}

// C's (int8_t)f as ggml's x86 build computes it: cvttss2si (truncation; INT32_MIN for NaN and
// values outside int32), then the low 8 bits.
int8_t to_int8_x86(float f) {
  int32_t i = std::numeric_limits<int32_t>::min();
  if (f >= -2147483648.0f && f < 2147483648.0f) i = static_cast<int32_t>(f);
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(i) & 0xffu));
}

// std::round (halves away from zero) up to the sign of a zero, inline and without branches: the
// library call it is at the baseline level cost more than the rest of quantizing a decode step's
// activations. Values of 2^23 and more are whole already (or inf, NaN) and come back as they
// are. (Checked against std::round over all 2^32 floats.)
float round_half_away(float v) {
  const bool whole = !(std::fabs(v) < 8388608.0f);
  const float t = static_cast<float>(static_cast<int32_t>(whole ? 0.0f : v));
  const float f = v - t;                                                      // (exact)
  const float step = (f >= 0.5f ? 1.0f : 0.0f) - (f <= -0.5f ? 1.0f : 0.0f);  // (no branches)
  return whole ? v : t + step;
}

void quantize_block(const float* x, BlockQ8_0& y) {
  float amax = 0.0f;
  for (int64_t j = 0; j < kQuantBlock; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;  // ggml's MAX(amax, a), NaN behaviour included
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;  // (true for a NaN d, as in C)
  store_scale(y.d, d);
  for (int64_t j = 0; j < kQuantBlock; ++j) y.qs[j] = to_int8_x86(round_half_away(x[j] * id));
}

void quantize_block(const float* x, BlockQ4_0& y) {
  float amax = 0.0f, max = 0.0f;
  for (int64_t j = 0; j < kQuantBlock; ++j) {
    if (amax < std::fabs(x[j])) {  // strict: the first of equal magnitudes wins
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_scale(y.d, d);
  const auto nibble = [&](float v) -> uint8_t {
    const int8_t q = to_int8_x86(v * id + 8.5f);  // f32 sum, then truncation
    return static_cast<uint8_t>(q < 15 ? q : 15);
  };
  constexpr int64_t kHalf = kQuantBlock / 2;
  for (int64_t j = 0; j < kHalf; ++j)
    y.qs[j] = static_cast<uint8_t>(nibble(x[j]) | (nibble(x[j + kHalf]) << 4));
}

void dequantize_block(const BlockQ8_0& b, float* y) {
  const float d = block_scale(b);
  for (int64_t j = 0; j < kQuantBlock; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void dequantize_block(const BlockQ4_0& b, float* y) {
  const float d = block_scale(b);
  constexpr int64_t kHalf = kQuantBlock / 2;
  for (int64_t j = 0; j < kHalf; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 15) - 8) * d;
    y[j + kHalf] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void dequantize_block(const BlockQ6_K& b, float* y) {
  const float d = block_scale(b);
  for (int64_t h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    const int8_t* s = b.scales + 8 * h;
    float* yh = y + 128 * h;
    for (int64_t l = 0; l < 32; ++l) {
      const int64_t g = l / 16;
      const int q1 = ((ql[l] & 15) | (qh[l] & 3) << 4) - 32;
      const int q2 = ((ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4) - 32;
      const int q3 = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (qh[l] >> 6) << 4) - 32;
      yh[l] = d * static_cast<float>(s[g]) * static_cast<float>(q1);
      yh[l + 32] = d * static_cast<float>(s[g + 2]) * static_cast<float>(q2);
      yh[l + 64] = d * static_cast<float>(s[g + 4]) * static_cast<float>(q3);
      yh[l + 96] = d * static_cast<float>(s[g + 6]) * static_cast<float>(q4);
    }
  }
}

// Q4_K and Q5_K: sub-block p's 32 integers q (the fifth bit from qh when given).
void k_quants(const uint8_t* qs, const uint8_t* qh, int p, int* q) {
  for (int l = 0; l < 32; ++l) {
    q[l] = (p % 2 ? qs[32 * (p / 2) + l] >> 4 : qs[32 * (p / 2) + l] & 15) |
           (qh ? (qh[l] >> p & 1) << 4 : 0);
  }
}
template <class Block>
void dequantize_k_block(const Block& b, const uint8_t* qh, float* y) {
  const float d = block_scale(b);
  const float dmin = f16_to_float(static_cast<uint16_t>(b.dmin[0] | (b.dmin[1] << 8)));
  for (int p = 0; p < 8; ++p) {
    int sc, m, q[32];
    k_scale_min(b.scales, p, sc, m);
    k_quants(b.qs, qh, p, q);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      const float scaled = d1 * static_cast<float>(q[l]);  // (rounded before the subtraction)
      y[32 * p + l] = scaled - m1;
    }
  }
}
void dequantize_block(const BlockQ4_K& b, float* y) { dequantize_k_block(b, nullptr, y); }
void dequantize_block(const BlockQ5_K& b, float* y) { dequantize_k_block(b, b.qh, y); }

template <class Block>
int64_t whole_blocks(int64_t n, const char* what) {
  check(n >= 0 && n % kWeights<Block> == 0, "[", what, "] ", n,
        " values are not a whole number of ", kWeights<Block>, "-value blocks");
  return n / kWeights<Block>;
}

template <class Block>
void quantize_all(const float* x, Block* y, int64_t n, const char* what) {
  const int64_t nb = whole_blocks<Block>(n, what);
  parallel_for(0, nb, grain_for(kQuantBlock * 16),
               [&](int64_t b) { quantize_block(x + b * kQuantBlock, y[b]); });
}

template <class Block>
void dequantize_all(const Block* x, float* y, int64_t n) {
  const int64_t nb = whole_blocks<Block>(n, "dequantize");
  parallel_for(0, nb, grain_for(kWeights<Block> * 4),
               [&](int64_t b) { dequantize_block(x[b], y + b * kWeights<Block>); });
}

}  // namespace

const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_float(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  quantize_all(x, y, n, "quantize_q8_0");
}
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  quantize_all(x, y, n, "quantize_q4_0");
}
void dequantize(const BlockQ8_0* x, float* y, int64_t n) { dequantize_all(x, y, n); }
void dequantize(const BlockQ4_0* x, float* y, int64_t n) { dequantize_all(x, y, n); }
void dequantize(const BlockQ6_K* x, float* y, int64_t n) { dequantize_all(x, y, n); }
void dequantize(const BlockQ4_K* x, float* y, int64_t n) { dequantize_all(x, y, n); }
void dequantize(const BlockQ5_K* x, float* y, int64_t n) { dequantize_all(x, y, n); }

void quantize(DType t, const float* x, void* out, int64_t n) {
  switch (t) {
    case DType::q8_0:
      return quantize_q8_0(x, static_cast<BlockQ8_0*>(out), n);
    case DType::q4_0:
      return quantize_q4_0(x, static_cast<BlockQ4_0*>(out), n);
    default:
      fail("[quantize] ", dtype_name(t), " is not a block type");
  }
}

void dequantize(DType t, const void* in, float* y, int64_t n) {
  switch (t) {
    case DType::q8_0:
      return dequantize(static_cast<const BlockQ8_0*>(in), y, n);
    case DType::q4_0:
      return dequantize(static_cast<const BlockQ4_0*>(in), y, n);
    case DType::q6_k:
      return dequantize(static_cast<const BlockQ6_K*>(in), y, n);
    case DType::q4_k:
      return dequantize(static_cast<const BlockQ4_K*>(in), y, n);
    case DType::q5_k:
      return dequantize(static_cast<const BlockQ5_K*>(in), y, n);
    default:
      fail("[dequantize] ", dtype_name(t), " is not a block type");
  }
}

}  // namespace tinylm::kernels
#endif
