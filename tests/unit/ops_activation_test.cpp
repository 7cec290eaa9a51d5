// Table cases for activation/: GELU, dropout (its Philox mask), and microgpt's ReLU and
// softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "finite_difference.h"
#include "ops_table.h"
#include "test_util.h"
#include "tinylm/core/philox.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/activation/gelu_reference.h"
#include "tinylm/kernels/activation/relu.h"
#include "tinylm/kernels/activation/softmax.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

OpCase gelu_case() {
  return {
      "gelu_f32",
      Contract::row_invariant,
      // 8003: two chunks of 4096
      {{.n = 1}, {.n = 7}, {.n = 16}, {.n = 17}, {.n = 33}, {.n = 130}, {.n = 1001}, {.n = 8003}},
      [](const Shape& s) {
        const Floats x = gelu_inputs(s.n), dy = normal_floats(x.size(), 24);
        Floats y(x.size()), y_in_place = x, dx(x.size()), dx_in_place = dy;
        gelu_forward(y.data(), x.data(), s.n);
        gelu_forward(y_in_place.data(), y_in_place.data(), s.n);
        gelu_backward(dx.data(), dy.data(), x.data(), s.n);
        gelu_backward(dx_in_place.data(), dx_in_place.data(), x.data(), s.n);
        return std::vector<Out>{out("y", y), out("y_in_place", y_in_place, "y"), out("dx", dx),
                                out("dx_in_place", dx_in_place, "dx")};
      },
      [](const Shape& s) {
        const Vec x = widen_all(gelu_inputs(s.n)), dy = widen_all(normal_floats(x.size(), 24));
        Vec y(x.size()), dx(x.size()), by(x.size()), bdx(x.size());
        reference::gelu_forward(y.data(), x.data(), s.n);
        reference::gelu_backward(dx.data(), dy.data(), x.data(), s.n);
        for (size_t i = 0; i < x.size(); ++i) {
          // tanh through exp: ~1e-7 of max(1, |y|); the derivative ~1e-6, times dy.
          by[i] = 2e-7 * std::max(1.0, std::abs(y[i]));
          bdx[i] = std::min(4e-7 * (1 + std::abs(x[i])) * (1 + std::abs(dy[i])),
                            1e-6 * std::max(std::abs(dy[i]), std::abs(dx[i])));
        }
        return std::vector<Want>{bounded("y", y, by), bounded("dx", dx, bdx)};
      },
      [] {
        Vec x(61);
        for (size_t i = 0; i < x.size(); ++i) x[i] = -6.0 + 0.2 * static_cast<double>(i) + 0.013;
        const Vec probe = test::random_normal(x.size(), 6);
        const int64_t n = static_cast<int64_t>(x.size());
        Vec y(x.size()), dx(x.size());
        const auto f = [&] {
          gelu_forward(y.data(), x.data(), n);
          return dot(probe, y);
        };
        gelu_backward(dx.data(), probe.data(), x.data(), n);
        test::expect_gradient(f, x, dx, kGradTol, "gelu dx");
        gelu_forward(y.data(), x.data(), n);  // and the forward is the tanh GELU
        for (size_t i = 0; i < x.size(); ++i) {
          const double v = x[i];
          EXPECT_DOUBLE_EQ(
              y[i], 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
        }
      }};
}

const float kRates[] = {0.0f, 0.1f, 0.25f, 0.5f, 0.9f};
// A step past 2^32 so the counter's high word is used.
const DropoutSite kSite{0x123456789abcull, (uint64_t{1} << 32) + 3, 2};

// The mask by core/philox.h's scalar Philox: element e keeps unless (w >> 8) / 2^24 < rate,
// w word g mod 4 of the block at counter {g / 4, site, step low, step high}, key seed, where
// g = first + e.
Vec philox_mask(int64_t n, float rate, DropoutSite w) {
  Vec mask(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) {
    const uint64_t g = w.first + static_cast<uint64_t>(e);
    const PhiloxCounter block =
        philox4x32_10({static_cast<uint32_t>(g / 4), w.site, static_cast<uint32_t>(w.step),
                       static_cast<uint32_t>(w.step >> 32)},
                      {static_cast<uint32_t>(w.seed), static_cast<uint32_t>(w.seed >> 32)});
    const double u = static_cast<double>(block[static_cast<size_t>(g % 4)] >> 8) / 16777216.0;
    mask[e] = u < static_cast<double>(rate) ? 0.0 : 1.0;
  }
  return mask;
}

template <class T>
OpCase dropout_case() {
  const auto inputs = [](int64_t n) {
    const Vec x = test::random_normal(static_cast<size_t>(n), 16),
              dy = test::random_normal(static_cast<size_t>(n), 17);
    return std::pair{std::vector<T>(x.begin(), x.end()), std::vector<T>(dy.begin(), dy.end())};
  };
  return {"dropout_" + dtype_suffix<T>(),
          Contract::exact,
          // h: the rate; 3 * 4096 + 37: three chunks and a partial Philox group
          {{.n = 1, .h = 2},
           {.n = 7, .h = 1},
           {.n = 63, .h = 3},
           {.n = 64, .h = 2},
           {.n = 65, .h = 4},
           {.n = 130, .h = 0},
           {.n = 3 * 4096 + 37, .h = 2}},
          [=](const Shape& s) {
            const float rate = kRates[s.h];
            const auto [x, dy] = inputs(s.n);
            std::vector<uint8_t> mask(x.size()), mask_fwd(x.size()), mask_in_place(x.size());
            std::vector<T> y(x.size()), y_in_place = x, dx(x.size()), dx_in_place = dy;
            dropout_mask(mask.data(), s.n, rate, kSite);
            dropout_forward(y.data(), mask_fwd.data(), x.data(), s.n, rate, kSite);
            dropout_forward(y_in_place.data(), mask_in_place.data(), y_in_place.data(), s.n, rate,
                            kSite);
            dropout_backward(dx.data(), dy.data(), mask.data(), s.n, rate);
            dropout_backward(dx_in_place.data(), dx_in_place.data(), mask.data(), s.n, rate);
            return std::vector<Out>{out("mask", mask),
                                    out("mask_forward", mask_fwd, "mask"),
                                    out("mask_in_place", mask_in_place, "mask"),
                                    out("y", y),
                                    out("y_in_place", y_in_place, "y"),
                                    out("dx", dx),
                                    out("dx_in_place", dx_in_place, "dx")};
          },
          [=](const Shape& s) {
            const float rate = kRates[s.h];
            const auto [x, dy] = inputs(s.n);
            const Vec mask = philox_mask(s.n, rate, kSite);
            // 1 / (1 - rate) in T; then one rounded product per kept element
            const double scale = std::is_same_v<T, float> ? 1.0f / (1.0f - rate)
                                                          : 1.0 / (1.0 - static_cast<double>(rate));
            Vec y(x.size()), dx(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
              y[i] = mask[i] ? static_cast<T>(static_cast<double>(x[i]) * scale) : 0.0;
              dx[i] = mask[i] ? static_cast<T>(static_cast<double>(dy[i]) * scale) : 0.0;
            }
            return std::vector<Want>{exact("mask", mask), exact("y", y), exact("dx", dx)};
          },
          [] {
            // About 1 - rate of the elements are kept.
            const int64_t n = 1000;
            const Vec x = test::random_normal(n, 16);
            Vec y(n);
            std::vector<uint8_t> mask(n);
            dropout_forward(y.data(), mask.data(), x.data(), n, 0.25f, {7, 3, 2});
            EXPECT_NEAR(std::count(mask.begin(), mask.end(), 1), 750, 60);
            EXPECT_THROW(dropout_mask(mask.data(), n, 1.0f, kSite), std::runtime_error);
            // The backward is the gradient of the forward with the same site (the same mask).
            Vec xs = test::random_normal(40, 18), dx(40);
            const Vec probe = test::random_normal(40, 19);
            const auto f = [&] {
              dropout_forward(y.data(), mask.data(), xs.data(), 40, 0.3f, kSite);
              return dot(probe, Vec(y.begin(), y.begin() + 40));
            };
            f();
            dropout_backward(dx.data(), probe.data(), mask.data(), 40, 0.3f);
            test::expect_gradient(f, xs, dx, kGradTol, "dropout dx");
          }};
}

// microgpt's ReLU and softmax (activation/relu.h, softmax.h): exact, CPython's operations.
OpCase relu_case() {
  const auto inputs = [](int64_t n) {
    Vec x = test::random_normal(static_cast<size_t>(n), 30), dy = test::random_normal(x.size(), 31);
    const Vec head = {-1.0, 0.0, 2.5, std::nan("")};
    for (size_t i = 0; i < std::min(head.size(), x.size()); ++i) {
      x[i] = head[i];
      dy[i] = 1.0;
    }
    return std::pair{x, dy};
  };
  return {"relu_f64",
          Contract::exact,
          {{.n = 4}, {.n = 17}},
          [=](const Shape& s) {
            const auto [x, dy] = inputs(s.n);
            Vec y(x.size()), dx(x.size(), 0.5);
            relu_forward(y.data(), x.data(), s.n);
            relu_backward(dx.data(), dy.data(), x.data(), s.n);
            return std::vector<Out>{out("y", y), out("dx", dx)};
          },
          [=](const Shape& s) {
            const auto [x, dy] = inputs(s.n);
            Vec y(x.size()), dx(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
              y[i] = x[i] > 0 ? x[i] : 0.0;  // NaN -> 0, as Python's max(0, x)
              dx[i] = 0.5 + (x[i] > 0 ? dy[i] : 0.0);
            }
            if (s.n == 4) {  // spelled out
              EXPECT_EQ(y, (Vec{0.0, 0.0, 2.5, 0.0}));
              EXPECT_EQ(dx, (Vec{0.5, 0.5, 1.5, 0.5}));
            }
            return std::vector<Want>{exact("y", y), exact("dx", dx)};
          },
          [] {  // away from the kink at 0
            Vec x = test::random_normal(17, 32), y(17), dx(17, 0.0);
            const Vec probe = test::random_normal(17, 33);
            const auto f = [&] {
              relu_forward(y.data(), x.data(), 17);
              return dot(probe, y);
            };
            relu_backward(dx.data(), probe.data(), x.data(), 17);
            test::expect_gradient(f, x, dx, kGradTol, "relu dx");
          }};
}

OpCase softmax_case() {
  // h = 1: logits near 1000 (the maximum keeps exp finite)
  const auto inputs = [](const Shape& s) {
    Vec x = test::random_normal(static_cast<size_t>(s.n), 13, 3.0, s.h ? 1000.0 : 0.0);
    return std::pair{x, test::random_normal(x.size(), 14)};
  };
  return {"softmax_f64",
          Contract::exact,
          {{.n = 1}, {.n = 3}, {.n = 27}, {.n = 27, .h = 1}, {.n = 130}},
          [=](const Shape& s) {
            const auto [x, dp] = inputs(s);
            Vec p(x.size()), p_in_place = x, dx(x.size(), 0.25);
            softmax_forward(p.data(), x.data(), s.n);
            softmax_forward(p_in_place.data(), p_in_place.data(), s.n);
            softmax_backward(dx.data(), dp.data(), p.data(), s.n);
            return std::vector<Out>{out("p", p), out("p_in_place", p_in_place, "p"), out("dx", dx)};
          },
          [=](const Shape& s) {
            const auto [x, dp] = inputs(s);
            const Vec p = literal_softmax(x);
            const double pdp = dot(p, dp);
            Vec dx(x.size());
            for (size_t i = 0; i < x.size(); ++i) dx[i] = 0.25 + p[i] * (dp[i] - pdp);
            return std::vector<Want>{exact("p", p), near("dx", dx, 1e-15, 1e-16)};
          },
          [] {
            Vec x = test::random_normal(27, 13, 3.0);
            const Vec probe = test::random_normal(27, 14);
            Vec p(27), dx(27, 0.0);
            softmax_forward(p.data(), x.data(), 27);
            EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-15);
            const auto f = [&] {
              softmax_forward(p.data(), x.data(), 27);
              return dot(probe, p);
            };
            f();
            softmax_backward(dx.data(), probe.data(), p.data(), 27);
            test::expect_gradient(f, x, dx, {.abs = 1e-8}, "softmax dx");
            Vec big{1000.0, 1001.0, 999.0}, pb(3);  // no overflow: the maximum is subtracted
            softmax_forward(pb.data(), big.data(), 3);
            EXPECT_TRUE(std::isfinite(pb[0]) && std::isfinite(pb[1]) && pb[1] > pb[0]);
          }};
}

std::vector<OpCase> activation_cases() {
  return {gelu_case(), dropout_case<float>(), dropout_case<double>(), relu_case(), softmax_case()};
}

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(activation_cases()), case_name);

// A tensor split into parts (shards of a batch) draws, part by part, the mask of the whole:
// each part matches the reference at its global offset, at every level, also where a part
// starts inside a Philox block or a 64-element group.
TEST(Dropout, APartDrawsItsShareOfTheWholeMask) {
  const int64_t n = 3 * 4096 + 37;
  test::for_each_isa([&](Isa) {
    std::vector<uint8_t> whole(static_cast<size_t>(n));
    dropout_mask(whole.data(), n, 0.25f, kSite);
    for (const int64_t cut : {int64_t{1}, int64_t{63}, int64_t{1000}, int64_t{5555}}) {
      DropoutSite tail = kSite;
      tail.first = static_cast<uint64_t>(cut);
      std::vector<uint8_t> part(static_cast<size_t>(n - cut));
      dropout_mask(part.data(), n - cut, 0.25f, tail);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + cut)) << cut;
      const Vec ref = philox_mask(n - cut, 0.25f, tail);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), ref.begin())) << cut;
    }
  });
  DropoutSite far = kSite;
  far.first = uint64_t{1} << 34;
  uint8_t m = 0;
  EXPECT_THROW(dropout_mask(&m, 1, 0.1f, far), std::runtime_error);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
