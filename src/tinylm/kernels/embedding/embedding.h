#pragma once
// Token embeddings: rows of a table looked up by token id, plus learned absolute positions
// (GPT-2) or not (EvermindLM), and the tied output head that multiplies by the same table.
//
// Contract: exact (lookups, one addition per element: the same bits at every level) and fixed
// order (the backward adds a repeated token's rows in row order, one thread per column block).
// Token ids are trusted (checked by the models).
#include <cstdint>
#include <limits>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

inline constexpr int64_t kNoPeriod = std::numeric_limits<int64_t>::max();

// x[r] = table[tokens[r]] + positions[first + r % period] (no position term when positions is
// null). x: (rows, C); table: (vocab, C) in float, Bf16 or F16; positions: (n_positions, C).
// GPT-2's training batch of B sequences of T: first 0, period T; inference of rows at
// positions t0..: first t0.
void embedding_forward(float* x, const int32_t* tokens, const float* table, const float* positions,
                       int64_t rows, int64_t C, int64_t first = 0, int64_t period = kNoPeriod);
void embedding_forward(float* x, const int32_t* tokens, const Bf16* table, const float* positions,
                       int64_t rows, int64_t C, int64_t first = 0, int64_t period = kNoPeriod);
void embedding_forward(float* x, const int32_t* tokens, const F16* table, const float* positions,
                       int64_t rows, int64_t C, int64_t first = 0, int64_t period = kNoPeriod);
void embedding_forward(double* x, const int32_t* tokens, const double* table,
                       const double* positions, int64_t rows, int64_t C, int64_t first = 0,
                       int64_t period = kNoPeriod);

// dtable[tokens[r]] += dx[r]; dpositions[r % period] += dx[r] (when not null). Threads split
// the columns, so each element's rows are added in row order.
void embedding_backward(float* dtable, float* dpositions, const float* dx, const int32_t* tokens,
                        int64_t rows, int64_t C, int64_t period = kNoPeriod);
void embedding_backward(double* dtable, double* dpositions, const double* dx, const int32_t* tokens,
                        int64_t rows, int64_t C, int64_t period = kNoPeriod);

// The tied head (EvermindLM): logits [rows × V] = x [rows × D] · tableT [D × V] (a transposed
// copy of the table), kernels/matmul/small.h's products.
void tied_logits_forward(float* logits, const float* x, const float* tableT, int64_t rows,
                         int64_t D, int64_t V);
void tied_logits_forward(double* logits, const double* x, const double* tableT, int64_t rows,
                         int64_t D, int64_t V);
// dx [rows × D] = dlogits · table (written); dtable [V × D] += dlogitsᵀ · x.
void tied_logits_backward(float* dx, float* dtable, const float* dlogits, const float* x,
                          const float* table, int64_t rows, int64_t D, int64_t V);
void tied_logits_backward(double* dx, double* dtable, const double* dlogits, const double* x,
                          const double* table, int64_t rows, int64_t D, int64_t V);

}  // namespace tinylm::kernels
