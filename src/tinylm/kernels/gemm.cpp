// kernels/gemm.h on top of oneDNN (Debian's libdnnl-dev): dnnl_sgemm for f32 and
// dnnl_gemm_bf16bf16f32 for bf16, both row-major with the same argument order as ours.
//
// Why oneDNN: measured on the 2-core AVX-512 machine (AMD Zen 5) for the GPT-2 training
// shapes (bench/gemm_bench.cpp, medians over repetitions), oneDNN's JIT sgemm runs at about
// 190-200 GFLOP/s per core, i.e. at the FMA peak; OpenBLAS pinned to its Haswell kernels
// (OPENBLAS_CORETYPE=Haswell, fixed by the environment) reaches about 100; a hand-written
// 14x32 AVX-512 microkernel with packed panels reached 85-95% of oneDNN. oneDNN's bf16 gemm
// uses vdpbf16ps on this CPU (about 380-410 GFLOP/s per core, twice the f32 peak).
//
// Threads: Debian's oneDNN is built on OpenMP (libgomp, the runtime we use) and asks
// omp_get_max_threads() at each call, so tinylm::set_num_threads governs it and nothing is
// oversubscribed; called inside a parallel region it runs on the calling thread only, and so
// do small products (below). Its work split depends only on the shape and the thread count
// (not on alignment: checked), so results are the same bytes for a fixed thread count.
#include "tinylm/kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"

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

// Shapes and strides as BLAS requires them; `what` names the entry point in the message.
void check_args(const char* what, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const void* A,
                int64_t lda, const void* B, int64_t ldb, const float* C, int64_t ldc) {
  check(M >= 0 && N >= 0 && K >= 0, what, ": negative size M=", M, " N=", N, " K=", K);
  // Columns of each matrix as stored (row-major): op(A) is M×K, op(B) is K×N.
  const int64_t a_cols = ta == Trans::No ? K : M, b_cols = tb == Trans::No ? N : K;
  check(lda >= std::max<int64_t>(1, a_cols), what, ": lda ", lda, " < ", a_cols, " columns of A as stored");
  check(ldb >= std::max<int64_t>(1, b_cols), what, ": ldb ", ldb, " < ", b_cols, " columns of B as stored");
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
    if (beta == 0.0f) std::fill(c, c + N, 0.0f);
    else
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
  });
}

// Copies a bf16 matrix (rows×cols, row stride ld) into dense floats; exact.
void widen(const Bf16* X, int64_t rows, int64_t cols, int64_t ld, std::vector<float>& out) {
  out.resize(static_cast<size_t>(rows * cols));
  parallel_for(0, rows, 16, [&](int64_t r) {
    for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(r * cols + c)] = to_float(X[r * ld + c]);
  });
}

// Products under about a million multiply-adds (one attention head, 64³, is a quarter of
// that) take a few µs, and oneDNN's fork/join onto a second thread costs as much as it saves
// (measured: 64³ takes 3.1 µs on one thread, 6.2 µs on two; 64×64×256 11.2 µs vs 10.5 µs).
// They run on the calling thread; the decision depends on the shape only (determinism).
class SmallProductsSerial {
 public:
  SmallProductsSerial(int64_t M, int64_t N, int64_t K) {
    if (static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) < kSerialMacs &&
        !omp_in_parallel() && omp_get_max_threads() > 1) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
  }
  ~SmallProductsSerial() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  SmallProductsSerial(const SmallProductsSerial&) = delete;
  SmallProductsSerial& operator=(const SmallProductsSerial&) = delete;

 private:
  static constexpr double kSerialMacs = 1 << 20;
  int saved_ = 0;
};

void sgemm(const char* what, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const dnnl_status_t st = dnnl_sgemm(trans_char(ta), trans_char(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  check(st == dnnl_success, what, ": oneDNN sgemm failed with status ", static_cast<int>(st), " (M=", M,
        " N=", N, " K=", K, ")");
}

}  // namespace

void gemm_f32(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_args("gemm_f32", ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
  if (M == 0 || N == 0) return;
  // BLAS leaves A and B unread here; guaranteeing it ourselves keeps NaNs in them out of C.
  if (K == 0 || alpha == 0.0f) return scale_c(M, N, beta, C, ldc);
  const SmallProductsSerial serial(M, N, K);
  sgemm("gemm_f32", ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16* A,
               int64_t lda, const Bf16* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_args("gemm_bf16", ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) return scale_c(M, N, beta, C, ldc);
  const SmallProductsSerial serial(M, N, K);
  const dnnl_status_t st =
      dnnl_gemm_bf16bf16f32(trans_char(ta), trans_char(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st == dnnl_success) return;
  check(st == dnnl_unimplemented, "gemm_bf16: oneDNN bf16 gemm failed with status ", static_cast<int>(st),
        " (M=", M, " N=", N, " K=", K, ")");
  // oneDNN has bf16 gemm only on AVX-512 CPUs. Elsewhere: widen both operands to f32 (exact)
  // and use sgemm, which gives the f32-accumulated product of the same bf16 values. Slow
  // path (a copy per call), for portability only.
  thread_local std::vector<float> a32, b32;
  const int64_t a_rows = ta == Trans::No ? M : K, a_cols = ta == Trans::No ? K : M;
  const int64_t b_rows = tb == Trans::No ? K : N, b_cols = tb == Trans::No ? N : K;
  widen(A, a_rows, a_cols, lda, a32);
  widen(B, b_rows, b_cols, ldb, b32);
  sgemm("gemm_bf16", ta, tb, M, N, K, alpha, a32.data(), a_cols, b32.data(), b_cols, beta, C, ldc);
}

}  // namespace tinylm::kernels
