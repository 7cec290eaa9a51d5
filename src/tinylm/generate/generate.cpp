#include "tinylm/generate/generate.h"

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"

namespace tinylm::generate {

void check_generate_inputs(int vocab_size, int context_limit, std::span<const int> prompt,
                           const GenerateOptions& options) {
  check(!prompt.empty(), "generate: the prompt is empty (give at least one token)");
  if (context_limit > 0 && options.slide) {
    check(options.max_tokens >= 0 && options.max_tokens <= kMaxNewTokens,
          "generate: max-tokens must be in 0..", kMaxNewTokens, " (got ", options.max_tokens, ")");
    check(static_cast<int64_t>(prompt.size()) <= context_limit, "generate: the prompt has ",
          prompt.size(), " tokens, more than the model's context of ", context_limit);
  } else if (context_limit > 0) {
    check(options.max_tokens >= 0, "generate: max-tokens must be >= 0 (got ", options.max_tokens,
          ")");
    check(static_cast<int64_t>(prompt.size()) <= context_limit, "generate: the prompt has ",
          prompt.size(), " tokens, more than the model's context of ", context_limit);
  } else {
    check(options.max_tokens >= 0 && options.max_tokens <= kMaxNewTokens,
          "generate: max-tokens must be in 0..", kMaxNewTokens, " (got ", options.max_tokens, ")");
    check(static_cast<int64_t>(prompt.size()) <= kMaxPromptTokens, "generate: the prompt has ",
          prompt.size(), " tokens, more than ", kMaxPromptTokens);
  }
  for (const int t : prompt) {
    check(t >= 0 && t < vocab_size, "generate: prompt token id ", t,
          " is outside the vocabulary [0, ", vocab_size, ")");
  }
  check(options.eos_id < vocab_size, "generate: end-of-text id ", options.eos_id,
        " is outside the vocabulary of ", vocab_size);
  options.sampling.validate();
}

template <class Logit>
GenerateResult generate(BasicDecodeBackend<Logit>& backend, std::span<const int> prompt,
                        const GenerateOptions& options, const std::function<bool(int)>& on_token) {
  const int limit = options.context_for(backend.context_limit());
  check_generate_inputs(backend.vocab_size(), limit, prompt, options);
  Generation<Logit> generation(backend, options, static_cast<int64_t>(prompt.size()));
  const int64_t wanted = static_cast<int64_t>(prompt.size()) + options.max_tokens;
  std::unique_ptr<Sequence> seq =
      backend.start(limit > 0 ? static_cast<int>(std::min<int64_t>(limit, wanted)) : 0, nullptr);
  std::vector<Logit> logits(static_cast<size_t>(backend.vocab_size()));
  GenerateResult result;
  Timer timer;
  backend.feed(*seq, prompt, logits);
  int64_t fed = static_cast<int64_t>(prompt.size());  // positions of the sequence in use
  result.prefill_ms = timer.elapsed_ms();
  timer.reset();
  while (generation.generated() < options.max_tokens) {
    const int next = generation.choose(logits);
    const bool more = on_token ? on_token(next) : true;
    const Stop stop = generation.stop();
    if (stop == Stop::end_of_text) {
      result.stopped_at_eos = true;
      break;
    }
    result.ids.push_back(next);
    result.hit_context_end = stop == Stop::context_end;
    if (!more || stop != Stop::none) break;
    if (options.slide && limit > 0 && fed == limit) {
      // Full: the last `limit` tokens (the new one last) again, at positions 0.., from the
      // prompt's tail and the new ids.
      const size_t keep = static_cast<size_t>(limit), new_ids = result.ids.size();
      std::vector<int> window;
      window.reserve(keep);
      if (new_ids < keep)
        window.assign(prompt.end() - static_cast<std::ptrdiff_t>(keep - new_ids), prompt.end());
      window.insert(window.end(),
                    result.ids.end() - static_cast<std::ptrdiff_t>(std::min(keep, new_ids)),
                    result.ids.end());
      seq = backend.start(limit, std::move(seq));
      backend.feed(*seq, window, logits);
    } else {
      backend.feed(*seq, std::span(&next, 1), logits);
      ++fed;
    }
  }
  result.decode_ms = timer.elapsed_ms();
  return result;
}

template GenerateResult generate(BasicDecodeBackend<float>&, std::span<const int>,
                                 const GenerateOptions&, const std::function<bool(int)>&);
template GenerateResult generate(BasicDecodeBackend<double>&, std::span<const int>,
                                 const GenerateOptions&, const std::function<bool(int)>&);

GeneratedText generate_text(DecodeBackend& backend, const BpeTokenizer& tokenizer,
                            std::span<const int> prompt, const GenerateOptions& options,
                            const std::function<void(std::string_view)>& on_text,
                            const std::function<bool(int)>& on_token) {
  StreamDecoder stream(tokenizer);
  GeneratedText out;
  const auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    out.text += piece;
    if (on_text) on_text(piece);
  };
  static_cast<GenerateResult&>(out) = generate(backend, prompt, options, [&](int id) {
    if (!options.ends_text(id)) emit(stream.push(id));
    return on_token ? on_token(id) : true;
  });
  emit(stream.finish());
  return out;
}

}  // namespace tinylm::generate
