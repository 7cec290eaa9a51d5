// kernels/matmul/gemm.h on top of oneDNN (Debian's libdnnl-dev): dnnl_sgemm for f32 and
// dnnl_gemm_bf16bf16f32 for bf16, both row-major with the same argument order as ours.
//
// Why oneDNN: measured on the 2-core AVX-512 machine (AMD Zen 5) for the GPT-2 training
// shapes (bench/gemm_bench.cpp, medians over repetitions), oneDNN's JIT sgemm runs at about
// 190-200 GFLOP/s per core, i.e. at the FMA peak; OpenBLAS pinned to its Haswell kernels
// (OPENBLAS_CORETYPE=Haswell, fixed by the environment) reaches about 100; a hand-written
// 14x32 AVX-512 microkernel with packed panels reached 85-95% of oneDNN. oneDNN's bf16 gemm
// uses vdpbf16ps on this CPU (about 380-410 GFLOP/s per core, twice the f32 peak).
//
// Threads: Debian's oneDNN is built on OpenMP (libgomp, the runtime we use), so nothing is
// oversubscribed, and called inside a parallel region it runs on the calling thread. We split
// the work between threads ourselves, though: the larger of M and N into one contiguous part
// per thread, each a single-threaded oneDNN call. On the training shapes with 2 threads that
// beats oneDNN's own split by 0-45% (f32 mlp.c_fc dX 240 -> 340 GFLOP/s, bf16 forward
// 600 -> 730). Small products run on the calling thread (kSerialMacs below). No thread ever
// takes part of K: every element of C is one single-threaded oneDNN call's, whose sums do not
// depend on where the block starts or how wide it is (tests/unit/gemm_test.cpp), so a product
// gives the same bytes on any number of threads — which a data-parallel run's shards need. At
// the avx2 level the blocks are fixed (fixed_blocks below).
#include "tinylm/kernels/matmul/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/level.h"

// oneDNN chooses its instructions itself: this file is compiled in the generic pass only.
#if TINYLM_LEVEL_ONCE

// Exported by libdnnl (its own tests and frameworks call it) but not declared in the
// public headers of oneDNN 2.x. Row-major, like dnnl_sgemm; A and B are bf16 bit patterns.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N,
                                               dnnl_dim_t K, float alpha,
                                               const tinylm::kernels::Bf16* A, dnnl_dim_t lda,
                                               const tinylm::kernels::Bf16* B, dnnl_dim_t ldb,
                                               float beta, float* C, dnnl_dim_t ldc);

namespace tinylm::kernels {
namespace {

char trans_char(Trans t) { return t == Trans::No ? 'N' : 'T'; }

// Caps oneDNN's JIT kernels at the active level, once, before its first product (it cannot
// change afterwards): forced to AVX2, the products are what an AVX2 machine runs.
void cap_onednn_isa() {
  static const bool once = [] {
    dnnl_cpu_isa_t cap = dnnl_cpu_isa_all;
    switch (active_isa()) {
      case Isa::generic:
        cap = dnnl_cpu_isa_sse41;
        break;
      case Isa::avx2:
        cap = dnnl_cpu_isa_avx2;
        break;
      case Isa::avx512:
        break;
    }
    dnnl_set_max_cpu_isa(cap);  // fails only if oneDNN has already made a kernel
    return true;
  }();
  (void)once;
}

// Shapes and strides as BLAS requires them; `what` names the entry point in the message.
void check_args(const char* what, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K,
                const void* A, int64_t lda, const void* B, int64_t ldb, const void* C,
                int64_t ldc) {
  check(M >= 0 && N >= 0 && K >= 0, what, ": negative size M=", M, " N=", N, " K=", K);
  // Columns of each matrix as stored (row-major): op(A) is M×K, op(B) is K×N.
  const int64_t a_cols = ta == Trans::No ? K : M, b_cols = tb == Trans::No ? N : K;
  check(lda >= std::max<int64_t>(1, a_cols), what, ": lda ", lda, " < ", a_cols,
        " columns of A as stored");
  check(ldb >= std::max<int64_t>(1, b_cols), what, ": ldb ", ldb, " < ", b_cols,
        " columns of B as stored");
  check(ldc >= std::max<int64_t>(1, N), what, ": ldc ", ldc, " < N=", N);
  if (M > 0 && N > 0) {
    check(C != nullptr, what, ": C is null");
    if (K > 0) check(A != nullptr && B != nullptr, what, ": A or B is null");
  }
}

// C = beta·C, where the product contributes nothing (K = 0 or alpha = 0); beta = 0 writes
// zeros without reading C, as BLAS does.
void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  if (beta == 1.0f) return;
  parallel_for(0, M, 16, [&](int64_t i) {
    float* c = C + i * ldc;
    if (beta == 0.0f)
      std::fill(c, c + N, 0.0f);
    else
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
  });
}

// Copies a bf16 matrix (rows×cols, row stride ld) into dense floats; exact.
void widen(const Bf16* X, int64_t rows, int64_t cols, int64_t ld, std::vector<float>& out) {
  out.resize(static_cast<size_t>(rows * cols));
  parallel_for(0, rows, 16, [&](int64_t r) {
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = to_float(X[r * ld + c]);
  });
}

// One single call of the backend; oneDNN decides its own threads (one inside a parallel region).
dnnl_status_t backend(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc) {
  return dnnl_sgemm(trans_char(ta), trans_char(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
dnnl_status_t backend(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const Bf16* A, int64_t lda, const Bf16* B, int64_t ldb, float beta, float* C,
                      int64_t ldc) {
  return dnnl_gemm_bf16bf16f32(trans_char(ta), trans_char(tb), M, N, K, alpha, A, lda, B, ldb, beta,
                               C, ldc);
}

// Products under about a million multiply-adds (one attention head, 64³, is a quarter of
// that) take a few µs, and a fork/join onto a second thread costs as much as it saves
// (measured: 64³ takes 3.1 µs on one thread, 6.2 µs on two; 64×64×256 11.2 µs vs 10.5 µs).
constexpr double kSerialMacs = 1 << 20;
// Each thread's part of the split dimension is at least this many rows/columns: a narrow
// problem runs on fewer threads (oneDNN's own threading would split K, and with it the sums).
constexpr int64_t kMinPart = 64;

// Boundary t of `parts` contiguous parts of [0, n), at multiples of 16 (a vector of floats).
int64_t part_bound(int64_t n, int t, int parts) {
  if (t >= parts) return n;
  return n * t / parts / 16 * 16;
}

// The product on the calling thread: oneDNN asks omp_get_max_threads(), so set it to 1 for
// the call and put it back.
template <class T>
dnnl_status_t serial(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
                     int64_t lda, const T* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const dnnl_status_t st = backend(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  omp_set_num_threads(saved);
  return st;
}

// oneDNN's AVX2 sgemm chooses its kernel by the size of the block it is given (measured on
// oneDNN 2.7: an M x 768 x 128 TN product gives other bits above about 400 rows than in parts
// of 64), so at that level the split dimension is cut into blocks that depend on its size
// alone, and the threads take whole blocks: the calls do not depend on the thread count. An
// even number of blocks of at most 1,024 keeps two threads balanced; each block's call packs
// the other operand again, which smaller blocks pay for (docs/performance-history.md).
bool fixed_blocks() { return active_isa() == Isa::avx2; }
int64_t fixed_block_count(int64_t n) { return 2 * ((n + 2047) / 2048); }

// The whole product, threads as described at the top of the file.
template <class T>
dnnl_status_t run(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
                  int64_t lda, const T* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool fixed = fixed_blocks();
  if (threads == 1 && !fixed) return backend(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) < kSerialMacs) {
    return serial(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  const bool split_m = M >= N;
  const int64_t n = split_m ? M : N;
  const int64_t parts = fixed ? fixed_block_count(n) : std::min<int64_t>(threads, n / kMinPart);
  const int team = static_cast<int>(std::min<int64_t>(threads, parts));
  if (parts <= 1) return serial(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // Part p of the split dimension, on the calling thread.
  const auto part = [&](int64_t p, bool alone) {
    const int64_t lo = part_bound(n, static_cast<int>(p), static_cast<int>(parts));
    const int64_t hi = part_bound(n, static_cast<int>(p + 1), static_cast<int>(parts));
    if (hi <= lo) return dnnl_success;
    using Call = dnnl_status_t (*)(Trans, Trans, int64_t, int64_t, int64_t, float, const T*,
                                   int64_t, const T*, int64_t, float, float*, int64_t);
    const Call call = alone ? Call(serial<T>) : Call(backend);
    if (split_m) {
      return call(ta, tb, hi - lo, N, K, alpha, ta == Trans::No ? A + lo * lda : A + lo, lda, B,
                  ldb, beta, C + lo * ldc, ldc);
    }
    return call(ta, tb, M, hi - lo, K, alpha, A, lda, tb == Trans::No ? B + lo : B + lo * ldb, ldb,
                beta, C + lo, ldc);
  };
  std::atomic<int> failed{dnnl_success};
  if (team <= 1) {
    for (int64_t p = 0; p < parts; ++p) {
      const dnnl_status_t st = part(p, true);
      if (st != dnnl_success) failed.store(st);
    }
    return static_cast<dnnl_status_t>(failed.load());
  }
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t p = 0; p < parts; ++p) {
    const dnnl_status_t st = part(p, false);
    if (st != dnnl_success) failed.store(st);
  }
  return static_cast<dnnl_status_t>(failed.load());
}

void check_status(const char* what, dnnl_status_t st, int64_t M, int64_t N, int64_t K) {
  check(st == dnnl_success, what, ": oneDNN gemm failed with status ", static_cast<int>(st),
        " (M=", M, " N=", N, " K=", K, ")");
}

// oneDNN 2.x has bf16 gemm only on AVX-512 CPUs (dnnl_unimplemented elsewhere): asked once.
bool bf16_gemm_available() {
  static const bool available = [] {
    cap_onednn_isa();
    const Bf16 one{0x3f80};
    float c = 0;
    return dnnl_gemm_bf16bf16f32('N', 'N', 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1) ==
               dnnl_success &&
           c == 1.0f;
  }();
  return available;
}

}  // namespace

bool bf16_gemm_is_native() { return bf16_gemm_available(); }

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_args("gemm_f32", ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
  if (M == 0 || N == 0) return;
  // BLAS leaves A and B unread here; guaranteeing it ourselves keeps NaNs in them out of C.
  if (K == 0 || alpha == 0.0f) return scale_c(M, N, beta, C, ldc);
  cap_onednn_isa();
  check_status("gemm_f32", run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), M, N, K);
}

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
          int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  check_args("gemm_f64", ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double a = ta == Trans::No ? A[i * lda + k] : A[k * lda + i];
        const double b = tb == Trans::No ? B[k * ldb + j] : B[j * ldb + k];
        acc += a * b;
      }
      C[i * ldc + j] = alpha * acc + (beta == 0.0 ? 0.0 : beta * C[i * ldc + j]);
    }
  }
}

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16* A,
          int64_t lda, const Bf16* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_args("gemm_bf16", ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) return scale_c(M, N, beta, C, ldc);
  if (bf16_gemm_available()) {
    check_status("gemm_bf16", run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), M, N, K);
    return;
  }
  // No bf16 gemm in oneDNN on this CPU: widen both operands to f32 (exact) and use sgemm,
  // which gives the f32-accumulated product of the same bf16 values. Slow path (a copy per
  // call), for portability only.
  thread_local std::vector<float> a32, b32;
  const int64_t a_rows = ta == Trans::No ? M : K, a_cols = ta == Trans::No ? K : M;
  const int64_t b_rows = tb == Trans::No ? K : N, b_cols = tb == Trans::No ? N : K;
  widen(A, a_rows, a_cols, lda, a32);
  widen(B, b_rows, b_cols, ldb, b32);
  check_status("gemm_bf16",
               run(ta, tb, M, N, K, alpha, a32.data(), a_cols, b32.data(), b_cols, beta, C, ldc), M,
               N, K);
}

}  // namespace tinylm::kernels
#endif
