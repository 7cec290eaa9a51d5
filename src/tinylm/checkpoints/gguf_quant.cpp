#include "tinylm/checkpoints/gguf_quant.h"

#include <cstring>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/quant/blocks.h"

namespace tinylm::checkpoints {

namespace {

void put_f16(std::byte* p, float d) {
  const uint16_t h = float_to_f16(d);
  p[0] = static_cast<std::byte>(h & 0xff);
  p[1] = static_cast<std::byte>(h >> 8);
}
float get_f16(const std::byte* p) {
  return f16_to_float(
      static_cast<uint16_t>(static_cast<uint16_t>(p[0]) | static_cast<uint16_t>(p[1]) << 8));
}

}  // namespace

std::optional<DType> ggml_block_dtype(io::GgmlType t) {
  if (!io::ggml_type_supported(static_cast<uint32_t>(t))) return std::nullopt;
  const DType d = io::ggml_dtype(t);
  return is_quantized(d) ? std::optional<DType>(d) : std::nullopt;
}

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
    case io::GgmlType::q4_0:
      kernels::quantize(*ggml_block_dtype(type), x.data(), out.data(),
                        static_cast<int64_t>(x.size()));
      return;
    case io::GgmlType::q4_k:
    case io::GgmlType::q5_k:
    case io::GgmlType::q6_k:
      fail("encode_ggml: tinylm reads ", io::ggml_type_name(static_cast<uint32_t>(type)),
           " but does not write it");
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
    case io::GgmlType::q4_0:
    case io::GgmlType::q4_k:
    case io::GgmlType::q5_k:
    case io::GgmlType::q6_k:
      kernels::dequantize(*ggml_block_dtype(type), in.data(), out.data(),
                          static_cast<int64_t>(out.size()));
      return;
  }
}

}  // namespace tinylm::checkpoints
