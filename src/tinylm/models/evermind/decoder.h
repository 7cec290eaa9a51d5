#pragma once
// Incremental decoding for EvermindLM. The only state a position leaves behind is, per
// layer, the conv's normalized inputs of the last K−1 positions (the MoE is per position),
// so each new token costs the same whatever the context length. Every step runs the same
// kernels on one row that the full forward runs on all rows, so its logits equal the full
// recomputation's bit for bit.
#include <cstdint>
#include <span>
#include <vector>

#include "tinylm/core/arena.h"
#include "tinylm/models/evermind/layer.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/models/evermind/weights.h"

namespace tinylm::evermind {

template <class T>
class Decoder {
 public:
  // Reads the model's current parameters; the model must outlive the decoder.
  explicit Decoder(const Model<T>& model);

  // Forgets the context and re-reads the model's parameters (call after they change).
  void reset();
  // Feeds the next token; returns the logits [vocab_size] for the token after it, valid
  // until the next call.
  std::span<const T> step(int token);
  int64_t position() const { return pos_; }

 private:
  const Model<T>* model_;
  Dims d_;
  PackedWeights<T> packed_;
  Arena arena_;
  LayerActs<T> acts_{};             // one position
  std::vector<T> history_;          // [n_layers × (K−1) × D] ring buffers of conv inputs
  std::vector<T> x_, x_next_;       // [D]
  std::vector<T> logits_;           // [V]
  std::vector<const T*> tap_rows_;  // [K] the conv inputs of the current step
  int64_t pos_ = 0;
};

}  // namespace tinylm::evermind
