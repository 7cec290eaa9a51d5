#pragma once
// The decode interface for a family whose decoder steps one token at a time and holds its own
// state (EvermindLM's conv history; any family with a cache of its own): a sequence is one
// decoder, a prompt is fed token by token and sequences step one after another, so a
// sequence's logits are the same bits alone or beside others. Such a family writes no backend
// of its own: its record (families/) makes step_backend<Decoder>(model, options).
//
// Decoder: constructible from `const Model&`; `std::span<const float> step(int token)` runs
// the token at the next position and returns its logits (vocab_size of them).
#include <algorithm>
#include <memory>
#include <span>

#include "tinylm/core/error.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/generate/sampler.h"

namespace tinylm::generate {

struct StepBackendOptions {
  int vocab_size = 0;
  int context_limit = 0;  // positions a decoder holds; 0: no end
  DrawOrder draw_order = DrawOrder::by_logit;
};

template <class Decoder, class Model>
class StepBackend final : public DecodeBackend {
 public:
  StepBackend(const Model& model, const StepBackendOptions& options)
      : model_(&model), options_(options) {}
  int vocab_size() const override { return options_.vocab_size; }
  int context_limit() const override { return options_.context_limit; }
  std::unique_ptr<Sequence> start(int, std::unique_ptr<Sequence>) const override {
    return std::make_unique<DecoderSequence>(*model_);
  }
  void feed(Sequence& seq, std::span<const int> tokens, std::span<float> logits) override {
    check(!tokens.empty(), "feed of no tokens");
    Decoder& d = static_cast<DecoderSequence&>(seq).decoder;
    std::span<const float> last;
    for (const int t : tokens) last = d.step(t);
    std::copy(last.begin(), last.end(), logits.begin());
  }
  void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
            std::span<float> logits) override {
    const size_t V = static_cast<size_t>(vocab_size());
    check(seqs.size() == tokens.size() && logits.size() == seqs.size() * V, "step: ", seqs.size(),
          " sequences, ", tokens.size(), " tokens and ", logits.size(), " logits disagree");
    for (size_t r = 0; r < seqs.size(); ++r) {
      const std::span<const float> l =
          static_cast<DecoderSequence*>(seqs[r])->decoder.step(tokens[r]);
      std::copy(l.begin(), l.end(), logits.begin() + static_cast<std::ptrdiff_t>(r * V));
    }
  }
  std::unique_ptr<TokenSampler<float>> sampler(const SamplingOptions& options) const override {
    return std::make_unique<Sampler>(options, options_.draw_order);
  }

 private:
  struct DecoderSequence final : Sequence {
    explicit DecoderSequence(const Model& model) : decoder(model) {}
    Decoder decoder;
  };
  const Model* model_;  // outlives the backend
  StepBackendOptions options_;
};

template <class Decoder, class Model>
std::unique_ptr<DecodeBackend> step_backend(const Model& model, const StepBackendOptions& options) {
  return std::make_unique<StepBackend<Decoder, Model>>(model, options);
}

}  // namespace tinylm::generate
