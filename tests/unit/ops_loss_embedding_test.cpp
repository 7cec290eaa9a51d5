// Table cases for loss/cross_entropy.h and embedding/embedding.h: the cross-entropy, the
// token and position lookup with its backward, and the tied head.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "finite_difference.h"
#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/loss/cross_entropy.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/matmul/small_reference.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// ---------------------------------------------------------------------------------------------
// loss

// rows x n = V; h = 1: logits uniform in [-30, 30], far below the maximum included. Targets
// the first, the last and a middle class.
const std::vector<Shape> kLossShapes = {{1, 1},  {3, 7},   {3, 16},   {2, 17},
                                        {3, 23}, {2, 130}, {3, 1037}, {2, 1000, 1, 1}};

std::pair<Floats, Ints> loss_inputs(const Shape& s) {
  Floats logits = s.h ? test::random_uniform(s.rows * s.n, 2, -30.0f, 30.0f)
                      : normal_floats(s.rows * s.n, 27, 8.0);
  Ints targets(s.rows);
  for (int64_t r = 0; r < s.rows; ++r)
    targets[r] = static_cast<int32_t>(r % 3 == 0 ? 0 : r % 3 == 1 ? s.n - 1 : s.n / 2);
  return {logits, targets};
}

constexpr float kLossScale = 0.37f;

OpCase cross_entropy_case() {
  return {"cross_entropy_f32",
          Contract::row_invariant,
          kLossShapes,
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const int64_t rows = s.rows, V = s.n;
            Floats losses(rows), lse(rows), lse2(rows), g(logits.size()), g_in_place = logits;
            const double total = cross_entropy_forward(losses.data(), lse.data(), logits.data(),
                                                       targets.data(), rows, V);
            const double total2 =
                cross_entropy_forward(nullptr, lse2.data(), logits.data(), targets.data(), rows, V);
            cross_entropy_backward(g.data(), logits.data(), lse.data(), targets.data(), rows, V,
                                   kLossScale);
            cross_entropy_backward(g_in_place.data(), g_in_place.data(), lse.data(), targets.data(),
                                   rows, V, kLossScale);
            return std::vector<Out>{scalar_out("total", total),
                                    scalar_out("total_no_losses", total2),
                                    out("losses", losses),
                                    out("lse", lse),
                                    out("lse_no_losses", lse2, "lse"),
                                    out("dlogits", g),
                                    out("dlogits_in_place", g_in_place, "dlogits")};
          },
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const int64_t rows = s.rows, V = s.n;
            const Vec l = widen_all(logits);
            Vec losses(rows), lse(rows), g(l.size());
            const double total =
                cross_entropy_forward(losses.data(), lse.data(), l.data(), targets.data(), rows, V);
            cross_entropy_backward(g.data(), l.data(), lse.data(), targets.data(), rows, V,
                                   static_cast<double>(kLossScale));
            // exp through vec_math.h (~2e-7), differences to the maximum rounded in float
            const double gmax = max_abs(g);
            Vec bound(g.size());
            for (size_t i = 0; i < g.size(); ++i)
              bound[i] = std::min(1e-6 * gmax, 1e-5 * std::abs(g[i]) + 1e-37);
            return std::vector<Want>{near("total", {total}, 1e-5, 1e-6),
                                     near("total_no_losses", {total}, 1e-5, 1e-6),
                                     near("losses", losses, 1e-5, 1e-6),
                                     near("lse", lse, 1e-6, 1e-6), bounded("dlogits", g, bound)};
          },
          [] {
            const int64_t rows = 3, V = 23;
            Vec logits = test::random_normal(rows * V, 13, 3.0);
            const Ints targets = {4, 0, 22};
            Vec losses(rows), lse(rows);
            const double scale = 0.37;
            const auto f = [&] {
              return scale * cross_entropy_forward(losses.data(), lse.data(), logits.data(),
                                                   targets.data(), rows, V);
            };
            f();
            for (int64_t r = 0; r < rows; ++r) {
              double z = 0;
              for (int64_t j = 0; j < V; ++j) z += std::exp(logits[r * V + j]);
              EXPECT_NEAR(losses[r], std::log(z) - logits[r * V + targets[r]], 1e-12);
            }
            Vec grad(logits.size());
            cross_entropy_backward(grad.data(), logits.data(), lse.data(), targets.data(), rows, V,
                                   scale);
            test::expect_gradient(f, logits, grad, kGradTol, "dlogits");
          }};
}

// The in-place forward (EvermindLM's): the logits become exp(l - max) with a per-row norm in
// one exp pass, and the backward from them needs no exp.
OpCase cross_entropy_inplace_case() {
  return {"cross_entropy_inplace_f32",
          Contract::row_invariant,
          kLossShapes,
          [](const Shape& s) {
            auto [e, targets] = loss_inputs(s);
            const int64_t rows = s.rows, V = s.n;
            Floats losses(rows), norm(rows), g(e.size());
            const double total = cross_entropy_forward_inplace(losses.data(), norm.data(), e.data(),
                                                               targets.data(), rows, V);
            cross_entropy_backward_exp(g.data(), e.data(), norm.data(), targets.data(), rows, V,
                                       kLossScale);
            Floats probs(e.size()), g_in_place = e;
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t j = 0; j < V; ++j) probs[r * V + j] = e[r * V + j] * norm[r];
            }
            cross_entropy_backward_exp(g_in_place.data(), g_in_place.data(), norm.data(),
                                       targets.data(), rows, V, kLossScale);
            return std::vector<Out>{scalar_out("total", total), out("losses", losses),
                                    out("probs", probs), out("dlogits", g),
                                    out("dlogits_in_place", g_in_place, "dlogits")};
          },
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const int64_t rows = s.rows, V = s.n;
            const Vec l = widen_all(logits);
            Vec losses(rows), lse(rows), g(l.size()), probs(l.size());
            const double total =
                cross_entropy_forward(losses.data(), lse.data(), l.data(), targets.data(), rows, V);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t j = 0; j < V; ++j) probs[r * V + j] = std::exp(l[r * V + j] - lse[r]);
            }
            cross_entropy_backward(g.data(), l.data(), lse.data(), targets.data(), rows, V,
                                   static_cast<double>(kLossScale));
            // exp through vec_math.h (~2e-7) and one multiplication by the float norm
            const double gmax = max_abs(g), pmax = max_abs(probs);
            Vec gbound(g.size()), pbound(probs.size());
            for (size_t i = 0; i < g.size(); ++i) {
              gbound[i] = std::min(1e-6 * gmax, 1e-5 * std::abs(g[i]) + 1e-37);
              pbound[i] = std::min(1e-6 * pmax, 1e-5 * std::abs(probs[i]) + 1e-37);
            }
            return std::vector<Want>{
                near("total", {total}, 1e-5, 1e-6), near("losses", losses, 1e-5, 1e-6),
                bounded("probs", probs, pbound), bounded("dlogits", g, gbound)};
          },
          [] {
            const int64_t rows = 3, V = 23;
            Vec logits = test::random_normal(rows * V, 13, 3.0);
            const Ints targets = {4, 0, 22};
            Vec losses(rows), norm(rows), work(logits.size());
            const double scale = 0.37;
            const auto f = [&] {
              work = logits;
              return scale * cross_entropy_forward_inplace(losses.data(), norm.data(), work.data(),
                                                           targets.data(), rows, V);
            };
            f();
            Vec grad(logits.size());
            cross_entropy_backward_exp(grad.data(), work.data(), norm.data(), targets.data(), rows,
                                       V, scale);
            test::expect_gradient(f, logits, grad, kGradTol, "dlogits");
          }};
}

// The backward straight into bf16 (the bf16 path's operand): one rounding of the float value.
OpCase cross_entropy_bf16_case() {
  return {"cross_entropy_bf16",
          Contract::row_invariant,
          kLossShapes,
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            Floats lse(s.rows);
            cross_entropy_forward(nullptr, lse.data(), logits.data(), targets.data(), s.rows, s.n);
            std::vector<Bf16> g(logits.size());
            cross_entropy_backward(g.data(), logits.data(), lse.data(), targets.data(), s.rows, s.n,
                                   kLossScale);
            return std::vector<Out>{out("dlogits", g)};
          },
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const Vec l = widen_all(logits);
            Vec lse(s.rows), g(l.size());
            cross_entropy_forward(nullptr, lse.data(), l.data(), targets.data(), s.rows, s.n);
            cross_entropy_backward(g.data(), l.data(), lse.data(), targets.data(), s.rows, s.n,
                                   static_cast<double>(kLossScale));
            // bf16's rounding of the float value (whose error, ~1e-5, is much smaller); the
            // target's p - 1 may cancel in float.
            return std::vector<Want>{near("dlogits", g, kBf16 + 4e-5, 1e-6 * kLossScale + 1e-37)};
          },
          nullptr};
}

// ---------------------------------------------------------------------------------------------
// embedding

// rows x n = C over a vocabulary of 11 (tokens repeat) and 8 positions; the forward's
// positions start at 2 with period 3, the backward's positions have period 3. C: the 64-wide
// column blocks of the backward, ragged ends.
const std::vector<Shape> kEmbeddingShapes = {{6, 1}, {6, 7}, {6, 16}, {7, 17}, {5, 33}, {7, 130}};
const Ints kTokens = {1, 5, 1, 0, 3, 3, 10};
constexpr int64_t kVocab = 11, kPeriod = 3, kFirst = 2;

template <class W>
OpCase embedding_case() {
  const auto inputs = [](const Shape& s) {
    return std::pair{narrow<W>(normal_floats(kVocab * s.n, 60)), normal_floats(8 * s.n, 61)};
  };
  return {"embedding_" + dtype_suffix<W>(),
          Contract::exact,
          kEmbeddingShapes,
          [=](const Shape& s) {
            const auto [table, positions] = inputs(s);
            Floats x(s.rows * s.n), x_plain(x.size());
            embedding_forward(x.data(), kTokens.data(), table.data(), positions.data(), s.rows, s.n,
                              kFirst, kPeriod);
            embedding_forward(x_plain.data(), kTokens.data(), table.data(), nullptr, s.rows, s.n);
            return std::vector<Out>{out("x", x), out("x_no_positions", x_plain)};
          },
          [=](const Shape& s) {
            const auto [table, positions] = inputs(s);
            const int64_t C = s.n;
            Vec x(s.rows * C), x_plain(x.size());
            for (int64_t r = 0; r < s.rows; ++r) {
              for (int64_t i = 0; i < C; ++i) {
                const double e = widen(table[kTokens[r] * C + i]);
                x[r * C + i] = add_f(e, positions[(kFirst + r % kPeriod) * C + i]);
                x_plain[r * C + i] = e;
              }
            }
            return std::vector<Want>{exact("x", x), exact("x_no_positions", x_plain)};
          },
          nullptr};
}

OpCase embedding_backward_case() {
  const auto inputs = [](const Shape& s) {
    return std::tuple{normal_floats(kVocab * s.n, 62), normal_floats(kPeriod * s.n, 63),
                      normal_floats(s.rows * s.n, 64)};
  };
  return {
      "embedding_backward_f32", Contract::fixed_order, kEmbeddingShapes,
      [=](const Shape& s) {
        auto [dtable, dpos, dx] = inputs(s);
        Floats dtable_alone = dtable;
        embedding_backward(dtable.data(), dpos.data(), dx.data(), kTokens.data(), s.rows, s.n,
                           kPeriod);
        embedding_backward(dtable_alone.data(), nullptr, dx.data(), kTokens.data(), s.rows, s.n);
        return std::vector<Out>{out("dtable", dtable), out("dpositions", dpos),
                                out("dtable_without_positions", dtable_alone, "dtable")};
      },
      [=](const Shape& s) {
        const auto [dtable, dpos, dx] = inputs(s);
        Floats t = dtable, p = dpos;  // a repeated token's rows added in row order
        for (int64_t r = 0; r < s.rows; ++r) {
          for (int64_t i = 0; i < s.n; ++i) {
            float& e = t[kTokens[r] * s.n + i];
            e = add_f(e, dx[r * s.n + i]);
            float& q = p[(r % kPeriod) * s.n + i];
            q = add_f(q, dx[r * s.n + i]);
          }
        }
        return std::vector<Want>{exact("dtable", widen_all(t)), exact("dpositions", widen_all(p))};
      },
      // Lookup and the tied head: logits = (wte[tok] + wpe[pos]) wte^T, mean cross-entropy;
      // wte's gradient has a lookup part and a head part.
      [] {
        const int64_t B = 2, T = 3, V = 6, C = 4;
        const Ints tokens = {1, 5, 1, 0, 3, 3}, targets = {5, 1, 0, 3, 3, 2};
        Vec wte = test::random_normal(V * C, 14), wpe = test::random_normal(T * C, 15);
        Vec x(B * T * C), logits(B * T * V), losses(B * T), lse(B * T);
        const auto f = [&] {
          embedding_forward(x.data(), tokens.data(), wte.data(), wpe.data(), B * T, C, 0, T);
          gemm(Trans::No, Trans::Yes, B * T, V, C, 1.0, x.data(), C, wte.data(), C, 0.0,
               logits.data(), V);
          return cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(),
                                       B * T, V) /
                 (B * T);
        };
        f();
        Vec dlogits(logits.size()), dx(x.size()), dwte(wte.size(), 0.0), dwpe(wpe.size(), 0.0);
        cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), B * T, V,
                               1.0 / (B * T));
        gemm(Trans::No, Trans::No, B * T, C, V, 1.0, dlogits.data(), V, wte.data(), C, 0.0,
             dx.data(), C);
        gemm(Trans::Yes, Trans::No, V, C, B * T, 1.0, dlogits.data(), V, x.data(), C, 1.0,
             dwte.data(), C);
        embedding_backward(dwte.data(), dwpe.data(), dx.data(), tokens.data(), B * T, C, T);
        test::expect_gradient(f, wte, dwte, kGradTol, "dwte (lookup + head)");
        test::expect_gradient(f, wpe, dwpe, kGradTol, "dwpe");
      }};
}

// The tied head (EvermindLM): small.h's single chains. rows, n = D, k = V.
OpCase tied_logits_case() {
  const auto inputs = [](const Shape& s) {
    const Floats table = normal_floats(s.k * s.n, 71);
    Floats tableT(table.size());
    for (int64_t v = 0; v < s.k; ++v) {
      for (int64_t d = 0; d < s.n; ++d) tableT[d * s.k + v] = table[v * s.n + d];
    }
    return std::tuple{normal_floats(s.rows * s.n, 70), table, tableT,
                      normal_floats(s.rows * s.k, 72), normal_floats(s.k * s.n, 73)};
  };
  return {"tied_logits_f32",
          Contract::single_chain,
          {{1, 8, 11}, {5, 17, 33}, {7, 64, 130}, {3, 16, 16}},
          [=](const Shape& s) {
            const auto [x, table, tableT, dlogits, dtable0] = inputs(s);
            Floats logits(s.rows * s.k), dx(s.rows * s.n), dtable = dtable0;
            tied_logits_forward(logits.data(), x.data(), tableT.data(), s.rows, s.n, s.k);
            // Structured bindings named in the capture: clang before 16 cannot capture them
            // implicitly.
            const Floats alone =
                row_by_row(s.rows, s.k, [&, &x = x, &tableT = tableT](int64_t r, float* lr) {
                  tied_logits_forward(lr, x.data() + r * s.n, tableT.data(), 1, s.n, s.k);
                });
            tied_logits_backward(dx.data(), dtable.data(), dlogits.data(), x.data(), table.data(),
                                 s.rows, s.n, s.k);
            return std::vector<Out>{out("logits", logits),
                                    out("logits_row_by_row", alone, "logits"), out("dx", dx),
                                    out("dtable", dtable)};
          },
          [=](const Shape& s) {
            const auto [x, table, tableT, dlogits, dtable0] = inputs(s);
            Floats logits(s.rows * s.k), dx(s.rows * s.n), dtable = dtable0;
            reference::small_gemm(false, s.rows, s.k, s.n, x.data(), s.n, tableT.data(), s.k,
                                  logits.data(), s.k, false);
            reference::small_gemm(false, s.rows, s.n, s.k, dlogits.data(), s.k, table.data(), s.n,
                                  dx.data(), s.n, false);
            reference::small_gemm(true, s.k, s.n, s.rows, dlogits.data(), s.k, x.data(), s.n,
                                  dtable.data(), s.n, true);
            return std::vector<Want>{exact("logits", widen_all(logits)), exact("dx", widen_all(dx)),
                                     exact("dtable", widen_all(dtable))};
          },
          [] {
            const int64_t rows = 3, D = 5, V = 7;
            Vec x = test::random_normal(rows * D, 74), table = test::random_normal(V * D, 75);
            const Vec probe = test::random_normal(rows * V, 76);
            Vec tableT(V * D), logits(rows * V);
            const auto f = [&] {
              for (int64_t v = 0; v < V; ++v) {
                for (int64_t d = 0; d < D; ++d) tableT[d * V + v] = table[v * D + d];
              }
              tied_logits_forward(logits.data(), x.data(), tableT.data(), rows, D, V);
              return dot(probe, logits);
            };
            Vec dx(rows * D), dtable(V * D, 0.0);
            tied_logits_backward(dx.data(), dtable.data(), probe.data(), x.data(), table.data(),
                                 rows, D, V);
            test::expect_gradient(f, x, dx, kGradTol, "dx");
            test::expect_gradient(f, table, dtable, kGradTol, "dtable");
          }};
}

std::vector<OpCase> loss_embedding_cases() {
  return {cross_entropy_case(),      cross_entropy_inplace_case(),
          cross_entropy_bf16_case(), embedding_case<float>(),
          embedding_case<Bf16>(),    embedding_case<F16>(),
          embedding_backward_case(), tied_logits_case()};
}

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(loss_embedding_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
