#include "tinylm/generate/gpt2_perplexity.h"

#include <algorithm>
#include <optional>

#include "tinylm/core/error.h"

namespace tinylm::generate {

PerplexityResult perplexity(gpt2::Model& model, std::span<const int> tokens, int context,
                            int stride, const std::function<void(int64_t, int64_t)>& on_window) {
  const gpt2::Config& c = model.config();
  check(context >= 2 && context <= c.n_positions, "perplexity: context must be in 2..",
        c.n_positions, ", got ", context);
  // One cache for every window (made at the first, once the arguments are checked): fresh
  // pages cost more than the reuse.
  std::optional<gpt2::KvCache> cache;
  const auto window_logits = [&](std::span<const int> inputs, int64_t first_row,
                                 std::span<float> logits) {
    if (!cache)
      cache.emplace(model.new_cache(
          static_cast<int>(std::min<int64_t>(context, static_cast<int64_t>(tokens.size())))));
    cache->length = 0;
    model.forward_rows(inputs, *cache, logits, first_row);
  };
  return window_perplexity(tokens, context, stride, c.n_positions, c.vocab_size, window_logits,
                           on_window);
}

}  // namespace tinylm::generate
