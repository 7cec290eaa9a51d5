#pragma once
// A model of either family behind the three calls continuous batching needs: start a
// sequence, prefill its prompt, and step many sequences by one token each in one pass over
// the weights. Each sequence's logits are the same bits whether it steps alone or beside
// others (GPT-2's forward_batch is row-invariant; EvermindLM sequences step one by one), so a
// served request gives the text `tinylm generate` gives for the same prompt and seed.
#include <memory>
#include <span>

#include "tinylm/generate/sampler.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::generate {

// One sequence's state (a KV cache, or EvermindLM's conv history).
class Sequence {
 public:
  virtual ~Sequence() = default;
};

// Chooses the next token from logits; each request owns one, seeded by its options.
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  virtual int sample(std::span<const float> logits) = 0;
};

class DecodeBackend {
 public:
  virtual ~DecodeBackend() = default;
  virtual int vocab_size() const = 0;
  // Positions one sequence can hold (GPT-2's n_positions); 0 when there is no end.
  virtual int context_limit() const = 0;
  // A sequence for up to `capacity` positions (<= context_limit() when that is not 0).
  // `reuse` (may be null) is a finished sequence of this backend whose memory the new one may
  // take: a server slot hands back its last, so a request neither allocates nor clears a cache.
  virtual std::unique_ptr<Sequence> start(int capacity, std::unique_ptr<Sequence> reuse) const = 0;
  // Runs the prompt (at least one token) into a fresh sequence; logits gets the last
  // position's (vocab_size()).
  virtual void prefill(Sequence& seq, std::span<const int> prompt, std::span<float> logits) = 0;
  // Several prompts, each into a fresh sequence (distinct ones); logits gets
  // (seqs.size(), vocab_size()): each prompt's last position, the bits prefill() gives it
  // alone. GPT-2 runs them in one forward; by default they run one after another.
  virtual void prefill_many(std::span<Sequence* const> seqs,
                            std::span<const std::span<const int>> prompts, std::span<float> logits);
  // tokens[r] into seqs[r] (distinct sequences); logits gets (tokens.size(), vocab_size()).
  virtual void step(std::span<Sequence* const> seqs, std::span<const int> tokens,
                    std::span<float> logits) = 0;
  // The sampler `tinylm generate` uses for this family with these options.
  virtual std::unique_ptr<TokenSampler> sampler(const SamplingOptions& options) const = 0;
};

// The models must outlive their backends.
std::unique_ptr<DecodeBackend> gpt2_backend(gpt2::Model& model);
std::unique_ptr<DecodeBackend> evermind_backend(const evermind::Model<float>& model);

}  // namespace tinylm::generate
