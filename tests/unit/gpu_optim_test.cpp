// The Vulkan optimizer updates (kernels/vulkan/optim.h) on device 0 (lavapipe in CI): Adam and
// AdamW against the CPU's kernel (the same formula in float) over a few steps within the bounds
// optim.h states, SGD bit for bit against the CPU's float loop; each run twice from the same
// inputs gives the same bytes. Every test runs without and with the Khronos validation layer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/optim/adam.h"
#include "tinylm/optim/grad_ops.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/optim.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

class GpuOptim : public GpuTest {};

// Gradients of the usual size, with zeros (the update is 0 / eps) and tiny ones (sqrt(v / c2)
// near eps, so a wrong eps shows).
Floats gradients(size_t n, uint64_t seed) {
  Floats g = normal_floats(n, seed);
  for (size_t i = 0; i < n; i += 7) g[i] = 0.0f;
  for (size_t i = 3; i < n; i += 11) g[i] *= 1e-8f;
  return g;
}

AdamStep adam_step(int t, double weight_decay) {
  AdamStep s{};
  s.lr = 1e-2;
  s.beta1 = 0.9;
  s.beta2 = 0.999;
  s.eps = 1e-8;
  s.c1 = 1 - std::pow(s.beta1, t);
  s.c2 = 1 - std::pow(s.beta2, t);
  s.decay = s.lr * weight_decay;
  return s;
}

// One step's outputs against the CPU's from the same inputs (p0, g, m0, v0), within optim.h's
// bounds plus the CPU's own rounding to float (u each).
void expect_adam_step(const std::string& where, const AdamStep& s, const Floats& p0,
                      const Floats& g, const Floats& m0, const Floats& v0, const Floats& p,
                      const Floats& m, const Floats& v) {
  Floats cp = p0, cg = g, cm = m0, cv = v0;
  kernels::adam_update(cp.data(), cg.data(), cm.data(), cv.data(), static_cast<int64_t>(cp.size()),
                       s);
  const size_t n = p0.size();
  const double u = kF32;
  Vec bp(n), bm(n), bv(n);
  for (size_t i = 0; i < n; ++i) {
    const double gi = g[i];
    bm[i] =
        3 * u * (std::abs(s.beta1 * m0[i]) + std::abs((1 - s.beta1) * gi)) + u * std::abs(cm[i]);
    bv[i] = 3 * u * (s.beta2 * v0[i] + (1 - s.beta2) * gi * gi) + u * cv[i];
    const double denom = std::sqrt(cv[i] / s.c2) + s.eps;
    const double update = s.lr * std::abs(cm[i]) / s.c1 / denom;
    const double from_v = cv[i] > 0 ? update * 0.5 * bv[i] / cv[i] : 0.0;
    bp[i] = 2 * u * (std::abs(p0[i]) + std::abs(cp[i])) + 2 * u * s.decay * std::abs(p0[i]) +
            24 * u * update + s.lr / s.c1 * bm[i] / denom + from_v;
  }
  expect_within(where, p, bounded("p", widen_all(cp), bp));
  expect_within(where, m, bounded("m", widen_all(cm), bm));
  expect_within(where, v, bounded("v", widen_all(cv), bv));
}

TEST_P(GpuOptim, AdamAndAdamWMatchTheCpuWithinTheStatedBoundsAndZeroTheGradients) {
  for (const int64_t n : {1, 7, 257, 3001}) {
    for (const double weight_decay : {0.0, 0.1}) {
      const size_t c = static_cast<size_t>(n);
      const std::string where = "n=" + std::to_string(n) + " wd=" + fmt(weight_decay);
      Floats finals[2][3];
      for (Floats(&f)[3] : finals) {
        Buffer p = upload(normal_floats(c, 1)), m = zeros(c), v = zeros(c);
        for (int t = 1; t <= 3; ++t) {
          const AdamStep s = adam_step(t, weight_decay);
          const Floats p0 = vulkan::download_floats(p, c), m0 = vulkan::download_floats(m, c),
                       v0 = vulkan::download_floats(v, c), g = gradients(c, 10 + t);
          Buffer gb = upload(g);
          vulkan::adam_update(*context_, p, gb, m, v, n, s);
          const Floats pg = vulkan::download_floats(p, c), mg = vulkan::download_floats(m, c),
                       vg = vulkan::download_floats(v, c);
          expect_adam_step(where + " t=" + std::to_string(t), s, p0, g, m0, v0, pg, mg, vg);
          expect_same_bytes(where + " g zeroed", vulkan::download_floats(gb, c), Floats(c, 0.0f));
        }
        f[0] = vulkan::download_floats(p, c);
        f[1] = vulkan::download_floats(m, c);
        f[2] = vulkan::download_floats(v, c);
      }
      for (int i = 0; i < 3; ++i)
        expect_same_bytes(where + " twice " + std::to_string(i), finals[0][i], finals[1][i]);
    }
  }
}

// The shader computes the CPU kernel's formula in float with the same scalars, so where the
// device divides and takes roots as IEEE does (lavapipe: the CPU's own instructions) the bytes
// are the CPU's. Elsewhere the bounds above hold.
TEST_P(GpuOptim, AdamWOnLavapipeIsTheCpusBitsForBit) {
  const std::string device = vulkan::device_name(*context_);
  if (device.find("llvmpipe") == std::string::npos)
    GTEST_SKIP() << device << " need not divide or take roots as IEEE does";
  const size_t n = 3001;
  const Floats p0 = normal_floats(n, 4), m0 = normal_floats(n, 5, 0.1), g = gradients(n, 6);
  Floats v0 = normal_floats(n, 7, 1e-3);
  for (float& x : v0) x = std::abs(x);
  for (const double weight_decay : {0.0, 0.1}) {
    AdamStep s = adam_step(7, weight_decay);
    s.grad_scale = weight_decay > 0 ? 0.37 : 1.0;
    Floats cp = p0, cg = g, cm = m0, cv = v0;
    kernels::adam_update(cp.data(), cg.data(), cm.data(), cv.data(), static_cast<int64_t>(n), s);
    Buffer p = upload(p0), gb = upload(g), m = upload(m0), v = upload(v0);
    vulkan::adam_update(*context_, p, gb, m, v, static_cast<int64_t>(n), s);
    const std::string where = "wd=" + fmt(weight_decay);
    expect_same_bytes(where + " p", vulkan::download_floats(p, n), cp);
    expect_same_bytes(where + " m", vulkan::download_floats(m, n), cm);
    expect_same_bytes(where + " v", vulkan::download_floats(v, n), cv);
  }
}

TEST_P(GpuOptim, SgdIsTheCpusFloatLoopBitForBit) {
  for (const int64_t n : {1, 7, 257, 3001}) {
    const size_t c = static_cast<size_t>(n);
    const std::string where = "n=" + std::to_string(n);
    const Floats p0 = normal_floats(c, 2), g = gradients(c, 3);
    const double lr = 0.0123;
    Floats want = p0;
    optim::sgd_update(std::span<float>(want), std::span<const float>(g), lr);
    const Buffer gb = upload(g);
    Floats got[2];
    for (Floats& o : got) {
      Buffer p = upload(p0);
      vulkan::sgd_update(*context_, p, gb, n, lr);
      o = vulkan::download_floats(p, c);
    }
    expect_same_bytes(where + " p", got[0], want);
    expect_same_bytes(where + " twice", got[0], got[1]);
    expect_same_bytes(where + " g kept", vulkan::download_floats(gb, c), g);
  }
}

TEST_P(GpuOptim, UpdatesCheckTheirSizes) {
  Buffer p = zeros(11), g = zeros(11), m = zeros(10), v = zeros(11);
  test::expect_error([&] { vulkan::adam_update(*context_, p, g, m, v, 11, adam_step(1, 0)); },
                     {"vulkan adam_update: m holds 10 floats, needs 11"});
  test::expect_error([&] { vulkan::sgd_update(*context_, m, g, 11, 0.1); },
                     {"vulkan sgd_update: p holds 10 floats, needs 11"});
  test::expect_error([&] { vulkan::sgd_update(*context_, p, g, -2, 0.1); },
                     {"vulkan sgd_update: n = -2 is out of range"});
  vulkan::adam_update(*context_, p, g, m, v, 0, adam_step(1, 0));  // nothing to do
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuOptim, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
