#include "tinylm/generate/gpt2_perplexity.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/kernels/reduce/log_sum_exp.h"

namespace tinylm::generate {

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
      nll[i] = kernels::log_sum_exp(row, V) - row[tokens[first_target + i]];
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
