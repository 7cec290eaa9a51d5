#include "tinylm/train/gguf_quant.h"

#include <cmath>
#include <cstring>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"

namespace tinylm::train {

namespace {

// Interim reference blocks until kernels/quant (issue 15's block formats) is merged here:
// ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref, element by element.
constexpr size_t kBlock = 32;

void put_f16(std::byte* p, float d) {
  const uint16_t h = float_to_f16(d);
  p[0] = static_cast<std::byte>(h & 0xff);
  p[1] = static_cast<std::byte>(h >> 8);
}
float get_f16(const std::byte* p) {
  return f16_to_float(
      static_cast<uint16_t>(static_cast<uint16_t>(p[0]) | static_cast<uint16_t>(p[1]) << 8));
}

void quantize_q8_0(const float* x, std::byte* y) {
  float amax = 0.0f;
  for (size_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_f16(y, d);
  for (size_t j = 0; j < kBlock; ++j) {
    y[2 + j] = static_cast<std::byte>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
}

void quantize_q4_0(const float* x, std::byte* y) {
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < kBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_f16(y, d);
  for (size_t j = 0; j < kBlock / 2; ++j) {
    const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
    y[2 + j] = static_cast<std::byte>(lo | hi << 4);
  }
}

}  // namespace

void encode_ggml(io::GgmlType type, std::span<const float> x, std::span<std::byte> out) {
  check(x.size() % io::ggml_block_size(type) == 0 && out.size() == ggml_bytes(type, x.size()),
        "encode_ggml: ", x.size(), " values into ", out.size(), " bytes of ",
        io::ggml_type_name(static_cast<uint32_t>(type)));
  switch (type) {
    case io::GgmlType::f32:
      std::memcpy(out.data(), x.data(), out.size());
      return;
    case io::GgmlType::f16:
      for (size_t i = 0; i < x.size(); ++i) put_f16(out.data() + 2 * i, x[i]);
      return;
    case io::GgmlType::q8_0:
      for (size_t b = 0; b < x.size() / kBlock; ++b) quantize_q8_0(&x[b * kBlock], &out[b * 34]);
      return;
    case io::GgmlType::q4_0:
      for (size_t b = 0; b < x.size() / kBlock; ++b) quantize_q4_0(&x[b * kBlock], &out[b * 18]);
      return;
  }
}

void decode_ggml(io::GgmlType type, std::span<const std::byte> in, std::span<float> out) {
  check(out.size() % io::ggml_block_size(type) == 0 && in.size() == ggml_bytes(type, out.size()),
        "decode_ggml: ", in.size(), " bytes of ", io::ggml_type_name(static_cast<uint32_t>(type)),
        " into ", out.size(), " values");
  switch (type) {
    case io::GgmlType::f32:
      std::memcpy(out.data(), in.data(), in.size());
      return;
    case io::GgmlType::f16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = get_f16(in.data() + 2 * i);
      return;
    case io::GgmlType::q8_0:
      for (size_t b = 0; b < out.size() / kBlock; ++b) {
        const std::byte* p = in.data() + b * 34;
        const float d = get_f16(p);
        for (size_t j = 0; j < kBlock; ++j)
          out[b * kBlock + j] = static_cast<float>(static_cast<int8_t>(p[2 + j])) * d;
      }
      return;
    case io::GgmlType::q4_0:
      for (size_t b = 0; b < out.size() / kBlock; ++b) {
        const std::byte* p = in.data() + b * 18;
        const float d = get_f16(p);
        for (size_t j = 0; j < kBlock / 2; ++j) {
          const int q = static_cast<int>(p[2 + j]);
          out[b * kBlock + j] = static_cast<float>((q & 15) - 8) * d;
          out[b * kBlock + j + 16] = static_cast<float>((q >> 4) - 8) * d;
        }
      }
      return;
  }
}

}  // namespace tinylm::train
