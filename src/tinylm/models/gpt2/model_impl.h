#pragma once
// What model.cpp and quant_model.cpp share: the interface of a model's storage and forward.
#include <memory>
#include <span>
#include <string>

#include "tinylm/models/gpt2/model.h"

namespace tinylm::gpt2 {

struct Model::Impl {
  Config config;
  DType dtype;
  DType cache_dtype;               // the KV cache's element type
  DType activations = DType::f32;  // Model::set_activations
  virtual ~Impl() = default;
  virtual size_t weight_bytes() const = 0;
  virtual void set_activations(DType t) { activations = t; }
  // A cache in host memory (model.cpp), or on the device.
  virtual KvCache new_cache(int capacity) const;
  // The f32 tensor `name` (param_layout's names, or "lm_head.weight": null when tied) where this
  // storage holds it, or Error (Model::to_gpu reads them).
  virtual const float* f32_tensor(const std::string& name) const;
  virtual std::string device_name() const { return {}; }
  // logits receives the rows first_row .. tokens.size() - 1, (rows, vocab).
  virtual void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                       int64_t first_row) = 0;
  // Several sequences' tokens, each sequence's last logits (Model::forward_sequences;
  // forward_batch is the case of one token each).
  virtual void forward_sequences(std::span<const int> tokens, std::span<const int> lengths,
                                 std::span<KvCache* const> caches, std::span<float> logits) = 0;
};

// A model on a GPU (model_vulkan.cpp), its weights read from `host` (an f32 model).
std::unique_ptr<Model::Impl> gpu_impl(std::shared_ptr<kernels::vulkan::Context> gpu,
                                      const Model::Impl& host, DType dtype, int sequences);
Model::GpuNeeds gpu_needs(const Config& config, DType dtype, int sequences, int logit_rows);

// q8_0 / q4_0 models (quant_model.cpp).
std::unique_ptr<Model::Impl> quant_impl_from_reader(const Config& config, DType dtype,
                                                    const Model::TensorReader& read,
                                                    bool untied_head);
std::unique_ptr<Model::Impl> quant_impl_from_views(
    const Config& config, DType dtype,
    const std::function<Model::TensorView(const std::string&)>& tensor,
    std::shared_ptr<const void> owner, bool untied_head, Model::MakeWritable writable);

}  // namespace tinylm::gpt2
