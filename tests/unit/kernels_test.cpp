// Kernels against their simple reference loops (bit for bit where the kernel promises the
// same order of operations) and their backwards against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tinylm/kernels/activation/relu.h"
#include "tinylm/kernels/activation/softmax.h"
#include "tinylm/kernels/attention/exact.h"
#include "tinylm/kernels/matmul/exact.h"
#include "tinylm/kernels/matmul/exact_reference.h"
#include "tinylm/kernels/norm/rmsnorm.h"

namespace tinylm::kernels {
namespace {

std::vector<double> random_vector(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// Central difference of f with respect to v[i].
double numeric_grad(const std::function<double()>& f, std::vector<double>& v, size_t i) {
  const double h = 1e-6, saved = v[i];
  v[i] = saved + h;
  const double up = f();
  v[i] = saved - h;
  const double down = f();
  v[i] = saved;
  return (up - down) / (2 * h);
}

class LinearShapes : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(LinearShapes, PackedForwardEqualsRowMajorBitForBit) {
  const auto [rows, nin, nout] = GetParam();
  const auto x = random_vector(rows * nin, 1), w = random_vector(nout * nin, 2);
  std::vector<double> wt(nin * padded_width(nout)), y1(rows * nout), y2(rows * nout);
  transpose_padded(wt.data(), w.data(), nout, nin);
  reference::linear_forward(y1.data(), x.data(), w.data(), rows, nin, nout);
  linear_forward_packed(y2.data(), x.data(), wt.data(), rows, nin, nout);
  EXPECT_EQ(y1, y2);
  // and the reference: each output a left-to-right sum
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < nout; ++o) {
      double acc = 0.0;
      for (int i = 0; i < nin; ++i) acc += w[o * nin + i] * x[r * nin + i];
      ASSERT_EQ(y1[r * nout + o], acc);
    }
  }
}

TEST_P(LinearShapes, BlockedBackwardEqualsGenericBitForBit) {
  const auto [rows, nin, nout] = GetParam();
  const auto x = random_vector(rows * nin, 3), w = random_vector(nout * nin, 4),
             dy = random_vector(rows * nout, 5);
  std::vector<double> dx1 = random_vector(rows * nin, 6), dw1 = random_vector(nout * nin, 7);
  std::vector<double> dx2 = dx1, dw2 = dw1;
  reference::linear_backward(dx1.data(), dw1.data(), dy.data(), x.data(), w.data(), rows, nin, nout);
  linear_backward(dx2.data(), dw2.data(), dy.data(), x.data(), w.data(), rows, nin, nout);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(dw1, dw2);
}

TEST_P(LinearShapes, BackwardMatchesFiniteDifferences) {
  const auto [rows, nin, nout] = GetParam();
  auto x = random_vector(rows * nin, 8), w = random_vector(nout * nin, 9);
  const auto probe = random_vector(rows * nout, 10);  // loss = sum(probe * y)
  std::vector<double> y(rows * nout), dx(rows * nin, 0.0), dw(nout * nin, 0.0);
  const auto loss = [&] {
    reference::linear_forward(y.data(), x.data(), w.data(), rows, nin, nout);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += probe[i] * y[i];
    return s;
  };
  linear_backward(dx.data(), dw.data(), probe.data(), x.data(), w.data(), rows, nin, nout);
  for (size_t i = 0; i < x.size(); i += 3) EXPECT_NEAR(dx[i], numeric_grad(loss, x, i), 1e-6);
  for (size_t i = 0; i < w.size(); i += 5) EXPECT_NEAR(dw[i], numeric_grad(loss, w, i), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearShapes,
                         ::testing::Values(std::make_tuple(1, 16, 16), std::make_tuple(7, 16, 64),
                                           std::make_tuple(7, 64, 16), std::make_tuple(5, 16, 27),
                                           std::make_tuple(3, 12, 5), std::make_tuple(4, 8, 9),
                                           std::make_tuple(2, 32, 3)));

TEST(Rmsnorm, ForwardIsThePythonFormulaAndBackwardMatchesFiniteDifferences) {
  const int rows = 3, n = 16;
  auto x = random_vector(rows * n, 11);
  const auto probe = random_vector(rows * n, 12);
  std::vector<double> y(rows * n), s(rows), dx(rows * n, 0.0);
  rmsnorm_forward(y.data(), s.data(), x.data(), rows, n, 1e-5);
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    const double scale = py_pow(ss * py_pow(16.0, -1.0) + 1e-5, -0.5);
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[r * n + i], x[r * n + i] * scale);
  }
  const auto loss = [&] {
    rmsnorm_forward(y.data(), s.data(), x.data(), rows, n, 1e-5);
    double t = 0;
    for (size_t i = 0; i < y.size(); ++i) t += probe[i] * y[i];
    return t;
  };
  loss();
  rmsnorm_backward(dx.data(), probe.data(), x.data(), s.data(), rows, n, 1e-5);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(dx[i], numeric_grad(loss, x, i), 1e-7);
}

TEST(Softmax, SumsToOneAndBackwardMatchesFiniteDifferences) {
  auto x = random_vector(27, 13, 3.0);
  const auto probe = random_vector(27, 14);
  std::vector<double> p(27), dx(27, 0.0);
  softmax_forward(p.data(), x.data(), 27);
  double sum = 0;
  for (double v : p) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-15);
  const auto loss = [&] {
    softmax_forward(p.data(), x.data(), 27);
    double t = 0;
    for (int i = 0; i < 27; ++i) t += probe[i] * p[i];
    return t;
  };
  loss();
  softmax_backward(dx.data(), probe.data(), p.data(), 27);
  for (int i = 0; i < 27; ++i) EXPECT_NEAR(dx[i], numeric_grad(loss, x, i), 1e-8);
  // Large logits do not overflow (the maximum is subtracted).
  std::vector<double> big{1000.0, 1001.0, 999.0}, pb(3);
  softmax_forward(pb.data(), big.data(), 3);
  EXPECT_TRUE(std::isfinite(pb[0]) && std::isfinite(pb[1]) && pb[1] > pb[0]);
}

TEST(Relu, ForwardAndBackward) {
  const std::vector<double> x{-1.0, 0.0, 2.5, std::nan("")}, dy{1.0, 1.0, 1.0, 1.0};
  std::vector<double> y(4), dx(4, 0.5);
  relu_forward(y.data(), x.data(), 4);
  EXPECT_EQ(y, (std::vector<double>{0.0, 0.0, 2.5, 0.0}));
  relu_backward(dx.data(), dy.data(), x.data(), 4);
  EXPECT_EQ(dx, (std::vector<double>{0.5, 0.5, 1.5, 0.5}));
}

TEST(Attention, CausalAndBackwardMatchesFiniteDifferences) {
  const int T = 5, C = 8, H = 2;
  auto q = random_vector(T * C, 15), k = random_vector(T * C, 16), v = random_vector(T * C, 17);
  const auto probe = random_vector(T * C, 18);
  std::vector<double> out(T * C), att(H * T * T), dq(T * C, 0.0), dk(T * C, 0.0), dv(T * C, 0.0),
      scratch(T);
  const double scale = 0.5;
  const auto loss = [&] {
    attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), 0, T, C, H, T, scale);
    double t = 0;
    for (size_t i = 0; i < out.size(); ++i) t += probe[i] * out[i];
    return t;
  };
  loss();
  // Position 0 attends only to itself: its output is v[0].
  for (int c = 0; c < C; ++c) EXPECT_DOUBLE_EQ(out[c], v[c]);
  // Changing a future key leaves earlier outputs unchanged.
  const std::vector<double> before = out;
  k[4 * C] += 1.0;
  loss();
  for (int i = 0; i < 4 * C; ++i) EXPECT_EQ(out[i], before[i]);
  k[4 * C] -= 1.0;
  loss();
  attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), probe.data(), att.data(),
                     q.data(), k.data(), v.data(), T, C, H, T, scale);
  // Computing the rows one at a time against the cache gives the same outputs.
  std::vector<double> out_rows(T * C), att_rows(H * T * T);
  for (int t = 0; t < T; ++t) {
    attention_forward(out_rows.data(), att_rows.data(), q.data(), k.data(), v.data(), t, t + 1, C, H,
                      T, scale);
  }
  EXPECT_EQ(out_rows, out);
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_NEAR(dq[i], numeric_grad(loss, q, i), 1e-7) << "q " << i;
    EXPECT_NEAR(dk[i], numeric_grad(loss, k, i), 1e-7) << "k " << i;
    EXPECT_NEAR(dv[i], numeric_grad(loss, v, i), 1e-7) << "v " << i;
  }
}

}  // namespace
}  // namespace tinylm::kernels
