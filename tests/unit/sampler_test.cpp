// generate::Sampler against the plain algorithm it documents (every candidate sorted by
// std::sort, every weight computed, then random.choices): the same draw for the same seed,
// while the sampler leaves out negligible weights and sorts by radix.
#include "tinylm/generate/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"
#include "tinylm/core/py_random.h"

namespace tinylm::generate {
namespace TINYLM_TEST_LOCAL {

// The sampler as first written: softmax over every logit in by-logit order (ties by id), top-k,
// top-p, one random.choices draw per call.
class PlainSampler {
 public:
  explicit PlainSampler(const SamplingOptions& o) : o_(o), rng_(o.seed) {}
  int sample(const std::vector<float>& logits) {
    std::vector<std::pair<float, int>> c;
    for (size_t i = 0; i < logits.size(); ++i) c.push_back({logits[i], static_cast<int>(i)});
    const auto by_logit = [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    };
    std::sort(c.begin(), c.end(), by_logit);
    size_t n = c.size();
    if (o_.top_k > 0 && static_cast<size_t>(o_.top_k) < n) n = static_cast<size_t>(o_.top_k);
    const double mx = c[0].first;
    std::vector<double> w(n);
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += w[i] = std::exp((c[i].first - mx) / o_.temperature);
    if (o_.top_p < 1.0) {
      double mass = 0;
      size_t keep = 0;
      while (keep < n && mass < o_.top_p * total) mass += w[keep++];
      w.resize(std::max<size_t>(keep, 1));
    }
    return c[rng_.choices(w)].second;
  }

 private:
  SamplingOptions o_;
  PyRandom rng_;
};

// Rows of logits: narrow (every weight counts), wide (most weights negligible, left out by the
// sampler), and with ties, signed zeros and -inf.
std::vector<std::vector<float>> rows() {
  std::mt19937 rng(11);
  std::vector<std::vector<float>> out;
  for (const float spread : {0.5f, 3.0f, 12.0f, 40.0f}) {
    for (const size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{50257}}) {
      if (n == 50257 && (spread == 0.5f || spread == 12.0f)) continue;  // (time: two will do)
      std::normal_distribution<float> normal(-20.0f, spread);
      std::vector<float> x(n);
      for (float& v : x) v = normal(rng);
      out.push_back(x);
    }
  }
  std::vector<float> ties(3000);
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(rng() % 6) - 3.0f;
  ties[10] = -0.0f;  // equal to +0: in id order among the zeros
  ties[20] = -std::numeric_limits<float>::infinity();
  out.push_back(ties);
  return out;
}

TEST(Sampler, DrawsWhatThePlainAlgorithmDraws) {
  const std::vector<std::vector<float>> xs = rows();
  int cases = 0;
  for (const double t : {0.05, 0.7, 1.0, 2.0}) {
    for (const int k : {0, 1, 40, 5000}) {
      for (const double p : {1.0, 0.9, 0.3}) {
        SamplingOptions o;
        o.temperature = t;
        o.top_k = k;
        o.top_p = p;
        o.seed = static_cast<uint64_t>(cases);
        Sampler fast(o);
        PlainSampler plain(o);
        for (const auto& x : xs) {
          for (int draw = 0; draw < 2; ++draw) {  // the seeded stream goes on across draws
            ASSERT_EQ(fast.sample(x), plain.sample(x))
                << "T " << t << " top_k " << k << " top_p " << p << ", row of " << x.size();
          }
        }
        ++cases;
      }
    }
  }
}

TEST(Sampler, GreedyIsTheFirstLargestAndNaNIsNeverDrawn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Sampler greedy(SamplingOptions{});
  EXPECT_EQ(greedy.sample(std::vector<float>{1, 3, 2, 3}), 1);
  SamplingOptions o;
  o.temperature = 1.0;
  Sampler s(o);
  for (int i = 0; i < 50; ++i) {
    const int id = s.sample(std::vector<float>{nan, 0.0f, nan, 0.5f, nan});
    EXPECT_TRUE(id == 1 || id == 3) << id;
  }
  test::expect_error(
      [&] {
        s.sample(std::vector<float>{nan, nan});
      },
      {"Sampler", "no finite logits"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::generate
