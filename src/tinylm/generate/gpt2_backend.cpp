// GPT-2 behind the decode interface: a sequence is a KV cache; a prompt or a single sequence's
// token runs through Model::forward (the path `tinylm generate` has always timed), several
// sequences' tokens through forward_sequences/forward_batch in one pass over the weights.
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/generate/decode_backend.h"

namespace tinylm::generate {

namespace {

class Gpt2Sequence final : public Sequence {
 public:
  explicit Gpt2Sequence(gpt2::KvCache c) : cache(std::move(c)) {}
  gpt2::KvCache cache;
};

class Gpt2Backend final : public DecodeBackend {
 public:
  explicit Gpt2Backend(gpt2::Model& model) : model_(&model) {}
  int vocab_size() const override { return model_->config().vocab_size; }
  int context_limit() const override { return model_->config().n_positions; }
  // A cache with room is taken as it is: attention reads only the positions filled since
  // (its padding is masked), and a larger capacity changes the layout, not the arithmetic.
  std::unique_ptr<Sequence> start(int capacity, std::unique_ptr<Sequence> reuse) const override {
    if (auto* s = static_cast<Gpt2Sequence*>(reuse.get()); s && s->cache.capacity >= capacity) {
      s->cache.length = 0;
      return reuse;
    }
    return std::make_unique<Gpt2Sequence>(model_->new_cache(capacity));
  }
  void feed(Sequence& seq, std::span<const int> tokens, std::span<float> logits) override {
    model_->forward(tokens, static_cast<Gpt2Sequence&>(seq).cache, logits);
  }
  void prefill_many(std::span<Sequence* const> seqs, std::span<const std::span<const int>> prompts,
                    std::span<float> logits) override {
    check(seqs.size() == prompts.size(), "prefill_many: ", prompts.size(), " prompts for ",
          seqs.size(), " sequences");
    caches_.clear();
    joined_.clear();
    lengths_.clear();
    for (size_t s = 0; s < seqs.size(); ++s) {
      gpt2::KvCache& cache = static_cast<Gpt2Sequence*>(seqs[s])->cache;
      check(cache.length == 0, "gpt2: prefill of a sequence that already holds tokens");
      caches_.push_back(&cache);
      joined_.insert(joined_.end(), prompts[s].begin(), prompts[s].end());
      lengths_.push_back(static_cast<int>(prompts[s].size()));
    }
    model_->forward_sequences(joined_, lengths_, caches_, logits);
  }
  void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
            std::span<float> logits) override {
    caches_.clear();
    for (Sequence* s : seqs) caches_.push_back(&static_cast<Gpt2Sequence*>(s)->cache);
    model_->forward_batch(tokens, caches_, logits);
  }
  std::unique_ptr<TokenSampler<float>> sampler(const SamplingOptions& options) const override {
    return std::make_unique<Sampler>(options, DrawOrder::by_logit);
  }

 private:
  gpt2::Model* model_;
  std::vector<gpt2::KvCache*> caches_;
  std::vector<int> joined_, lengths_;
};

}  // namespace

std::unique_ptr<DecodeBackend> gpt2_backend(gpt2::Model& model) {
  return std::make_unique<Gpt2Backend>(model);
}

}  // namespace tinylm::generate
