#pragma once
// forward_pass.h on the CPU: the KV cache in host memory (KvCache's keys and values, in blocks
// of 16 positions as kernels/attention/causal.h lays them out) and attention over it. The CPU
// storages (model.cpp, quant_model.cpp) derive from HostForward<Storage>; the cache's element
// type is the storage's cache_dtype (f32, bf16 or f16: Model::set_cache_type), whatever its
// weights.
#include <cstring>
#include <tuple>
#include <vector>

#include "tinylm/backend/cpu.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/models/gpt2/forward_pass.h"

namespace tinylm::gpt2 {

template <class Derived>
struct HostForward : ForwardPass<Derived, backend::Cpu> {
  using Base = ForwardPass<Derived, backend::Cpu>;
  std::vector<float> q;  // the rows' queries, apart from qkv

  void attend(int64_t li, KvCache& cache, int64_t t0, int64_t n) {
    with_cache_type([&]<class KV>() {
      const Config& c = this->config;
      const int64_t C = c.n_embd;
      KV* kl = keys_of<KV>(cache, li);
      KV* vl = values_of<KV>(cache, li);
      copy_queries(n);
      parallel_for(0, n, 1, [&](int64_t r) {
        const float* row = this->qkv + r * 3 * C;
        kernels::kv_store(kl, vl, row + C, row + 2 * C, t0 + r, C, c.n_head);
      });
      kernels::attention_cached(this->att, q.data(), kl, vl, t0, t0 + n, C, c.n_head);
    });
  }

  static constexpr bool kReplaysSteps = false;
  template <class Ops>
  void run_step(int64_t, std::span<float>, const Ops& ops) {
    ops();
  }
  void place_rows(int64_t) {}
  void embed_rows(int64_t n) {
    const int64_t C = this->config.n_embd;
    for (int64_t r = 0; r < n; ++r)
      static_cast<Derived&>(*this).embed(this->x + r * C, this->ids + r, 1, this->positions[r]);
  }

  void attend_rows(int64_t li, int64_t n, int64_t ns) {
    with_cache_type([&]<class KV>() {
      const Config& c = this->config;
      const int64_t C = c.n_embd;
      // (Not a structured binding: clang 14 cannot capture one in the lambdas below.)
      std::vector<KV*>& layer_keys = std::get<LayerCaches<KV>>(layer_caches).keys;
      std::vector<KV*>& layer_values = std::get<LayerCaches<KV>>(layer_caches).values;
      layer_keys.clear();
      layer_values.clear();
      for (int64_t r = 0; r < n; ++r) {
        layer_keys.push_back(keys_of<KV>(*this->row_cache[r], li));
        layer_values.push_back(values_of<KV>(*this->row_cache[r], li));
      }
      copy_queries(n);
      if (n == ns) {  // a decode step: each row stores its key and value as it attends
        kernels::attention_step_rows(this->att, q.data(), this->qkv + C, 3 * C, layer_keys.data(),
                                     layer_values.data(), this->positions.data(), n, C, c.n_head);
        return;
      }
      // (A key's channels lie 32 to 64 bytes apart in its cache, each store a likely miss: the
      // rows' stores are spread over the threads.)
      parallel_for(0, n, 1, [&](int64_t r) {
        const float* row = this->qkv + r * 3 * C;
        kernels::kv_store(layer_keys[r], layer_values[r], row + C, row + 2 * C, this->positions[r],
                          C, c.n_head);
      });
      // Every row's key and value are stored first: a row attends up to its own position.
      kernels::attention_cached_rows(this->att, q.data(), layer_keys.data(), layer_values.data(),
                                     this->positions.data(), n, C, c.n_head);
    });
  }

  // A cache made for this model's cache type (ForwardPass asks once per forward, for each
  // cache, before any layer reads one).
  void check_cache(const KvCache& cache) const {
    check(cache.dtype == this->cache_dtype, "gpt2: a KV cache of ", dtype_name(cache.dtype),
          " for a model whose cache type is ", dtype_name(this->cache_dtype),
          " (make caches after set_cache_type)");
  }

 private:
  // Each layer's caches of the rows, one pair of lists per cache type.
  template <class KV>
  struct LayerCaches {
    std::vector<KV*> keys, values;
  };
  std::tuple<LayerCaches<float>, LayerCaches<kernels::Bf16>, LayerCaches<kernels::F16>>
      layer_caches;

  // fn.template operator()<KV>() for the cache's element type.
  template <class Fn>
  void with_cache_type(const Fn& fn) {
    switch (this->cache_dtype) {
      case DType::bf16:
        return fn.template operator()<kernels::Bf16>();
      case DType::f16:
        return fn.template operator()<kernels::F16>();
      default:
        return fn.template operator()<float>();
    }
  }
  void copy_queries(int64_t n) {
    const int64_t C = this->config.n_embd;
    q.resize(static_cast<size_t>(n * C));
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(q.data() + r * C, this->qkv + r * 3 * C, C * sizeof(float));
  }
  template <class KV>
  KV* keys_of(KvCache& cache, int64_t li) const {
    return reinterpret_cast<KV*>(cache.keys.data()) +
           li * this->config.n_embd * kernels::kv_positions(cache.capacity);
  }
  template <class KV>
  KV* values_of(KvCache& cache, int64_t li) const {
    return reinterpret_cast<KV*>(cache.values.data()) +
           li * this->config.n_embd * kernels::kv_positions(cache.capacity);
  }
};

}  // namespace tinylm::gpt2
