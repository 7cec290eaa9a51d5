#pragma once
// Causal multi-head self-attention as compute shaders (kernels/attention/causal.h on the
// device): GPT-2's training forward and backward over fused q | k | v rows, and rows against a
// KV cache on the device. Head h takes channels h*D .. h*D+D-1 (D = C / n_head, at most 128);
// scale = 1 / sqrt(D) (rounded to float as the CPU's).
//
// Forward, fused (shaders/attention_forward.glsl): a workgroup per (sequence, head, block of 16
// query rows) makes one pass over the key/value tiles of 16 positions up to the block's last
// row, with a running max m and sum l per row (online softmax):
//   s_j = q . k_j,  m' = max(m, s_j),  c = exp((m - m') scale),
//   l = l c + sum_j exp((s_j - m') scale),  acc = acc c + sum_j p_j v_j,  out = acc / l.
// Scores reach global memory only in att (raw as they are made, then turned in place into
// the probabilities the backward needs); inference writes none. A lone decode row keeps 16 of
// the 256 invocations busy: splitting a long context across workgroups waits for a GPU to
// measure it.
// Backward: dP = dO v^T, dot = sum_j p_j dP_j, dS = p (dP - dot) scale, dq = dS k (a workgroup
// per query block), then dk = dS^T q and dv = p^T dO (a workgroup per tile of 16 keys walking
// the query rows in order; a second dispatch instead of float atomics).
//
// Numerics: f32 throughout; every sum in a fixed order (one chain of fused multiply-adds, or
// one invocation walking a row), no float atomics and no subgroup operations, so one device and
// driver give the same bits run after run. A row skips the key tiles past its own position, so
// its bits do not depend on the rows computed with it: attention_cached computes the training
// forward's bits for the same q, k, v (float cache), a prefill the bits of decoding row by
// row, and a row of a continuous batch its bits alone. Against the double references: the CPU
// kernel's bounds (tests/unit/gpu_attention_test.cpp).
#include <cstddef>
#include <cstdint>

#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// The widest head the shaders stage in shared memory.
constexpr int64_t kMaxAttentionHead = 128;

// ---- training: qkv holds each position's fused q | k | v row (3C wide).

// out: (B*T, C) attention output before the projection; att: (B, n_head, T, T) the
// probabilities (row t holds positions 0..t, zeros after). qkv: (B*T, 3C). dropout > 0: the
// CPU's attention-weight dropout (kernels/attention/causal.h: the same masks, att negated where
// dropped).
void causal_attention_forward(Context& context, View out, View att, View qkv, int64_t B, int64_t T,
                              int64_t C, int64_t n_head, float dropout = 0.0f,
                              DropoutSite where = {});

// Floats of scratch the backward needs: each row's sum_j p_j dP_j, (B, n_head, T).
int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t n_head);

// dqkv: (B*T, 3C), written (not accumulated), from dout: (B*T, C) and the forward's att, qkv
// and dropout rate.
void causal_attention_backward(Context& context, View dqkv, View dout, View att, View qkv,
                               View scratch, int64_t B, int64_t T, int64_t C, int64_t n_head,
                               float dropout = 0.0f);

// ---- inference against a KV cache on the device. One sequence's keys (and, in a buffer of
// their own, its values) are rows of C channels, position after position: channel c of
// position t at element t*C + c. f32: one float each; f16: two to a uint word (element e in
// word e / 2, the low half when e is even; packHalf2x16 rounding), C even.
enum class CacheType { f32, f16 };

// Bytes a cache of `positions` positions of C channels takes (keys or values).
size_t kv_cache_bytes(CacheType type, int64_t positions, int64_t C);

// Writes the keys and values of n rows at positions first .. first+n-1: row r's key is
// src[r*ld + offset .. + C), its value the C floats after it (a layer's qkv rows: ld = 3C,
// offset = C).
void kv_store(Context& context, View keys, View values, CacheType type, View src, int64_t ld,
              int64_t offset, int64_t first, int64_t n, int64_t C);

// Rows at positions t0 .. t0+n-1 against the cached positions 0 .. t0+n-1 (this call's rows
// already stored), each row up to its own position: q row r at q[r*ldq .. + C) (ldq = 3C reads
// a layer's qkv rows), out: (n, C).
void attention_cached(Context& context, View out, View q, int64_t ldq, View keys, View values,
                      CacheType type, int64_t t0, int64_t n, int64_t C, int64_t n_head);

// ---- a decode step of continuous batching: rows of several sequences, each against its own
// slot of a cache of `slots` sequences of `capacity` positions (slot s's position t at element
// (s*capacity + t)*C + c: single-sequence caches slot after slot, so kv_store with
// first = s*capacity + t fills a slot). where: (rows, 2) int32 pairs (slot, position) on the
// device, so a step replays with new positions. A row naming no slot (slot < 0 or >= slots) or
// a position < 0 or >= capacity is skipped: nothing stored, its out left as it was.

// Row r's key and value (src as kv_store's) into its (slot, position); distinct pairs.
void kv_store_rows(Context& context, View keys, View values, CacheType type, View src, int64_t ld,
                   int64_t offset, View where, int64_t rows, int64_t slots, int64_t capacity,
                   int64_t C);

// Row r (q as attention_cached's) against its slot's positions 0 .. its position (its key and
// value already stored); out: (rows, C). The same arithmetic as attention_cached's for the row.
void attention_cached_rows(Context& context, View out, View q, int64_t ldq, View keys, View values,
                           CacheType type, View where, int64_t rows, int64_t slots,
                           int64_t capacity, int64_t C, int64_t n_head);

}  // namespace tinylm::kernels::vulkan
