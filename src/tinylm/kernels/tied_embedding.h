#pragma once
// Tied input embedding and output logits (EvermindLM): x_t = Emb[token_t] and
// logits_t = x_t · Embᵀ. The logits forward reads a transposed copy embT [D × V].
#include <cstdint>

namespace tinylm::kernels {

// x [rows × D] = Emb[tokens] (tokens checked by the caller).
template <class T>
void embedding_forward(T* x, const T* emb, const int* tokens, int64_t rows, int64_t D);

// demb[tokens[t]] += dx[t], t in order.
template <class T>
void embedding_backward(T* demb, const T* dx, const int* tokens, int64_t rows, int64_t D);

// logits [rows × V] = x [rows × D] · embT [D × V].
template <class T>
void tied_logits_forward(T* logits, const T* x, const T* embT, int64_t rows, int64_t D, int64_t V);

// dx [rows × D] = dlogits · Emb (written); demb [V × D] += dlogitsᵀ · x.
template <class T>
void tied_logits_backward(T* dx, T* demb, const T* dlogits, const T* x, const T* emb, int64_t rows, int64_t D,
                          int64_t V);

}  // namespace tinylm::kernels
