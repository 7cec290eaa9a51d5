#pragma once
// Passes over a flat gradient buffer that every training step makes: unscaling (loss
// scaling), the finite check, the global norm and clipping (as torch.nn.utils.clip_grad_norm_),
// and plain SGD. Split across threads in fixed chunks whose partial results are combined in
// chunk order, so the results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "tinylm/core/parallel.h"

namespace tinylm::optim {

// The fixed chunks the passes split the buffer into. A part of the buffer that starts at a
// multiple of kGradChunk has the same chunks as the whole there, so its partial norms are the
// whole's (a data-parallel process takes its part this way: distributed/comm.h).
constexpr int64_t kGradChunk = 1 << 16;

namespace detail {

// fn(chunk, begin, count) over [0, n) in chunks of kGradChunk, threads splitting the chunks.
template <class Fn>
void for_chunks(size_t n, Fn&& fn) {
  const int64_t chunks = (static_cast<int64_t>(n) + kGradChunk - 1) / kGradChunk;
  parallel_for(0, chunks, 4, [&](int64_t c) {
    const size_t begin = static_cast<size_t>(c * kGradChunk);
    fn(c, begin, std::min<size_t>(static_cast<size_t>(kGradChunk), n - begin));
  });
}

}  // namespace detail

inline size_t chunk_count(size_t n) {
  return (n + static_cast<size_t>(kGradChunk) - 1) / static_cast<size_t>(kGradChunk);
}

// g *= factor (skipped when factor is 1); returns whether every result is finite.
template <class T>
bool scale_and_check(std::span<T> grads, double factor) {
  std::vector<uint8_t> finite(chunk_count(grads.size()), 1);
  const T f = static_cast<T>(factor);
  detail::for_chunks(grads.size(), [&](int64_t c, size_t begin, size_t count) {
    bool ok = true;
    for (size_t i = begin; i < begin + count; ++i) {
      if (factor != 1.0) grads[i] *= f;
      ok &= std::isfinite(grads[i]);
    }
    finite[static_cast<size_t>(c)] = ok;
  });
  return std::all_of(finite.begin(), finite.end(), [](uint8_t ok) { return ok != 0; });
}

// The squared norm of each chunk of grads, accumulated in double, into out[0 ..
// chunk_count(grads.size())).
template <class T>
void chunk_square_norms(std::span<const T> grads, double* out) {
  detail::for_chunks(grads.size(), [&](int64_t c, size_t begin, size_t count) {
    // Eight running sums, not one: a single chain waits on the adder's latency at every
    // element. The order is fixed (sum k takes the elements i with i % 8 == k, then a fixed
    // tree), so a chunk's sum does not depend on the thread count.
    constexpr size_t kSums = 8;
    double s[kSums] = {};
    const size_t end = begin + count, body = begin + count / kSums * kSums;
    for (size_t i = begin; i < body; i += kSums) {
      for (size_t k = 0; k < kSums; ++k) {
        const double g = static_cast<double>(grads[i + k]);
        s[k] += g * g;
      }
    }
    for (size_t i = body; i < end; ++i) {
      const double g = static_cast<double>(grads[i]);
      s[i - body] += g * g;
    }
    out[c] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  });
}

// The norm from every chunk's squared norm, summed in chunk order.
inline double norm_of_chunks(std::span<const double> squares) {
  double sum = 0.0;
  for (const double p : squares) sum += p;
  return std::sqrt(sum);
}

// ||g||_2.
template <class T>
double global_norm(std::span<const T> grads) {
  std::vector<double> squares(chunk_count(grads.size()), 0.0);
  chunk_square_norms(grads, squares.data());
  return norm_of_chunks(squares);
}

// The factor that scales gradients of this norm to max_norm (torch's max_norm / (norm + 1e-6)),
// or 1 when the norm is within it or max_norm is 0 (no clipping).
inline double clip_factor(double norm, double max_norm) {
  return max_norm > 0.0 && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
}

// Scales grads to max_norm when their norm exceeds it.
template <class T>
void clip_to(std::span<T> grads, double norm, double max_norm) {
  if (const double f = clip_factor(norm, max_norm); f != 1.0) scale_and_check(grads, f);
}

// Clips to max_norm when the norm exceeds it (g *= max_norm / (norm + 1e-6)); returns the
// norm before clipping.
template <class T>
double clip_global_norm(std::span<T> grads, double max_norm) {
  const double norm = global_norm(std::span<const T>(grads));
  clip_to(grads, norm, max_norm);
  return norm;
}

// w -= lr * g.
template <class T>
void sgd_update(std::span<T> params, std::span<const T> grads, double lr) {
  const T l = static_cast<T>(lr);
  detail::for_chunks(params.size(), [&](int64_t, size_t begin, size_t count) {
    for (size_t i = begin; i < begin + count; ++i) params[i] -= l * grads[i];
  });
}

}  // namespace tinylm::optim
