// microgpt behind the decode interface, so its sampling is the generate loop's: a sample is
// the loop from BOS with BOS as the end of text and block_size as the context. Its rows are
// double logits, and its sampler is microgpt.py's: random.choices over
// softmax(logits / temperature) with the run's RNG, which is what keeps `tinylm microgpt`'s
// names those microgpt.py prints.
#include <algorithm>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/py_random.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/models/microgpt/model.h"

namespace tinylm::generate {

namespace {

class PythonChoices final : public TokenSampler<double> {
 public:
  PythonChoices(PyRandom& rng, double temperature) : rng_(&rng), temperature_(temperature) {
    check(temperature > 0.0, "temperature must be positive, got ", temperature);
  }
  int sample(std::span<const double> logits) override {
    probs_.resize(logits.size());
    microgpt::softmax_at_temperature(logits, temperature_, probs_);
    return static_cast<int>(rng_->choices(probs_));
  }

 private:
  PyRandom* rng_;
  double temperature_;
  std::vector<double> probs_;
};

class MicrogptBackend final : public BasicDecodeBackend<double> {
 public:
  MicrogptBackend(microgpt::Model& model, PyRandom& rng) : model_(&model), rng_(&rng) {}
  int vocab_size() const override { return model_->config().vocab_size; }
  int context_limit() const override { return model_->config().block_size; }
  // The model holds the cache: a new sequence clears it.
  std::unique_ptr<Sequence> start(int, std::unique_ptr<Sequence>) const override {
    model_->start_sequence();
    return std::make_unique<Sequence>();
  }
  void feed(Sequence&, std::span<const int> tokens, std::span<double> logits) override {
    check(!tokens.empty(), "microgpt: feed of no tokens");
    std::span<const double> last;
    for (const int t : tokens) last = model_->next_logits(t);
    std::copy(last.begin(), last.end(), logits.begin());
  }
  void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
            std::span<double> logits) override {
    check(seqs.size() == 1 && tokens.size() == 1, "microgpt: one sequence at a time");
    feed(*seqs[0], tokens, logits);
  }
  // The seed is the run's (the RNG), not the options'.
  std::unique_ptr<TokenSampler<double>> sampler(const SamplingOptions& options) const override {
    return std::make_unique<PythonChoices>(*rng_, options.temperature);
  }

 private:
  microgpt::Model* model_;
  PyRandom* rng_;
};

}  // namespace

std::unique_ptr<BasicDecodeBackend<double>> microgpt_backend(microgpt::Model& model,
                                                             PyRandom& rng) {
  return std::make_unique<MicrogptBackend>(model, rng);
}

}  // namespace tinylm::generate
