// GPT-2 inference on a GPU: forward_pass.h's layer loop on the Vulkan backend (backend/vulkan.h),
// with the weights in one device buffer and the KV caches in a pool of slots on the device.
//
// Weights: the matrices (wte, the Conv1D weights, an untied head) in the model's dtype, f32, f16
// or bf16, read by the products and the embedding as they are (widened exactly in the shaders);
// LayerNorm parameters, biases and wpe in f32. A buffer per layer, one for wte, wpe and ln_f, one
// for an untied head (a product binds its operand's whole buffer: each stays within the
// device's maxStorageBufferRange where the whole model would not); every tensor starts on a
// multiple of 256 bytes.
// wte (and an untied head) is stored transposed, (C, vocab): the head's product then reads
// neighbouring words in neighbouring invocations, and the embedding reads a token's column.
// Caches: per layer one buffer of keys and one of values, `slots` sequences of `positions`
// positions each (kernels/vulkan/attention.h's slot layout), f16 for an f16 model, else f32. A
// KvCache holds a slot; the pool doubles, copying what it holds, when every slot is taken.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "tinylm/backend/vulkan.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/kernels/vulkan/attention.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/kernels/vulkan/elementwise.h"
#include "tinylm/kernels/vulkan/embedding.h"
#include "tinylm/kernels/vulkan/matmul.h"
#include "tinylm/models/gpt2/forward_pass.h"
#include "tinylm/models/gpt2/model_impl.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

namespace vk = kernels::vulkan;
using backend::DeviceArray;

// The pool's record of which slots are taken, shared with the slots handed out (a KvCache may
// outlive its model).
struct SlotTable {
  std::vector<bool> taken;
};

struct DeviceSlot {
  int index = 0;
  std::shared_ptr<SlotTable> table;
  DeviceSlot(int i, std::shared_ptr<SlotTable> t) : index(i), table(std::move(t)) {}
  ~DeviceSlot() { table->taken[static_cast<size_t>(index)] = false; }
  DeviceSlot(const DeviceSlot&) = delete;
  DeviceSlot& operator=(const DeviceSlot&) = delete;
};

namespace {

constexpr size_t kAlign = vk::kViewAlignment;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Bytes of n values of dtype as a shader reads them (whole 32-bit words), aligned for the next.
size_t tensor_bytes(DType dtype, int64_t n) {
  return aligned((static_cast<size_t>(n) * dtype_size(dtype) + 3) / 4 * 4);
}

// Positions a slot holds: n_positions, rounded up so each slot starts on an aligned offset.
int64_t slot_positions(const Config& c, vk::CacheType type) {
  int64_t p = c.n_positions;
  while (vk::kv_cache_bytes(type, p, c.n_embd) % kAlign != 0) ++p;
  return p;
}

vk::CacheType cache_type(DType dtype) {
  return dtype == DType::f16 ? vk::CacheType::f16 : vk::CacheType::f32;
}

// Where each tensor lies: its buffer (0: wte, wpe, ln_f; 1 + i: layer i; n_layer + 1: an
// untied head) and its byte offset there, in for_each_tensor's order; each buffer's size.
struct WeightPlan {
  struct Place {
    size_t buffer = 0, offset = 0;
  };
  std::vector<Place> at;
  std::vector<size_t> bytes;
  Place place(size_t buffer, size_t size) {
    if (bytes.size() <= buffer) bytes.resize(buffer + 1, 0);
    const Place p{buffer, bytes[buffer]};
    bytes[buffer] += size;
    return p;
  }
  size_t total() const {
    size_t t = 0;
    for (const size_t b : bytes) t += b;
    return t;
  }
};
WeightPlan plan_weights(const Config& c, DType dtype, bool untied_head) {
  WeightPlan p;
  p.bytes.assign(static_cast<size_t>(c.n_layer) + (untied_head ? 2 : 1), 0);
  Tensors<int, int> shapes;
  for_each_tensor(c, shapes, [&](const TensorSpec& t, int&, auto matrix) {
    const size_t buffer =
        t.name.starts_with("h.") ? 1 + std::stoul(t.name.substr(2, t.name.find('.', 2) - 2)) : 0;
    p.at.push_back(
        p.place(buffer, tensor_bytes(matrix ? dtype : DType::f32, shape_numel(t.shape))));
  });
  if (untied_head) {
    p.at.push_back(p.place(static_cast<size_t>(c.n_layer) + 1,
                           tensor_bytes(dtype, static_cast<int64_t>(c.vocab_size) * c.n_embd)));
  }
  return p;
}

// Holds the device first, so it is released after every buffer on it.
struct GpuHolder {
  std::shared_ptr<vk::Context> gpu;
};

struct DeviceImpl final : GpuHolder, ForwardPass<DeviceImpl, backend::Vulkan> {
  std::vector<std::unique_ptr<vk::Buffer>> store;  // the weights (WeightPlan's buffers)
  size_t bytes = 0;
  Tensors<DeviceArray<const float>, vk::Operand> weights;
  vk::Operand lm_head;
  vk::CacheType kv_type = vk::CacheType::f32;
  int64_t slot_len = 0;  // positions per slot
  int slots = 0;
  std::vector<std::unique_ptr<vk::Buffer>> keys, values;  // per layer
  std::shared_ptr<SlotTable> table = std::make_shared<SlotTable>();
  Vector<float> logits_;
  Vector<int32_t> where_;
  std::vector<int32_t> where_host;
  // Decode steps by row count, and the buffers' generation they were recorded with.
  struct Step {
    vk::Context::Recording recording;
    uint64_t generation = 0;
  };
  std::map<int64_t, Step> steps_;

  DeviceImpl(std::shared_ptr<vk::Context> device, const Model::Impl& host, DType dt,
             int sequences) {
    gpu = std::move(device);
    be.context = gpu.get();
    config = host.config;
    dtype = cache_dtype = dt;
    const Config& c = config;
    const float* head = host.f32_tensor("lm_head.weight");
    const WeightPlan plan = plan_weights(c, dt, head != nullptr);
    bytes = plan.total();
    for (const size_t b : plan.bytes) store.push_back(std::make_unique<vk::Buffer>(*gpu, b));
    // Each tensor converted on the host and uploaded in turn: host memory stays one tensor.
    std::vector<std::byte> staging;
    std::vector<float> transposed;
    const auto transpose = [&](const float* src) {  // (vocab, C) to (C, vocab)
      const int64_t V = c.vocab_size, C = c.n_embd;
      transposed.resize(static_cast<size_t>(V * C));
      for (int64_t v = 0; v < V; ++v)
        for (int64_t i = 0; i < C; ++i) transposed[i * V + v] = src[v * C + i];
      return transposed.data();
    };
    const auto put = [&](const float* src, int64_t n, DType type, WeightPlan::Place at) {
      staging.resize(static_cast<size_t>(n) * dtype_size(type));
      if (type == DType::f32)
        std::memcpy(staging.data(), src, staging.size());
      else if (type == DType::f16)
        kernels::convert(src, reinterpret_cast<kernels::F16*>(staging.data()), n);
      else
        kernels::convert(src, reinterpret_cast<kernels::Bf16*>(staging.data()), n);
      store[at.buffer]->upload(staging, at.offset);
    };
    size_t i = 0;
    for_each_tensor(c, weights, [&](const TensorSpec& t, auto& field, auto matrix) {
      const WeightPlan::Place at = plan.at[i++];
      vk::Buffer* buffer = store[at.buffer].get();
      const int64_t n = shape_numel(t.shape);
      if constexpr (matrix) {
        const float* src = host.f32_tensor(t.name);
        put(t.conv1d ? src : transpose(src), n, dt, at);
        // A Conv1D weight is [in, out]: its rows are `out` wide; wte's, transposed, vocab wide.
        field = vk::Operand{buffer, t.conv1d ? t.shape[1] : c.vocab_size,
                            static_cast<int64_t>(at.offset / dtype_size(dt)), dt};
      } else {
        put(host.f32_tensor(t.name), n, DType::f32, at);
        field = DeviceArray<const float>{buffer, static_cast<int64_t>(at.offset / sizeof(float))};
      }
    });
    lm_head = weights.wte;
    if (head) {
      const WeightPlan::Place at = plan.at[i];
      put(transpose(head), static_cast<int64_t>(c.vocab_size) * c.n_embd, dt, at);
      lm_head = vk::Operand{store[at.buffer].get(), c.vocab_size,
                            static_cast<int64_t>(at.offset / dtype_size(dt)), dt};
    }
    kv_type = cache_type(dt);
    slot_len = slot_positions(c, kv_type);
    grow(sequences);
    warm_up();
  }

  size_t weight_bytes() const override { return bytes; }
  std::string device_name() const override { return vk::device_name(*gpu); }
  void set_activations(DType t) override {
    check(t == DType::f32, "gpt2: on a GPU, activations are f32 (not ", dtype_name(t), ")");
  }

  KvCache new_cache(int capacity) const override {
    auto& self = const_cast<DeviceImpl&>(*this);  // the pool is scratch, not the model's state
    auto free = std::find(table->taken.begin(), table->taken.end(), false);
    if (free == table->taken.end()) {
      self.grow(slots * 2);
      free = std::find(table->taken.begin(), table->taken.end(), false);
    }
    *free = true;
    KvCache cache;
    cache.capacity = capacity;
    cache.device =
        std::make_shared<DeviceSlot>(static_cast<int>(free - table->taken.begin()), table);
    return cache;
  }

  // ---- forward_pass.h's storage calls
  void embed(Array<float> out, Array<const int32_t> token_ids, int64_t rows,
             int64_t first_position) {
    const Config& c = config;
    vk::embedding_forward(*gpu, out.view(rows * c.n_embd), token_ids.view(rows), table_view(),
                          dtype, weights.wpe.view(static_cast<int64_t>(c.n_positions) * c.n_embd),
                          rows, c.n_embd, c.vocab_size, first_position, kernels::kNoPeriod,
                          vk::TableLayout::transposed);
  }
  void matmul(Array<float> y, Array<const float> in, const vk::Operand& w, Array<const float> b,
              int64_t rows, int64_t nin, int64_t nout) {
    vk::gemm(*gpu, kernels::Trans::No, kernels::Trans::No, rows, nout, nin, 1.0f, in.operand(nin),
             w, 0.0f, *y.buffer, nout, y.first);
    vk::add_bias(*gpu, y.view(rows * nout), b.operand(0), rows, nout);
  }
  // Into logits_ (run_step sized it and brings them to the host's logits).
  void head(std::span<float>, Array<const float> normed, int64_t rows) {
    const int64_t C = config.n_embd, V = config.vocab_size;
    vk::gemm(*gpu, kernels::Trans::No, kernels::Trans::No, rows, V, C, 1.0f, normed.operand(C),
             lm_head, 0.0f, *logits_.buffer, V, 0);
  }

  // The ops of a decode step of `key` rows are recorded once and replayed while the buffers
  // they were given stand (the scratch was not regrown, the cache pool not enlarged); the
  // step's inputs (ids, where) are uploaded before, its logits downloaded after.
  static constexpr bool kReplaysSteps = true;
  template <class Ops>
  void run_step(int64_t key, std::span<float> logits, const Ops& ops) {
    be.sized(logits_, logits.size());
    if (key == 0) {
      ops();
    } else {
      Step& step = steps_[key];
      if (!step.recording || step.generation != generation()) {
        step.recording = vk::Context::Recording();  // the old one's buffers may be gone
        step.recording = gpu->record(ops);
        step.generation = generation();
      }
      gpu->replay(step.recording);
    }
    logits_.buffer->download(std::as_writable_bytes(logits));
  }

  // ---- the cache's side: slots of the pool
  void attend(int64_t li, KvCache& cache, int64_t t0, int64_t n) {
    const int64_t C = config.n_embd;
    const int64_t s = slot_of(cache);
    const size_t slot_bytes = vk::kv_cache_bytes(kv_type, slot_len, C);
    const vk::View src = qkv.view(n * 3 * C);
    vk::Buffer& k = *keys[li];
    vk::Buffer& v = *values[li];
    vk::kv_store(*gpu, k, v, kv_type, src, 3 * C, C, s * slot_len + t0, n, C);
    vk::attention_cached(*gpu, att.view(n * C), src, 3 * C,
                         vk::View(k, static_cast<size_t>(s) * slot_bytes, slot_bytes),
                         vk::View(v, static_cast<size_t>(s) * slot_bytes, slot_bytes), kv_type, t0,
                         n, C, config.n_head);
  }
  // Each row's (slot, position) pair, where the rows ops read it.
  void place_rows(int64_t n) {
    where_host.resize(static_cast<size_t>(2 * n));
    for (int64_t r = 0; r < n; ++r) {
      where_host[2 * r] = static_cast<int32_t>(slot_of(*row_cache[r]));
      where_host[2 * r + 1] = static_cast<int32_t>(positions[r]);
    }
    be.copy_in(be.sized(where_, where_host.size()), std::span<const int32_t>(where_host));
  }
  void embed_rows(int64_t n) {
    const Config& c = config;
    const Array<int32_t> where{where_.buffer.get(), 0};
    vk::embedding_forward_rows(*gpu, x.view(n * c.n_embd), ids.view(n), table_view(), dtype,
                               vk::TableLayout::transposed,
                               weights.wpe.view(static_cast<int64_t>(c.n_positions) * c.n_embd),
                               where.view(2 * n), n, c.n_embd, c.vocab_size, c.n_positions);
  }
  void attend_rows(int64_t li, int64_t n, int64_t) {
    const int64_t C = config.n_embd;
    const vk::View src = qkv.view(n * 3 * C);
    const vk::View where(*where_.buffer, 0, static_cast<size_t>(2 * n) * sizeof(int32_t));
    vk::kv_store_rows(*gpu, *keys[li], *values[li], kv_type, src, 3 * C, C, where, n, slots,
                      slot_len, C);
    vk::attention_cached_rows(*gpu, att.view(n * C), src, 3 * C, *keys[li], *values[li], kv_type,
                              where, n, slots, slot_len, C, config.n_head);
  }

 private:
  // A prompt of up to 9 tokens (products of more rows than matmul_rows takes) and a decode
  // step, on a cache let go afterwards: every shader inference uses is built and run once, so
  // a shader the driver cannot build, or a device that fails, shows at load, before output.
  void warm_up() {
    const int prompt = std::min(9, config.n_positions - 1);
    KvCache cache = new_cache(prompt + 1);
    const std::vector<int> tokens(static_cast<size_t>(std::max(prompt, 1)), 0);
    std::vector<float> logits(static_cast<size_t>(config.vocab_size));
    if (prompt >= 1) forward(tokens, cache, logits, prompt - 1);
    forward(std::span(tokens).first(1), cache, logits, 0);
  }

  // Changes whenever a buffer a recording may name is made anew: the scratch's (each regrowth
  // counts) and the cache pool's (its slot count).
  uint64_t generation() const {
    return x_.generation + xn_.generation + qkv_.generation + att_.generation + h_.generation +
           mean_.generation + rstd_.generation + ids_.generation + logits_.generation +
           where_.generation + static_cast<uint64_t>(slots);
  }
  vk::View table_view() const {
    const vk::Operand& t = weights.wte;
    const size_t at = static_cast<size_t>(t.offset) * dtype_size(t.type);
    return vk::View(*t.buffer, at,
                    tensor_bytes(t.type, int64_t{config.vocab_size} * config.n_embd));
  }
  int64_t slot_of(const KvCache& cache) const {
    check(cache.device != nullptr && cache.device->table == table,
          "gpt2: a KV cache of another model (or of the CPU) given to a model on a GPU");
    return cache.device->index;
  }
  // The pool at `count` slots, what the slots held kept.
  void grow(int count) {
    const size_t slot_bytes = vk::kv_cache_bytes(kv_type, slot_len, config.n_embd);
    const auto resized = [&](std::unique_ptr<vk::Buffer>& b) {
      auto bigger = std::make_unique<vk::Buffer>(*gpu, slot_bytes * static_cast<size_t>(count));
      if (b) vk::copy(*gpu, *bigger, 0, *b, 0, static_cast<int64_t>(b->bytes() / 4));
      b = std::move(bigger);
    };
    keys.resize(static_cast<size_t>(config.n_layer));
    values.resize(static_cast<size_t>(config.n_layer));
    for (int64_t li = 0; li < config.n_layer; ++li) {
      resized(keys[li]);
      resized(values[li]);
    }
    slots = count;
    table->taken.resize(static_cast<size_t>(count), false);
  }
};

}  // namespace

std::unique_ptr<Model::Impl> gpu_impl(std::shared_ptr<vk::Context> gpu, const Model::Impl& host,
                                      DType dtype, int sequences) {
  check(gpu != nullptr, "gpt2: no GPU given");
  return std::make_unique<DeviceImpl>(std::move(gpu), host, dtype, sequences);
}

Model::GpuNeeds gpu_needs(const Config& c, DType dtype, int sequences, int logit_rows) {
  const WeightPlan weights = plan_weights(c, dtype, true);  // with a head's, should it be untied
  const vk::CacheType type = cache_type(dtype);
  const uint64_t slot = vk::kv_cache_bytes(type, slot_positions(c, type), c.n_embd);
  const uint64_t cache =
      2 * static_cast<uint64_t>(c.n_layer) * slot * static_cast<uint64_t>(sequences);
  const uint64_t T = static_cast<uint64_t>(c.n_positions), C = static_cast<uint64_t>(c.n_embd);
  const uint64_t F = std::max<uint64_t>(static_cast<uint64_t>(c.mlp_dim()), C);
  const uint64_t scratch = T * (6 * C + F + 2 + 1) * 4;  // x, xn, qkv, att, h, stats, ids
  const uint64_t logits = static_cast<uint64_t>(std::clamp(logit_rows, 1, c.n_positions)) *
                          static_cast<uint64_t>(c.vocab_size) * 4;
  // The bindings: a buffer of weights (bound whole by the products), the logits, a layer's
  // caches, the MLP's activations.
  uint64_t largest = std::max({logits, slot * static_cast<uint64_t>(sequences), T * F * 4});
  for (const size_t b : weights.bytes) largest = std::max<uint64_t>(largest, b);
  return {weights.total() + cache + scratch + logits, largest};
}

}  // namespace tinylm::gpt2
