// GEMM throughput for the products of a GPT-2 124M training step, B=4, T=64 (M = 256 rows):
// forward x·W (W stored [in, out]), the tied head x·wteᵀ, backward dX = dY·Wᵀ, dW += Xᵀ·dY and
// the head's d_wte += dlogitsᵀ·x and dx = dlogits·wte, plus one attention head (64×64×64,
// rows strided through the qkv buffer). For each thread count, f32 and bf16: GFLOP/s of the
// median repetition and of the best one (the machine is shared: the best shows what the code
// does when it has the cores), the median's fraction of the nominal peak (f32: 16 lanes ×
// 2 FMA pipes × 2 flops × ~3 GHz = 192 GFLOP/s per core; bf16 dot products twice that), then
// the GEMM time of a whole step (each product × how often a step does it), from the medians.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/matmul/stream.h"

using namespace tinylm;
using kernels::Bf16;
using kernels::Trans;

namespace {

constexpr double kPeakF32PerCore = 192.0;  // GFLOP/s, the figure of issue 4 (384 on 2 cores)

struct Shape {
  const char* name;
  Trans ta, tb;
  int64_t M, N, K;
  int64_t ld_in = 0;  // row stride of A and B when they are strided views (0: dense)
  float beta = 0.0f;
  int per_step = 1;  // how many times one training step runs this product
};

// GPT-2 124M: 12 layers, C = 768, vocab 50257; 4 sequences × 12 heads = 48 heads per layer.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {"attn.c_attn fwd", Trans::No, Trans::No, 256, 2304, 768, 0, 0.0f, 12},
      {"attn.c_proj fwd", Trans::No, Trans::No, 256, 768, 768, 0, 0.0f, 12},
      {"mlp.c_fc fwd", Trans::No, Trans::No, 256, 3072, 768, 0, 0.0f, 12},
      {"mlp.c_proj fwd", Trans::No, Trans::No, 256, 768, 3072, 0, 0.0f, 12},
      {"lm_head fwd", Trans::No, Trans::Yes, 256, 50257, 768, 0, 0.0f, 1},
      {"attn.c_attn dX", Trans::No, Trans::Yes, 256, 768, 2304, 0, 0.0f, 12},
      {"attn.c_proj dX", Trans::No, Trans::Yes, 256, 768, 768, 0, 0.0f, 12},
      {"mlp.c_fc dX", Trans::No, Trans::Yes, 256, 768, 3072, 0, 0.0f, 12},
      {"mlp.c_proj dX", Trans::No, Trans::Yes, 256, 3072, 768, 0, 0.0f, 12},
      {"attn.c_attn dW", Trans::Yes, Trans::No, 768, 2304, 256, 0, 1.0f, 12},
      {"attn.c_proj dW", Trans::Yes, Trans::No, 768, 768, 256, 0, 1.0f, 12},
      {"mlp.c_fc dW", Trans::Yes, Trans::No, 768, 3072, 256, 0, 1.0f, 12},
      {"mlp.c_proj dW", Trans::Yes, Trans::No, 3072, 768, 256, 0, 1.0f, 12},
      {"lm_head d_wte", Trans::Yes, Trans::No, 50257, 768, 256, 0, 1.0f, 1},
      {"lm_head dx", Trans::No, Trans::No, 256, 768, 50257, 0, 0.0f, 1},
      // One head: scores q·kᵀ and dP = dO·vᵀ (NT), P·v and dQ = dS·k (NN), dV = Pᵀ·dO and
      // dK = dSᵀ·q (TN); 576 heads per step each.
      {"head 64^3 NT", Trans::No, Trans::Yes, 64, 64, 64, 2304, 0.0f, 2 * 576},
      {"head 64^3 NN", Trans::No, Trans::No, 64, 64, 64, 2304, 0.0f, 2 * 576},
      {"head 64^3 TN", Trans::Yes, Trans::No, 64, 64, 64, 2304, 0.0f, 2 * 576},
  };
  return s;
}

// FMA throughput of this machine right now (clock included) at the active level: twelve
// independent FMA chains in the level's widest registers on every thread; the best of a few
// short runs, so that neighbours' bursts count less. (Each chain loop is compiled for its
// instruction set by a target attribute and runs only at a level the CPU supports.)
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iters) {
  __m512 acc[12];
  for (int r = 0; r < 12; ++r) acc[r] = _mm512_set1_ps(static_cast<float>(r));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int r = 0; r < 12; ++r) acc[r] = _mm512_fmadd_ps(acc[r], a, b);
  }
  float sum = 0;
  for (int r = 0; r < 12; ++r) sum += acc[r][0];
  return sum;
}
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
  __m256 acc[12];
  for (int r = 0; r < 12; ++r) acc[r] = _mm256_set1_ps(static_cast<float>(r));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int r = 0; r < 12; ++r) acc[r] = _mm256_fmadd_ps(acc[r], a, b);
  }
  float sum = 0;
  for (int r = 0; r < 12; ++r) sum += acc[r][0];
  return sum;
}
#endif
double measured_fma_peak_gflops() {
  float (*chains)(int64_t) = nullptr;
  int lanes = 0;
#if defined(__x86_64__)
  switch (kernels::active_isa()) {
    case kernels::Isa::avx512:
      chains = fma_chains_avx512, lanes = 16;
      break;
    case kernels::Isa::avx2:
      chains = fma_chains_avx2, lanes = 8;
      break;
    case kernels::Isa::generic:
      return 0;
  }
#endif
  if (!chains) return 0;
  const int64_t iters = 5'000'000;
  double best_s = 1e30;
  float sink = 0;
  for (int run = 0; run < 5; ++run) {
    Timer t;
#pragma omp parallel reduction(+ : sink)
    sink += chains(iters);
    best_s = std::min(best_s, t.elapsed_ms() / 1e3);
  }
  if (sink == 12345.0f) std::printf(" ");
  return static_cast<double>(iters) * 12 * 2 * lanes * num_threads() / best_s / 1e9;
}

struct Result {
  bench::Stats f32, bf16;
};

Result run_shape(const Shape& s, double seconds_per_shape) {
  const int64_t a_rows = s.ta == Trans::No ? s.M : s.K, a_cols = s.ta == Trans::No ? s.K : s.M;
  const int64_t b_rows = s.tb == Trans::No ? s.K : s.N, b_cols = s.tb == Trans::No ? s.N : s.K;
  const int64_t lda = s.ld_in ? s.ld_in : a_cols, ldb = s.ld_in ? s.ld_in : b_cols;
  std::vector<float> A(static_cast<size_t>(a_rows * lda)), B(static_cast<size_t>(b_rows * ldb));
  std::vector<float> C(static_cast<size_t>(s.M * s.N), 0.0f);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& x : A) x = normal(rng);
  for (float& x : B) x = normal(rng);
  std::vector<Bf16> Ab(A.size()), Bb(B.size());
  for (size_t i = 0; i < A.size(); ++i) Ab[i].bits = float_to_bf16(A[i]);
  for (size_t i = 0; i < B.size(); ++i) Bb[i].bits = float_to_bf16(B[i]);

  // Enough repetitions for about `seconds_per_shape`, at least 5; the median is reported.
  auto timed = [&](auto&& fn) {
    Timer probe;
    fn();
    const double once_ms = std::max(probe.elapsed_ms(), 1e-3);
    const int reps = std::clamp(static_cast<int>(seconds_per_shape * 1e3 / once_ms), 5, 2000);
    return bench::time_it(1, reps, fn);
  };
  Result r;
  r.f32 = timed([&] {
    kernels::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, s.beta, C.data(),
                  s.N);
  });
  r.bf16 = timed([&] {
    kernels::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, Ab.data(), lda, Bb.data(), ldb, s.beta, C.data(),
                  s.N);
  });
  return r;
}

// --prefill: the products of a GPT-2 124M forward over `rows` positions (prefill, or one
// perplexity window) through tinylm's inference products (kernels/matmul/stream.h: the banded
// kernel, which gives each row the bits of decoding it alone) and through oneDNN's sgemm on the
// same operands, alternating, medians. A layer's four Conv1D products x12, then the tied head
// (every row's logits, as perplexity needs).
void prefill_products(int64_t rows, int reps) {
  struct Product {
    const char* name;
    int64_t nin, nout;
    int per_forward;
    bool head;
  };
  const Product products[] = {{"attn.c_attn", 768, 2304, 12, false},
                              {"attn.c_proj", 768, 768, 12, false},
                              {"mlp.c_fc", 768, 3072, 12, false},
                              {"mlp.c_proj", 3072, 768, 12, false},
                              {"lm_head", 768, 50257, 1, true}};
  std::printf(
      "\nGPT-2 124M forward products over %lld rows, %d threads, f32, medians of %d "
      "alternating runs\n%-12s %6s %6s %11s %11s %7s %9s\n",
      static_cast<long long>(rows), num_threads(), reps, "product", "nin", "nout", "tinylm ms",
      "oneDNN ms", "ratio", "tinylm GF/s");
  double ours_total = 0, dnnl_total = 0, ours_layers = 0, dnnl_layers = 0;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const Product& p : products) {
    std::vector<float> x(static_cast<size_t>(rows * p.nin)), w(static_cast<size_t>(p.nin * p.nout)),
        b(static_cast<size_t>(p.nout)), y(static_cast<size_t>(rows * p.nout));
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng);
    for (float& v : b) v = normal(rng);
    std::vector<double> ours, dnnl;
    for (int r = 0; r < reps + 1; ++r) {  // the first pair is a warm-up
      Timer t;
      if (p.head)
        kernels::matmul_out_in(y.data(), x.data(), w.data(), rows, p.nin, p.nout);
      else
        kernels::matmul_in_out(y.data(), x.data(), w.data(), b.data(), rows, p.nin, p.nout);
      const double a = t.elapsed_ms();
      Timer u;
      if (p.head) {
        kernels::gemm(Trans::No, Trans::Yes, rows, p.nout, p.nin, 1.0f, x.data(), p.nin, w.data(),
                      p.nin, 0.0f, y.data(), p.nout);
      } else {
        kernels::gemm(Trans::No, Trans::No, rows, p.nout, p.nin, 1.0f, x.data(), p.nin, w.data(),
                      p.nout, 0.0f, y.data(), p.nout);
      }
      const double c = u.elapsed_ms();
      if (r > 0) ours.push_back(a), dnnl.push_back(c);
    }
    std::sort(ours.begin(), ours.end());
    std::sort(dnnl.begin(), dnnl.end());
    const double o = ours[ours.size() / 2], d = dnnl[dnnl.size() / 2];
    std::printf("%-12s %6lld %6lld %11.2f %11.2f %7.2f %9.1f\n", p.name,
                static_cast<long long>(p.nin), static_cast<long long>(p.nout), o, d, o / d,
                2.0 * rows * p.nin * p.nout / (o * 1e6));
    ours_total += p.per_forward * o, dnnl_total += p.per_forward * d;
    if (!p.head) ours_layers += p.per_forward * o, dnnl_layers += p.per_forward * d;
  }
  std::printf(
      "12 layers: tinylm %.0f ms, oneDNN %.0f ms, ratio %.2f; with the head: %.0f / %.0f ms, "
      "%.2f\n",
      ours_layers, dnnl_layers, ours_layers / dnnl_layers, ours_total, dnnl_total,
      ours_total / dnnl_total);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts;
  double seconds = 0.3;
  int64_t prefill_rows = 0;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      thread_counts.push_back(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--prefill") && i + 1 < argc)
      prefill_rows = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N]... [--seconds S per shape and dtype]\n"
                   "       %s --prefill ROWS [--threads N]... [--reps N]\n",
                   argv[0], argv[0]);
      return 2;
    }
  }
  if (prefill_rows > 0) {
    std::printf("%s\n", bench::level_line().c_str());
    if (thread_counts.empty()) thread_counts = {0};
    for (int threads : thread_counts) {
      set_num_threads(threads);
      prefill_products(prefill_rows, reps);
    }
    return 0;
  }
  if (thread_counts.empty()) {
    set_num_threads(0);
    thread_counts = {1};
    if (num_threads() > 1) thread_counts.push_back(num_threads());
  }
  std::printf("%s\n", bench::level_line().c_str());
  for (int threads : thread_counts) {
    set_num_threads(threads);
    // AVX2 has half of AVX-512's FMA width (and no bf16 products in oneDNN 2.x).
    const double per_core =
        kernels::active_isa() == kernels::Isa::avx512 ? kPeakF32PerCore : kPeakF32PerCore / 2;
    const double peak = per_core * num_threads();
    std::printf(
        "\n%d thread(s): nominal peak f32 %.0f GFLOP/s, bf16 %.0f; FMA loop measures %.0f now "
        "(best of 5)\n",
        num_threads(), peak, 2 * peak, measured_fma_peak_gflops());
    std::printf("%-16s %2s %5s %5s %5s %16s %5s %16s %5s %5s\n", "product", "op", "M", "N", "K",
                "f32 GF/s med/best", "peak", "bf16 GF/s med/best", "peak", "/step");
    double step_f32_ms = 0, step_bf16_ms = 0, step_gflop = 0;
    for (const Shape& s : shapes()) {
      const Result r = run_shape(s, seconds);
      const double gflop = 2.0 * static_cast<double>(s.M * s.N * s.K) / 1e9;
      const double f32 = gflop / (r.f32.median_ms / 1e3), bf16 = gflop / (r.bf16.median_ms / 1e3);
      std::printf("%-16s %c%c %5lld %5lld %5lld %8.1f /%6.1f %4.0f%% %8.1f /%6.1f %4.0f%% %5d\n",
                  s.name, s.ta == Trans::No ? 'N' : 'T', s.tb == Trans::No ? 'N' : 'T',
                  static_cast<long long>(s.M), static_cast<long long>(s.N),
                  static_cast<long long>(s.K), f32, gflop / (r.f32.min_ms / 1e3), 100 * f32 / peak,
                  bf16, gflop / (r.bf16.min_ms / 1e3), 100 * bf16 / (2 * peak), s.per_step);
      step_f32_ms += s.per_step * r.f32.median_ms;
      step_bf16_ms += s.per_step * r.bf16.median_ms;
      step_gflop += s.per_step * gflop;
    }
    std::printf(
        "GEMMs of one training step (%.1f GFLOP): f32 %.0f ms (%.0f GFLOP/s, %.0f%% of peak), "
        "bf16 %.0f ms (%.0f GFLOP/s)\n",
        step_gflop, step_f32_ms, step_gflop / (step_f32_ms / 1e3),
        100 * step_gflop / (step_f32_ms / 1e3) / peak, step_bf16_ms,
        step_gflop / (step_bf16_ms / 1e3));
  }
  std::printf(
      "\n(medians of repetitions, about %.1f s per product and dtype; the machine may be shared)\n",
      seconds);
}
