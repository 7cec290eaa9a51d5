#pragma once
// The decode interface: what every family implements to generate (gpt2_backend.cpp,
// evermind_backend.cpp, microgpt_backend.cpp), and all the generate loop (generate.h) and the
// server's continuous batching (serve/engine.h) know of a model. A sequence is started, its
// prompt fed, then it advances one token per step; many sequences can step together in one
// pass over the weights. Each sequence's logits are the same bits whether it steps alone or
// beside others (GPT-2's forward_batch is row-invariant; EvermindLM sequences step one by
// one), so a served request gives the text `tinylm generate` gives for the same prompt and
// seed.
//
// Logit is the type of the rows the sampler reads: float, except microgpt's double (its
// numbers are CPython's, and so are the weights its sampling draws from).
#include <cstdint>
#include <memory>
#include <span>

#include "tinylm/core/error.h"
#include "tinylm/generate/sampler.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm {
class PyRandom;
namespace microgpt {
class Model;
}
}  // namespace tinylm

namespace tinylm::generate {

// One sequence's state (a KV cache, or EvermindLM's conv history).
class Sequence {
 public:
  virtual ~Sequence() = default;
};

template <class Logit>
class BasicDecodeBackend {
 public:
  virtual ~BasicDecodeBackend() = default;
  virtual int vocab_size() const = 0;
  // Positions one sequence can hold (GPT-2's n_positions); 0 when there is no end.
  virtual int context_limit() const = 0;
  // A sequence for up to `capacity` positions (<= context_limit() when that is not 0).
  // `reuse` (may be null) is a finished sequence of this backend whose memory the new one may
  // take: a server slot hands back its last, so a request neither allocates nor clears a cache.
  virtual std::unique_ptr<Sequence> start(int capacity, std::unique_ptr<Sequence> reuse) const = 0;
  // Runs `tokens` (at least one: a prompt, or the one token of a decode step) at the
  // sequence's next positions; logits gets the last one's (vocab_size()).
  virtual void feed(Sequence& seq, std::span<const int> tokens, std::span<Logit> logits) = 0;
  // Several prompts, each into a fresh sequence (distinct ones); logits gets
  // (seqs.size(), vocab_size()): each prompt's last position, the bits feed() gives it alone.
  // GPT-2 runs them in one forward; by default they run one after another.
  virtual void prefill_many(std::span<Sequence* const> seqs,
                            std::span<const std::span<const int>> prompts,
                            std::span<Logit> logits) {
    check(seqs.size() == prompts.size(), "prefill_many: ", prompts.size(), " prompts for ",
          seqs.size(), " sequences");
    const size_t V = static_cast<size_t>(vocab_size());
    for (size_t s = 0; s < seqs.size(); ++s) feed(*seqs[s], prompts[s], logits.subspan(s * V, V));
  }
  // tokens[r] into seqs[r] (distinct sequences), one pass over the weights for all of them;
  // logits gets (tokens.size(), vocab_size()).
  virtual void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
                    std::span<Logit> logits) = 0;
  // The family's sampler with these options (its DrawOrder; microgpt's RNG).
  virtual std::unique_ptr<TokenSampler<Logit>> sampler(const SamplingOptions& options) const = 0;
};

using DecodeBackend = BasicDecodeBackend<float>;

// The models (and microgpt's RNG) must outlive their backends.
std::unique_ptr<DecodeBackend> gpt2_backend(gpt2::Model& model);
std::unique_ptr<DecodeBackend> evermind_backend(const evermind::Model<float>& model);
// microgpt.py's sampling: the weights are softmax(logits / temperature) in its arithmetic, drawn
// by random.choices from `rng` (the run's, which the shuffle and the init used before). The
// model holds one sequence's cache: one sequence at a time.
std::unique_ptr<BasicDecodeBackend<double>> microgpt_backend(microgpt::Model& model, PyRandom& rng);

// How `tinylm microgpt --load` has used its RNG when it samples: seeded, then random.shuffle of
// `documents` documents, then `params` Gaussian draws of the init (which a load overwrites).
struct MicrogptReplay {
  int64_t documents = 0, params = 0;
};
// microgpt for generate and serve: float rows (the double logits rounded) whose samplers still
// draw from the double rows, each sampler with its own RNG seeded by its options' seed and
// advanced by `replay`, so that a sample with seed S is the first name `tinylm microgpt --load
// --seed S` prints (temperature 0: the largest logit). Sequences take turns in the model's one
// cache (each is replayed when it comes back: at most block_size tokens).
std::unique_ptr<DecodeBackend> microgpt_backend(microgpt::Model& model, MicrogptReplay replay);

}  // namespace tinylm::generate
