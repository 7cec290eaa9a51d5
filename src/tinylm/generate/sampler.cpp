#include "tinylm/generate/sampler.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/kernels/reduce/argmax.h"

namespace tinylm::generate {

void SamplingOptions::validate() const {
  check(temperature >= 0.0 && std::isfinite(temperature), "temperature must be >= 0, got ",
        temperature);
  check(top_k >= 0, "top-k must be >= 0, got ", top_k);
  check(top_p > 0.0 && top_p <= 1.0, "top-p must be in (0, 1], got ", top_p);
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  options_.validate();
}

int Sampler::sample(std::span<const float> logits) {
  check(!logits.empty(), "[Sampler] empty logits");
  if (options_.temperature == 0.0) {
    return static_cast<int>(kernels::argmax(logits.data(), static_cast<int64_t>(logits.size())));
  }
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i)
    candidates_.push_back({logits[i], static_cast<int>(i)});
  // Most likely first; equal logits keep id order, so the draw is deterministic.
  const auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t n = candidates_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    n = static_cast<size_t>(options_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  const double mx = candidates_[0].first;
  weights_.assign(n, 0.0);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    weights_[i] = std::exp((candidates_[i].first - mx) / options_.temperature);
    total += weights_[i];
  }
  if (options_.top_p < 1.0) {  // nucleus: the smallest prefix whose mass reaches top_p
    double mass = 0.0;
    size_t keep = 0;
    while (keep < n && mass < options_.top_p * total) mass += weights_[keep++];
    n = std::max<size_t>(keep, 1);
    weights_.resize(n);
  }
  return candidates_[rng_.choices(weights_)].second;
}

}  // namespace tinylm::generate
