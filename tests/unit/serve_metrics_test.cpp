// serve/metrics.h: the Prometheus text of GET /metrics, byte for byte.
#include <gtest/gtest.h>

#include "tinylm/serve/metrics.h"

namespace tinylm::serve {
namespace TINYLM_TEST_LOCAL {

TEST(ServeMetrics, PrometheusTextIsExact) {
  Metrics m(3);
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("/health", 401);
  m.count_prompt_tokens(7);
  m.count_generated(25);
  m.count_cancelled();
  m.set_queue(2);
  m.set_active(1);
  EXPECT_EQ(m.prometheus(),
            "# HELP tinylm_requests_total HTTP requests answered, by endpoint and status.\n"
            "# TYPE tinylm_requests_total counter\n"
            "tinylm_requests_total{endpoint=\"/health\",code=\"401\"} 1\n"
            "tinylm_requests_total{endpoint=\"/v1/completions\",code=\"200\"} 2\n"
            "# HELP tinylm_prompt_tokens_total Prompt tokens prefilled.\n"
            "# TYPE tinylm_prompt_tokens_total counter\n"
            "tinylm_prompt_tokens_total 7\n"
            "# HELP tinylm_generated_tokens_total Tokens generated.\n"
            "# TYPE tinylm_generated_tokens_total counter\n"
            "tinylm_generated_tokens_total 25\n"
            "# HELP tinylm_cancelled_total Generations cancelled because their client went away.\n"
            "# TYPE tinylm_cancelled_total counter\n"
            "tinylm_cancelled_total 1\n"
            "# HELP tinylm_queue_length Choices waiting for a slot.\n"
            "# TYPE tinylm_queue_length gauge\n"
            "tinylm_queue_length 2\n"
            "# HELP tinylm_active_slots Slots generating now.\n"
            "# TYPE tinylm_active_slots gauge\n"
            "tinylm_active_slots 1\n"
            "# HELP tinylm_slots Slots configured (--slots).\n"
            "# TYPE tinylm_slots gauge\n"
            "tinylm_slots 3\n"
            "# HELP tinylm_tokens_per_second Tokens generated per second over the last 10 s.\n"
            "# TYPE tinylm_tokens_per_second gauge\n"
            "tinylm_tokens_per_second 2.5\n");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve
