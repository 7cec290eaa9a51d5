#pragma once
// GPT-2's input embedding for training: token rows plus learned absolute positions.
#include <cstdint>

namespace tinylm::kernels {

// x[b][t] = wte[tokens[b][t]] + wpe[t]. x: (B*T, C); tokens: (B*T); ids trusted (< vocab).
template <class T>
void token_position_embedding_forward(T* x, const int32_t* tokens, const T* wte, const T* wpe, int64_t B,
                       int64_t Tn, int64_t C);

// dwte[tokens[b][t]] += dx[b][t];  dwpe[t] += sum_b dx[b][t]. Threads split the columns, so
// a repeated token's rows are added by one thread, in row order.
template <class T>
void token_position_embedding_backward(T* dwte, T* dwpe, const T* dx, const int32_t* tokens, int64_t B,
                        int64_t Tn, int64_t C);

}  // namespace tinylm::kernels
