#include "tinylm/generate/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/kernels/reduce/log_sum_exp.h"

namespace tinylm::generate {

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

PerplexityResult window_perplexity(std::span<const int> tokens, int context, int stride, int limit,
                                   int vocab_size, const WindowLogits& window_logits,
                                   const std::function<void(int64_t, int64_t)>& on_window) {
  if (limit > 0)
    check(context >= 2 && context <= limit, "perplexity: context must be in 2..", limit, ", got ",
          context);
  else
    check(context >= 2, "perplexity: context must be at least 2, got ", context);
  check(stride >= 1 && stride <= context, "perplexity: stride must be in 1..context, got ", stride);
  check(tokens.size() >= 2, "perplexity: the text has fewer than 2 tokens");
  const int64_t L = static_cast<int64_t>(tokens.size()), V = vocab_size;
  for (const int t : tokens)
    check(t >= 0 && t < V, "perplexity: token id ", t, " is outside the vocabulary [0, ", V, ")");
  PerplexityResult r;
  std::vector<float> logits;  // one buffer for every window: fresh pages cost more than reuse
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
    logits.resize(static_cast<size_t>(rows * V));
    window_logits(tokens.subspan(begin, inputs), first_row, logits);
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

PerplexityResult perplexity(DecodeBackend& backend, std::span<const int> tokens, int context,
                            int stride, const std::function<void(int64_t, int64_t)>& on_window) {
  const size_t V = static_cast<size_t>(backend.vocab_size());
  std::unique_ptr<Sequence> seq;
  const auto window_logits = [&](std::span<const int> inputs, int64_t first_row,
                                 std::span<float> logits) {
    seq = backend.start(static_cast<int>(inputs.size()), std::move(seq));
    // The prefix up to the first scored position at once, then a position a feed.
    const size_t first = static_cast<size_t>(first_row);
    backend.feed(*seq, inputs.first(first + 1), logits.first(V));
    for (size_t p = first + 1, row = 1; p < inputs.size(); ++p, ++row)
      backend.feed(*seq, inputs.subspan(p, 1), logits.subspan(row * V, V));
  };
  return window_perplexity(tokens, context, stride, backend.context_limit(), backend.vocab_size(),
                           window_logits, on_window);
}

}  // namespace tinylm::generate
