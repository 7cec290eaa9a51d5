// EvermindLM behind the decode interface: a sequence is the incremental decoder
// (models/evermind/decoder.h: O(1) state per layer, the same logits as a full forward), fed one
// token at a time; sequences step one after another. Plain temperature sampling draws in id
// order (DrawOrder::by_id), as EvermindLM's generation was defined.
#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/models/evermind/decoder.h"

namespace tinylm::generate {

namespace {

class EvermindSequence final : public Sequence {
 public:
  explicit EvermindSequence(const evermind::Model<float>& model) : decoder(model) {}
  evermind::Decoder<float> decoder;
};

class EvermindBackend final : public DecodeBackend {
 public:
  explicit EvermindBackend(const evermind::Model<float>& model) : model_(&model) {}
  int vocab_size() const override { return static_cast<int>(model_->config().vocab_size); }
  int context_limit() const override { return 0; }
  std::unique_ptr<Sequence> start(int, std::unique_ptr<Sequence>) const override {
    return std::make_unique<EvermindSequence>(*model_);
  }
  void feed(Sequence& seq, std::span<const int> tokens, std::span<float> logits) override {
    evermind::Decoder<float>& d = static_cast<EvermindSequence&>(seq).decoder;
    check(!tokens.empty(), "evermind: feed of no tokens");
    std::span<const float> last;
    for (const int t : tokens) last = d.step(t);
    std::copy(last.begin(), last.end(), logits.begin());
  }
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
  std::unique_ptr<TokenSampler<float>> sampler(const SamplingOptions& options) const override {
    return std::make_unique<Sampler>(options, DrawOrder::by_id);
  }

 private:
  const evermind::Model<float>* model_;
};

}  // namespace

std::unique_ptr<DecodeBackend> evermind_backend(const evermind::Model<float>& model) {
  return std::make_unique<EvermindBackend>(model);
}

}  // namespace tinylm::generate
