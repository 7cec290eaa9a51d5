#pragma once
// GPT-2 training forward and exact backward for a fixed (batch, sequence) shape.
//
// Activations are planned once, at construction, in one arena (nothing is allocated per
// step). forward() runs the whole batch and keeps what the backward needs; backward()
// accumulates (or writes) the gradient of the mean cross-entropy times loss_scale into a flat
// f32 gradient buffer laid out like the parameters (gpt2::param_layout). The tied token
// embedding collects its gradient from both the lookup and the output head. Large products
// go to kernels/gemm.h; the other kernels (kernels/*_train.h, causal_attention.h,
// dropout.h, position_embedding.h) thread inside with parallel_for.
//
// Options:
//  - dropout: inverted dropout at GPT-2's four sites, as Hugging Face's GPT-2 and nanoGPT drop
//    (embd_pdrop, attn_pdrop, resid_pdrop, all at this one rate): the embedding sum; each
//    block's attention weights (inside the causal attention kernel); its attention projection
//    and MLP projection, after the projection and before the residual add. Masks come from
//    Philox keyed by (seed, step, site, element), see kernels/activation/dropout.h; site 0 is
//    the embedding, 1 + 2l block l's attention projection, 2 + 2l its MLP projection, 1 + 2L + l
//    its attention weights. Rate 0 skips the op entirely (bit-identical to no dropout).
//  - compute: f32, bf16 or f16. Parameters and gradients stay f32 (master weights). In the
//    half types the products of the linear layers and the tied head (forward, and both
//    backward products) take half operands: the weights are cast at the start of each
//    forward, activations and output gradients are rounded where they enter a product;
//    accumulation is f32 and results are f32. Everything else (embeddings, LayerNorm, GELU,
//    attention's softmax and its T x T products, the residual stream, biases, cross-entropy
//    on the f32 logits) runs in f32, as torch.autocast does. bf16 products use gemm_bf16;
//    f16 values are kept as f16-rounded floats and use gemm_f32 (an f16 x f16 product is
//    exact in f32). f16 training needs a loss scale (the training loop's LossScaler):
//    output gradients that overflow f16 become inf, and the loop skips the step.
//
// BasicTrainer<double> is the same model in double precision (compute f32 only, plain-loop
// matrix products): the reference that finite-difference tests check the backward against.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "tinylm/core/dtype.h"
#include "tinylm/core/param_store.h"
#include "tinylm/models/gpt2/config.h"

namespace tinylm::gpt2 {

struct TrainerOptions {
  int batch_size = 4;
  int seq_len = 64;            // <= n_positions
  float dropout = 0.0f;        // in [0, 1)
  DType compute = DType::f32;  // f32 | bf16 | f16
  // false: nanoGPT's bias=False, the same function with the tensors kept (zero) for the file
  // layout. The biases (linear layers' and LayerNorms') must be zero, as init_params makes them;
  // they get zero gradients, so they stay zero, and the linear layers' are not added at all.
  bool biases = true;
};

// Identifies a step's dropout masks (unused at rate 0). first_row: the batch's row 0 is this
// row of the whole batch (a shard's rows draw their share of the whole batch's masks).
struct DropoutKey {
  uint64_t seed = 0;
  uint64_t step = 0;
  int64_t first_row = 0;
};

// backward(): add to the gradient buffer, or write it (no separate zeroing pass over all
// gradients, which for 124M parameters is a 0.5 GB memory write per step).
enum class GradMode : uint8_t { accumulate, overwrite };

// Called by backward() with [begin, end) of the gradient buffer once those gradients are
// complete, in the order the backward completes them (ln_f, the blocks from the last, then the
// embeddings): a data-parallel caller starts sending them while the rest is computed.
using GradDone = std::function<void(size_t begin, size_t end)>;

// Cumulative wall-clock time per phase since construction or reset_profile().
struct TrainerProfile {
  int64_t steps = 0;      // forwards run
  double forward_ms = 0;  // whole forward, cross-entropy included
  double backward_ms = 0;
  double gemm_ms = 0;  // inside the matrix products (forward and backward)
  double cast_ms = 0;  // half types: casting the weights each step
};

template <class T>
class BasicTrainer {
 public:
  // Throws Error for a bad config, shape, dropout rate or compute type (double: f32 only).
  BasicTrainer(const Config& config, TrainerOptions options);
  ~BasicTrainer();
  BasicTrainer(BasicTrainer&&) noexcept;
  BasicTrainer& operator=(BasicTrainer&&) noexcept;

  const Config& config() const;
  const TrainerOptions& options() const;
  const ParamLayout& layout() const;  // param_layout(config)
  size_t num_params() const;          // scalars
  size_t activation_bytes() const;    // the planned arena (activations, scratch, half copies)

  // Changes the dropout rate (e.g. 0 for evaluation); [0, 1) or Error.
  void set_dropout(float rate);

  // Runs the batch: inputs and targets hold batch_size x seq_len token ids, row-major, each
  // below vocab_size (checked). Returns the mean cross-entropy over all positions. `params`
  // (param_layout order) must stay unchanged until backward() has run.
  T forward(std::span<const T> params, std::span<const int32_t> inputs,
            std::span<const int32_t> targets, DropoutKey key = {});

  // Backward of the last forward: grads += d(loss_scale * loss) / d(params) (accumulate), or
  // grads = ... (overwrite: every element written, the previous contents ignored). Overwrites
  // the logits with their gradient (f32/f16) and so may run once per forward.
  void backward(std::span<T> grads, float loss_scale = 1.0f, GradMode mode = GradMode::accumulate,
                const GradDone& done = {});

  // (batch_size * seq_len, vocab_size) logits of the last forward, in f32 whatever the
  // compute type; valid until backward().
  std::span<const T> logits() const;
  // The per-position cross-entropy of the last forward (batch_size * seq_len).
  std::span<const T> position_losses() const;

  const TrainerProfile& profile() const;
  void reset_profile();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

using Trainer = BasicTrainer<float>;

extern template class BasicTrainer<float>;
extern template class BasicTrainer<double>;

}  // namespace tinylm::gpt2
