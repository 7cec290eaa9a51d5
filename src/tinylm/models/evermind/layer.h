#pragma once
// One EvermindLM layer as forward/backward functions over planned buffers (internal to the
// model, the decoder and the tests). With n = RMSNorm:
//   token mixer:    x_mid = x_in + CausalConv(n_a(x_in))
//   channel mixer:  x_out = x_mid + shared(n_b(x_mid)) + Σ_{top-k} gate · expert(n_b(x_mid))
#include <cstddef>
#include <cstdint>

#include "tinylm/models/evermind/config.h"
#include "tinylm/models/evermind/weights.h"

namespace tinylm::evermind {

inline constexpr double kNormEps = 1e-5;

// The sizes the layer functions need, from a validated Config.
struct Dims {
  int64_t D, H, E, k, K, V, L;
  explicit Dims(const Config& c)
      : D(c.d_model),
        H(c.hidden_dim),
        E(c.n_experts),
        k(c.top_k),
        K(c.conv_kernel),
        V(c.vocab_size),
        L(c.n_layers) {}
};

// Activations of one layer for up to `rows` positions.
template <class T>
struct LayerActs {
  T* na;               // [rows × D] n_a(x_in), the conv input
  T* rstd_a;           // [rows]
  T* x_mid;            // [rows × D]
  T* nb;               // [rows × D] n_b(x_mid), the MoE input
  T* rstd_b;           // [rows]
  T* probs;            // [rows × E] router probabilities
  T* gates;            // [rows × k]
  T* f;                // [E] fraction of routing slots per expert
  T* hs;               // [rows × H] shared expert pre-activation
  T* as;               // [rows × H] gelu(hs)
  T* moe_out;          // [rows × D]
  T* xs;               // [rows·k × D] MoE inputs gathered per expert
  T* he;               // [rows·k × H]
  T* ae;               // [rows·k × H]
  T* ye;               // [rows·k × D] expert outputs, ungated
  int32_t* topk;       // [rows × k]
  int32_t* offsets;    // [E + 1]
  int32_t* row_token;  // [rows·k]
  int32_t* row_slot;   // [rows·k]
  double aux = 0.0;    // this layer's load-balancing loss
};

// Backward scratch shared by all layers.
template <class T>
struct LayerScratch {
  T* dnb;     // [rows × D]
  T* dna;     // [rows × D]
  T* dprobs;  // [rows × E]
  T* dgates;  // [rows × k]
  T* dye;     // [rows·k × D]
  T* dxs;     // [rows·k × D]
  T* dh;      // [rows × H]
};

// Calls alloc_real(n) / alloc_int(n) for each buffer, in a fixed order (planning counts
// with the same calls that later carve the arena).
template <class T, class AllocReal, class AllocInt>
LayerActs<T> make_layer_acts(const Dims& d, int64_t rows, AllocReal&& alloc_real,
                             AllocInt&& alloc_int) {
  const int64_t rk = rows * d.k;
  LayerActs<T> a{};
  a.na = alloc_real(rows * d.D);
  a.rstd_a = alloc_real(rows);
  a.x_mid = alloc_real(rows * d.D);
  a.nb = alloc_real(rows * d.D);
  a.rstd_b = alloc_real(rows);
  a.probs = alloc_real(rows * d.E);
  a.gates = alloc_real(rk);
  a.f = alloc_real(d.E);
  a.hs = alloc_real(rows * d.H);
  a.as = alloc_real(rows * d.H);
  a.moe_out = alloc_real(rows * d.D);
  a.xs = alloc_real(rk * d.D);
  a.he = alloc_real(rk * d.H);
  a.ae = alloc_real(rk * d.H);
  a.ye = alloc_real(rk * d.D);
  a.topk = alloc_int(rk);
  a.offsets = alloc_int(d.E + 1);
  a.row_token = alloc_int(rk);
  a.row_slot = alloc_int(rk);
  return a;
}

template <class T, class AllocReal>
LayerScratch<T> make_layer_scratch(const Dims& d, int64_t rows, AllocReal&& alloc_real) {
  const int64_t rk = rows * d.k;
  LayerScratch<T> s{};
  s.dnb = alloc_real(rows * d.D);
  s.dna = alloc_real(rows * d.D);
  s.dprobs = alloc_real(rows * d.E);
  s.dgates = alloc_real(rk);
  s.dye = alloc_real(rk * d.D);
  s.dxs = alloc_real(rk * d.D);
  s.dh = alloc_real(rows * d.H);
  return s;
}

// Token mixer over rows positions: fills a.na, a.rstd_a, a.x_mid from x_in.
template <class T>
void mixer_forward(const Dims& d, const LayerIndex& li, const T* params, const T* packed,
                   LayerActs<T>& a, const T* x_in, int64_t rows);

// Channel mixer from a.x_mid: fills the rest of `a` (a.aux included) and writes x_out.
template <class T>
void channel_forward(const Dims& d, const LayerIndex& li, const T* params, const T* packed,
                     LayerActs<T>& a, int64_t rows, T* x_out);

// The whole layer backward. dx holds ∂L/∂x_out on entry and ∂L/∂x_in on exit; parameter
// gradients are accumulated into grads (laid out like params). aux_scale = ∂L/∂aux for this
// layer (the aux coefficient times the incoming loss gradient); 0 skips that term.
template <class T>
void layer_backward(const Dims& d, const LayerIndex& li, const T* params, const T* packed,
                    const LayerActs<T>& a, const T* x_in, int64_t rows, T* dx, T* grads,
                    const LayerScratch<T>& s, double aux_scale);

}  // namespace tinylm::evermind
