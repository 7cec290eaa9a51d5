#include "tinylm/generate/sampler.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "tinylm/core/error.h"
#include "tinylm/kernels/reduce/argmax.h"

namespace tinylm::generate {

void SamplingOptions::validate() const {
  check(temperature >= 0.0 && std::isfinite(temperature), "temperature must be >= 0, got ",
        temperature);
  check(top_k >= 0, "top-k must be >= 0, got ", top_k);
  check(top_p > 0.0 && top_p <= 1.0, "top-p must be in (0, 1], got ", top_p);
}

Sampler::Sampler(const SamplingOptions& options, DrawOrder order)
    : options_(options),
      by_id_(order == DrawOrder::by_id && options.temperature > 0.0 && options.top_k == 0 &&
             options.top_p >= 1.0),
      rng_(options.seed) {
  options_.validate();
}

namespace {

// Most likely first; equal logits (-0 and +0 among them) in id order.
bool by_logit(const std::pair<float, int>& a, const std::pair<float, int>& b) {
  return a.first != b.first ? a.first > b.first : a.second < b.second;
}

// A key whose ascending order is by_logit's: the float's bits made monotonic (all flipped for
// a negative value, the sign alone for a positive one), then inverted. Without branches: the
// signs of a row of logits are random.
uint32_t descending_key(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v + 0.0f);  // (-0 + 0 is +0)
  const uint32_t flip = (0u - (u >> 31)) | 0x80000000u;
  return ~(u ^ flip);
}

// Sorts c (in id order) by by_logit: a stable radix sort of (descending_key, position) in
// three passes of 11 bits. std::sort took ~4 ms over a GPT-2 row, several times the forward
// it follows.
void sort_by_logit(std::vector<std::pair<float, int>>& c, std::vector<uint64_t>& a,
                   std::vector<uint64_t>& b, std::vector<std::pair<float, int>>& sorted) {
  constexpr int kBits = 11;
  constexpr uint64_t kMask = (1u << kBits) - 1;
  a.resize(c.size());
  b.resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) a[i] = uint64_t{descending_key(c[i].first)} << 32 | i;
  for (int shift = 32; shift < 64; shift += kBits) {
    std::array<uint32_t, (1u << kBits) + 1> start{};
    for (const uint64_t e : a) ++start[((e >> shift) & kMask) + 1];
    for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
    for (const uint64_t e : a) b[start[(e >> shift) & kMask]++] = e;
    a.swap(b);
  }
  sorted.resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) sorted[i] = c[static_cast<uint32_t>(a[i])];
  c.swap(sorted);
}

}  // namespace

int Sampler::sample(std::span<const float> logits) {
  check(!logits.empty(), "[Sampler] empty logits");
  const int64_t best = kernels::argmax(logits.data(), static_cast<int64_t>(logits.size()));
  if (options_.temperature == 0.0) return static_cast<int>(best);
  // Each candidate weighs exp((logit - max) / temperature), and is drawn by cumulative sums in
  // the order above, as random.choices does. The most likely weighs exactly 1, so every sum is
  // at least 1; a weight below 2^-53 (half an ulp of 1) added to such a sum leaves it as it
  // was, and the weights come in decreasing order: those of logits below max - 38 temperature
  // (weights below ~e^-38) change no sum, cannot be drawn, and are left out before sorting
  // (the same draw, for less work).
  double mx = logits[best];
  if (by_id_) return sample_by_id(logits, mx);
  if (std::isnan(mx)) {  // (argmax answers 0 when logits[0] is NaN; NaN is never drawn)
    mx = -INFINITY;
    for (const float v : logits) mx = v > mx ? v : mx;
  }
  const double cutoff = mx - 38.0 * options_.temperature;
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] >= cutoff) candidates_.push_back({logits[i], static_cast<int>(i)});  // (not NaN)
  }
  check(!candidates_.empty(), "[Sampler] no finite logits to sample from");
  size_t n = candidates_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    n = static_cast<size_t>(options_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(), by_logit);
  } else {
    sort_by_logit(candidates_, keys_, keys_scratch_, sorted_);
  }
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

// Every token weighs exp((logit - max) / temperature), in id order: no cut-off, since here a
// small weight before the largest one does change the sums.
int Sampler::sample_by_id(std::span<const float> logits, double mx) {
  weights_.resize(logits.size());
  for (size_t v = 0; v < logits.size(); ++v) {
    weights_[v] = std::exp((static_cast<double>(logits[v]) - mx) / options_.temperature);
  }
  return static_cast<int>(rng_.choices(weights_));
}

}  // namespace tinylm::generate
