#pragma once
// The forward pass every GPT-2 storage shares (model.cpp's f32/bf16/f16 matrices,
// quant_model.cpp's q8_0/q4_0 blocks): one sequence's tokens against its cache (prefill and
// decode), or the tokens of several sequences against theirs (continuous batching). The storage,
// Derived, provides
//   weights      a Tensors<const float*, Matrix> (tensors.h): the f32 tensors and the matrices
//   embed(x, ids, rows, first_position)        wte[id] + wpe[position] for each row
//   matmul(y, x, matrix, bias, rows, nin, nout) a Conv1D product (row-invariant)
//   head(logits, xn, rows)                      the output head (row-invariant)
// and KV is the cache's element type.
#include <cstring>
#include <span>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/models/gpt2/model_impl.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

template <class Derived, class KV>
struct ForwardPass : Model::Impl {
  // Scratch for one forward of up to `rows` positions, grown on demand.
  std::vector<float> x, xn, qkv, q, att, h;
  std::vector<int32_t> ids;
  // forward_sequences's rows: positions and their caches, one layer's cache pointers.
  std::vector<int64_t> positions;
  std::vector<KvCache*> row_cache;
  std::vector<KV*> layer_keys, layer_values;

  void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
               int64_t first) override {
    const Config& c = config;
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t C = c.n_embd, V = c.vocab_size, cap = cache.capacity;
    const int64_t t0 = cache.length, t1 = t0 + n;
    check(n > 0, "gpt2: forward of zero tokens");
    check(t1 <= cap, "gpt2: ", t1, " positions exceed the cache capacity (", cap, ")");
    check(first >= 0 && first < n, "gpt2: first logits row ", first, " outside 0..", n - 1);
    check(logits.size() == static_cast<size_t>((n - first) * V), "gpt2: logits buffer of ",
          logits.size(), " values, expected ", (n - first) * V);
    start(tokens);
    self().embed(x.data(), ids.data(), n, t0);
    run_layers(n, [&](int64_t li) {
      KV* kl = keys_of(cache, li);
      KV* vl = values_of(cache, li);
      parallel_for(0, n, 1, [&](int64_t r) {
        const float* row = qkv.data() + r * 3 * C;
        kernels::kv_store(kl, vl, row + C, row + 2 * C, t0 + r, C, c.n_head);
      });
      kernels::attention_cached(att.data(), q.data(), kl, vl, t0, t1, C, c.n_head);
    });
    cache.length = static_cast<int>(t1);
    final_norm(first, n - first);
    self().head(logits.data(), xn.data(), n - first);
  }

  void forward_sequences(std::span<const int> tokens, std::span<const int> lengths,
                         std::span<KvCache* const> caches, std::span<float> logits) override {
    const Config& c = config;
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t ns = static_cast<int64_t>(caches.size());
    const int64_t C = c.n_embd, V = c.vocab_size;
    check(ns > 0, "gpt2: forward of zero sequences");
    check(lengths.size() == caches.size(), "gpt2: ", lengths.size(), " lengths for ", caches.size(),
          " caches");
    check(logits.size() == static_cast<size_t>(ns * V), "gpt2: logits buffer of ", logits.size(),
          " values, expected ", ns * V);
    int64_t total = 0;
    for (int64_t s = 0; s < ns; ++s) {
      const KvCache& cache = *caches[s];
      check(lengths[s] >= 1, "gpt2: sequence ", s, " has no tokens");
      check(cache.length + lengths[s] <= cache.capacity, "gpt2: sequence ", s, "'s ", lengths[s],
            " tokens exceed its cache's room (", cache.capacity - cache.length, " positions)");
      for (int64_t t = 0; t < s; ++t)
        check(caches[t] != caches[s], "gpt2: sequences ", t, " and ", s, " share a cache");
      total += lengths[s];
    }
    check(total == n, "gpt2: ", n, " tokens for sequences of ", total);
    start(tokens);
    positions.clear();
    row_cache.clear();
    for (int64_t s = 0; s < ns; ++s) {
      for (int j = 0; j < lengths[s]; ++j) {
        const int64_t r = static_cast<int64_t>(positions.size());
        positions.push_back(caches[s]->length + j);
        row_cache.push_back(caches[s]);
        self().embed(x.data() + r * C, ids.data() + r, 1, positions[r]);
      }
    }
    run_layers(n, [&](int64_t li) {
      layer_keys.clear();
      layer_values.clear();
      for (int64_t r = 0; r < n; ++r) {
        layer_keys.push_back(keys_of(*row_cache[r], li));
        layer_values.push_back(values_of(*row_cache[r], li));
      }
      if (n == ns) {  // a decode step: each row stores its key and value as it attends
        kernels::attention_step_rows(att.data(), q.data(), qkv.data() + C, 3 * C, layer_keys.data(),
                                     layer_values.data(), positions.data(), n, C, c.n_head);
        return;
      }
      // (A key's channels lie 32 to 64 bytes apart in its cache, each store a likely miss: the
      // rows' stores are spread over the threads.)
      parallel_for(0, n, 1, [&](int64_t r) {
        const float* row = qkv.data() + r * 3 * C;
        kernels::kv_store(layer_keys[r], layer_values[r], row + C, row + 2 * C, positions[r], C,
                          c.n_head);
      });
      // Every row's key and value are stored first: a row attends up to its own position.
      kernels::attention_cached_rows(att.data(), q.data(), layer_keys.data(), layer_values.data(),
                                     positions.data(), n, C, c.n_head);
    });
    // Each sequence's last row moves up to row s (s <= that row: nothing is overwritten
    // before it is read), then the final norm and the head over those ns rows.
    int64_t last = -1;
    for (int64_t s = 0; s < ns; ++s) {
      caches[s]->length += lengths[s];
      last += lengths[s];
      if (last != s) std::memcpy(x.data() + s * C, x.data() + last * C, C * sizeof(float));
    }
    final_norm(0, ns);
    self().head(logits.data(), xn.data(), ns);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  // Checks the ids and sizes the scratch for n = tokens.size() rows.
  void start(std::span<const int> tokens) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t C = config.n_embd, F = config.mlp_dim(), V = config.vocab_size;
    for (int t : tokens)
      check(t >= 0 && t < V, "gpt2: token id ", t, " outside the vocabulary [0, ", V, ")");
    x.resize(n * C);
    xn.resize(n * C);
    qkv.resize(n * 3 * C);
    q.resize(n * C);
    att.resize(n * C);
    h.resize(n * F);
    ids.assign(tokens.begin(), tokens.end());
  }

  KV* keys_of(KvCache& cache, int64_t li) const {
    return reinterpret_cast<KV*>(cache.keys.data()) +
           li * config.n_embd * kernels::kv_positions(cache.capacity);
  }
  KV* values_of(KvCache& cache, int64_t li) const {
    return reinterpret_cast<KV*>(cache.values.data()) +
           li * config.n_embd * kernels::kv_positions(cache.capacity);
  }

  // The blocks over the n rows in x. attend(layer) stores the rows' keys and values (the
  // second and third thirds of each qkv row) and writes att from q: the one step in which
  // rows differ by the sequence they belong to.
  template <class Attend>
  void run_layers(int64_t n, const Attend& attend) {
    namespace k = kernels;
    const Config& c = config;
    const int64_t C = c.n_embd, F = c.mlp_dim();
    const float eps = static_cast<float>(c.layer_norm_epsilon);
    Derived& d = self();
    for (int64_t li = 0; li < c.n_layer; ++li) {
      const auto& l = d.weights.layers[li];
      k::layernorm_forward(xn.data(), nullptr, nullptr, x.data(), l.ln1_w, l.ln1_b, n, C, eps);
      d.matmul(qkv.data(), xn.data(), l.attn_w, l.attn_b, n, C, 3 * C);
      for (int64_t r = 0; r < n; ++r)
        std::memcpy(q.data() + r * C, qkv.data() + r * 3 * C, C * sizeof(float));
      attend(li);
      d.matmul(xn.data(), att.data(), l.proj_w, l.proj_b, n, C, C);
      for (int64_t i = 0; i < n * C; ++i) x[i] += xn[i];
      k::layernorm_forward(xn.data(), nullptr, nullptr, x.data(), l.ln2_w, l.ln2_b, n, C, eps);
      d.matmul(h.data(), xn.data(), l.fc_w, l.fc_b, n, C, F);
      k::gelu_forward(h.data(), h.data(), n * F);
      d.matmul(xn.data(), h.data(), l.fc_proj_w, l.fc_proj_b, n, F, C);
      for (int64_t i = 0; i < n * C; ++i) x[i] += xn[i];
    }
  }

  // The final LayerNorm of rows first .. first + rows - 1 of x into xn.
  void final_norm(int64_t first, int64_t rows) {
    const int64_t C = config.n_embd;
    kernels::layernorm_forward(xn.data(), nullptr, nullptr, x.data() + first * C,
                               self().weights.lnf_w, self().weights.lnf_b, rows, C,
                               static_cast<float>(config.layer_norm_epsilon));
  }
};

// Points a storage's tensors (its `weights`, a Tensors<const float*, Matrix>) at their data by
// their GPT-2 names: m(name) for the matrices (wte and the layers' Conv1D weights), f(name) for
// the f32 tensors. The head is wte until the storage says otherwise.
template <class Storage, class MatrixFn, class SmallFn>
void bind_tensors(Storage& s, const MatrixFn& m, const SmallFn& f) {
  for_each_tensor(s.config, s.weights, [&](const TensorSpec& t, auto& field, auto matrix) {
    if constexpr (matrix)
      field = m(t.name);
    else
      field = f(t.name);
  });
  s.lm_head = s.weights.wte;
}

}  // namespace tinylm::gpt2
