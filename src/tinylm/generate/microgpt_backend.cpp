// microgpt behind the decode interface, so its sampling is the generate loop's: a sample is
// the loop from BOS with BOS as the end of text and block_size as the context. Its rows are
// double logits, and its sampler is microgpt.py's: random.choices over
// softmax(logits / temperature) with the run's RNG, which is what keeps `tinylm microgpt`'s
// names those microgpt.py prints.
#include <algorithm>
#include <map>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/py_random.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/models/microgpt/model.h"

namespace tinylm::generate {

namespace {

class PythonChoices final : public TokenSampler<double> {
 public:
  // Draws from `rng` (not owned), or from `owned` when given.
  PythonChoices(PyRandom* rng, std::unique_ptr<PyRandom> owned, double temperature)
      : owned_(std::move(owned)), rng_(owned_ ? owned_.get() : rng), temperature_(temperature) {
    check(temperature >= 0.0, "temperature must be >= 0, got ", temperature);
  }
  int sample(std::span<const double> logits) override {
    if (temperature_ == 0.0)  // greedy: the first largest, and no draw
      return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    probs_.resize(logits.size());
    microgpt::softmax_at_temperature(logits, temperature_, probs_);
    return static_cast<int>(rng_->choices(probs_));
  }

 private:
  std::unique_ptr<PyRandom> owned_;
  PyRandom* rng_;
  double temperature_;
  std::vector<double> probs_;
};

// A sequence is its tokens: the model holds one cache, which is rebuilt from them when another
// sequence used it since (a microgpt sequence is at most block_size tokens: cheap to replay,
// and the forward is exact, so a replayed cache is the same bits).
struct MicrogptSequence final : Sequence {
  uint64_t id = 0;
  std::vector<int> tokens;
};

class MicrogptBackend final : public BasicDecodeBackend<double> {
 public:
  MicrogptBackend(microgpt::Model& model, PyRandom* rng, MicrogptReplay replay)
      : model_(&model), rng_(rng), replay_(replay) {}
  int vocab_size() const override { return model_->config().vocab_size; }
  int context_limit() const override { return model_->config().block_size; }
  std::unique_ptr<Sequence> start(int, std::unique_ptr<Sequence>) const override {
    auto seq = std::make_unique<MicrogptSequence>();
    seq->id = ++last_id_;
    return seq;
  }
  void feed(Sequence& s, std::span<const int> tokens, std::span<double> logits) override {
    check(!tokens.empty(), "microgpt: feed of no tokens");
    auto& seq = static_cast<MicrogptSequence&>(s);
    check(seq.tokens.size() + tokens.size() <= static_cast<size_t>(context_limit()),
          "microgpt: a sequence holds at most ", context_limit(), " tokens");
    if (cached_ != seq.id) {
      model_->start_sequence();
      for (const int t : seq.tokens) model_->next_logits(t);
      cached_ = seq.id;
    }
    std::span<const double> last;
    for (const int t : tokens) {
      last = model_->next_logits(t);
      seq.tokens.push_back(t);
    }
    std::copy(last.begin(), last.end(), logits.begin());
  }
  void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
            std::span<double> logits) override {
    check(seqs.size() == tokens.size(), "microgpt: ", tokens.size(), " tokens for ", seqs.size(),
          " sequences");
    const size_t V = static_cast<size_t>(vocab_size());
    for (size_t r = 0; r < seqs.size(); ++r)
      feed(*seqs[r], tokens.subspan(r, 1), logits.subspan(r * V, V));
  }
  // The run's RNG when given (the seed is then the run's, not the options'); else one per
  // sampler, seeded with the options' seed and advanced as `tinylm microgpt` advances it before
  // it samples.
  std::unique_ptr<TokenSampler<double>> sampler(const SamplingOptions& options) const override {
    if (rng_ != nullptr) return std::make_unique<PythonChoices>(rng_, nullptr, options.temperature);
    auto rng = std::make_unique<PyRandom>(options.seed);
    // random.shuffle of the documents: one randbelow(i + 1) for i = n - 1 .. 1.
    for (int64_t i = replay_.documents; i-- > 1;) rng->randbelow(static_cast<uint64_t>(i) + 1);
    for (int64_t i = 0; i < replay_.params; ++i) rng->gauss(0.0, 0.08);  // the init's draws
    return std::make_unique<PythonChoices>(nullptr, std::move(rng), options.temperature);
  }

 private:
  microgpt::Model* model_;
  PyRandom* rng_;
  MicrogptReplay replay_;
  mutable uint64_t last_id_ = 0;
  uint64_t cached_ = 0;  // the sequence whose tokens the model's cache holds (0: none)
};

// The float interface over microgpt's double rows, for generate's text and the server: each
// row handed out is the double row rounded, and its sampler draws from the double row that
// float row was made from, found by the row's address (the loop and the server hand a sampler
// the very rows feed and step wrote), so the draws are those of the double rows.
class FloatRows final : public DecodeBackend {
 public:
  explicit FloatRows(std::unique_ptr<BasicDecodeBackend<double>> inner)
      : inner_(std::move(inner)) {}
  int vocab_size() const override { return inner_->vocab_size(); }
  int context_limit() const override { return inner_->context_limit(); }
  std::unique_ptr<Sequence> start(int capacity, std::unique_ptr<Sequence> reuse) const override {
    return inner_->start(capacity, std::move(reuse));
  }
  void feed(Sequence& seq, std::span<const int> tokens, std::span<float> logits) override {
    std::vector<double>& row = row_at(logits.data());
    inner_->feed(seq, tokens, row);
    std::copy(row.begin(), row.end(), logits.begin());
  }
  void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
            std::span<float> logits) override {
    const size_t V = static_cast<size_t>(vocab_size());
    for (size_t r = 0; r < seqs.size(); ++r)
      feed(*seqs[r], tokens.subspan(r, 1), logits.subspan(r * V, V));
  }
  std::unique_ptr<TokenSampler<float>> sampler(const SamplingOptions& options) const override {
    return std::make_unique<DoubleRowSampler>(inner_->sampler(options), *this);
  }

 private:
  class DoubleRowSampler final : public TokenSampler<float> {
   public:
    DoubleRowSampler(std::unique_ptr<TokenSampler<double>> inner, const FloatRows& rows)
        : inner_(std::move(inner)), rows_(&rows) {}
    int sample(std::span<const float> logits) override {
      // The row must be the rounding of the double row its address last held: a buffer that
      // took a freed one's address, or a row changed since, is not drawn from.
      const auto it = rows_->rows_.find(logits.data());
      const bool same = it != rows_->rows_.end() && it->second.size() == logits.size() &&
                        std::equal(logits.begin(), logits.end(), it->second.begin(),
                                   [](float f, double d) { return f == static_cast<float>(d); });
      check(same, "microgpt: a row to sample that no feed wrote");
      return inner_->sample(it->second);
    }

   private:
    std::unique_ptr<TokenSampler<double>> inner_;
    const FloatRows* rows_;
  };

  // The double row behind the float row at `at` (written by feed and step only, never while
  // samplers read: a server chooses for its slots after the step).
  std::vector<double>& row_at(const float* at) {
    std::vector<double>& row = rows_[at];
    row.resize(static_cast<size_t>(vocab_size()));
    return row;
  }

  std::unique_ptr<BasicDecodeBackend<double>> inner_;
  std::map<const float*, std::vector<double>> rows_;
};

}  // namespace

std::unique_ptr<BasicDecodeBackend<double>> microgpt_backend(microgpt::Model& model,
                                                             PyRandom& rng) {
  return std::make_unique<MicrogptBackend>(model, &rng, MicrogptReplay{});
}

std::unique_ptr<DecodeBackend> microgpt_backend(microgpt::Model& model, MicrogptReplay replay) {
  return std::make_unique<FloatRows>(std::make_unique<MicrogptBackend>(model, nullptr, replay));
}

}  // namespace tinylm::generate
