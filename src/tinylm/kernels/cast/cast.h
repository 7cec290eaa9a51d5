#pragma once
// Conversions between float and the 16-bit types over whole arrays: weights at load time,
// the half-precision training paths' operands, fp16 gradient accumulation.
//
// Contract: exact. Each element is rounded alone, to nearest even (NaN stays NaN, beyond the
// f16 range +-inf), giving the bits of core/dtype.h's scalar functions at every level and any
// thread count. Large arrays are split across threads.
#include <cstdint>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

void convert(const float* src, Bf16* dst, int64_t n);
void convert(const float* src, F16* dst, int64_t n);
void convert(const Bf16* src, float* dst, int64_t n);
void convert(const F16* src, float* dst, int64_t n);

// dst[i] = float(bf16(src[i])) or float(f16(src[i])): the rounded values kept as floats, so an
// f32 matrix product consumes exactly the half-precision values. dst may equal src.
void round_to_bf16(float* dst, const float* src, int64_t n);
void round_to_f16(float* dst, const float* src, int64_t n);

// Folds one sequence's gradient into an accumulation window: acc += src, then src = 0, in one
// pass. With round_f16 each src value is first rounded to f16, as a mixed-precision backward
// that stores its gradients in f16 would; an overflow becomes inf for the loss scaler to see.
void accumulate_and_clear(float* acc, float* src, int64_t n, bool round_f16);

}  // namespace tinylm::kernels
