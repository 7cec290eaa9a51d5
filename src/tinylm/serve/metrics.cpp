#include "tinylm/serve/metrics.h"

#include <ostream>
#include <sstream>
#include <string_view>

namespace tinylm::serve {

namespace {
constexpr std::chrono::seconds kRateWindow{10};

// A metric's HELP and TYPE lines, which its samples follow.
void describe(std::ostream& o, std::string_view name, std::string_view type,
              std::string_view help) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

// A metric of one unlabelled sample.
template <class T>
void single(std::ostream& o, std::string_view name, std::string_view type, std::string_view help,
            T value) {
  describe(o, name, type, help);
  o << name << " " << value << "\n";
}
}  // namespace

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
  describe(o, "tinylm_requests_total", "counter",
           "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, n] : requests_) {
    o << "tinylm_requests_total{endpoint=\"" << key.first << "\",code=\"" << key.second << "\"} "
      << n << "\n";
  }
  single(o, "tinylm_prompt_tokens_total", "counter", "Prompt tokens prefilled.",
         prompt_tokens_.load());
  single(o, "tinylm_generated_tokens_total", "counter", "Tokens generated.", generated_.load());
  single(o, "tinylm_cancelled_total", "counter",
         "Generations cancelled because their client went away.", cancelled_.load());
  single(o, "tinylm_queue_length", "gauge", "Choices waiting for a slot.", queue_.load());
  single(o, "tinylm_active_slots", "gauge", "Slots generating now.", active_.load());
  single(o, "tinylm_slots", "gauge", "Slots configured (--slots).", slots_);
  single(o, "tinylm_tokens_per_second", "gauge", "Tokens generated per second over the last 10 s.",
         static_cast<double>(window_tokens) / static_cast<double>(kRateWindow.count()));
  return o.str();
}

}  // namespace tinylm::serve
