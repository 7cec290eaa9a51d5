#pragma once
// GPT-2's inference forward, written once against a backend (backend/cpu.h says what one
// provides): one sequence's tokens against its cache (prefill and decode), or the tokens of
// several sequences against theirs (continuous batching). The CPU storages (model.cpp's
// f32/bf16/f16 matrices, quant_model.cpp's q8_0/q4_0 blocks, through host_forward.h) and the
// device's (model_vulkan.cpp) run this same layer loop. The storage, Derived, provides
//   weights      a Tensors<Array<const float>, Matrix> (tensors.h): the f32 tensors and the
//                matrices
//   embed(x, ids, rows, first_position)         wte[id] + wpe[position] for each row
//   matmul(y, x, matrix, bias, rows, nin, nout) a Conv1D product (row-invariant)
//   head(logits, xn, rows)                      the output head, for the host's logits
// and what depends on where the KV cache lives:
//   attend(layer, cache, t0, n)   the rows' keys and values (the second and third thirds of
//                                 each qkv row) stored at positions t0.., att written from q
//   place_rows(n), embed_rows(n), attend_rows(layer, n, sequences)
//                                 the same for rows of several sequences (positions and
//                                 row_cache say which row is where; place_rows puts that where
//                                 the ops read it)
//   run_step(key, logits, ops)    runs ops, the forward's work after its inputs are in place,
//                                 whose head fills `logits`: a device records the ops of a
//                                 decode step of `key` rows once and replays them (key 0: not
//                                 a decode step)
//   kReplaysSteps                 true where run_step replays: one sequence's single token
//                                 then runs as a decode step of one row
//   check_cache(cache)            optional: refuses a cache it cannot use (checked once per
//                                 call, with the caches' room)
#include <algorithm>
#include <span>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/models/gpt2/model_impl.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

template <class Derived, class Be>
struct ForwardPass : Model::Impl {
  template <class U>
  using Array = typename Be::template Array<U>;
  template <class U>
  using Vector = typename Be::template Vector<U>;

  Be be;
  // Scratch for one forward, grown on demand, and this forward's arrays in it.
  Vector<float> x_, xn_, qkv_, att_, h_, mean_, rstd_;
  Vector<int32_t> ids_;
  Array<float> x{}, xn{}, qkv{}, att{}, h{}, mean{}, rstd{};
  Array<int32_t> ids{};
  // forward_sequences's rows: each row's position and cache.
  std::vector<int64_t> positions;
  std::vector<KvCache*> row_cache;

  void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
               int64_t first) override {
    const Config& c = config;
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t C = c.n_embd, V = c.vocab_size, cap = cache.capacity;
    const int64_t t0 = cache.length, t1 = t0 + n;
    check(n > 0, "gpt2: forward of zero tokens");
    check(t1 <= cap, "gpt2: ", t1, " positions exceed the cache capacity (", cap, ")");
    check(first >= 0 && first < n, "gpt2: first logits row ", first, " outside 0..", n - 1);
    self().check_cache(cache);
    check(logits.size() == static_cast<size_t>((n - first) * V), "gpt2: logits buffer of ",
          logits.size(), " values, expected ", (n - first) * V);
    if (Derived::kReplaysSteps && n == 1) {
      KvCache* one[] = {&cache};
      const int length[] = {1};
      return forward_sequences(tokens, length, one, logits);
    }
    start(tokens);
    self().run_step(0, logits, [&] {
      self().embed(x, ids, n, t0);
      run_layers(n, [&](int64_t li) { self().attend(li, cache, t0, n); });
      // Rows first .. n - 1 to the front of h, then the final norm and the head over them.
      be.copy(h, x + first * C, (n - first) * C);
      final_norm(n - first, logits);
    });
    cache.length = static_cast<int>(t1);
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
      self().check_cache(cache);
      total += lengths[s];
    }
    check(total == n, "gpt2: ", n, " tokens for sequences of ", total);
    start(tokens);
    positions.clear();
    row_cache.clear();
    for (int64_t s = 0; s < ns; ++s) {
      for (int j = 0; j < lengths[s]; ++j) {
        positions.push_back(caches[s]->length + j);
        row_cache.push_back(caches[s]);
      }
    }
    self().place_rows(n);
    // A decode step (one row per sequence) depends on nothing but its row count here.
    self().run_step(n == ns ? n : 0, logits, [&] {
      self().embed_rows(n);
      run_layers(n, [&](int64_t li) { self().attend_rows(li, n, ns); });
      // Each sequence's last row to row s of h, then the final norm and the head over them.
      int64_t last = -1;
      for (int64_t s = 0; s < ns; ++s) {
        last += lengths[s];
        be.copy(h + s * C, x + last * C, C);
      }
      final_norm(ns, logits);
    });
    for (int64_t s = 0; s < ns; ++s) caches[s]->length += lengths[s];
  }

  void check_cache(const KvCache&) const {}  // (a storage's own hides it)

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  // Checks the ids, sizes the scratch for n = tokens.size() rows and puts the ids in place.
  void start(std::span<const int> tokens) {
    const size_t n = tokens.size();
    const size_t C = static_cast<size_t>(config.n_embd), F = static_cast<size_t>(config.mlp_dim());
    for (int t : tokens)
      check(t >= 0 && t < config.vocab_size, "gpt2: token id ", t, " outside the vocabulary [0, ",
            config.vocab_size, ")");
    x = be.sized(x_, n * C);
    xn = be.sized(xn_, n * C);
    qkv = be.sized(qkv_, n * 3 * C);
    att = be.sized(att_, n * C);
    h = be.sized(h_, n * std::max(F, C));  // the MLP's rows, then the rows the head reads
    mean = be.sized(mean_, n);
    rstd = be.sized(rstd_, n);
    ids = be.sized(ids_, n);
    be.copy_in(ids, tokens);
  }

  // The blocks over the n rows in x. attend(layer) writes att from q (the first third of each
  // qkv row): the one step in which rows differ by the sequence they belong to.
  template <class Attend>
  void run_layers(int64_t n, const Attend& attend) {
    const Config& c = config;
    const int64_t C = c.n_embd, F = c.mlp_dim();
    const float eps = static_cast<float>(c.layer_norm_epsilon);
    Derived& d = self();
    for (int64_t li = 0; li < c.n_layer; ++li) {
      const auto& l = d.weights.layers[li];
      be.layernorm_forward(xn, mean, rstd, x, l.ln1_w, l.ln1_b, n, C, eps);
      d.matmul(qkv, xn, l.attn_w, l.attn_b, n, C, 3 * C);
      attend(li);
      d.matmul(xn, att, l.proj_w, l.proj_b, n, C, C);
      be.add(x, x, xn, n, C);
      be.layernorm_forward(xn, mean, rstd, x, l.ln2_w, l.ln2_b, n, C, eps);
      d.matmul(h, xn, l.fc_w, l.fc_b, n, C, F);
      be.gelu_forward(h, h, n * F);
      d.matmul(xn, h, l.fc_proj_w, l.fc_proj_b, n, F, C);
      be.add(x, x, xn, n, C);
    }
  }

  // The final LayerNorm of the first `rows` rows of h into xn, and the head's logits of them.
  void final_norm(int64_t rows, std::span<float> logits) {
    be.layernorm_forward(xn, mean, rstd, h, self().weights.lnf_w, self().weights.lnf_b, rows,
                         config.n_embd, static_cast<float>(config.layer_norm_epsilon));
    self().head(logits, xn, rows);
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
