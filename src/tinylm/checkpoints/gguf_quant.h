#pragma once
// The seam between GGUF checkpoints and ggml's block formats: rows of f32 into GGUF tensor
// data of a given ggml type and back. F32 is copied, F16 rounded to nearest even; Q8_0 and
// Q4_0 go through kernels/quant (ggml's reference quantizers), so the same floats give the same
// bytes as llama.cpp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "tinylm/core/dtype.h"
#include "tinylm/io/gguf.h"

namespace tinylm::checkpoints {

// n floats (a multiple of the type's block size) into their GGUF bytes (n / block * bytes).
void encode_ggml(io::GgmlType type, std::span<const float> x, std::span<std::byte> out);
// GGUF bytes of n values of `type` into n floats.
void decode_ggml(io::GgmlType type, std::span<const std::byte> in, std::span<float> out);

// The block dtype of a ggml type (Q8_0, Q4_0, Q6_K), or none for F32 / F16.
std::optional<DType> ggml_block_dtype(io::GgmlType type);

// Bytes of n values of `type` (n a multiple of its block size).
inline uint64_t ggml_bytes(io::GgmlType type, uint64_t n) {
  return n / io::ggml_block_size(type) * io::ggml_block_bytes(type);
}

}  // namespace tinylm::checkpoints
