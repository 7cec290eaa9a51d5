// Table cases for norm/: layernorm, RMSNorm with a gain, and microgpt's RMSNorm.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "finite_difference.h"
#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/kernels/norm/layernorm_reference.h"
#include "tinylm/kernels/norm/rmsnorm.h"
#include "tinylm/kernels/norm/rmsnorm_gain.h"
#include "tinylm/kernels/norm/rmsnorm_gain_reference.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// rows x n = C; the last with rows enough that layernorm_backward's dw and db split their
// columns between threads (nanoGPT's width).
const std::vector<Shape> kNormShapes = {{1, 1},  {3, 7},   {5, 16},  {2, 17},   {3, 33},
                                        {5, 83}, {2, 130}, {2, 768}, {700, 128}};

struct NormInputs {
  Floats x, w, b, dy, dx0, dw0, db0;
};
NormInputs norm_inputs(const Shape& s) {
  const size_t n = static_cast<size_t>(s.rows * s.n), C = static_cast<size_t>(s.n);
  return {normal_floats(n, 20, 1.5, 0.3),
          normal_floats(C, 21, 0.2, 1.0),
          normal_floats(C, 22),
          normal_floats(n, 23),
          normal_floats(n, 25),
          normal_floats(C, 26),
          normal_floats(C, 27)};
}

OpCase layernorm_case() {
  return {"layernorm_f32",
          Contract::row_invariant,
          kNormShapes,
          [](const Shape& s) {
            const NormInputs in = norm_inputs(s);
            const int64_t rows = s.rows, C = s.n;
            Floats y(in.x.size()), y_no_stats(in.x.size()), mean(rows), rstd(rows);
            layernorm_forward(y.data(), mean.data(), rstd.data(), in.x.data(), in.w.data(),
                              in.b.data(), rows, C, 1e-5f);
            layernorm_forward(y_no_stats.data(), nullptr, nullptr, in.x.data(), in.w.data(),
                              in.b.data(), rows, C, 1e-5f);
            const Floats y_rows = row_by_row(rows, C, [&](int64_t r, float* yr) {
              layernorm_forward(yr, nullptr, nullptr, in.x.data() + r * C, in.w.data(), in.b.data(),
                                1, C, 1e-5f);
            });
            Floats dx = in.dx0, dw = in.dw0, db = in.db0;
            layernorm_backward(dx.data(), dw.data(), db.data(), in.dy.data(), in.x.data(),
                               in.w.data(), mean.data(), rstd.data(), rows, C);
            return std::vector<Out>{out("y", y),
                                    out("y_no_stats", y_no_stats, "y"),
                                    out("y_rows", y_rows, "y"),
                                    out("mean", mean),
                                    out("rstd", rstd),
                                    out("dx", dx),
                                    out("dw", dw),
                                    out("db", db)};
          },
          [](const Shape& s) {
            const NormInputs in = norm_inputs(s);
            const int64_t rows = s.rows, C = s.n;
            const Vec x = widen_all(in.x), w = widen_all(in.w), b = widen_all(in.b),
                      dy = widen_all(in.dy), dx0 = widen_all(in.dx0), dw0 = widen_all(in.dw0),
                      db0 = widen_all(in.db0);
            Vec y(x.size()), mean(rows), rstd(rows), dx = dx0, dw = dw0, db = db0;
            reference::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                         b.data(), rows, C, 1e-5);
            reference::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(),
                                          w.data(), mean.data(), rstd.data(), rows, C);
            return std::vector<Want>{
                near_max("y", y, 1e-6),           near("mean", mean, 1e-6, 1e-7),
                near("rstd", rstd, 1e-6),         near_change("dx", dx, dx0, 1e-5),
                near_change("dw", dw, dw0, 1e-6), near_change("db", db, db0, 1e-6)};
          },
          [] {
            const int64_t rows = 3, C = 19;
            Vec x = test::random_normal(rows * C, 1, 2.0, 0.5),
                w = test::random_normal(C, 2, 0.3, 1.0), b = test::random_normal(C, 3);
            const Vec probe = test::random_normal(rows * C, 4);
            Vec y(rows * C), mean(rows), rstd(rows);
            const auto f = [&] {
              layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                                rows, C, 1e-5);
              return dot(probe, y);
            };
            f();
            // dx accumulates: start from a known offset and subtract it.
            Vec dx = test::random_normal(rows * C, 5), dw(C, 0.0), db(C, 0.0);
            const Vec dx0 = dx;
            layernorm_backward(dx.data(), dw.data(), db.data(), probe.data(), x.data(), w.data(),
                               mean.data(), rstd.data(), rows, C);
            for (size_t i = 0; i < dx.size(); ++i) dx[i] -= dx0[i];
            test::expect_gradient(f, x, dx, kGradTol, "dx");
            test::expect_gradient(f, w, dw, kGradTol, "dw");
            test::expect_gradient(f, b, db, kGradTol, "db");
          }};
}

OpCase rmsnorm_gain_case() {
  return {
      "rmsnorm_gain_f32",
      Contract::row_invariant,
      kNormShapes,
      [](const Shape& s) {
        const NormInputs in = norm_inputs(s);
        const int64_t rows = s.rows, n = s.n;
        Floats y(in.x.size()), rstd(rows), scratch(1);
        rmsnorm_gain_forward(y.data(), rstd.data(), in.x.data(), in.w.data(), rows, n, 1e-5f);
        const Floats y_rows = row_by_row(rows, n, [&](int64_t r, float* yr) {
          rmsnorm_gain_forward(yr, scratch.data(), in.x.data() + r * n, in.w.data(), 1, n, 1e-5f);
        });
        Floats dx = in.dx0, dg = in.dw0;
        rmsnorm_gain_backward(dx.data(), dg.data(), in.dy.data(), in.x.data(), in.w.data(),
                              rstd.data(), rows, n);
        return std::vector<Out>{out("y", y), out("y_rows", y_rows, "y"), out("rstd", rstd),
                                out("dx", dx), out("dg", dg)};
      },
      [](const Shape& s) {
        const NormInputs in = norm_inputs(s);
        const int64_t rows = s.rows, n = s.n;
        const Vec x = widen_all(in.x), g = widen_all(in.w), dy = widen_all(in.dy),
                  dx0 = widen_all(in.dx0), dg0 = widen_all(in.dw0);
        Vec y(x.size()), rstd(rows), dx = dx0, dg = dg0;
        reference::rmsnorm_gain_forward(y.data(), rstd.data(), x.data(), g.data(), rows, n, 1e-5);
        reference::rmsnorm_gain_backward(dx.data(), dg.data(), dy.data(), x.data(), g.data(),
                                         rstd.data(), rows, n);
        return std::vector<Want>{near_max("y", y, 1e-6), near("rstd", rstd, 1e-6),
                                 near_change("dx", dx, dx0, 1e-5),
                                 near_change("dg", dg, dg0, 1e-6)};
      },
      [] {
        const int64_t rows = 3, n = 19;
        Vec x = test::random_normal(rows * n, 7, 1.5, 0.2), g = test::random_normal(n, 8, 0.3, 1.0);
        const Vec probe = test::random_normal(rows * n, 9);
        Vec y(rows * n), rstd(rows);
        const auto f = [&] {
          rmsnorm_gain_forward(y.data(), rstd.data(), x.data(), g.data(), rows, n, 1e-5);
          return dot(probe, y);
        };
        f();
        Vec dx = test::random_normal(rows * n, 10), dg(n, 0.0);
        const Vec dx0 = dx;
        rmsnorm_gain_backward(dx.data(), dg.data(), probe.data(), x.data(), g.data(), rstd.data(),
                              rows, n);
        for (size_t i = 0; i < dx.size(); ++i) dx[i] -= dx0[i];
        test::expect_gradient(f, x, dx, kGradTol, "dx");
        test::expect_gradient(f, g, dg, kGradTol, "dg");
      }};
}

// microgpt's RMSNorm (norm/rmsnorm.h): exact, microgpt.py's operations.
OpCase rmsnorm_case() {
  const auto inputs = [](const Shape& s) {
    const size_t n = static_cast<size_t>(s.rows * s.n);
    return std::tuple{test::random_normal(n, 11), test::random_normal(n, 12),
                      test::random_normal(n, 13)};
  };
  return {
      "rmsnorm_f64",
      Contract::exact,
      {{3, 16}, {1, 1}, {2, 7}, {2, 27}},
      [=](const Shape& s) {
        const auto [x, dy, dx0] = inputs(s);
        Vec y(x.size()), scale(s.rows), dx = dx0;
        rmsnorm_forward(y.data(), scale.data(), x.data(), s.rows, s.n, 1e-5);
        rmsnorm_backward(dx.data(), dy.data(), x.data(), scale.data(), s.rows, s.n, 1e-5);
        return std::vector<Out>{out("y", y), out("scale", scale), out("dx", dx)};
      },
      [=](const Shape& s) {
        const auto [x, dy, dx0] = inputs(s);
        const int64_t n = s.n;
        Vec y(x.size()), scale(s.rows), dx(x.size());
        for (int64_t r = 0; r < s.rows; ++r) {
          double ss = 0;  // sum(xi * xi for xi in x) / len(x), then (ms + eps) ** -0.5
          for (int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
          const double sc =
              cpython_pow(ss * cpython_pow(static_cast<double>(n), -1.0) + 1e-5, -0.5);
          scale[r] = sc;
          double xdy = 0;
          for (int64_t i = 0; i < n; ++i) {
            y[r * n + i] = x[r * n + i] * sc;
            xdy += x[r * n + i] * dy[r * n + i];
          }
          // dx = s dy - x s^3 (x . dy) / n
          for (int64_t i = 0; i < n; ++i) {
            dx[r * n + i] = dx0[r * n + i] + sc * dy[r * n + i] -
                            x[r * n + i] * sc * sc * sc * xdy / static_cast<double>(n);
          }
        }
        return std::vector<Want>{exact("y", y), exact("scale", scale), near_max("dx", dx, 1e-14)};
      },
      [] {
        const int rows = 3, n = 16;
        Vec x = test::random_normal(rows * n, 11);
        const Vec probe = test::random_normal(rows * n, 12);
        Vec y(rows * n), s(rows), dx(rows * n, 0.0);
        const auto f = [&] {
          rmsnorm_forward(y.data(), s.data(), x.data(), rows, n, 1e-5);
          return dot(probe, y);
        };
        f();
        rmsnorm_backward(dx.data(), probe.data(), x.data(), s.data(), rows, n, 1e-5);
        test::expect_gradient(f, x, dx, {.abs = 1e-7}, "dx");
      }};
}

std::vector<OpCase> norm_cases() { return {layernorm_case(), rmsnorm_gain_case(), rmsnorm_case()}; }

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(norm_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
