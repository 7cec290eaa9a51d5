#pragma once
// Causal multi-head self-attention in float: GPT-2's training (whole sequences, the
// probabilities saved for the backward) and inference (rows against a KV cache). Head h takes
// the contiguous channels h*D .. h*D+D-1 (D = C / n_head); scale = 1 / sqrt(D).
//
// Per row t and head: s_j = q_t . k_j for j <= t (two chains of fused multiply-adds over the
// head's channels, even and odd), p = softmax(scale * s) (kernels/cpu/vec_math.h's exp, the
// sum in 16 lanes), out_t = sum_j p_j v_j (one chain of fused multiply-adds over j).
//
// Contract: row-invariant. A row's result does not depend on the rows computed with it, on
// the thread count or on the level: training and inference compute the same bits for the same
// inputs, and a batched prefill the bits of decoding token by token. double is the reference
// (plain loops), for finite-difference checks. kernels/attention/exact.h is microgpt's.
#include <cstdint>

#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

// ---- training: qkv holds each position's fused q | k | v row (Hugging Face c_attn output,
// 3C wide). Tasks are (sequence, head) pairs split across threads.

// Elements of scratch the forward and backward need.
int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t C, int64_t n_head);

// out: (B*T, C) attention output before the projection; att: (B, n_head, T, T) saved
// probabilities (row t holds positions 0..t, zeros after). qkv: (B*T, 3C).
//
// Attention-weight dropout (nanoGPT's attn_dropout), when dropout > 0: probability
// (b, h, t, j) is kept as kernels/activation/dropout.h draws element ((b n_head + h) T + t) T + j
// of `where` (where.first: that index of this batch's element 0, for a shard of a larger batch)
// and scaled by 1 / (1 - dropout), and out sums the dropped probabilities. att then holds the
// probabilities before dropout, negated where dropped (-0 for a dropped 0): with the rate, all
// the backward needs. dropout 0 is no dropout at all (no draws; the same bits as without).
void causal_attention_forward(float* out, float* att, const float* qkv, float* scratch, int64_t B,
                              int64_t T, int64_t C, int64_t n_head, float dropout = 0.0f,
                              DropoutSite where = {});
void causal_attention_forward(double* out, double* att, const double* qkv, double* scratch,
                              int64_t B, int64_t T, int64_t C, int64_t n_head, float dropout = 0.0f,
                              DropoutSite where = {});

// dqkv: (B*T, 3C), written (not accumulated), from dout: (B*T, C) and the forward's att, qkv
// and dropout rate.
void causal_attention_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                               float* scratch, int64_t B, int64_t T, int64_t C, int64_t n_head,
                               float dropout = 0.0f);
void causal_attention_backward(double* dqkv, const double* dout, const double* att,
                               const double* qkv, double* scratch, int64_t B, int64_t T, int64_t C,
                               int64_t n_head, float dropout = 0.0f);

// ---- inference against a KV cache of `capacity` positions in float, Bf16 or F16, in blocks of
// 16 positions (capacity rounded up to whole blocks), each block 16 C keys and 16 C values:
//  - keys transposed, (C, 16): a row's scores run 16 keys to a vector, and a new key's
//    channels lie within one block (one cache line per channel of a plain transposed layout
//    missed on every store);
//  - values by head, (n_head, 16, D): the weighted sum reads a head's block as one run.
// So one head's keys and values of a block are two contiguous runs (2 KiB each for 64 bf16
// channels), which the hardware prefetchers follow.

// Positions a layer's keys (or values) take room for: the capacity in whole blocks.
inline int64_t kv_positions(int64_t capacity) { return (capacity + 15) / 16 * 16; }
// Where channel c of position t's key sits among a layer's keys of width C.
inline int64_t kv_key_index(int64_t c, int64_t t, int64_t C) {
  return t / 16 * 16 * C + c * 16 + t % 16;
}
// Where channel c of position t's value sits among a layer's values (width C, heads of D).
inline int64_t kv_value_index(int64_t c, int64_t t, int64_t C, int64_t D) {
  return t / 16 * 16 * C + c / D * 16 * D + t % 16 * D + c % D;
}

// Writes position t's key and value (k, v: C floats each, rounded to the cache's type; heads
// of C / n_head).
void kv_store(float* keys, float* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head);
void kv_store(Bf16* keys, Bf16* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head);
void kv_store(F16* keys, F16* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head);

// Rows t0 .. t1-1 of one sequence against the cached positions 0 .. t1-1 (this call's rows
// already stored): q, out: (t1 - t0, C). Threads split the heads.
void attention_cached(float* out, const float* q, const float* keys, const float* values,
                      int64_t t0, int64_t t1, int64_t C, int64_t n_head);
void attention_cached(float* out, const float* q, const Bf16* keys, const Bf16* values, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head);
void attention_cached(float* out, const float* q, const F16* keys, const F16* values, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head);

// Rows of several sequences (continuous batching), each against its own cache: row r at
// position positions[r] of keys[r], values[r] (its key and value already stored; rows of one
// sequence share its cache and attend up to their own positions); q, out:
// (rows, C). Row r's bits are attention_cached's for that row; threads split the (row, head)
// pairs, so a step has one parallel region, not one per row.
void attention_cached_rows(float* out, const float* q, const float* const* keys,
                           const float* const* values, const int64_t* positions, int64_t rows,
                           int64_t C, int64_t n_head);
void attention_cached_rows(float* out, const float* q, const Bf16* const* keys,
                           const Bf16* const* values, const int64_t* positions, int64_t rows,
                           int64_t C, int64_t n_head);
void attention_cached_rows(float* out, const float* q, const F16* const* keys,
                           const F16* const* values, const int64_t* positions, int64_t rows,
                           int64_t C, int64_t n_head);

// A decode step's rows, one row of each of several distinct sequences: row r's key and value
// (kv + r * ldkv, the value C floats on, as a layer's qkv rows hold them) are stored at
// positions[r] of keys[r], values[r], then the row attends as attention_cached_rows (the same
// bits). Each (row, head) pair stores its head just before its scores read the block.
void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,
                         float* const* keys, float* const* values, const int64_t* positions,
                         int64_t rows, int64_t C, int64_t n_head);
void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,
                         Bf16* const* keys, Bf16* const* values, const int64_t* positions,
                         int64_t rows, int64_t C, int64_t n_head);
void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,
                         F16* const* keys, F16* const* values, const int64_t* positions,
                         int64_t rows, int64_t C, int64_t n_head);

}  // namespace tinylm::kernels
