// gemm_f32 / gemm_bf16 against a naive double-precision product of the same inputs (for bf16:
// of the bf16-rounded inputs), with the error bound of any float summation order:
//   |C - ref| <= (K + 2)·u·(|alpha|·Σ_k |a_ik·b_kj| + |beta·c_ij|),  u = 2^-24,
// plus the BLAS rules around it: beta = 0 never reads C (NaNs), alpha = 0 / K = 0 never read A
// or B, padding between rows (ld > width) is left untouched, bad strides throw.
#include "tinylm/kernels/matmul/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"

namespace tinylm::kernels {
namespace TINYLM_TEST_LOCAL {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 12345.0f;  // fills padding columns, which must stay as they are

// One problem: op(A)[M×K]·op(B)[K×N] with padded row strides, inputs drawn at random.
struct Problem {
  Trans ta, tb;
  int64_t M, N, K;
  int64_t pad = 0;  // extra columns in every leading dimension
  float alpha = 1.0f, beta = 0.0f;
  bool nan_c = false;  // fill C with NaNs before the call (only meaningful when beta = 0)

  int64_t a_rows() const { return ta == Trans::No ? M : K; }
  int64_t a_cols() const { return ta == Trans::No ? K : M; }
  int64_t b_rows() const { return tb == Trans::No ? K : N; }
  int64_t b_cols() const { return tb == Trans::No ? N : K; }
  int64_t lda() const { return a_cols() + pad; }
  int64_t ldb() const { return b_cols() + pad; }
  int64_t ldc() const { return N + pad; }
  double a(const std::vector<float>& A, int64_t i, int64_t k) const {
    return ta == Trans::No ? A[i * lda() + k] : A[k * lda() + i];
  }
  double b(const std::vector<float>& B, int64_t k, int64_t j) const {
    return tb == Trans::No ? B[k * ldb() + j] : B[j * ldb() + k];
  }
};

// A matrix of rows×ld floats: the rows×cols part random, the padding a sentinel. With
// `bf16`, values are rounded to bf16 first (normal numbers only: the hardware flushes
// bf16 subnormals).
std::vector<float> random_matrix(int64_t rows, int64_t cols, int64_t ld, uint64_t seed, bool bf16) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> m(static_cast<size_t>(std::max<int64_t>(rows * ld, 1)), kSentinel);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float x = d(rng);
      if (std::fabs(x) < 1e-3f) x = 0.5f;
      m[r * ld + c] = bf16 ? bf16_to_float(float_to_bf16(x)) : x;
    }
  }
  return m;
}

std::vector<Bf16> to_bf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i].bits = float_to_bf16(v[i]);
  return out;
}

// Runs the problem through gemm_f32 (or gemm_bf16) and checks every element of C, and that
// the padding of C is untouched.
void run_and_check(const Problem& p, bool bf16, uint64_t seed = 1) {
  SCOPED_TRACE(::testing::Message() << (bf16 ? "bf16" : "f32") << " ta=" << (p.ta == Trans::Yes)
                                    << " tb=" << (p.tb == Trans::Yes) << " M=" << p.M
                                    << " N=" << p.N << " K=" << p.K << " pad=" << p.pad << " alpha="
                                    << p.alpha << " beta=" << p.beta << " nan_c=" << p.nan_c);
  const std::vector<float> A = random_matrix(p.a_rows(), p.a_cols(), p.lda(), seed * 3 + 1, bf16);
  const std::vector<float> B = random_matrix(p.b_rows(), p.b_cols(), p.ldb(), seed * 3 + 2, bf16);
  std::vector<float> C = random_matrix(p.M, p.N, p.ldc(), seed * 3 + 3, false);
  const std::vector<float> C0 = C;
  if (p.nan_c) {
    for (int64_t i = 0; i < p.M; ++i)
      for (int64_t j = 0; j < p.N; ++j) C[i * p.ldc() + j] = kNaN;
  }

  if (bf16) {
    const std::vector<Bf16> Ab = to_bf16(A), Bb = to_bf16(B);
    gemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, Ab.data(), p.lda(), Bb.data(), p.ldb(), p.beta,
         C.data(), p.ldc());
  } else {
    gemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, A.data(), p.lda(), B.data(), p.ldb(), p.beta, C.data(),
         p.ldc());
  }

  const double u = std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (int64_t i = 0; i < p.M; ++i) {
    for (int64_t j = 0; j < p.N; ++j) {
      double dot = 0, mag = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        const double t = p.a(A, i, k) * p.b(B, k, j);
        dot += t;
        mag += std::fabs(t);
      }
      const double c0 = p.beta == 0.0f ? 0.0 : static_cast<double>(C0[i * p.ldc() + j]);
      const double ref = p.alpha * dot + p.beta * c0;
      const double tol =
          (static_cast<double>(p.K) + 2) * u * (std::fabs(p.alpha) * mag + std::fabs(p.beta * c0)) +
          1e-30;
      const float got = C[i * p.ldc() + j];
      if (!(std::fabs(got - ref) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "C[" << i << "," << j << "] = " << got << ", reference " << ref
                      << ", tolerance " << tol;
      }
    }
    for (int64_t j = p.N; j < p.ldc(); ++j) {
      if (C[i * p.ldc() + j] != kSentinel && bad++ < 5)
        ADD_FAILURE() << "padding C[" << i << "," << j << "] changed";
    }
  }
  EXPECT_EQ(bad, 0);
}

const Trans kNo = Trans::No, kYes = Trans::Yes;

// All four transpose combinations over odd sizes, with and without padded strides.
class GemmShapes
    : public ::testing::TestWithParam<std::tuple<bool, bool, std::tuple<int, int, int>, int>> {};

TEST_P(GemmShapes, F32MatchesDoubleReference) {
  const auto [ta, tb, mnk, pad] = GetParam();
  const auto [M, N, K] = mnk;
  run_and_check({ta ? kYes : kNo, tb ? kYes : kNo, M, N, K, pad, 1.0f, 0.0f, false}, false);
  run_and_check({ta ? kYes : kNo, tb ? kYes : kNo, M, N, K, pad, -0.75f, 1.0f, false}, false, 2);
}

TEST_P(GemmShapes, Bf16MatchesDoubleReferenceOnRoundedInputs) {
  const auto [ta, tb, mnk, pad] = GetParam();
  const auto [M, N, K] = mnk;
  run_and_check({ta ? kYes : kNo, tb ? kYes : kNo, M, N, K, pad, 1.0f, 0.0f, false}, true);
  run_and_check({ta ? kYes : kNo, tb ? kYes : kNo, M, N, K, pad, 1.5f, 1.0f, false}, true, 2);
}

INSTANTIATE_TEST_SUITE_P(
    Gemm, GemmShapes,
    ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                       ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(7, 33, 257),
                                         std::make_tuple(33, 7, 1), std::make_tuple(257, 33, 7),
                                         std::make_tuple(1, 257, 33), std::make_tuple(64, 64, 64),
                                         std::make_tuple(100, 129, 300)),
                       ::testing::Values(0, 5)));

// The training shapes' structure at smaller sizes: several blocks in every dimension, both
// threads busy. Forward NN, the head's NT, backward dX (NT) and dW (TN, accumulated).
TEST(GemmF32, TrainingLikeShapes) {
  run_and_check({kNo, kNo, 96, 700, 384, 0, 1.0f, 0.0f, false}, false);
  run_and_check({kNo, kYes, 96, 1031, 128, 0, 1.0f, 0.0f, false}, false);
  run_and_check({kNo, kYes, 96, 384, 700, 0, 1.0f, 0.0f, false}, false);
  run_and_check({kYes, kNo, 384, 700, 96, 0, 1.0f, 1.0f, false}, false);
  run_and_check({kNo, kNo, 64, 64, 64, 2240, 1.0f, 0.0f, false}, false);  // one head: ld = 3·768
}

// Threads split the larger of M and N into parts at multiples of 16: odd sizes, every
// transpose, thread counts that do not divide the sizes (3 and 5 oversubscribe 2 cores; fine).
TEST(GemmF32, SplitAcrossThreadsAtOddSizes) {
  const int saved = num_threads();
  for (int threads : {2, 3, 5}) {
    set_num_threads(threads);
    for (bool bf16 : {false, true}) {
      run_and_check({kYes, kYes, 331, 40, 100, 3, 1.0f, 0.0f, true}, bf16);
      run_and_check({kNo, kYes, 40, 337, 100, 3, 0.5f, 1.0f, false}, bf16);
      run_and_check({kYes, kNo, 40, 337, 100, 0, 1.0f, 1.0f, false}, bf16);
      run_and_check({kNo, kNo, 700, 24, 80, 1, 1.0f, 0.0f, false}, bf16);
    }
  }
  set_num_threads(saved);
}

TEST(GemmBf16, TrainingLikeShapes) {
  run_and_check({kNo, kNo, 96, 700, 384, 0, 1.0f, 0.0f, false}, true);
  run_and_check({kNo, kYes, 96, 1031, 128, 0, 1.0f, 0.0f, false}, true);
  run_and_check({kYes, kNo, 384, 700, 96, 0, 1.0f, 1.0f, false}, true);
}

TEST(GemmF32, AlphaBetaVariants) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Trans a = ta ? kYes : kNo, b = tb ? kYes : kNo;
      run_and_check({a, b, 37, 45, 53, 3, 1.0f, 1.0f, false}, false);
      run_and_check({a, b, 37, 45, 53, 3, 2.5f, -0.5f, false}, false);
      run_and_check({a, b, 37, 45, 53, 3, -1.0f, 0.0f, true}, false);
      run_and_check({a, b, 37, 45, 53, 3, 0.0f, 0.25f, false}, false);
    }
  }
}

TEST(GemmBf16, AlphaBetaVariants) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Trans a = ta ? kYes : kNo, b = tb ? kYes : kNo;
      run_and_check({a, b, 37, 45, 53, 3, 2.5f, -0.5f, false}, true);
      run_and_check({a, b, 37, 45, 53, 3, -1.0f, 0.0f, true}, true);
    }
  }
}

// beta = 0 overwrites C without reading it: NaNs there must not survive, in any size class.
TEST(GemmF32, BetaZeroIgnoresNaNsInC) {
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, std::tuple{7, 33, 257}, std::tuple{64, 64, 64},
                         std::tuple{130, 520, 300}}) {
    run_and_check({kNo, kNo, M, N, K, 0, 1.0f, 0.0f, true}, false);
    run_and_check({kYes, kYes, M, N, K, 1, 0.5f, 0.0f, true}, false);
  }
}

TEST(GemmBf16, BetaZeroIgnoresNaNsInC) {
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, std::tuple{7, 33, 257}, std::tuple{130, 520, 300}}) {
    run_and_check({kNo, kYes, M, N, K, 0, 1.0f, 0.0f, true}, true);
  }
}

// K = 0 or alpha = 0: C = beta·C, and A and B are not read (NaNs there stay out of C).
TEST(GemmF32, EmptyProductScalesC) {
  std::vector<float> A(6 * 4, kNaN), B(4 * 5, kNaN), C(6 * 5, 2.0f);
  gemm(kNo, kNo, 6, 5, 0, 1.0f, A.data(), 4, B.data(), 5, 0.5f, C.data(), 5);
  for (float c : C) EXPECT_EQ(c, 1.0f);
  gemm(kNo, kNo, 6, 5, 4, 0.0f, A.data(), 4, B.data(), 5, 3.0f, C.data(), 5);
  for (float c : C) EXPECT_EQ(c, 3.0f);
  std::fill(C.begin(), C.end(), kNaN);
  gemm(kNo, kNo, 6, 5, 4, 0.0f, A.data(), 4, B.data(), 5, 0.0f, C.data(), 5);
  for (float c : C) EXPECT_EQ(c, 0.0f);
  const std::vector<Bf16> Ab(6 * 4, Bf16{0x7fc0}), Bb(4 * 5, Bf16{0x7fc0});
  std::fill(C.begin(), C.end(), 4.0f);
  gemm(kNo, kNo, 6, 5, 0, 1.0f, Ab.data(), 4, Bb.data(), 5, 0.25f, C.data(), 5);
  for (float c : C) EXPECT_EQ(c, 1.0f);
  // M = 0 or N = 0: nothing to do, nothing read.
  const float* none = nullptr;
  gemm(kNo, kNo, 0, 5, 4, 1.0f, none, 4, none, 5, 0.0f, nullptr, 5);
  gemm(kNo, kNo, 6, 0, 4, 1.0f, none, 4, none, 1, 0.0f, nullptr, 1);
}

TEST(GemmF32, BadStridesThrow) {
  std::vector<float> A(64), B(64), C(64);
  EXPECT_THROW(gemm(kNo, kNo, 4, 4, 4, 1.0f, A.data(), 3, B.data(), 4, 0.0f, C.data(), 4), Error);
  EXPECT_THROW(gemm(kYes, kNo, 4, 5, 3, 1.0f, A.data(), 3, B.data(), 5, 0.0f, C.data(), 5), Error);
  EXPECT_THROW(gemm(kNo, kYes, 4, 5, 3, 1.0f, A.data(), 3, B.data(), 2, 0.0f, C.data(), 5), Error);
  EXPECT_THROW(gemm(kNo, kNo, 4, 5, 3, 1.0f, A.data(), 3, B.data(), 5, 0.0f, C.data(), 4), Error);
  EXPECT_THROW(gemm(kNo, kNo, -1, 5, 3, 1.0f, A.data(), 3, B.data(), 5, 0.0f, C.data(), 5), Error);
  std::vector<Bf16> Ab(64), Bb(64);
  EXPECT_THROW(gemm(kNo, kNo, 4, 4, 4, 1.0f, Ab.data(), 3, Bb.data(), 4, 0.0f, C.data(), 4), Error);
}

// Same inputs, same thread count: same bytes, every time, also for the multi-block shapes
// where the work is split between threads.
TEST(GemmF32, DeterministicForFixedThreadCount) {
  const int saved = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (auto [ta, tb, M, N, K] :
         {std::tuple{kNo, kNo, 256, 768, 768}, std::tuple{kYes, kNo, 768, 768, 256},
          std::tuple{kNo, kYes, 256, 1031, 768}, std::tuple{kNo, kYes, 64, 64, 64}}) {
      const Problem p{ta, tb, M, N, K};
      const std::vector<float> A = random_matrix(p.a_rows(), p.a_cols(), p.lda(), 7, false);
      const std::vector<float> B = random_matrix(p.b_rows(), p.b_cols(), p.ldb(), 8, false);
      const std::vector<Bf16> Ab = to_bf16(A), Bb = to_bf16(B);
      std::vector<float> first(static_cast<size_t>(M * N)), again(first.size());
      for (bool bf16 : {false, true}) {
        for (int rep = 0; rep < 3; ++rep) {
          std::vector<float>& C = rep == 0 ? first : again;
          if (bf16)
            gemm(ta, tb, M, N, K, 1.0f, Ab.data(), p.lda(), Bb.data(), p.ldb(), 0.0f, C.data(), N);
          else
            gemm(ta, tb, M, N, K, 1.0f, A.data(), p.lda(), B.data(), p.ldb(), 0.0f, C.data(), N);
          if (rep > 0) {
            EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0)
                << "threads=" << threads << " bf16=" << bf16 << " M=" << M << " N=" << N
                << " K=" << K;
          }
          EXPECT_EQ(num_threads(), threads);  // small products run serially, then restore it
        }
      }
    }
  }
  set_num_threads(saved);
}

// The same bytes on any number of threads: threads take parts of M or N, never of K, also
// where a dimension is too narrow for every thread (the long-K shapes of a small shard's
// weight gradient), at thread counts that do not divide the sizes, and at the avx2 level, whose
// oneDNN kernels depend on the block size (768 x 768 x 128 TN: whole on one thread, in halves
// on two).
TEST(GemmF32, SameBytesOnAnyNumberOfThreads) {
  const int saved = num_threads();
  for (auto [ta, tb, M, N, K] :
       {std::tuple{kYes, kNo, 96, 200, 4096}, std::tuple{kNo, kNo, 64, 130, 2048},
        std::tuple{kNo, kYes, 300, 700, 256}, std::tuple{kYes, kNo, 768, 768, 128}}) {
    const Problem p{ta, tb, M, N, K};
    const std::vector<float> A = random_matrix(p.a_rows(), p.a_cols(), p.lda(), 21, false);
    const std::vector<float> B = random_matrix(p.b_rows(), p.b_cols(), p.ldb(), 22, false);
    const std::vector<Bf16> Ab = to_bf16(A), Bb = to_bf16(B);
    for (bool bf16 : {false, true}) {
      std::vector<float> one(static_cast<size_t>(M * N)), got(one.size());
      for (int threads : {1, 2, 3, 4, 8}) {
        set_num_threads(threads);
        std::vector<float>& C = threads == 1 ? one : got;
        if (bf16)
          gemm(ta, tb, M, N, K, 1.0f, Ab.data(), p.lda(), Bb.data(), p.ldb(), 0.0f, C.data(), N);
        else
          gemm(ta, tb, M, N, K, 1.0f, A.data(), p.lda(), B.data(), p.ldb(), 0.0f, C.data(), N);
        if (threads > 1) {
          EXPECT_EQ(std::memcmp(one.data(), got.data(), one.size() * sizeof(float)), 0)
              << "threads=" << threads << " bf16=" << bf16 << " M=" << M << " N=" << N
              << " K=" << K;
        }
      }
    }
  }
  set_num_threads(saved);
}

// Called from inside a parallel region (one product per head, say), gemm runs on the
// calling thread and gives what the same call gives with one thread.
TEST(GemmF32, InsideParallelRegionMatchesOneThread) {
  const int saved = num_threads();
  const int64_t heads = 4, T = 64, hd = 64, ld = 3 * 768;
  const std::vector<float> q = random_matrix(T, ld, ld, 11, false),
                           k = random_matrix(T, ld, ld, 12, false);
  std::vector<float> nested(static_cast<size_t>(heads * T * T)), serial(nested.size());
  set_num_threads(1);
  for (int64_t h = 0; h < heads; ++h) {
    gemm(kNo, kYes, T, T, hd, 0.125f, q.data() + h * hd, ld, k.data() + h * hd, ld, 0.0f,
         serial.data() + h * T * T, T);
  }
  set_num_threads(2);
  parallel_for(0, heads, 1, [&](int64_t h) {
    gemm(kNo, kYes, T, T, hd, 0.125f, q.data() + h * hd, ld, k.data() + h * hd, ld, 0.0f,
         nested.data() + h * T * T, T);
  });
  set_num_threads(saved);
  EXPECT_EQ(std::memcmp(nested.data(), serial.data(), nested.size() * sizeof(float)), 0);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels
