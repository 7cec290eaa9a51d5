// The Vulkan matrix products (kernels/vulkan/matmul.h) on device 0 (lavapipe in CI) against a
// plain triple loop in double over the same (widened) inputs. Each product runs twice from the
// same inputs and must give the same bytes; the elements of C's buffer outside the product
// (before its offset, in the stride gaps, after it) must be left alone; the operands' stride gaps
// hold NaN, so reading one shows. Every test runs without and with the validation layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/vulkan/devices.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/matmul/bias.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/matmul.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

using vulkan::Operand;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A matrix as stored: rows × cols at row stride ld from element `offset` of its buffer, every
// other element NaN. values hold the matrix exactly as the device sees it (rounded to type).
struct Stored {
  int64_t rows = 0, cols = 0, ld = 1, offset = 0;
  DType type = DType::f32;
  Vec values;  // rows × cols, packed
  double at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

Stored make_stored(int64_t rows, int64_t cols, int64_t pad, int64_t offset, DType type,
                   uint64_t seed) {
  Stored s{rows, cols, std::max<int64_t>(1, cols + pad), offset, type, {}};
  for (float x : normal_floats(static_cast<size_t>(rows * cols), seed)) {
    if (type == DType::bf16) x = bf16_to_float(float_to_bf16(x));
    if (type == DType::f16) x = f16_to_float(float_to_f16(x));
    s.values.push_back(x);
  }
  return s;
}

// The buffer's contents: NaN outside the matrix, and a few NaN past its end.
Buffer upload_stored(Context& context, const Stored& s) {
  const int64_t total = s.offset + std::max<int64_t>(0, s.rows - 1) * s.ld + s.cols + 3;
  Vec all(static_cast<size_t>(total), kNaN);
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < s.cols; ++c) all[s.offset + r * s.ld + c] = s.at(r, c);
  if (s.type == DType::f32) {
    const Floats f(all.begin(), all.end());
    return vulkan::upload_floats(context, f);
  }
  std::vector<uint16_t> h(all.size() + all.size() % 2, 0);  // whole 32-bit words
  for (size_t i = 0; i < all.size(); ++i) {
    const auto x = static_cast<float>(all[i]);
    h[i] = s.type == DType::bf16 ? float_to_bf16(x) : float_to_f16(x);
  }
  Buffer b(context, h.size() * 2);
  b.upload(std::as_bytes(std::span<const uint16_t>(h)));
  return b;
}

struct Case {
  int64_t M, N, K;
  Trans ta = Trans::No, tb = Trans::No;
  float alpha = 1, beta = 0;
  DType a_type = DType::f32, b_type = DType::f32;
  int64_t pad = 0;  // ld = columns + pad, for A, B and C
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;
  bool nan_c = false;  // C's prior values NaN (beta = 0 must ignore them)
};

std::string describe(const Case& c) {
  return std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
         (c.ta == Trans::Yes ? " At" : "") + (c.tb == Trans::Yes ? " Bt" : "") +
         " alpha=" + fmt(c.alpha) + " beta=" + fmt(c.beta) + " " +
         std::string(dtype_name(c.a_type)) + "x" + std::string(dtype_name(c.b_type)) +
         " pad=" + std::to_string(c.pad) + " offsets " + std::to_string(c.a_offset) + "," +
         std::to_string(c.b_offset) + "," + std::to_string(c.c_offset) + (c.nan_c ? " NaN C" : "");
}

class GpuMatmul : public GpuTest {
 protected:
  void check_case(const Case& k, uint64_t seed) {
    const std::string where = describe(k);
    const bool at = k.ta == Trans::Yes, bt = k.tb == Trans::Yes;
    const Stored A = make_stored(at ? k.K : k.M, at ? k.M : k.K, k.pad, k.a_offset, k.a_type, seed),
                 B = make_stored(bt ? k.N : k.K, bt ? k.K : k.N, k.pad, k.b_offset, k.b_type,
                                 seed + 1);
    const int64_t ldc = k.N + k.pad, c_total = k.c_offset + k.M * ldc + 2;
    const Floats c0 = k.nan_c ? Floats(c_total, NAN) : normal_floats(c_total, seed + 2);
    const Buffer a = upload_stored(*context_, A), b = upload_stored(*context_, B);

    Floats got[2];
    for (Floats& g : got) {
      Buffer c = upload(c0);
      vulkan::gemm(*context_, k.ta, k.tb, k.M, k.N, k.K, k.alpha, {&a, A.ld, k.a_offset, k.a_type},
                   {&b, B.ld, k.b_offset, k.b_type}, k.beta, c, ldc, k.c_offset);
      g = vulkan::download_floats(c, c0.size());
    }
    expect_same_bytes(where + " twice", got[0], got[1]);

    // In C's buffer: the product where it goes, the prior values elsewhere. Bound: twice
    // matmul.h's (a chain of K fmas, then the scale and the add, each rounding once).
    Vec want(c0.begin(), c0.end()), bound(c0.size(), 0.0);
    for (int64_t i = 0; i < k.M; ++i)
      for (int64_t j = 0; j < k.N; ++j) {
        double s = 0, s_abs = 0;
        for (int64_t q = 0; q < k.K; ++q) {
          const double p = (at ? A.at(q, i) : A.at(i, q)) * (bt ? B.at(j, q) : B.at(q, j));
          s += p;
          s_abs += std::abs(p);
        }
        const size_t e = static_cast<size_t>(k.c_offset + i * ldc + j);
        const double prior = k.beta == 0 ? 0 : k.beta * c0[e];
        want[e] = k.alpha * s + prior;
        bound[e] = 2 * kF32 * ((k.K + 2) * std::abs(k.alpha) * s_abs + 2 * std::abs(prior));
      }
    // Outside the product C must keep its bytes (NaN included, which expect_within would reject).
    Floats got_inside = got[0], want_outside = c0;
    for (int64_t i = 0; i < k.M; ++i)
      for (int64_t j = 0; j < k.N; ++j) {
        const size_t e = static_cast<size_t>(k.c_offset + i * ldc + j);
        want_outside[e] = got[0][e];
      }
    expect_same_bytes(where + " outside the product", got[0], want_outside);
    for (size_t e = 0; e < want.size(); ++e)
      if (std::isnan(want[e])) got_inside[e] = 0, want[e] = 0;  // the untouched NaN elsewhere
    expect_within(where, got_inside, bounded("C", want, bound));
  }
};

const Trans kTrans[][2] = {{Trans::No, Trans::No},
                           {Trans::No, Trans::Yes},
                           {Trans::Yes, Trans::No},
                           {Trans::Yes, Trans::Yes}};

// Shapes that are not multiples of the 64×64 tile or the slab of 16, one element, one tile row.
TEST_P(GpuMatmul, F32MatchesTheReferenceInEveryTransposition) {
  struct Mnk {
    int64_t M, N, K;
  };
  uint64_t seed = 100;
  for (const Mnk s : {Mnk{1, 1, 1}, Mnk{3, 5, 7}, Mnk{65, 67, 33}, Mnk{130, 17, 257}})
    for (const auto& t : kTrans)
      check_case({.M = s.M, .N = s.N, .K = s.K, .ta = t[0], .tb = t[1]}, seed += 3);
}

// Strides past the widths and offsets into each buffer, with alpha and beta ≠ 1 (accumulation).
TEST_P(GpuMatmul, StridesOffsetsAlphaAndBeta) {
  uint64_t seed = 200;
  for (const auto& t : kTrans) {
    check_case({.M = 65,
                .N = 67,
                .K = 33,
                .ta = t[0],
                .tb = t[1],
                .alpha = 0.5f,
                .beta = 1,
                .pad = 3,
                .a_offset = 5,
                .b_offset = 7,
                .c_offset = 3},
               seed += 3);
  }
  check_case({.M = 70, .N = 9, .K = 20, .alpha = -1.5f, .beta = 0.25f, .pad = 1, .c_offset = 11},
             seed += 3);
  // beta = 0 ignores NaN in C.
  check_case({.M = 3, .N = 5, .K = 7, .nan_c = true}, seed += 3);
  check_case({.M = 66, .N = 65, .K = 17, .tb = Trans::Yes, .alpha = 2, .pad = 2, .nan_c = true},
             seed += 3);
}

// f32 activations times f16 or bf16 weights (odd offsets: elements in the high half of a word),
// and bf16 (or f16) on both sides.
TEST_P(GpuMatmul, HalfOperandsMatchTheReferenceOnTheirWidenedValues) {
  uint64_t seed = 300;
  for (const DType w : {DType::f16, DType::bf16})
    for (const auto& t : kTrans)
      check_case(
          {.M = 65, .N = 67, .K = 33, .ta = t[0], .tb = t[1], .b_type = w, .pad = 1, .b_offset = 3},
          seed += 3);
  for (const auto& t : kTrans)
    check_case({.M = 130,
                .N = 17,
                .K = 257,
                .ta = t[0],
                .tb = t[1],
                .beta = 1,
                .a_type = DType::bf16,
                .b_type = DType::bf16,
                .pad = 1,
                .a_offset = 1,
                .b_offset = 2},
               seed += 3);
  check_case({.M = 5, .N = 3, .K = 9, .a_type = DType::f16, .b_type = DType::f16, .a_offset = 1},
             seed += 3);
}

// f16 weights widen exactly, subnormals and the largest value included: I · B = B, bit for bit.
// (bf16's subnormals are f32's, which a device may flush to zero in arithmetic.)
TEST_P(GpuMatmul, F16WeightsWidenExactly) {
  const int64_t K = 6, N = 7;
  std::vector<uint16_t> h(K * N);
  for (size_t i = 0; i < h.size(); ++i) {
    const uint16_t kinds[] = {0x0001, 0x83ff, 0x7bff, 0xfbff, 0x0400, 0x3555};  // subnormals, max
    h[i] = static_cast<uint16_t>(kinds[i % 6] + (i % 6 == 5 ? i : 0));
  }
  Buffer b(*context_, h.size() * 2);
  b.upload(std::as_bytes(std::span<const uint16_t>(h)));
  Floats eye(K * K, 0.0f), want(K * N);
  for (int64_t i = 0; i < K; ++i) eye[i * K + i] = 1;
  for (size_t i = 0; i < h.size(); ++i) want[i] = f16_to_float(h[i]);
  const Buffer a = upload(eye);
  Buffer c = zeros(want.size());
  vulkan::gemm(*context_, Trans::No, Trans::No, K, N, K, 1, {&a, K}, {&b, N, 0, DType::f16}, 0, c,
               N);
  expect_same_bytes("I B", want, vulkan::download_floats(c, want.size()));
}

// A product of a few rows (at most 8: a column per invocation) gives each row the bits the
// 64-row tiles give it in a longer product: the same chains, whatever M picks the shader. This
// is what makes a decode step equal its prompt's row.
TEST_P(GpuMatmul, FewRowsGiveTheTilesBits) {
  const int64_t K = 37, N = 70, rows = 9;  // 9 rows: tiles; 1..8: a column per invocation
  for (const auto& t : kTrans)
    for (const DType w : {DType::f32, DType::f16}) {
      const bool at = t[0] == Trans::Yes, bt = t[1] == Trans::Yes;
      const Stored A = make_stored(at ? K : rows, at ? rows : K, 0, 0, DType::f32, 5),
                   B = make_stored(bt ? N : K, bt ? K : N, 0, 0, w, 6);
      const Buffer a = upload_stored(*context_, A), b = upload_stored(*context_, B);
      const float beta = 0.5f;
      const Floats c0 = normal_floats(rows * N, 8);
      Buffer all = upload(c0);
      vulkan::gemm(*context_, t[0], t[1], rows, N, K, 1.5f, {&a, A.ld}, {&b, B.ld, 0, w}, beta, all,
                   N);
      const Floats want = vulkan::download_floats(all, c0.size());
      for (const int64_t m : {1, 3, 8}) {
        // The first m rows of A: as stored untransposed, its first m rows; transposed, its
        // first m columns, with the same stride.
        Buffer few = upload(c0);
        vulkan::gemm(*context_, t[0], t[1], m, N, K, 1.5f, {&a, A.ld}, {&b, B.ld, 0, w}, beta, few,
                     N);
        const Floats got = vulkan::download_floats(few, static_cast<size_t>(m * N));
        expect_same_bytes(std::to_string(m) + " rows" + (at ? " At" : "") + (bt ? " Bt" : "") +
                              " " + std::string(dtype_name(w)),
                          got, Floats(want.begin(), want.begin() + m * N));
      }
    }
}

// K = 0 and alpha = 0: C = beta·C, A and B unread (here all NaN, or absent).
TEST_P(GpuMatmul, NoProductScalesCWithoutReadingAOrB) {
  const int64_t M = 4, N = 70;
  const Floats c0 = normal_floats(M * N, 7), nan(M * N * 3, NAN);
  const Buffer a = upload(nan), b = upload(nan);
  for (const float beta : {0.0f, 1.0f, 0.5f}) {
    Vec want(c0.size());
    for (size_t i = 0; i < c0.size(); ++i) want[i] = static_cast<float>(beta * c0[i]);
    Buffer c = upload(c0), c2 = upload(c0), c3 = upload(c0);
    vulkan::gemm(*context_, Trans::No, Trans::No, M, N, 0, 1, {&a, 1}, {&b, N}, beta, c, N);
    vulkan::gemm(*context_, Trans::Yes, Trans::No, M, N, 3, 0, {&a, M}, {&b, N}, beta, c2, N);
    vulkan::gemm(*context_, Trans::No, Trans::No, M, N, 0, 1, {nullptr, 1}, {nullptr, N}, beta, c3,
                 N);
    const std::string where = "beta=" + fmt(beta);
    const Floats got = vulkan::download_floats(c, c0.size());
    expect_within(where + " K=0", got, exact("C", want));
    expect_same_bytes(where + " alpha=0", got, vulkan::download_floats(c2, c0.size()));
    expect_same_bytes(where + " no A, B", got, vulkan::download_floats(c3, c0.size()));
    if (beta == 1) expect_same_bytes(where + " C kept", got, c0);
  }
}

TEST_P(GpuMatmul, AddBiasAddsTheRowToEveryRow) {
  for (const DType type : {DType::f32, DType::bf16})
    for (const int64_t n : {1, 70, 300}) {
      const int64_t rows = 5, offset = 3;
      const Stored b = make_stored(1, n, 0, offset, type, 40 + n);
      const Floats y0 = normal_floats(rows * n, 41);
      const Buffer bb = upload_stored(*context_, b);
      Buffer y = upload(y0), y2 = upload(y0);
      vulkan::add_bias(*context_, y, {&bb, n, offset, type}, rows, n);
      vulkan::add_bias(*context_, y2, {&bb, n, offset, type}, rows, n);
      Vec want(y0.size());  // one f32 add each: exact against the rounded double sum
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j)
          want[r * n + j] = static_cast<float>(y0[r * n + j] + b.at(0, j));
      const std::string where = std::string(dtype_name(type)) + " n=" + std::to_string(n);
      const Floats got = vulkan::download_floats(y, y0.size());
      expect_within(where, got, exact("y", want));
      expect_same_bytes(where + " twice", got, vulkan::download_floats(y2, y0.size()));
    }
}

// The CPU's order (db's value, then the rows in order), so the CPU's bits; and within the
// bound of a chain of rows additions against the double reference.
TEST_P(GpuMatmul, BiasBackwardSumsTheRowsInTheCpusOrder) {
  struct Size {
    int64_t rows, n;
  };
  for (const Size s : {Size{1, 1}, Size{5, 70}, Size{300, 65}}) {
    const int64_t offset = 3;
    const std::string where = "rows=" + std::to_string(s.rows) + " n=" + std::to_string(s.n);
    const Floats dy = normal_floats(s.rows * s.n, 50), db0 = normal_floats(offset + s.n + 2, 51);
    const Buffer dyb = upload(dy);
    Buffer db = upload(db0), db2 = upload(db0);
    vulkan::bias_backward(*context_, db, dyb, s.rows, s.n, offset);
    vulkan::bias_backward(*context_, db2, dyb, s.rows, s.n, offset);
    const Floats got = vulkan::download_floats(db, db0.size());
    expect_same_bytes(where + " twice", got, vulkan::download_floats(db2, db0.size()));
    Floats cpu = db0;
    kernels::bias_backward(cpu.data() + offset, dy.data(), s.rows, s.n);
    expect_same_bytes(where + " = CPU", got, cpu);
    Vec want = widen_all(db0), bound(db0.size(), 0.0);
    const Vec dyd = widen_all(dy);
    kernels::bias_backward(want.data() + offset, dyd.data(), s.rows, s.n);
    for (int64_t j = 0; j < s.n; ++j) {
      double sum_abs = std::abs(db0[offset + j]);
      for (int64_t r = 0; r < s.rows; ++r) sum_abs += std::abs(dy[r * s.n + j]);
      bound[offset + j] = 2 * kF32 * s.rows * sum_abs;
    }
    expect_within(where, got, bounded("db", want, bound));
  }
}

TEST_P(GpuMatmul, BadArgumentsAreOneLineErrors) {
  const Buffer a = zeros(12), b = zeros(12);
  Buffer c = zeros(12);
  const auto run = [&](int64_t M, int64_t N, int64_t K, Operand A, Operand B, int64_t ldc) {
    return [=, this, &c] {
      vulkan::gemm(*context_, Trans::No, Trans::No, M, N, K, 1, A, B, 0, c, ldc);
    };
  };
  test::expect_error(run(3, 4, 4, {&a, 3}, {&b, 4}, 4),
                     {"vulkan gemm: lda 3 < 4 columns of A as stored"});
  test::expect_error(run(3, 4, 4, {&a, 4}, {&b, 4}, 4),
                     {"vulkan gemm: B holds 12 f32 values, needs 16"});
  test::expect_error(run(3, 4, 3, {&a, 3, 4}, {&b, 4}, 4),
                     {"vulkan gemm: A holds 12 f32 values, needs 13"});
  test::expect_error(run(3, 4, 2, {&a, 2}, {&b, 4}, 5),
                     {"vulkan gemm: C holds 12 f32 values, needs 14"});
  test::expect_error(run(-1, 4, 2, {&a, 2}, {&b, 4}, 4), {"vulkan gemm: M = -1 is out of range"});
  test::expect_error(run(2, 2, 2, {&a, 2, 0, DType::q8_0}, {&b, 2}, 2),
                     {"vulkan gemm: A is q8_0, not f32, f16 or bf16"});
  test::expect_error(run(2, 2, 2, {nullptr, 2}, {&b, 2}, 2), {"vulkan gemm: A has no buffer"});
  // 12 floats are 24 bf16 values (whole words).
  test::expect_error(run(5, 5, 5, {&a, 5, 0, DType::bf16}, {&b, 5, 0, DType::bf16}, 2),
                     {"vulkan gemm: ldc 2 < N=5"});
  test::expect_error(run(2, 2, 5, {&a, 5, 0, DType::bf16}, {&b, 2, 20, DType::bf16}, 2),
                     {"vulkan gemm: B holds 24 bf16 values, needs 30"});
  test::expect_error(
      [&] {
        vulkan::add_bias(*context_, c, {&a, 0, 10}, 2, 3);
      },
      {"vulkan add_bias: b holds 12 f32 values, needs 13"});
  // Nothing to do is not an error.
  vulkan::gemm(*context_, Trans::No, Trans::No, 0, 4, 3, 1, {&a, 3}, {&b, 4}, 0, c, 4);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuMatmul, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

// Prints, asserts nothing: GPT-2 small's 256×768×768 f32 product on device 0 and on the CPU.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*GpuMatmulTiming*'.
TEST(GpuMatmulTiming, DISABLED_PrintsAProductsTime) {
  if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
  const int64_t M = 256, N = 768, K = 768;
  Context context(0, Validation::off);
  const Floats x = normal_floats(M * K, 1), w = normal_floats(K * N, 2);
  Floats y(M * N);
  const Buffer xb = vulkan::upload_floats(context, x), wb = vulkan::upload_floats(context, w);
  Buffer yb = vulkan::upload_floats(context, y);
  const auto median_ms = [](auto&& f) {
    std::vector<double> ms;
    f();  // warm-up (pipeline creation on the GPU)
    for (int i = 0; i < 7; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const double gpu = median_ms([&] {
    vulkan::gemm(context, Trans::No, Trans::No, M, N, K, 1, {&xb, K}, {&wb, N}, 0, yb, N);
  });
  const double cpu = median_ms([&] {
    kernels::gemm(Trans::No, Trans::No, M, N, K, 1.0f, x.data(), K, w.data(), N, 0.0f, y.data(), N);
  });
  const double flop = 2.0 * M * N * K;
  std::printf("256x768x768 f32 on %s: %.2f ms (%.1f GFLOP/s); CPU gemm: %.2f ms (%.1f GFLOP/s)\n",
              context.device().name.c_str(), gpu, flop / gpu / 1e6, cpu, flop / cpu / 1e6);
}

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
