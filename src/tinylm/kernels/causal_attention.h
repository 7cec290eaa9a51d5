#pragma once
// Causal multi-head self-attention over whole sequences, for training: O(T^2) per head.
// qkv holds each position's fused q | k | v row (Hugging Face c_attn output, 3C wide), head h
// taking the contiguous columns h*D .. h*D+D-1 of each part (D = C / n_head). Tasks are
// (sequence, head) pairs split across threads; each task writes only its own columns, so
// results do not depend on the thread count.
#include <cstdint>

namespace tinylm::kernels {

// Elements of scratch the forward and backward need.
int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t C, int64_t n_head);

// out: (B*T, C) attention output before the projection; att: (B, n_head, T, T) saved
// softmax probabilities (row t holds positions 0..t, zeros after). qkv: (B*T, 3C).
template <class T>
void causal_attention_forward(T* out, T* att, const T* qkv, T* scratch, int64_t B, int64_t Tn,
                              int64_t C, int64_t n_head);

// dqkv: (B*T, 3C), written (not accumulated), from dout: (B*T, C) and the forward's att, qkv.
template <class T>
void causal_attention_backward(T* dqkv, const T* dout, const T* att, const T* qkv, T* scratch,
                               int64_t B, int64_t Tn, int64_t C, int64_t n_head);

}  // namespace tinylm::kernels
