#pragma once
// The bias of a linear layer over rows: forward y[r] += b, backward db += column sums of dy.
//
// Contract: row-invariant (forward) and fixed order (backward: each column summed by one
// thread in row order), the same bits at any thread count and level. double is the
// reference.
#include <cstdint>

namespace tinylm::kernels {

// y[r] += b for every row r. y: (rows, n).
void add_bias(float* y, const float* b, int64_t rows, int64_t n);
void add_bias(double* y, const double* b, int64_t rows, int64_t n);

// db += column sums of dy. dy: (rows, n). Threads split the columns.
void bias_backward(float* db, const float* dy, int64_t rows, int64_t n);
void bias_backward(double* db, const double* dy, int64_t rows, int64_t n);

}  // namespace tinylm::kernels
