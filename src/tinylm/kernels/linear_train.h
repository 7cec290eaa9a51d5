#pragma once
// Hugging Face Conv1D linears (y = x W + b, W stored [in, out]) for training, on top of
// kernels/gemm.h for float; double runs plain loops (the finite-difference reference, tiny
// shapes only).
#include <cstdint>

#include "tinylm/kernels/gemm.h"

namespace tinylm::kernels {

// C = alpha op(A) op(B) + beta C, row-major (gemm.h's contract): float goes to gemm_f32,
// double to a reference triple loop.
template <class T>
void gemm_t(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
            const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// y[r] += b for every row r. y: (rows, n).
template <class T>
void add_bias(T* y, const T* b, int64_t rows, int64_t n);

// db += column sums of dy. dy: (rows, n). Threads split the columns.
template <class T>
void bias_backward(T* db, const T* dy, int64_t rows, int64_t n);

// y = x W + b. y: (rows, nout); x: (rows, nin); W: (nin, nout); b: (nout) or null.
template <class T>
void conv1d_forward(T* y, const T* x, const T* w, const T* b, int64_t rows, int64_t nin,
                    int64_t nout);

// dx = dy W^T (written; skipped when dx is null); dW += x^T dy; db += colsum(dy) (when not null).
template <class T>
void conv1d_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int64_t rows,
                     int64_t nin, int64_t nout);

}  // namespace tinylm::kernels
