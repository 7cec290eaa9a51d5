// Causal attention as compute shaders (kernels/vulkan/attention.h) on device 0 (lavapipe in CI)
// against the CPU's double references (kernels/attention/causal.h) within the bounds of the CPU
// kernel's own cases (attention_causal_f32 and attention_cached_* in ops_attention_test.cpp);
// each op run twice from the same inputs must give the same bytes. Every test runs without and
// with the Khronos validation layer, which must report nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/cpu/half.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/attention.h"
#include "tinylm/kernels/vulkan/context.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

using vulkan::CacheType;

class GpuAttention : public GpuTest {
 protected:
  // A cache of `positions` positions (keys or values), NaN in every float or half not stored.
  Buffer nan_cache(CacheType type, int64_t positions, int64_t C) {
    const size_t words = vulkan::kv_cache_bytes(type, positions, C) / 4;
    const uint32_t nan = type == CacheType::f32 ? 0x7fc00000u : 0x7e007e00u;
    Buffer b(*context_, words * 4);
    const std::vector<uint32_t> fill(words, nan);
    b.upload(std::as_bytes(std::span<const uint32_t>(fill)));
    return b;
  }
};

struct AttentionShape {
  int64_t B, T, C, n_head;
};

std::string describe(const AttentionShape& s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " C=" + std::to_string(s.C) +
         " n_head=" + std::to_string(s.n_head);
}

// Heads of 8, 4, 8, 16 (T past one block of 16 rows, and past four), 15 and 12 (odd and not a
// power of two) and 128 (the widest the shaders stage).
const AttentionShape kShapes[] = {{1, 1, 8, 1},   {2, 5, 12, 3},  {1, 33, 16, 2}, {2, 70, 64, 4},
                                  {1, 20, 30, 2}, {1, 17, 36, 3}, {1, 16, 256, 2}};

// Without dropout and with attention-weight dropout (attention_causal_dropout_f32's rate and
// site): with it, att's signs are the CPU's masks, element for element.
TEST_P(GpuAttention, TrainingMatchesTheReferenceWithTheSameBitsEachRun) {
  constexpr DropoutSite kSite{7, 3, 11, 1000003};
  for (const float rate : {0.0f, 0.25f}) {
    for (const AttentionShape& s : kShapes) {
      const std::string where = describe(s) + " dropout " + std::to_string(rate);
      const int64_t B = s.B, T = s.T, C = s.C, H = s.n_head;
      const size_t n_qkv = B * T * 3 * C, n_out = B * T * C, n_att = B * H * T * T;
      // attention_causal_f32's inputs (ops_attention_test.cpp).
      const Floats qkv = normal_floats(n_qkv, 25), dout = normal_floats(n_out, 26);
      const Buffer qkvb = upload(qkv), doutb = upload(dout);

      Floats outs[2][3];
      for (Floats(&o)[3] : outs) {
        Buffer out = zeros(n_out), att = upload(Floats(n_att, 7.0f)),
               dqkv = upload(Floats(n_qkv, 99.0f)),  // written, not accumulated
            scratch = zeros(vulkan::causal_attention_scratch_size(B, T, H));
        vulkan::causal_attention_forward(*context_, out, att, qkvb, B, T, C, H, rate, kSite);
        vulkan::causal_attention_backward(*context_, dqkv, doutb, att, qkvb, scratch, B, T, C, H,
                                          rate);
        o[0] = vulkan::download_floats(out, n_out);
        o[1] = vulkan::download_floats(att, n_att);
        o[2] = vulkan::download_floats(dqkv, n_qkv);
      }
      const char* names[] = {"out", "att", "dqkv"};
      for (int i = 0; i < 3; ++i)
        expect_same_bytes(where + " " + names[i] + " twice", outs[0][i], outs[1][i]);

      const Vec q = widen_all(qkv), d = widen_all(dout);
      Vec o(n_out), att(n_att), scratch(T), dqkv(n_qkv);
      causal_attention_forward(o.data(), att.data(), q.data(), scratch.data(), B, T, C, H, rate,
                               kSite);
      causal_attention_backward(dqkv.data(), d.data(), att.data(), q.data(), scratch.data(), B, T,
                                C, H, rate);
      // attention_causal_f32's bounds.
      expect_within(where, outs[0][0], near_max("out", o, 1e-6));
      expect_within(where, outs[0][1], near("att", att, 0, 1e-6));
      expect_within(where, outs[0][2], near_max("dqkv", dqkv, 1e-5));
      // Row t holds positions 0..t and zeros after, exactly; the signs are the reference's.
      int64_t not_zero = 0, other_sign = 0, negative = 0;
      for (int64_t row = 0; row < B * H * T; ++row) {
        for (int64_t j = 0; j < T; ++j) {
          const float a = outs[0][1][row * T + j];
          if (j > row % T) not_zero += a != 0.0f;
          other_sign += std::signbit(a) != std::signbit(att[row * T + j]);
          negative += std::signbit(a);
        }
      }
      EXPECT_EQ(not_zero, 0) << where << ": att past the row's position";
      EXPECT_EQ(other_sign, 0) << where << ": att's signs (the dropout masks)";
      if (rate == 0.0f) {
        EXPECT_EQ(negative, 0) << where;
      }
    }
  }
}

// Each sequence's rows against a cache of its keys and values: [0, T/2) then [T/2, T) in two
// calls, and row by row. A float cache gives the training forward's bits (row-invariant); an
// f16 cache matches the reference over its halves within attention_cached_f16's bound.
TEST_P(GpuAttention, CachedRowsMatchTheTrainingForward) {
  for (const AttentionShape& s : kShapes) {
    const int64_t B = s.B, T = s.T, C = s.C, H = s.n_head, t0 = T / 2;
    const size_t n_qkv = B * T * 3 * C, n_out = B * T * C;
    const Floats qkv = normal_floats(n_qkv, 25);
    const Buffer qkvb = upload(qkv);
    Buffer train_out = zeros(n_out), att = zeros(B * H * T * T);
    vulkan::causal_attention_forward(*context_, train_out, att, qkvb, B, T, C, H);
    const Floats train = vulkan::download_floats(train_out, n_out);

    for (const CacheType type : {CacheType::f32, CacheType::f16}) {
      const std::string where =
          describe(s) + (type == CacheType::f32 ? " f32 cache" : " f16 cache");
      // The cache has room past T (NaN there: never read).
      Buffer keys = nan_cache(type, T + 3, C), values = nan_cache(type, T + 3, C);
      Floats split(n_out), by_row(n_out);
      std::vector<uint32_t> key_words, value_words;
      for (int64_t b = 0; b < B; ++b) {
        // Stored from the qkv rows in place (offset to the sequence's key), in two calls.
        const int64_t seq = b * T * 3 * C;
        vulkan::kv_store(*context_, keys, values, type, qkvb, 3 * C, seq + C, 0, t0, C);
        vulkan::kv_store(*context_, keys, values, type, qkvb, 3 * C, seq + t0 * 3 * C + C, t0,
                         T - t0, C);
        // q rows as the layer's qkv rows (ldq = 3C) from position t0.
        const Buffer q_first(upload(Floats(qkv.begin() + seq, qkv.begin() + seq + T * 3 * C))),
            q_second(upload(Floats(qkv.begin() + seq + t0 * 3 * C, qkv.begin() + seq + T * 3 * C)));
        Buffer first = zeros(std::max<int64_t>(t0, 1) * C), second = zeros((T - t0) * C);
        vulkan::attention_cached(*context_, first, q_first, 3 * C, keys, values, type, 0, t0, C, H);
        vulkan::attention_cached(*context_, second, q_second, 3 * C, keys, values, type, t0, T - t0,
                                 C, H);
        const Floats a = vulkan::download_floats(first, t0 * C),
                     z = vulkan::download_floats(second, (T - t0) * C);
        std::copy(a.begin(), a.end(), split.begin() + b * T * C);
        std::copy(z.begin(), z.end(), split.begin() + b * T * C + t0 * C);
        for (int64_t t = 0; t < T; ++t) {
          const Buffer qt =
              upload(Floats(qkv.begin() + seq + t * 3 * C, qkv.begin() + seq + t * 3 * C + C));
          Buffer row = zeros(C);
          vulkan::attention_cached(*context_, row, qt, C, keys, values, type, t, 1, C, H);
          const Floats r = vulkan::download_floats(row, C);
          std::copy(r.begin(), r.end(), by_row.begin() + (b * T + t) * C);
        }
        if (b == B - 1) {  // the last sequence's cache, for the f16 reference
          const size_t words = vulkan::kv_cache_bytes(type, T, C) / 4;
          key_words.resize(words);
          value_words.resize(words);
          keys.download(std::as_writable_bytes(std::span<uint32_t>(key_words)));
          values.download(std::as_writable_bytes(std::span<uint32_t>(value_words)));
        }
      }
      expect_same_bytes(where + " row by row = in two calls", by_row, split);
      if (type == CacheType::f32) {
        expect_same_bytes(where + " = the training forward", split, train);
        continue;
      }
      // f16: each stored half one rounding from its float; the reference over those halves
      // (the last sequence) within attention_cached_f16's bound.
      const int64_t b = B - 1, seq = b * T * 3 * C;
      const auto half = [](const std::vector<uint32_t>& w, int64_t e) {
        return static_cast<double>(f16_to_float(static_cast<uint16_t>(w[e / 2] >> (e % 2 * 16))));
      };
      Vec ref_qkv(T * 3 * C);
      int64_t far = 0;
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t c = 0; c < C; ++c) {
          const double x[3] = {qkv[seq + t * 3 * C + c], qkv[seq + t * 3 * C + C + c],
                               qkv[seq + t * 3 * C + 2 * C + c]};
          const double k = half(key_words, t * C + c), v = half(value_words, t * C + c);
          for (const auto& [got, want] : {std::pair{k, x[1]}, std::pair{v, x[2]}})
            far += !(std::abs(got - want) <= std::ldexp(std::abs(want), -10) + std::ldexp(1, -24));
          ref_qkv[t * 3 * C + c] = x[0];
          ref_qkv[t * 3 * C + C + c] = k;
          ref_qkv[t * 3 * C + 2 * C + c] = v;
        }
      }
      EXPECT_EQ(far, 0) << where << ": halves more than one rounding from their floats";
      Vec o(T * C), a(H * T * T), unused(T);
      causal_attention_forward(o.data(), a.data(), ref_qkv.data(), unused.data(), 1, T, C, H);
      expect_within(where, Floats(split.begin() + b * T * C, split.end()),
                    near("out", o, 1e-5, 1e-5));
    }
  }
}

// A decode step of continuous batching: each sequence's row against its own slot of a shared
// cache (slots 1 and 2 of 3, at different positions), plus a row naming no slot, which is
// skipped. Each row's bits are attention_cached's for it alone.
TEST_P(GpuAttention, RowsOfSeveralSequencesMatchEachAlone) {
  for (const AttentionShape& s : kShapes) {
    const int64_t B = s.B, T = s.T, C = s.C, H = s.n_head, slots = 3, capacity = T + 2;
    const Floats qkv = normal_floats(B * T * 3 * C, 25);
    const Buffer qkvb = upload(qkv);
    for (const CacheType type : {CacheType::f32, CacheType::f16}) {
      const std::string where =
          describe(s) + (type == CacheType::f32 ? " f32 cache" : " f16 cache");
      Buffer keys = nan_cache(type, slots * capacity, C),
             values = nan_cache(type, slots * capacity, C);
      std::vector<int32_t> pairs;
      Floats step_rows, alone;
      for (int64_t b = 0; b < B; ++b) {
        const int64_t slot = (b + 1) % slots, pos = std::max<int64_t>(0, T - 1 - b);
        const int64_t seq = b * T * 3 * C;
        if (pos > 0)  // the positions before the step's, into the slot
          vulkan::kv_store(*context_, keys, values, type, qkvb, 3 * C, seq + C, slot * capacity,
                           pos, C);
        pairs.insert(pairs.end(), {static_cast<int32_t>(slot), static_cast<int32_t>(pos)});
        const Floats row(qkv.begin() + seq + pos * 3 * C, qkv.begin() + seq + (pos + 1) * 3 * C);
        step_rows.insert(step_rows.end(), row.begin(), row.end());
        // The same row alone, against a cache of its own sequence.
        Buffer own_keys = nan_cache(type, pos + 1, C), own_values = nan_cache(type, pos + 1, C),
               o = zeros(C);
        vulkan::kv_store(*context_, own_keys, own_values, type, qkvb, 3 * C, seq + C, 0, pos + 1,
                         C);
        vulkan::attention_cached(*context_, o, upload(row), 3 * C, own_keys, own_values, type, pos,
                                 1, C, H);
        const Floats r = vulkan::download_floats(o, C);
        alone.insert(alone.end(), r.begin(), r.end());
      }
      pairs.insert(pairs.end(), {-1, 0});  // a row naming no slot
      step_rows.insert(step_rows.end(), 3 * C, 1.0f);
      const int64_t rows = B + 1;
      Buffer where_b(*context_, pairs.size() * sizeof(int32_t));
      where_b.upload(std::as_bytes(std::span<const int32_t>(pairs)));
      const Buffer src = upload(step_rows);
      Buffer out = upload(Floats(rows * C, 5.0f));
      vulkan::kv_store_rows(*context_, keys, values, type, src, 3 * C, C, where_b, rows, slots,
                            capacity, C);
      vulkan::attention_cached_rows(*context_, out, src, 3 * C, keys, values, type, where_b, rows,
                                    slots, capacity, C, H);
      const Floats got = vulkan::download_floats(out, rows * C);
      expect_same_bytes(where + " rows = alone", Floats(got.begin(), got.begin() + B * C), alone);
      expect_same_bytes(where + " the row naming no slot left alone",
                        Floats(got.begin() + B * C, got.end()), Floats(C, 5.0f));
    }
  }
}

TEST_P(GpuAttention, BadShapesAndSmallBuffersAreOneLineErrors) {
  Buffer small = zeros(10), big = zeros(4096);
  test::expect_error(
      [&] { vulkan::causal_attention_forward(*context_, big, big, big, 1, 4, 12, 5); },
      {"vulkan causal_attention_forward: C = 12 is not a multiple of n_head = 5"});
  test::expect_error(
      [&] { vulkan::causal_attention_forward(*context_, big, big, big, 1, 2, 12, 0); },
      {"vulkan causal_attention_forward: n_head = 0 must be at least 1"});
  test::expect_error(
      [&] { vulkan::causal_attention_forward(*context_, big, big, big, 1, 2, 258, 1); },
      {"vulkan causal_attention_forward: heads of 258 channels", "exceed the 128"});
  test::expect_error(
      [&] { vulkan::causal_attention_forward(*context_, big, big, big, 4, 1 << 20, 12, 3); },
      {"vulkan causal_attention_forward: B * n_head * T * T = ", " is past 2^31 - 1"});
  test::expect_error(
      [&] { vulkan::causal_attention_forward(*context_, small, big, big, 1, 4, 12, 3); },
      {"vulkan causal_attention_forward: out holds 10 floats, needs 48"});
  test::expect_error(
      [&] { vulkan::causal_attention_backward(*context_, big, big, big, big, small, 2, 8, 12, 3); },
      {"vulkan causal_attention_backward: scratch holds 10 floats, needs 48"});
  test::expect_error(
      [&] { vulkan::kv_store(*context_, small, big, CacheType::f32, big, 24, 12, 0, 1, 12); },
      {"vulkan kv_store: keys holds 10 floats, needs 12"});
  test::expect_error(
      [&] { vulkan::kv_store(*context_, big, big, CacheType::f16, big, 21, 7, 0, 1, 7); },
      {"vulkan kv_store: an f16 cache needs C even, not 7"});
  test::expect_error(
      [&] {
        vulkan::attention_cached(*context_, big, big, 12, small, big, CacheType::f16, 3, 1, 12, 3);
      },
      {"vulkan attention_cached: keys holds 20 halves, needs 48"});
  test::expect_error(
      [&] {
        vulkan::attention_cached_rows(*context_, big, big, 12, big, big, CacheType::f32, small, 6,
                                      2, 8, 12, 3);
      },
      {"vulkan attention_cached_rows: where holds 10 ints, needs 12"});
  // Nothing to do is not an error.
  vulkan::causal_attention_forward(*context_, small, small, small, 0, 4, 12, 3);
  vulkan::attention_cached(*context_, small, small, 12, small, small, CacheType::f32, 5, 0, 12, 3);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuAttention, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
