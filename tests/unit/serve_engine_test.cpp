// Continuous batching: a request's text is the same bits whether it runs alone or beside
// others, and the same as `tinylm generate` (generate::generate) gives for its prompt and seed.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "test_util.h"
#include "tinylm/generate/generate.h"
#include "tinylm/models/gpt2/init.h"
#include "tinylm/serve/api_error.h"
#include "tinylm/serve/engine.h"

namespace tinylm::serve {
namespace TINYLM_TEST_LOCAL {

using namespace std::chrono_literals;

const BpeTokenizer& tokenizer() {
  static const BpeTokenizer tok = BpeTokenizer::from_directory(test::source_path("data/gpt2"));
  return tok;
}

// small-test's shape with a vocabulary of 1,024 (prompts are token ids below it): the head
// of 50,257 would make these runs too slow for the sanitizer build.
gpt2::Model small_gpt2(DType dtype) {
  gpt2::Config c = gpt2::preset("small-test");
  c.vocab_size = 1024;
  return gpt2::Model(c, gpt2::init_params(c, 3), dtype);
}

struct Case {
  std::vector<int> prompt;
  int max_tokens;
  double temperature;
  int top_k;
  uint64_t seed;
  std::vector<std::string> stop;
};

// Varied prompts, lengths and sampling, so the batch holds sequences at different positions
// that start and finish at different steps.
std::vector<Case> cases() {
  return {
      {{464, 868}, 24, 0.9, 0, 1, {}},   {{10, 20, 30, 40, 50, 60, 70, 80, 90}, 9, 0.0, 0, 0, {}},
      {{300}, 31, 1.2, 50, 2, {}},       {{1, 2, 3, 4, 5, 6, 7}, 17, 0.7, 0, 3, {}},
      {{33}, 5, 1.0, 0, 4, {}},          {{511, 512, 513, 1000}, 28, 0.8, 10, 5, {}},
      {{777, 778}, 40, 1.0, 0, 6, {"e"}}};
}

Prompt prompt_of(const Case& c) {
  Prompt p;
  p.ids = c.prompt;
  p.text = tokenizer().decode(c.prompt);
  p.max_tokens = c.max_tokens;
  return p;
}

GenParams params_of(const Case& c) {
  GenParams g;
  g.sampling.temperature = c.temperature;
  g.sampling.top_k = c.top_k;
  g.sampling.seed = c.seed;
  g.stop = c.stop;
  g.logprobs = 2;
  return g;
}

struct Output {
  std::string text, finish;
  std::vector<TokenLogprob> logprobs;
};

Output collect(Job& job) {
  Delta d;
  for (;;) {
    const uint64_t seen = job.bell().rings();
    if (job.take(d)) break;
    job.bell().wait(seen, 50ms);
  }
  return {d.text, d.finish_reason, d.logprobs};
}

// Runs every case through one engine with `slots` slots; all submitted at once when
// `together`, else one after another; admitted prompts prefilled together up to
// `prefill_rows` tokens.
std::vector<Output> serve_all(generate::DecodeBackend& backend, int slots, bool together, int eos,
                              int prefill_rows = 512) {
  Metrics metrics(slots);
  Engine engine(backend, tokenizer(), EngineOptions{slots, 64, eos, true, prefill_rows}, metrics);
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<Output> out;
  const auto deadline = Clock::now() + 1h;
  for (const Case& c : cases()) {
    jobs.push_back(std::make_shared<Job>(prompt_of(c), params_of(c), deadline));
    if (!together) {
      engine.submit(std::span(&jobs.back(), 1));
      out.push_back(collect(*jobs.back()));
    }
  }
  if (together) {
    engine.submit(jobs);
    for (auto& j : jobs) out.push_back(collect(*j));
  }
  return out;
}

void expect_same(const std::vector<Output>& a, const std::vector<Output>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].text, b[i].text) << "case " << i;
    EXPECT_EQ(a[i].finish, b[i].finish) << "case " << i;
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size()) << "case " << i;
    for (size_t t = 0; t < a[i].logprobs.size(); ++t) {
      EXPECT_EQ(a[i].logprobs[t].id, b[i].logprobs[t].id);
      EXPECT_EQ(a[i].logprobs[t].logprob, b[i].logprobs[t].logprob);  // the same bits
    }
  }
}

TEST(ServeEngine, Gpt2BatchedTextEqualsAloneAndGenerate) {
  for (const DType dtype : {DType::f32, DType::bf16}) {
    gpt2::Model model = small_gpt2(dtype);
    auto backend = generate::gpt2_backend(model);
    // One slot: each case takes the cache the one before it left (its positions stale, its
    // capacity sometimes larger), and must still give generate's text below.
    const std::vector<Output> alone = serve_all(*backend, 1, false, 1000);
    const std::vector<Output> batched = serve_all(*backend, 4, true, 1000);
    const std::vector<Output> wide = serve_all(*backend, 8, true, 1000);
    // Prompts prefilled in groups of up to 8 tokens (the 9-token one alone).
    const std::vector<Output> grouped = serve_all(*backend, 8, true, 1000, 8);
    expect_same(alone, batched);
    expect_same(alone, wide);
    expect_same(alone, grouped);
    // The CLI's decode loop, token by token, gives the same text.
    const std::vector<Case> cs = cases();
    for (size_t i = 0; i < cs.size(); ++i) {
      if (!cs[i].stop.empty()) {
        EXPECT_EQ(alone[i].finish, "stop");
        continue;
      }
      generate::GenerateOptions o;
      o.max_tokens = cs[i].max_tokens;
      o.eos_id = 1000;  // an end-of-text inside this vocabulary
      o.sampling = params_of(cs[i]).sampling;
      const generate::GenerateResult r = generate::generate(*backend, cs[i].prompt, o);
      EXPECT_EQ(alone[i].text, sanitize_utf8(tokenizer().decode(r.ids))) << "case " << i;
      EXPECT_EQ(alone[i].finish, r.stopped_at_eos ? "stop" : "length");
    }
  }
}

TEST(ServeEngine, EvermindBatchedTextEqualsAloneAndGenerate) {
  evermind::Config c;
  c.vocab_size = 1024;
  c.d_model = 32;
  c.hidden_dim = 64;
  c.seed = 5;
  const evermind::Model<float> model(c, 2);
  auto backend = generate::evermind_backend(model);
  const std::vector<Output> alone = serve_all(*backend, 1, false, -1);
  expect_same(alone, serve_all(*backend, 4, true, -1));
  const Case k = cases()[0];
  generate::GenerateOptions o;
  o.max_tokens = k.max_tokens;
  o.sampling.temperature = k.temperature;
  o.sampling.seed = k.seed;
  const generate::GenerateResult r = generate::generate(*backend, k.prompt, o);
  EXPECT_EQ(alone[0].text, sanitize_utf8(tokenizer().decode(r.ids)));
}

TEST(ServeEngine, QueueLimitAndClose) {
  gpt2::Model model = small_gpt2(DType::f32);
  auto backend = generate::gpt2_backend(model);
  Metrics metrics(1);
  Engine engine(*backend, tokenizer(), EngineOptions{1, 1, -1}, metrics);
  const auto deadline = Clock::now() + 1h;
  Case c = cases()[2];
  std::vector<std::shared_ptr<Job>> three;
  for (int i = 0; i < 3; ++i)
    three.push_back(std::make_shared<Job>(prompt_of(c), params_of(c), deadline));
  try {  // one slot + a queue of one: room for two
    engine.submit(three);
    FAIL() << "three choices accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 429);
  }
  engine.submit(std::span(three).first(2));
  engine.close();
  try {
    engine.submit(std::span(three).last(1));
    FAIL() << "accepted after close";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 503);
  }
  // What was accepted still finishes.
  EXPECT_EQ(collect(*three[0]).finish, "length");
  EXPECT_EQ(collect(*three[1]).finish, "length");
}

TEST(ServeBell, WakesOnEveryRingOnceAGapOrOnlyAtTheEnd) {
  Bell every;
  EXPECT_TRUE(every.ring(false));
  EXPECT_TRUE(every.ring(false));
  EXPECT_TRUE(every.ring(true));

  // (A gap longer than the steady clock has run: the first news wakes however long ago it
  // started.)
  Bell paced(std::chrono::hours(24 * 365 * 10));
  EXPECT_TRUE(paced.ring(false));   // the first news
  EXPECT_FALSE(paced.ring(false));  // within the gap: only counted
  EXPECT_TRUE(paced.ring(true));    // a choice's end
  EXPECT_FALSE(paced.ring(false));
  EXPECT_EQ(paced.rings(), 4u);
  // A waiter finds the news that did not wake it (here at once: it came before the wait).
  const uint64_t seen = paced.rings();
  EXPECT_FALSE(paced.ring(false));
  const auto t0 = Clock::now();
  paced.wait(seen, 1h);
  EXPECT_LT(Clock::now() - t0, 1min);

  Bell short_gap(1ms);
  EXPECT_TRUE(short_gap.ring(false));
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(short_gap.ring(false));  // the gap has passed

  Bell ends(Bell::kEndsOnly);
  EXPECT_FALSE(ends.ring(false));
  EXPECT_FALSE(ends.ring(false));
  EXPECT_TRUE(ends.ring(true));
  EXPECT_EQ(ends.rings(), 3u);
}

TEST(ServeEngine, CancelledAndExpiredChoicesEnd) {
  gpt2::Model model = small_gpt2(DType::f32);
  auto backend = generate::gpt2_backend(model);
  Metrics metrics(2);
  Engine engine(*backend, tokenizer(), EngineOptions{2, 4, -1}, metrics);
  Case c = cases()[2];
  c.max_tokens = 100;
  auto cancelled = std::make_shared<Job>(prompt_of(c), params_of(c), Clock::now() + 1h);
  auto expired = std::make_shared<Job>(prompt_of(c), params_of(c), Clock::now());
  cancelled->cancel();
  engine.submit(std::span(&cancelled, 1));
  engine.submit(std::span(&expired, 1));
  const Output e = collect(*expired);
  EXPECT_EQ(e.finish, "length");  // the time limit ends it as max_tokens would
  EXPECT_LT(e.text.size(), 100u);
  engine.wait_idle();
  EXPECT_NE(metrics.prometheus().find("tinylm_active_slots 0"), std::string::npos);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve
