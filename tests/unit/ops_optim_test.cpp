// Table cases for optim/adam.h: Adam and AdamW over float state, and microgpt's
// adam_update_exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/optim/adam.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// n elements at step k; h & 1 adds weight decay (AdamW), h & 2 a clipping factor.
AdamStep adam_step(const Shape& s) {
  AdamStep st{0.01, 0.9, 0.95, 1e-8, 1 - std::pow(0.9, s.k), 1 - std::pow(0.95, s.k)};
  st.decay = s.h & 1 ? st.lr * 0.1 : 0.0;
  st.grad_scale = s.h & 2 ? 0.3718 : 1.0;
  return st;
}

// float state, computed in float as PyTorch's AdamW is: against the formula in double, within
// the rounding of float arithmetic (the step's scalars rounded to float, then one rounding per
// operation), first order in u with a margin.
OpCase adam_case() {
  const auto inputs = [](const Shape& s) {
    Floats v = normal_floats(s.n, 123, 1e-3);
    for (float& x : v) x = std::abs(x);
    return std::tuple{normal_floats(s.n, 120), normal_floats(s.n, 121),
                      normal_floats(s.n, 122, 0.1), v};
  };
  return {"adam_f32",
          Contract::exact,
          {{.n = 1, .k = 1},
           {.n = 7, .k = 3, .h = 1},
           {.n = 17, .k = 10},
           {.n = 33, .k = 10, .h = 2},
           {.n = 130, .k = 1000, .h = 1},
           {.n = 130, .k = 7, .h = 3},
           {.n = (1 << 16) + 3, .k = 2, .h = 1}},  // two tasks
          [=](const Shape& s) {
            auto [p, g, m, v] = inputs(s);
            adam_update(p.data(), g.data(), m.data(), v.data(), s.n, adam_step(s));
            return std::vector<Out>{out("p", p), out("g", g), out("m", m), out("v", v)};
          },
          [=](const Shape& s) {
            const auto [pf, gf, mf, vf] = inputs(s);
            const AdamStep st = adam_step(s);
            const double u = kF32;
            const size_t n = pf.size();
            Vec p(n), m(n), v(n), pb(n), mb(n), vb(n);
            for (size_t i = 0; i < n; ++i) {
              // The gradient scaled in float first, as a pass of its own would leave it.
              const double p0 = double(pf[i]) - st.decay * pf[i];
              const double g = gf[i] * static_cast<float>(st.grad_scale);
              const double m1 = st.beta1 * mf[i], m2 = (1 - st.beta1) * g;
              const double v1 = st.beta2 * vf[i], v2 = (1 - st.beta2) * g * g;
              m[i] = m1 + m2;
              v[i] = v1 + v2;
              const double denom = std::sqrt(v[i] / st.c2) + st.eps;
              const double step = st.lr * (m[i] / st.c1) / denom;
              p[i] = p0 - step;
              // m: each term's scalar and product rounded, then the sum; v: g*g once more.
              mb[i] = 4 * u * (std::abs(m1) + std::abs(m2));
              vb[i] = 5 * u * (v1 + v2);
              // The step: lr, c1, the quotient, the product and the last quotient (5u), the
              // denominator (c2, v / c2, the root, eps and the sum: 3u), and what m's and v's
              // errors carry into it; p: the decay's product and difference, the last difference.
              const double from_v = v[i] > 0 ? 0.5 * std::abs(step) * vb[i] / v[i] : 0.0;
              pb[i] = 2 * u * (std::abs(p0) + std::abs(p[i])) + 3 * u * st.decay * std::abs(pf[i]) +
                      12 * u * std::abs(step) + st.lr / st.c1 * mb[i] / denom + from_v;
            }
            return std::vector<Want>{bounded("p", p, pb), exact("g", Vec(n, 0.0)),
                                     bounded("m", m, mb), bounded("v", v, vb)};
          },
          nullptr};
}

// adam_update_exact: microgpt.py's Adam term for term, every ** the C library's pow. Gradients
// include values whose squares or roots sit near a rounding midpoint (a few percent of random
// doubles), zeros, and magnitudes outside the reciprocal trick's range.
OpCase adam_exact_case() {
  const auto inputs = [](const Shape& s) {
    Vec p = test::random_normal(s.n, 130), g = test::random_normal(s.n, 131, 0.1),
        m = test::random_normal(s.n, 132, 0.01), v = test::random_normal(s.n, 133, 1e-3);
    for (double& x : v) x = std::abs(x);
    const Vec special = {0.0, -0.0, 1e-160, 1e150, -3e140, 5e-324, 1e-300, 2.5};
    for (size_t i = 0; i < std::min(special.size(), g.size()); ++i) g[i] = special[i];
    return std::tuple{p, g, m, v};
  };
  return {"adam_exact_f64",
          Contract::exact,
          {{.n = 1, .k = 1},
           {.n = 8, .k = 3, .h = 1},
           {.n = 130, .k = 1000},
           {.n = 130, .k = 5, .h = 2},
           {.n = 2000, .k = 2, .h = 1}},
          [=](const Shape& s) {
            auto [p, g, m, v] = inputs(s);
            Vec scratch(s.n);
            std::vector<uint8_t> flags(s.n);
            adam_update_exact(p.data(), g.data(), m.data(), v.data(), scratch.data(), flags.data(),
                              s.n, adam_step(s));
            return std::vector<Out>{out("p", p), out("g", g), out("m", m), out("v", v)};
          },
          [=](const Shape& s) {
            auto [p, g, m, v] = inputs(s);
            const AdamStep st = adam_step(s);
            for (int64_t i = 0; i < s.n; ++i) {
              g[i] *= st.grad_scale;
              if (st.decay != 0) p[i] = p[i] - st.decay * p[i];
              m[i] = st.beta1 * m[i] + (1 - st.beta1) * g[i];
              v[i] = st.beta2 * v[i] + (1 - st.beta2) * cpython_pow(g[i], 2.0);
              const double m_hat = m[i] / st.c1, v_hat = v[i] / st.c2;
              p[i] -= st.lr * m_hat / (cpython_pow(v_hat, 0.5) + st.eps);
              g[i] = 0.0;
            }
            return std::vector<Want>{exact("p", p), exact("g", g), exact("m", m), exact("v", v)};
          },
          nullptr};
}

std::vector<OpCase> optim_cases() { return {adam_case(), adam_exact_case()}; }

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(optim_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
