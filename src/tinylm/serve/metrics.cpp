#include "tinylm/serve/metrics.h"

#include <sstream>

namespace tinylm::serve {

namespace {
constexpr std::chrono::seconds kRateWindow{10};
}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::count_generated(int64_t n) {
  generated_ += n;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  recent_.emplace_back(now, n);
  while (!recent_.empty() && now - recent_.front().first > kRateWindow) recent_.pop_front();
}

std::string Metrics::prometheus() {
  std::ostringstream o;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  int64_t window_tokens = 0;
  for (const auto& [t, n] : recent_) {
    if (now - t <= kRateWindow) window_tokens += n;
  }
  o << "# HELP tinylm_requests_total HTTP requests answered, by endpoint and status.\n"
       "# TYPE tinylm_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    o << "tinylm_requests_total{endpoint=\"" << key.first << "\",code=\"" << key.second << "\"} "
      << n << "\n";
  }
  o << "# HELP tinylm_prompt_tokens_total Prompt tokens prefilled.\n"
       "# TYPE tinylm_prompt_tokens_total counter\n"
    << "tinylm_prompt_tokens_total " << prompt_tokens_ << "\n"
    << "# HELP tinylm_generated_tokens_total Tokens generated.\n"
       "# TYPE tinylm_generated_tokens_total counter\n"
    << "tinylm_generated_tokens_total " << generated_ << "\n"
    << "# HELP tinylm_cancelled_total Generations cancelled because their client went away.\n"
       "# TYPE tinylm_cancelled_total counter\n"
    << "tinylm_cancelled_total " << cancelled_ << "\n"
    << "# HELP tinylm_queue_length Choices waiting for a slot.\n"
       "# TYPE tinylm_queue_length gauge\n"
    << "tinylm_queue_length " << queue_ << "\n"
    << "# HELP tinylm_active_slots Slots generating now.\n"
       "# TYPE tinylm_active_slots gauge\n"
    << "tinylm_active_slots " << active_ << "\n"
    << "# HELP tinylm_slots Slots configured (--slots).\n"
       "# TYPE tinylm_slots gauge\n"
    << "tinylm_slots " << slots_ << "\n"
    << "# HELP tinylm_tokens_per_second Tokens generated per second over the last 10 s.\n"
       "# TYPE tinylm_tokens_per_second gauge\n"
    << "tinylm_tokens_per_second "
    << static_cast<double>(window_tokens) / static_cast<double>(kRateWindow.count()) << "\n";
  return o.str();
}

}  // namespace tinylm::serve
