#include "tinylm/generate/gpt2_generate.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"

namespace tinylm::generate {

void check_generate_inputs(const gpt2::Config& c, std::span<const int> prompt,
                           const GenerateOptions& options) {
  check(!prompt.empty(), "generate: the prompt is empty (give at least one token)");
  check(options.max_tokens >= 0, "generate: max-tokens must be >= 0");
  check(static_cast<int64_t>(prompt.size()) <= c.n_positions, "generate: the prompt has ",
        prompt.size(), " tokens, more than the model's context of ", c.n_positions);
  check(options.eos_id < c.vocab_size, "generate: end-of-text id ", options.eos_id,
        " is outside the vocabulary of ", c.vocab_size);
  options.sampling.validate();
}

GenerateResult generate(gpt2::Model& model, std::span<const int> prompt,
                        const GenerateOptions& options, const std::function<bool(int)>& on_token) {
  const gpt2::Config& c = model.config();
  check_generate_inputs(c, prompt, options);
  Sampler sampler(options.sampling);
  GenerateResult result;
  const int capacity =
      static_cast<int>(std::min<int64_t>(c.n_positions, prompt.size() + options.max_tokens));
  gpt2::KvCache cache = model.new_cache(std::max(capacity, 1));
  std::vector<float> logits(c.vocab_size);
  Timer timer;
  model.forward(prompt, cache, logits);
  result.prefill_ms = timer.elapsed_ms();
  timer.reset();
  for (int i = 0; i < options.max_tokens; ++i) {
    const int next = sampler.sample(logits);
    result.ids.push_back(next);
    if (on_token && !on_token(next)) break;
    if (next == options.eos_id) {
      result.stopped_at_eos = true;
      break;
    }
    if (i + 1 == options.max_tokens) break;
    if (cache.length >= c.n_positions) {  // learned positions: no shifting past the end
      result.hit_context_end = true;
      break;
    }
    model.forward(std::span(&next, 1), cache, logits);
  }
  result.decode_ms = timer.elapsed_ms();
  return result;
}

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

PerplexityResult perplexity(gpt2::Model& model, std::span<const int> tokens, int context,
                            int stride, const std::function<void(int64_t, int64_t)>& on_window) {
  const gpt2::Config& c = model.config();
  check(context >= 2 && context <= c.n_positions, "perplexity: context must be in 2..",
        c.n_positions, ", got ", context);
  check(stride >= 1 && stride <= context, "perplexity: stride must be in 1..context, got ", stride);
  check(tokens.size() >= 2, "perplexity: the text has fewer than 2 tokens");
  const int64_t L = static_cast<int64_t>(tokens.size()), V = c.vocab_size;
  PerplexityResult r;
  // One cache and one logits buffer for every window: fresh pages cost more than the reuse.
  gpt2::KvCache cache = model.new_cache(static_cast<int>(std::min<int64_t>(context, L)));
  std::vector<float> logits;
  std::vector<double> nll;
  Timer timer;
  int64_t prev_end = 0;
  for (int64_t begin = 0;; begin += stride) {
    const int64_t end = std::min<int64_t>(begin + context, L);
    // Targets j in [first_target, end) are predicted by window positions j - 1 - begin; the
    // window's last token is only a target, so it does not run.
    const int64_t first_target = std::max(prev_end, begin + 1);
    const int64_t inputs = end - 1 - begin, first_row = first_target - 1 - begin;
    const int64_t rows = end - first_target;
    prev_end = end;
    if (rows <= 0) {  // stride == context: a last window of one token has nothing to score
      if (end == L) break;
      continue;
    }
    cache.length = 0;
    logits.resize(static_cast<size_t>(rows * V));
    model.forward_rows(tokens.subspan(begin, inputs), cache, logits, first_row);
    r.forward_tokens += inputs;
    nll.assign(static_cast<size_t>(rows), 0.0);
    // Rows in parallel, summed in row order below: the same result at any thread count.
    parallel_for(0, rows, grain_for(4 * V), [&](int64_t i) {
      const float* row = logits.data() + i * V;
      const float mx = *std::max_element(row, row + V);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
      nll[i] = std::log(sum) + mx - row[tokens[first_target + i]];
    });
    for (const double v : nll) r.nll_sum += v;
    r.count += rows;
    if (on_window) on_window(r.count, L - 1);
    if (end == L) break;
  }
  r.forward_ms = timer.elapsed_ms();
  return r;
}

}  // namespace tinylm::generate
