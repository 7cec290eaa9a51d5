// Table cases for attention/: microgpt's exact attention, GPT-2's training attention and
// attention_cached over f32, bf16 and f16 caches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "finite_difference.h"
#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/attention/causal_reference.h"
#include "tinylm/kernels/attention/exact.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// microgpt's attention (attention/exact.h): exact, microgpt.py's loops. rows = T, n = C,
// k = n_head; scale 1 / sqrt(head width).
OpCase attention_exact_case() {
  const auto inputs = [](const Shape& s) {
    const size_t n = static_cast<size_t>(s.rows * s.n);
    return std::tuple{test::random_normal(n, 15), test::random_normal(n, 16),
                      test::random_normal(n, 17), test::random_normal(n, 18)};
  };
  return {
      "attention_exact_f64",
      Contract::exact,
      {{5, 8, 2}, {1, 4, 1}, {7, 12, 3}, {16, 16, 4}},
      [=](const Shape& s) {
        const auto [q, k, v, dout] = inputs(s);
        const int64_t T = s.rows, C = s.n, H = s.k;
        const double scale = 1.0 / std::sqrt(static_cast<double>(C / H));
        Vec o(T * C), att(H * T * T, 0.0), o_rows(T * C), att_rows(H * T * T, 0.0);
        attention_forward(o.data(), att.data(), q.data(), k.data(), v.data(), 0, T, C, H, T, scale);
        for (int64_t t = 0; t < T; ++t) {  // one row at a time against the cache
          attention_forward(o_rows.data(), att_rows.data(), q.data(), k.data(), v.data(), t, t + 1,
                            C, H, T, scale);
        }
        Vec dq(T * C, 0.0), dk(T * C, 0.0), dv(T * C, 0.0), scratch(T);
        attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), dout.data(), att.data(),
                           q.data(), k.data(), v.data(), T, C, H, T, scale);
        return std::vector<Out>{
            out("out", o), out("att", att), out("out_row_by_row", o_rows, "out"),
            out("dq", dq), out("dk", dk),   out("dv", dv)};
      },
      [=](const Shape& s) {
        const auto [q, k, v, dout] = inputs(s);
        const int64_t T = s.rows, C = s.n, H = s.k, hd = C / H;
        const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
        Vec o(T * C), att(H * T * T, 0.0);
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t t = 0; t < T; ++t) {
            Vec logits(t + 1);
            for (int64_t j = 0; j <= t; ++j) {
              double d = 0;  // sum(q[i] * k[j][i] for i in range(hd)), then * scale
              for (int64_t i = 0; i < hd; ++i) d += q[t * C + h * hd + i] * k[j * C + h * hd + i];
              logits[j] = d * scale;
            }
            const Vec a = literal_softmax(logits);
            for (int64_t j = 0; j <= t; ++j) att[(h * T + t) * T + j] = a[j];
            for (int64_t i = 0; i < hd; ++i) {
              double acc = 0;
              for (int64_t j = 0; j <= t; ++j) acc += a[j] * v[j * C + h * hd + i];
              o[t * C + h * hd + i] = acc;
            }
          }
        }
        // The gradients through causal_reference.h's backward, on q | k | v rows.
        Vec qkv(T * 3 * C), dqkv(T * 3 * C), ds(T), dq(T * C), dk(T * C), dv(T * C);
        for (int64_t t = 0; t < T; ++t) {
          std::copy_n(q.begin() + t * C, C, qkv.begin() + t * 3 * C);
          std::copy_n(k.begin() + t * C, C, qkv.begin() + t * 3 * C + C);
          std::copy_n(v.begin() + t * C, C, qkv.begin() + t * 3 * C + 2 * C);
        }
        for (int64_t h = 0; h < H; ++h) {
          reference::attention_head_backward(dqkv.data() + h * hd, dout.data() + h * hd,
                                             att.data() + h * T * T, qkv.data() + h * hd, ds.data(),
                                             T, C, hd);
        }
        for (int64_t t = 0; t < T; ++t) {
          std::copy_n(dqkv.begin() + t * 3 * C, C, dq.begin() + t * C);
          std::copy_n(dqkv.begin() + t * 3 * C + C, C, dk.begin() + t * C);
          std::copy_n(dqkv.begin() + t * 3 * C + 2 * C, C, dv.begin() + t * C);
        }
        return std::vector<Want>{exact("out", o), exact("att", att), near_max("dq", dq, 1e-13),
                                 near_max("dk", dk, 1e-13), near_max("dv", dv, 1e-13)};
      },
      [] {
        const int T = 5, C = 8, H = 2;
        Vec q = test::random_normal(T * C, 15), k = test::random_normal(T * C, 16),
            v = test::random_normal(T * C, 17);
        const Vec probe = test::random_normal(T * C, 18);
        Vec o(T * C), att(H * T * T), dq(T * C, 0.0), dk(T * C, 0.0), dv(T * C, 0.0), scratch(T);
        const double scale = 0.5;
        const auto loss = [&] {
          attention_forward(o.data(), att.data(), q.data(), k.data(), v.data(), 0, T, C, H, T,
                            scale);
          return dot(probe, o);
        };
        loss();
        for (int c = 0; c < C; ++c) EXPECT_DOUBLE_EQ(o[c], v[c]);  // position 0 sees itself only
        const Vec before = o;  // changing a future key leaves earlier outputs alone
        k[4 * C] += 1.0;
        loss();
        for (int i = 0; i < 4 * C; ++i) EXPECT_EQ(o[i], before[i]);
        k[4 * C] -= 1.0;
        loss();
        attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), probe.data(),
                           att.data(), q.data(), k.data(), v.data(), T, C, H, T, scale);
        test::expect_gradient(loss, q, dq, {.abs = 1e-7}, "dq");
        test::expect_gradient(loss, k, dk, {.abs = 1e-7}, "dk");
        test::expect_gradient(loss, v, dv, {.abs = 1e-7}, "dv");
      }};
}

template <class W>
W nan_of() {
  W w;
  if constexpr (std::is_same_v<W, float>) {
    w = std::numeric_limits<float>::quiet_NaN();
  } else {
    w.bits = std::is_same_v<W, Bf16> ? 0x7fc0 : 0x7e00;
  }
  return w;
}

// GPT-2's training attention (attention/causal.h). B = rows, T = n, C = k, n_head = h: head
// widths 4, 12, 24 (not multiples of 16: plain loops in the backward), 16, 32, 48, 128; T = 1.
// With rate > 0, attention-weight dropout (nanoGPT's attn_dropout) at a site starting at an
// element that is not a multiple of the Philox group: the reference draws its masks with
// dropout_mask, and the once-checks also hold att's signs to dropout_mask's draws at the
// documented indices ((b n_head + h) T + t) T + j and out to the kept weights; without it, the
// inference path over a cache computes the training forward's bits.
OpCase attention_train_case(float rate) {
  constexpr DropoutSite kWhere{7, 3, 11, 1000003};
  const auto inputs = [](const Shape& s) {
    return std::pair{normal_floats(s.rows * s.n * 3 * s.k, 25),
                     normal_floats(s.rows * s.n * s.k, 26)};
  };
  return {
      rate > 0.0f ? "attention_causal_dropout_f32" : "attention_causal_f32",
      Contract::row_invariant,
      {{2, 5, 8, 2},
       {1, 1, 32, 2},
       {1, 17, 36, 3},
       {2, 37, 48, 2},
       {1, 33, 32, 2},
       {2, 37, 64, 2},
       {2, 37, 96, 2},
       {1, 40, 128, 2},
       {1, 16, 256, 2}},
      [=](const Shape& s) {
        const auto [qkv, dout] = inputs(s);
        const int64_t B = s.rows, T = s.n, C = s.k, H = s.h;
        Floats o(B * T * C), att(B * H * T * T), scratch(causal_attention_scratch_size(B, T, C, H));
        causal_attention_forward(o.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H, rate,
                                 kWhere);
        Floats dqkv(qkv.size(), 99.0f);  // written, not accumulated
        causal_attention_backward(dqkv.data(), dout.data(), att.data(), qkv.data(), scratch.data(),
                                  B, T, C, H, rate);
        std::vector<Out> outs{out("out", o), out("att", att), out("dqkv", dqkv)};
        if (rate > 0.0f) return outs;
        // Inference over the same rows: a float cache (NaN where nothing is stored), rows
        // [0, T/2) then [T/2, T), computes the training forward's bits.
        Floats cached(o.size());
        const int64_t ldk = kv_positions(T), t0 = T / 2;
        for (int64_t b = 0; b < B; ++b) {
          Floats keys(C * ldk, nan_of<float>()), values(C * ldk, nan_of<float>()), q(T * C);
          for (int64_t t = 0; t < T; ++t) {
            const float* row = qkv.data() + (b * T + t) * 3 * C;
            kv_store(keys.data(), values.data(), row + C, row + 2 * C, t, C, H);
            std::copy_n(row, C, q.begin() + t * C);
          }
          float* ob = cached.data() + b * T * C;
          if (t0 > 0) attention_cached(ob, q.data(), keys.data(), values.data(), 0, t0, C, H);
          attention_cached(ob + t0 * C, q.data() + t0 * C, keys.data(), values.data(), t0, T, C, H);
        }
        outs.push_back(out("out_cached", cached, "out"));
        return outs;
      },
      [=](const Shape& s) {
        const auto [qkv, dout] = inputs(s);
        const int64_t B = s.rows, T = s.n, C = s.k, H = s.h;
        const Vec q = widen_all(qkv), d = widen_all(dout);
        Vec o(B * T * C), att(B * H * T * T), scratch(T), dqkv(q.size());
        causal_attention_forward(o.data(), att.data(), q.data(), scratch.data(), B, T, C, H, rate,
                                 kWhere);
        causal_attention_backward(dqkv.data(), d.data(), att.data(), q.data(), scratch.data(), B, T,
                                  C, H, rate);
        return std::vector<Want>{near_max("out", o, 1e-6), near("att", att, 0, 1e-6),
                                 near_max("dqkv", dqkv, 1e-5)};
      },
      [=] {
        const int64_t B = 2, T = 9, C = 8, H = 2;
        Vec qkv = test::random_normal(B * T * 3 * C, 11);
        const Vec probe = test::random_normal(B * T * C, 12);
        Vec o(B * T * C), att(B * H * T * T), scratch(causal_attention_scratch_size(B, T, C, H));
        const auto f = [&] {
          causal_attention_forward(o.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H,
                                   rate, kWhere);
          return dot(probe, o);
        };
        f();
        Vec dqkv(qkv.size(), 99.0);
        causal_attention_backward(dqkv.data(), probe.data(), att.data(), qkv.data(), scratch.data(),
                                  B, T, C, H, rate);
        test::expect_gradient(f, qkv, dqkv, kGradTol, "dqkv");  // (the masks are the inputs')
        if (rate > 0.0f) {
          f();  // (at qkv again, after the differences' steps)
          // The masks: dropout_mask's draws of the whole (B, H, T, T) tensor, row t's first t + 1.
          std::vector<uint8_t> keep(static_cast<size_t>(B * H * T * T));
          dropout_mask(keep.data(), B * H * T * T, rate, kWhere);
          int64_t dropped = 0, seen = 0;
          for (int64_t i = 0; i < B * H * T * T; ++i) {
            const int64_t t = i / T % T, j = i % T;
            if (j > t) {
              EXPECT_EQ(att[i], 0.0) << i;
              continue;
            }
            EXPECT_EQ(std::signbit(att[i]), keep[i] == 0) << i;
            dropped += keep[i] == 0;
            ++seen;
          }
          EXPECT_GT(dropped, seen / 8);  // about a quarter of the 180
          EXPECT_LT(dropped, seen / 2);
          // The sums take the kept weights scaled: out = P' V with P' from att and the rate.
          const int64_t hd = C / H;
          for (int64_t b = 0; b < B; ++b) {
            for (int64_t h = 0; h < H; ++h) {
              for (int64_t t = 0; t < T; ++t) {
                for (int64_t c = 0; c < hd; ++c) {
                  double acc = 0;
                  for (int64_t j = 0; j <= t; ++j) {
                    const double a = att[((b * H + h) * T + t) * T + j];
                    acc += (a > 0 ? a / (1.0 - rate) : 0.0) *
                           qkv[(b * T + j) * 3 * C + 2 * C + h * hd + c];
                  }
                  EXPECT_NEAR(o[(b * T + t) * C + h * hd + c], acc, 1e-12);
                }
              }
            }
          }
          // Rate 0 is no dropout: the bits of the call without it.
          Vec o0(o.size()), att0(att.size());
          causal_attention_forward(o0.data(), att0.data(), qkv.data(), scratch.data(), B, T, C, H);
          causal_attention_forward(o.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H,
                                   0.0f, kWhere);
          EXPECT_EQ(o, o0);
          EXPECT_EQ(att, att0);
          EXPECT_THROW(causal_attention_forward(o.data(), att.data(), qkv.data(), scratch.data(), B,
                                                T, C, H, 1.0f, kWhere),
                       Error);
          return;
        }
        const Vec o0 = o;  // causality: the output at t does not depend on later positions
        qkv[(1 * T + 4) * 3 * C + C + 3] += 1.0;      // a key of sequence 1, position 4
        qkv[(1 * T + 4) * 3 * C + 2 * C + 5] += 1.0;  // and a value
        f();
        for (int64_t i = 0; i < (1 * T + 4) * C; ++i) EXPECT_EQ(o[i], o0[i]) << i;
      }};
}

// attention_cached: rows [t0, t1) = [rows, n) against a W cache of capacity h, head width k,
// 3 heads. Widths 32, 16, 48 (vector paths) and 12, 24; caches longer than the rows (stride
// padding, NaN in every slot not stored); more than 16 and 32 positions.
template <class W>
OpCase attention_cached_case() {
  const int64_t H = 3;
  const auto inputs = [=](const Shape& s) {
    const int64_t C = H * s.k;
    return std::tuple{test::random_uniform((s.n - s.rows) * C, 9),
                      test::random_uniform(s.n * C, 10), test::random_uniform(s.n * C, 11)};
  };
  return {"attention_cached_" + dtype_suffix<W>(),
          Contract::row_invariant,
          {{3, 7, 32, 7},
           {3, 7, 12, 7},
           {0, 5, 16, 20},
           {5, 9, 24, 40},
           {0, 1, 12, 1},
           {16, 19, 32, 19},
           {0, 33, 48, 40}},
          [=](const Shape& s) {
            const auto [q, k, v] = inputs(s);
            const int64_t t0 = s.rows, t1 = s.n, C = H * s.k, cap = s.h;
            std::vector<W> keys(C * kv_positions(cap), nan_of<W>()),
                values(keys.size(), nan_of<W>());
            for (int64_t t = 0; t < t1; ++t)
              kv_store(keys.data(), values.data(), k.data() + t * C, v.data() + t * C, t, C, H);
            Floats o((t1 - t0) * C);
            attention_cached(o.data(), q.data(), keys.data(), values.data(), t0, t1, C, H);
            // Structured bindings named in the capture: clang before 16 cannot capture them
            // implicitly.
            const Floats decode = row_by_row(t1 - t0, C, [&, &q = q](int64_t r, float* yr) {
              attention_cached(yr, q.data() + r * C, keys.data(), values.data(), t0 + r, t0 + r + 1,
                               C, H);
            });
            // A decode step over the same rows, each its own sequence: row r's cache holds
            // positions before t0 + r (NaN beyond), and attention_step_rows stores its key and
            // value as it attends.
            const int64_t n = t1 - t0;
            std::vector<std::vector<W>> own_keys(n), own_values(n);
            std::vector<W*> key_ptrs, value_ptrs;
            std::vector<int64_t> positions;
            Floats kv(n * 2 * C);
            for (int64_t r = 0; r < n; ++r) {
              own_keys[r].assign(keys.size(), nan_of<W>());
              own_values[r].assign(keys.size(), nan_of<W>());
              for (int64_t t = 0; t < t0 + r; ++t)
                kv_store(own_keys[r].data(), own_values[r].data(), k.data() + t * C,
                         v.data() + t * C, t, C, H);
              key_ptrs.push_back(own_keys[r].data());
              value_ptrs.push_back(own_values[r].data());
              positions.push_back(t0 + r);
              std::copy_n(k.data() + (t0 + r) * C, C, kv.begin() + r * 2 * C);
              std::copy_n(v.data() + (t0 + r) * C, C, kv.begin() + r * 2 * C + C);
            }
            Floats step(n * C);
            attention_step_rows(step.data(), q.data(), kv.data(), 2 * C, key_ptrs.data(),
                                value_ptrs.data(), positions.data(), n, C, H);
            return std::vector<Out>{bits_out("keys", keys), bits_out("values", values),
                                    out("out", o), out("out_row_by_row", decode, "out"),
                                    out("out_step_rows", step, "out")};
          },
          [=](const Shape& s) {
            const auto [q, k, v] = inputs(s);
            const int64_t t0 = s.rows, t1 = s.n, C = H * s.k, cap = s.h, hd = s.k,
                          ldk = kv_positions(cap);
            // keys and values in blocks of 16 positions (causal.h)
            Vec keys(C * ldk, bits_of(nan_of<W>())), values(C * ldk, bits_of(nan_of<W>()));
            std::vector<W> kw(k.size()), vw(v.size());
            for (size_t i = 0; i < k.size(); ++i) {
              from_float(kw[i], k[i]);
              from_float(vw[i], v[i]);
            }
            for (int64_t t = 0; t < t1; ++t) {
              for (int64_t c = 0; c < C; ++c) {
                keys[kv_key_index(c, t, C)] = bits_of(kw[t * C + c]);
                values[kv_value_index(c, t, C, hd)] = bits_of(vw[t * C + c]);
              }
            }
            Vec o((t1 - t0) * C);
            for (int64_t h = 0; h < H; ++h) {
              for (int64_t t = t0; t < t1; ++t) {
                Vec a(t + 1);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j <= t; ++j) {
                  double d = 0;
                  for (int64_t i = 0; i < hd; ++i)
                    d += double(q[(t - t0) * C + h * hd + i]) * widen(kw[j * C + h * hd + i]);
                  a[j] = d / std::sqrt(double(hd));
                  mx = std::max(mx, a[j]);
                }
                for (double& e : a) sum += e = std::exp(e - mx);
                for (int64_t i = 0; i < hd; ++i) {
                  double acc = 0;
                  for (int64_t j = 0; j <= t; ++j)
                    acc += a[j] / sum * widen(vw[j * C + h * hd + i]);
                  o[(t - t0) * C + h * hd + i] = acc;
                }
              }
            }
            return std::vector<Want>{exact("keys", keys), exact("values", values),
                                     near("out", o, 1e-5, 1e-5)};
          },
          nullptr};
}

std::vector<OpCase> attention_cases() {
  return {attention_exact_case(),        attention_train_case(0.0f),
          attention_train_case(0.25f),   attention_cached_case<float>(),
          attention_cached_case<Bf16>(), attention_cached_case<F16>()};
}

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(attention_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
