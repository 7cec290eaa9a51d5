#include "tinylm/kernels/vulkan/attention.h"

#include <cmath>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context_impl.h"
#include "tinylm/kernels/vulkan/op_args.h"

namespace tinylm::kernels::vulkan {
namespace {

constexpr int64_t kAttentionBlock = 16;  // query rows per workgroup (shaders/attention_common.glsl)

// shaders/attention_forward.glsl's push constants.
struct ForwardPush {
  uint32_t sequences, n_head, D, rows, first, ldq, q_seq, ldkv, kv_seq, k_off, v_off, ldo, o_seq,
      write_att;
  float scale;
  uint32_t slots, capacity;
  // Attention-weight dropout, training only (inference leaves it out: 0, none).
  uint32_t drop_threshold = 0;
  float keep_scale = 0;
  uint32_t drop_site = 0, step_lo = 0, step_hi = 0, seed_lo = 0, seed_hi = 0, first_quad = 0,
           first_rem = 0;
};
struct BackwardPush {
  uint32_t B, n_head, D, T, C;
  float scale;
  float keep_scale;  // 0: no dropout
};
struct StorePush {
  uint32_t n, C, ld, off, first, slots, capacity;
};

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// The CPU's scale: 1 / sqrt(D) in float.
float attention_scale(int64_t D) { return 1.0f / std::sqrt(static_cast<float>(D)); }

// n_head divides C into heads of at most kMaxAttentionHead channels; returns D.
int64_t head_width(std::string_view op, int64_t C, int64_t n_head) {
  check_count(op, "C", C);
  check(n_head >= 1 && n_head <= kMaxCount, "vulkan ", op, ": n_head = ", n_head,
        " must be at least 1");
  check(C % n_head == 0, "vulkan ", op, ": C = ", C, " is not a multiple of n_head = ", n_head);
  const int64_t D = C / n_head;
  check(D <= kMaxAttentionHead, "vulkan ", op, ": heads of ", D, " channels (C = ", C,
        ", n_head = ", n_head, ") exceed the ", kMaxAttentionHead, " the shaders stage");
  return D;
}

// B, T and the element counts of the training buffers stay within the shaders' 32-bit indices
// (the products in double: B * n_head * T * T can pass int64's range).
void check_training(std::string_view op, int64_t B, int64_t T, int64_t C, int64_t n_head) {
  check_count(op, "B", B);
  check_count(op, "T", T);
  const double qkv = 3.0 * B * T * C, att = 1.0 * B * n_head * T * T;
  check(qkv <= kMaxCount, "vulkan ", op, ": B * T * 3C = ", qkv, " is past 2^31 - 1");
  check(att <= kMaxCount, "vulkan ", op, ": B * n_head * T * T = ", att, " is past 2^31 - 1");
}

// Elements (floats or f16 halves) of `type` a buffer holds.
int64_t cache_elements(View b, CacheType type) {
  const int64_t bytes = static_cast<int64_t>(b.bytes());
  return type == CacheType::f32 ? bytes / 4 : bytes / 4 * 2;
}

void check_cache(std::string_view op, std::string_view name, View b, CacheType type,
                 int64_t elements) {
  check(cache_elements(b, type) >= elements, "vulkan ", op, ": ", name, " holds ",
        cache_elements(b, type), type == CacheType::f32 ? " floats" : " halves", ", needs ",
        elements);
}

void check_f16_width(std::string_view op, CacheType type, int64_t C) {
  check(type == CacheType::f32 || C % 2 == 0, "vulkan ", op, ": an f16 cache needs C even, not ",
        C);
}

}  // namespace

void causal_attention_forward(Context& context, View out, View att, View qkv, int64_t B, int64_t T,
                              int64_t C, int64_t n_head, float dropout, DropoutSite where) {
  constexpr std::string_view op = "causal_attention_forward";
  const int64_t D = head_width(op, C, n_head);
  check_training(op, B, T, C, n_head);
  check_dropout(B * n_head * T * T, dropout, where);
  check_floats(op, "out", out, B * T * C);
  check_floats(op, "att", att, B * n_head * T * T);
  check_floats(op, "qkv", qkv, B * T * 3 * C);
  if (B == 0 || T == 0 || C == 0) return;
  Context::Impl& c = context.impl();
  const ForwardPush push{.sequences = u32(B),
                         .n_head = u32(n_head),
                         .D = u32(D),
                         .rows = u32(T),
                         .first = 0,
                         .ldq = u32(3 * C),
                         .q_seq = u32(T * 3 * C),
                         .ldkv = u32(3 * C),
                         .kv_seq = u32(T * 3 * C),
                         .k_off = u32(C),
                         .v_off = u32(2 * C),
                         .ldo = u32(C),
                         .o_seq = u32(T * C),
                         .write_att = 1,
                         .scale = attention_scale(D),
                         .slots = 0,
                         .capacity = 0,
                         .drop_threshold = dropout_keep_threshold(dropout),
                         .keep_scale = dropout_keep_scale(dropout),
                         .drop_site = where.site,
                         .step_lo = static_cast<uint32_t>(where.step),
                         .step_hi = static_cast<uint32_t>(where.step >> 32),
                         .seed_lo = static_cast<uint32_t>(where.seed),
                         .seed_hi = static_cast<uint32_t>(where.seed >> 32),
                         .first_quad = static_cast<uint32_t>(where.first >> 2),
                         .first_rem = static_cast<uint32_t>(where.first & 3)};
  const int64_t items = B * n_head * ((T + kAttentionBlock - 1) / kAttentionBlock);
  const Dispatch d{
      "attention_forward", {out, att, qkv, qkv, qkv}, bytes_of(push), groups_for(c, items, 1)};
  c.run({&d, 1});
}

int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t n_head) {
  return B * n_head * T;
}

void causal_attention_backward(Context& context, View dqkv, View dout, View att, View qkv,
                               View scratch, int64_t B, int64_t T, int64_t C, int64_t n_head,
                               float dropout) {
  constexpr std::string_view op = "causal_attention_backward";
  const int64_t D = head_width(op, C, n_head);
  check_training(op, B, T, C, n_head);
  check_floats(op, "dqkv", dqkv, B * T * 3 * C);
  check_floats(op, "dout", dout, B * T * C);
  check_floats(op, "att", att, B * n_head * T * T);
  check_floats(op, "qkv", qkv, B * T * 3 * C);
  check_floats(op, "scratch", scratch, causal_attention_scratch_size(B, T, n_head));
  check(dropout >= 0.0f && dropout < 1.0f, "vulkan ", op, ": dropout must be in [0, 1), got ",
        dropout);
  if (B == 0 || T == 0 || C == 0) return;
  Context::Impl& c = context.impl();
  const BackwardPush push{u32(B),
                          u32(n_head),
                          u32(D),
                          u32(T),
                          u32(C),
                          attention_scale(D),
                          dropout > 0.0f ? dropout_keep_scale(dropout) : 0.0f};
  const uint32_t groups =
      groups_for(c, B * n_head * ((T + kAttentionBlock - 1) / kAttentionBlock), 1);
  // Rows (dq and each row's dot into scratch), then columns (dk, dv) from those dots.
  const Dispatch d[] = {
      {"attention_backward_dq", {dqkv, scratch, dout, att, qkv}, bytes_of(push), groups},
      {"attention_backward_dkv", {dqkv, scratch, dout, att, qkv}, bytes_of(push), groups}};
  c.run(d);
}

size_t kv_cache_bytes(CacheType type, int64_t positions, int64_t C) {
  const int64_t n = positions * C;
  return static_cast<size_t>(type == CacheType::f32 ? n * 4 : (n + 1) / 2 * 4);
}

void kv_store(Context& context, View keys, View values, CacheType type, View src, int64_t ld,
              int64_t offset, int64_t first, int64_t n, int64_t C) {
  constexpr std::string_view op = "kv_store";
  for (const auto& [what, v] : {std::pair{"ld", ld}, std::pair{"offset", offset},
                                std::pair{"first", first}, std::pair{"n", n}, std::pair{"C", C}})
    check_count(op, what, v);
  check_f16_width(op, type, C);
  check_count(op, "(first + n) * C", (first + n) * C);
  check(n <= 1 || ld >= 2 * C, "vulkan ", op, ": rows ld = ", ld, " apart overlap their ", 2 * C,
        " floats of key and value");
  if (n == 0 || C == 0) return;
  check_count(op, "the last row's end", (n - 1) * ld + offset + 2 * C);
  check_floats(op, "src", src, (n - 1) * ld + offset + 2 * C);
  check_cache(op, "keys", keys, type, (first + n) * C);
  check_cache(op, "values", values, type, (first + n) * C);
  Context::Impl& c = context.impl();
  const StorePush push{u32(n), u32(C), u32(ld), u32(offset), u32(first), 0, 0};
  const int64_t items = type == CacheType::f32 ? n * C : n * C / 2;
  const Dispatch d{type == CacheType::f32 ? "attention_kv_store" : "attention_kv_store_f16",
                   {keys, values, src},
                   bytes_of(push),
                   groups_for(c, items, kElementwiseGroup)};
  c.run({&d, 1});
}

void attention_cached(Context& context, View out, View q, int64_t ldq, View keys, View values,
                      CacheType type, int64_t t0, int64_t n, int64_t C, int64_t n_head) {
  constexpr std::string_view op = "attention_cached";
  const int64_t D = head_width(op, C, n_head);
  check_count(op, "ldq", ldq);
  check_count(op, "t0", t0);
  check_count(op, "n", n);
  check_f16_width(op, type, C);
  check_count(op, "(t0 + n) * C", (t0 + n) * C);
  check(n <= 1 || ldq >= C, "vulkan ", op, ": q rows ldq = ", ldq, " apart overlap their ", C,
        " channels");
  if (n == 0 || C == 0) return;
  check_count(op, "the last q row's end", (n - 1) * ldq + C);
  check_floats(op, "out", out, n * C);
  check_floats(op, "q", q, (n - 1) * ldq + C);
  check_cache(op, "keys", keys, type, (t0 + n) * C);
  check_cache(op, "values", values, type, (t0 + n) * C);
  Context::Impl& c = context.impl();
  const ForwardPush push{.sequences = 1,
                         .n_head = u32(n_head),
                         .D = u32(D),
                         .rows = u32(n),
                         .first = u32(t0),
                         .ldq = u32(ldq),
                         .q_seq = 0,
                         .ldkv = u32(C),
                         .kv_seq = 0,
                         .k_off = 0,
                         .v_off = 0,
                         .ldo = u32(C),
                         .o_seq = 0,
                         .write_att = 0,
                         .scale = attention_scale(D),
                         .slots = 0,
                         .capacity = 0};
  const int64_t items = n_head * ((n + kAttentionBlock - 1) / kAttentionBlock);
  // att is not written (write_att = 0): out stands in at its binding.
  const Dispatch d{type == CacheType::f32 ? "attention_forward" : "attention_cached_f16",
                   {out, out, q, keys, values},
                   bytes_of(push),
                   groups_for(c, items, 1)};
  c.run({&d, 1});
}

namespace {

// The checks kv_store_rows and attention_cached_rows share.
void check_rows(std::string_view op, CacheType type, View keys, View values, View where,
                int64_t rows, int64_t slots, int64_t capacity, int64_t C) {
  check_count(op, "rows", rows);
  check_count(op, "slots", slots);
  check_count(op, "capacity", capacity);
  check_f16_width(op, type, C);
  const double elements = 1.0 * slots * capacity * C;
  check(elements <= kMaxCount, "vulkan ", op, ": slots * capacity * C = ", elements,
        " is past 2^31 - 1");
  check_cache(op, "keys", keys, type, slots * capacity * C);
  check_cache(op, "values", values, type, slots * capacity * C);
  check(where.bytes() >= static_cast<size_t>(rows) * 2 * sizeof(int32_t), "vulkan ", op,
        ": where holds ", where.bytes() / sizeof(int32_t), " ints, needs ", 2 * rows);
}

}  // namespace

void kv_store_rows(Context& context, View keys, View values, CacheType type, View src, int64_t ld,
                   int64_t offset, View where, int64_t rows, int64_t slots, int64_t capacity,
                   int64_t C) {
  constexpr std::string_view op = "kv_store_rows";
  check_count(op, "ld", ld);
  check_count(op, "offset", offset);
  check_count(op, "C", C);
  check_rows(op, type, keys, values, where, rows, slots, capacity, C);
  if (rows == 0 || C == 0) return;
  check_count(op, "the last row's end", (rows - 1) * ld + offset + 2 * C);
  check_floats(op, "src", src, (rows - 1) * ld + offset + 2 * C);
  Context::Impl& c = context.impl();
  const StorePush push{u32(rows), u32(C), u32(ld), u32(offset), 0, u32(slots), u32(capacity)};
  const int64_t items = type == CacheType::f32 ? rows * C : rows * C / 2;
  const Dispatch d{
      type == CacheType::f32 ? "attention_kv_store_rows" : "attention_kv_store_rows_f16",
      {keys, values, src, where},
      bytes_of(push),
      groups_for(c, items, kElementwiseGroup)};
  c.run({&d, 1});
}

void attention_cached_rows(Context& context, View out, View q, int64_t ldq, View keys, View values,
                           CacheType type, View where, int64_t rows, int64_t slots,
                           int64_t capacity, int64_t C, int64_t n_head) {
  constexpr std::string_view op = "attention_cached_rows";
  const int64_t D = head_width(op, C, n_head);
  check_count(op, "ldq", ldq);
  check_rows(op, type, keys, values, where, rows, slots, capacity, C);
  if (rows == 0 || C == 0) return;
  check_count(op, "the last q row's end", (rows - 1) * ldq + C);
  check_floats(op, "out", out, rows * C);
  check_floats(op, "q", q, (rows - 1) * ldq + C);
  Context::Impl& c = context.impl();
  // Each row a sequence of one row (rows = 1), its position and slot from where.
  const ForwardPush push{.sequences = u32(rows),
                         .n_head = u32(n_head),
                         .D = u32(D),
                         .rows = 1,
                         .first = 0,
                         .ldq = u32(ldq),
                         .q_seq = u32(ldq),
                         .ldkv = u32(C),
                         .kv_seq = u32(capacity * C),
                         .k_off = 0,
                         .v_off = 0,
                         .ldo = u32(C),
                         .o_seq = u32(C),
                         .write_att = 0,
                         .scale = attention_scale(D),
                         .slots = u32(slots),
                         .capacity = u32(capacity)};
  const Dispatch d{type == CacheType::f32 ? "attention_cached_rows" : "attention_cached_rows_f16",
                   {out, out, q, keys, values, where},
                   bytes_of(push),
                   groups_for(c, rows * n_head, 1)};
  c.run({&d, 1});
}

}  // namespace tinylm::kernels::vulkan
