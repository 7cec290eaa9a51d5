#pragma once
// int_matmul.h's products on AMX-INT8 tiles, for int_matmul.cpp's avx512 entry points only:
// they run where int8_dot_unit() is Int8Unit::amx. TDPBSSD (Q8_0: signed by signed bytes) and
// TDPBSUD (Q4_0: the activations signed, the nibbles unsigned, 8 times the activations' sum
// taken back after) sum a block's 32 products for up to 16 rows by 16 outputs in one
// instruction; the integer sums are exact, so each block's P[k] and then the contract's chain of
// scales are the same bits as the register tiles'. Groups of fewer rows than a tile is worth
// take the VPDPBUSD tiles.
#include <cstdint>

#include "tinylm/kernels/quant/int_matmul.h"

namespace tinylm::kernels::avx512::amx {

// As the levels' quant_matmul_int8: q, dx, sx the rows' Q8_0 blocks (quantize_activations), w
// packed (pack_int8).
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout);
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout);

}  // namespace tinylm::kernels::avx512::amx
