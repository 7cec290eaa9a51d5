#pragma once
// Adam / AdamW over flat spans: the moments, the step's bias corrections and weight decay;
// the update itself is kernels/optim/adam.h's. A double run reproduces microgpt.py's floats
// exactly (kernels::adam_update_exact); float computes in float, as PyTorch's AdamW. Weight
// decay, when non-zero, is decoupled (AdamW): p -= lr * wd * p before the update.
#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/py_math.h"
#include "tinylm/kernels/optim/adam.h"

namespace tinylm::optim {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// The scalars of the update at 1-based step t (decay 0: the caller sets lr * weight decay
// where it applies). The host's Adam and a device's (train/trainable.h) share them.
inline kernels::AdamStep adam_step_at(const AdamConfig& config, double lr, int64_t t) {
  return {lr,
          config.beta1,
          config.beta2,
          config.eps,
          1 - py_pow(config.beta1, static_cast<double>(t)),
          1 - py_pow(config.beta2, static_cast<double>(t)),
          0.0};
}

template <class T>
class Adam {
 public:
  // The exact double path needs per-element scratch; the float path none.
  Adam(size_t n, AdamConfig config)
      : config_(config),
        m_(n, T(0)),
        v_(n, T(0)),
        scratch_(std::is_same_v<T, double> ? n : 0),
        needs_pow_(std::is_same_v<T, double> ? n : 0),
        segments_{{0, n, true}} {}

  // Weight decay applies to the elements of `mask` that are true (one per parameter scalar,
  // or use decay_mask_of below); by default to every parameter.
  void set_decay(std::span<const uint8_t> mask) {
    check(mask.size() == m_.size(), "[Adam] decay mask size does not match the optimizer state");
    segments_.clear();
    for (size_t i = 0; i < mask.size();) {
      size_t j = i;
      while (j < mask.size() && mask[j] == mask[i]) ++j;
      segments_.push_back({i, j, mask[i] != 0});
      i = j;
    }
  }

  // One update at 1-based step t with learning rate lr (schedules live with the caller) of
  // the elements [begin, end) (by default all), each gradient first multiplied by grad_scale
  // (clipping's factor, optim/grad_ops.h). Zeroes their gradients afterwards, ready for the
  // next accumulation.
  void step(std::span<T> params, std::span<T> grads, double lr, int64_t t, size_t begin = 0,
            size_t end = SIZE_MAX, double grad_scale = 1.0) {
    check(params.size() == m_.size() && grads.size() == m_.size(),
          "[Adam::step] parameter/gradient size does not match the optimizer state");
    check(t >= 1, "[Adam::step] step count must start at 1");
    end = std::min(end, m_.size());
    if (begin >= end) return;
    kernels::AdamStep s = adam_step_at(config_, lr, t);
    s.grad_scale = grad_scale;
    const double decay = lr * config_.weight_decay;
    // Element-wise, so any split gives the bits of one whole pass. One team of threads takes
    // fixed chunks of the whole range: the decay segments (a model's tensors) are mostly
    // smaller than a kernel's own split and would each run on one thread with a fork apiece.
    const int64_t chunks = static_cast<int64_t>((end - begin + kChunk - 1) / kChunk);
    parallel_for_balanced(chunks, [&](int64_t c) {
      const size_t lo = begin + static_cast<size_t>(c) * kChunk;
      const size_t hi = std::min(end, lo + kChunk);
      // The first segment that ends after lo, then each one that starts before hi.
      auto seg = std::upper_bound(segments_.begin(), segments_.end(), lo,
                                  [](size_t i, const Segment& sg) { return i < sg.end; });
      for (; seg != segments_.end() && seg->begin < hi; ++seg) {
        const size_t b = std::max(seg->begin, lo), e = std::min(seg->end, hi);
        kernels::AdamStep part = s;
        part.decay = seg->decays ? decay : 0.0;
        update(b, static_cast<int64_t>(e - b), params, grads, part);
      }
    });
  }

  // The moments, for saving and restoring a run.
  std::span<const T> first_moment() const { return m_; }
  std::span<const T> second_moment() const { return v_; }
  std::span<T> first_moment() { return m_; }
  std::span<T> second_moment() { return v_; }

 private:
  struct Segment {
    size_t begin, end;
    bool decays;
  };
  // Elements per chunk a thread takes: 64 KiB of each of the four arrays (float).
  static constexpr size_t kChunk = size_t{1} << 14;

  void update(size_t b, int64_t n, std::span<T> params, std::span<T> grads,
              const kernels::AdamStep& s) {
    if constexpr (std::is_same_v<T, double>) {
      kernels::adam_update_exact(params.data() + b, grads.data() + b, m_.data() + b, v_.data() + b,
                                 scratch_.data() + b, needs_pow_.data() + b, n, s);
    } else {
      kernels::adam_update(params.data() + b, grads.data() + b, m_.data() + b, v_.data() + b, n, s);
    }
  }
  AdamConfig config_;
  std::vector<T> m_, v_;
  std::vector<double> scratch_;
  std::vector<uint8_t> needs_pow_;
  std::vector<Segment> segments_;
};

}  // namespace tinylm::optim
