#include "tinylm/generate/decode_backend.h"

#include <algorithm>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/generate/evermind_generate.h"
#include "tinylm/models/evermind/decoder.h"

namespace tinylm::generate {

void DecodeBackend::prefill_many(std::span<Sequence* const> seqs,
                                 std::span<const std::span<const int>> prompts,
                                 std::span<float> logits) {
  check(seqs.size() == prompts.size(), "prefill_many: ", prompts.size(), " prompts for ",
        seqs.size(), " sequences");
  const size_t V = static_cast<size_t>(vocab_size());
  for (size_t s = 0; s < seqs.size(); ++s) prefill(*seqs[s], prompts[s], logits.subspan(s * V, V));
}

namespace {

class Gpt2Sequence final : public Sequence {
 public:
  explicit Gpt2Sequence(gpt2::KvCache c) : cache(std::move(c)) {}
  gpt2::KvCache cache;
};

class Gpt2Sampler final : public TokenSampler {
 public:
  explicit Gpt2Sampler(const SamplingOptions& o) : sampler_(o) {}
  int sample(std::span<const float> logits) override { return sampler_.sample(logits); }

 private:
  Sampler sampler_;
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
  void prefill(Sequence& seq, std::span<const int> prompt, std::span<float> logits) override {
    gpt2::KvCache& cache = static_cast<Gpt2Sequence&>(seq).cache;
    check(cache.length == 0, "gpt2: prefill of a sequence that already holds tokens");
    model_->forward(prompt, cache, logits);
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
  std::unique_ptr<TokenSampler> sampler(const SamplingOptions& options) const override {
    return std::make_unique<Gpt2Sampler>(options);
  }

 private:
  gpt2::Model* model_;
  std::vector<gpt2::KvCache*> caches_;
  std::vector<int> joined_, lengths_;
};

class EvermindSequence final : public Sequence {
 public:
  explicit EvermindSequence(const evermind::Model<float>& model) : decoder(model) {}
  evermind::Decoder<float> decoder;
};

class EvermindTokenSampler final : public TokenSampler {
 public:
  EvermindTokenSampler(const SamplingOptions& o, int vocab) : sampler_(o, vocab) {}
  int sample(std::span<const float> logits) override { return sampler_.sample(logits); }

 private:
  EvermindSampler sampler_;
};

class EvermindBackend final : public DecodeBackend {
 public:
  explicit EvermindBackend(const evermind::Model<float>& model) : model_(&model) {}
  int vocab_size() const override { return static_cast<int>(model_->config().vocab_size); }
  int context_limit() const override { return 0; }
  std::unique_ptr<Sequence> start(int, std::unique_ptr<Sequence>) const override {
    return std::make_unique<EvermindSequence>(*model_);
  }
  void prefill(Sequence& seq, std::span<const int> prompt, std::span<float> logits) override {
    evermind::Decoder<float>& d = static_cast<EvermindSequence&>(seq).decoder;
    check(d.position() == 0, "evermind: prefill of a sequence that already holds tokens");
    check(!prompt.empty(), "evermind: prefill of an empty prompt");
    std::span<const float> last;
    for (const int t : prompt) last = d.step(t);
    std::copy(last.begin(), last.end(), logits.begin());
  }
  // The decoder's state is per sequence, so the sequences step one after another.
  void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
            std::span<float> logits) override {
    const size_t V = static_cast<size_t>(vocab_size());
    check(seqs.size() == tokens.size() && logits.size() == seqs.size() * V,
          "evermind: step sizes disagree");
    for (size_t r = 0; r < seqs.size(); ++r) {
      const std::span<const float> l =
          static_cast<EvermindSequence*>(seqs[r])->decoder.step(tokens[r]);
      std::copy(l.begin(), l.end(), logits.begin() + static_cast<std::ptrdiff_t>(r * V));
    }
  }
  std::unique_ptr<TokenSampler> sampler(const SamplingOptions& options) const override {
    return std::make_unique<EvermindTokenSampler>(options, vocab_size());
  }

 private:
  const evermind::Model<float>* model_;
};

}  // namespace

std::unique_ptr<DecodeBackend> gpt2_backend(gpt2::Model& model) {
  return std::make_unique<Gpt2Backend>(model);
}
std::unique_ptr<DecodeBackend> evermind_backend(const evermind::Model<float>& model) {
  return std::make_unique<EvermindBackend>(model);
}

}  // namespace tinylm::generate
