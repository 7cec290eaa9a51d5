#pragma once
// EvermindLM (docs/evermind.md): a sparse language model. Per layer a causal depthwise conv
// token mixer and a shared-expert mixture-of-experts channel mixer, RMSNorm before each,
// tied input/output embeddings:
//   x_t = Emb[token_t];  per layer: x += Conv(n_a(x)); x += MoE(n_b(x));  logits_t = x_t · Embᵀ
// Loss: mean next-token cross-entropy over positions 0..T−2, plus aux_loss_coef times the
// sum over layers of the Switch load-balancing loss.
//
// Model<T> owns one flat parameter buffer in param_layout() order and a gradient buffer of
// the same layout. T is float for real use, double for gradient checks.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tinylm/core/arena.h"
#include "tinylm/core/param_store.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/models/evermind/layer.h"
#include "tinylm/models/evermind/weights.h"

namespace tinylm::evermind {

struct PassOptions {
  double aux_loss_coef = 0.01;          // 0 turns the load-balancing term off
  bool checkpoint_activations = false;  // keep only each layer's input, recompute in backward
  double loss_grad = 1.0;  // ∂objective/∂loss seeded into the backward (loss scale / accum)
};

struct Loss {
  double total = 0.0;     // ce + aux_loss_coef · aux
  double ce = 0.0;        // mean next-token cross-entropy
  double aux = 0.0;       // Σ over layers of n_experts · Σ_i f_i P_i
  int64_t positions = 0;  // predicted positions, T − 1; 0 for a skipped sequence (T < 2)
};

// Activation memory for sequences of up to max_seq_len tokens, planned and touched once.
// With checkpoint_activations it holds one layer's activations instead of every layer's;
// a workspace serves passes of its own mode only. One per thread.
template <class T>
class Workspace {
 public:
  Workspace(const Config& config, int64_t max_seq_len, bool checkpoint_activations);
  int64_t max_seq_len() const { return max_seq_len_; }
  bool checkpoint_activations() const { return checkpoint_; }

 private:
  template <class U>
  friend class Model;
  int64_t max_seq_len_;
  bool checkpoint_;
  Arena arena_;
  std::vector<T*> x_;               // n_layers + 1 residual streams [T × D]
  std::vector<LayerActs<T>> acts_;  // n_layers sets, or 1 when checkpointing
  LayerScratch<T> scratch_{};
  T* logits_ = nullptr;  // [T × V]: logits, then exp(l − max), then their gradient
  T* norm_ = nullptr;    // [T] 1 / Σ exp(l − max) per position
  T* dx_ = nullptr;      // [T × D]
};

template <class T>
class Model {
 public:
  // Validates the config and initializes the weights from config.seed (see init.h).
  Model(const Config& config, int64_t max_seq_len);
  // Holds the given weights (param_layout() order, e.g. a checkpoint's) instead: nothing is
  // initialized only to be overwritten.
  Model(const Config& config, int64_t max_seq_len, std::span<const T> params);

  const Config& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  int64_t max_seq_len() const { return max_seq_len_; }

  // All parameters, flat, in param_layout() order; gradients in the same layout.
  std::span<T> params() { return params_; }
  std::span<const T> params() const { return params_; }
  std::span<T> grads() { return grads_; }
  std::span<const T> grads() const { return grads_; }
  void zero_grads();
  // Re-initializes every parameter from `seed` (the constructor uses config().seed).
  void init(uint64_t seed);

  // --- Convenience passes: re-pack the weights, run on the model's own workspace. ---
  // Loss of one sequence; adds loss_grad · ∂loss/∂params into grads(). Sequences shorter
  // than 2 tokens return Loss{} and add nothing.
  Loss forward_backward(std::span<const int> tokens, const PassOptions& options = {});
  // The loss alone.
  Loss loss(std::span<const int> tokens, double aux_loss_coef = 0.01);
  // Logits of every position, out: [tokens.size() × vocab_size] (full recomputation).
  void logits(std::span<const int> tokens, std::span<T> out);

  // --- Low level, for trainers running several sequences at once. ---
  // Refreshes the transposed weight copies the forward reads; call after params() change.
  void pack();
  // The passes above against the weights as of the last pack(), on a caller's workspace
  // (its mode decides checkpointing; options.checkpoint_activations must agree), adding
  // into `grads` (same layout as params()). Const: threads may share the model.
  Loss forward_backward(Workspace<T>& ws, std::span<const int> tokens, std::span<T> grads,
                        const PassOptions& options) const;
  Loss loss(Workspace<T>& ws, std::span<const int> tokens, double aux_loss_coef) const;

  // Internals the decoder reads.
  const ParamIndex& index() const { return index_; }
  const PackedWeights<T>& packed() const { return packed_; }

 private:
  struct Unset {};
  Model(const Config& config, int64_t max_seq_len, Unset);  // sized, weights not yet set
  Workspace<T>& own_workspace(bool checkpoint);
  void check_tokens(std::span<const int> tokens, int64_t capacity) const;
  // Runs the layers over tokens into ws; returns the summed aux loss.
  double forward_layers(Workspace<T>& ws, std::span<const int> tokens) const;

  Config config_;
  ParamLayout layout_;
  ParamIndex index_;
  Dims dims_;
  int64_t max_seq_len_;
  std::vector<T> params_, grads_;
  PackedWeights<T> packed_;
  std::unique_ptr<Workspace<T>> plain_ws_, checkpoint_ws_;
};

}  // namespace tinylm::evermind
