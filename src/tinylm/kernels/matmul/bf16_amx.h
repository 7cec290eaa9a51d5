#pragma once
// bf16_dot.h's products on AMX tiles (TDPBF16PS), for bf16_dot.cpp's entry points only: they
// run where bf16_dot_unit() is Bf16Unit::amx. Each output is one chain from +0 over its inputs,
// 16 (in_out) or 32 (out_in) at a time in order, in the instruction's own arithmetic; in_out
// then adds the bias. The same for a row whatever the other rows and the thread count.
#include <cstdint>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels::avx512 {

// As matmul_in_out_bf16: w in the pairs layout, nin and nout multiples of 16.
void amx_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows, int64_t nin,
                int64_t nout);
// As matmul_out_in_bf16: w (nout, nin) row-major, nin a multiple of 32.
void amx_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin, int64_t nout);

}  // namespace tinylm::kernels::avx512
