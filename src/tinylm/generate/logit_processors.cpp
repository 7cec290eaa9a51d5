#include "tinylm/generate/logit_processors.h"

#include <cmath>

#include "tinylm/core/error.h"

namespace tinylm::generate {

void LogitPenalties::validate(int vocab_size) const {
  check(std::isfinite(frequency) && std::abs(frequency) <= kMaxPenalty,
        "frequency penalty must be in [-2, 2], got ", frequency);
  check(std::isfinite(presence) && std::abs(presence) <= kMaxPenalty,
        "presence penalty must be in [-2, 2], got ", presence);
  check(std::isfinite(repetition) && repetition > 0.0, "repetition penalty must be > 0, got ",
        repetition);
  for (const auto& [id, b] : bias) {
    check(id >= 0 && id < vocab_size, "logit bias: token id ", id,
          " is outside the vocabulary [0, ", vocab_size, ")");
    check(std::isfinite(b) && std::abs(b) <= kMaxLogitBias, "logit bias of token ", id,
          " must be in [-100, 100], got ", b);
  }
}

template <class Logit>
LogitProcessor<Logit>::LogitProcessor(const LogitPenalties& penalties, std::span<const int> prompt)
    : penalties_(penalties) {
  if (penalties_.repetition != 1.0) seen_.insert(prompt.begin(), prompt.end());
}

template <class Logit>
void LogitProcessor<Logit>::accept(int token) {
  if (penalties_.neutral()) return;
  ++generated_[token];
  if (penalties_.repetition != 1.0) seen_.insert(token);
}

template <class Logit>
std::span<const Logit> LogitProcessor<Logit>::apply(std::span<const Logit> logits) {
  if (penalties_.neutral()) return logits;
  row_.assign(logits.begin(), logits.end());
  const int64_t n = static_cast<int64_t>(row_.size());
  // The penalty in the logits' type, as torch's float32 tensor times a Python float.
  const Logit p = static_cast<Logit>(penalties_.repetition);
  for (const int t : seen_) {
    if (t < 0 || t >= n) continue;
    Logit& x = row_[static_cast<size_t>(t)];
    x = x < 0 ? x * p : x / p;
  }
  if (penalties_.frequency != 0.0 || penalties_.presence != 0.0) {
    for (const auto& [t, count] : generated_) {
      if (t < 0 || t >= n) continue;
      Logit& x = row_[static_cast<size_t>(t)];
      x = static_cast<Logit>(
          x - (penalties_.frequency * static_cast<double>(count) + penalties_.presence));
    }
  }
  for (const auto& [t, b] : penalties_.bias) {
    if (t >= 0 && t < n) row_[static_cast<size_t>(t)] = static_cast<Logit>(row_[t] + b);
  }
  return row_;
}

template class LogitProcessor<float>;
template class LogitProcessor<double>;

}  // namespace tinylm::generate
