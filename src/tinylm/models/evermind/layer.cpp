#include "tinylm/models/evermind/layer.h"

#include "tinylm/kernels/matmul/small.h"
#include "tinylm/kernels/mixer/causal_conv.h"
#include "tinylm/kernels/mixer/ffn.h"
#include "tinylm/kernels/mixer/moe.h"
#include "tinylm/kernels/norm/rmsnorm_gain.h"

namespace tinylm::evermind {

namespace k = tinylm::kernels;

template <class T>
void mixer_forward(const Dims& d, const LayerIndex& li, const T* params, const T* packed,
                   LayerActs<T>& a, const T* x_in, int64_t rows) {
  k::rmsnorm_gain_forward(a.na, a.rstd_a, x_in, params + li.conv_norm, rows, d.D,
                          static_cast<T>(kNormEps));
  k::causal_conv_forward(a.x_mid, a.na, packed + li.conv, rows, d.D, d.K);
  for (int64_t i = 0; i < rows * d.D; ++i) a.x_mid[i] += x_in[i];
}

template <class T>
void channel_forward(const Dims& d, const LayerIndex& li, const T* params, const T* packed,
                     LayerActs<T>& a, int64_t rows, T* x_out) {
  const int64_t D = d.D, H = d.H, E = d.E;
  k::rmsnorm_gain_forward(a.nb, a.rstd_b, a.x_mid, params + li.moe_norm, rows, D,
                          static_cast<T>(kNormEps));
  k::gemm_nn(rows, E, D, a.nb, D, packed + li.router, E, a.probs, E, false);
  k::router_forward(a.probs, a.topk, a.gates, rows, E, d.k);
  a.aux = k::load_balance_forward(a.f, a.probs, a.topk, rows, E, d.k);
  k::moe_plan(a.offsets, a.row_token, a.row_slot, a.topk, rows, E, d.k);
  const int64_t n = rows * d.k;
  k::moe_gather(a.xs, a.nb, a.row_token, n, D);
  k::ffn_forward(a.moe_out, a.hs, a.as, a.nb, packed + li.shared_up, packed + li.shared_down, rows,
                 D, H);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t o = a.offsets[e], ne = a.offsets[e + 1] - o;
    if (ne == 0) continue;
    k::ffn_forward(a.ye + o * D, a.he + o * H, a.ae + o * H, a.xs + o * D, packed + li.expert_up[e],
                   packed + li.expert_down[e], ne, D, H);
  }
  k::moe_combine_forward(a.moe_out, a.ye, a.row_token, a.row_slot, a.gates, n, D, d.k);
  for (int64_t i = 0; i < rows * D; ++i) x_out[i] = a.x_mid[i] + a.moe_out[i];
}

template <class T>
void layer_backward(const Dims& d, const LayerIndex& li, const T* params, const T* packed,
                    const LayerActs<T>& a, const T* x_in, int64_t rows, T* dx, T* grads,
                    const LayerScratch<T>& s, double aux_scale) {
  const int64_t D = d.D, H = d.H, E = d.E, n = rows * d.k;
  // Channel mixer; ∂L/∂moe_out = dx.
  k::moe_combine_backward(s.dye, s.dgates, dx, a.ye, a.row_token, a.row_slot, a.gates, n, D, d.k);
  k::ffn_backward(s.dnb, grads + li.shared_up, grads + li.shared_down, s.dh, dx, a.nb, a.hs, a.as,
                  params + li.shared_up, params + li.shared_down, rows, D, H);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t o = a.offsets[e], ne = a.offsets[e + 1] - o;
    k::ffn_backward(s.dxs + o * D, grads + li.expert_up[e], grads + li.expert_down[e], s.dh,
                    s.dye + o * D, a.xs + o * D, a.he + o * H, a.ae + o * H,
                    params + li.expert_up[e], params + li.expert_down[e], ne, D, H);
  }
  k::moe_scatter_add(s.dnb, s.dxs, a.row_token, n, D);
  k::router_gates_backward(s.dprobs, s.dgates, a.probs, a.topk, a.gates, rows, E, d.k);
  if (aux_scale != 0.0) k::load_balance_backward(s.dprobs, a.f, rows, E, aux_scale);
  k::router_softmax_backward(s.dprobs, s.dprobs, a.probs, rows, E);  // now ∂L/∂router logits
  k::gemm_tn(E, D, rows, s.dprobs, E, a.nb, D, grads + li.router, D, true);
  k::gemm_nn(rows, D, E, s.dprobs, E, params + li.router, D, s.dnb, D, true);
  k::rmsnorm_gain_backward(dx, grads + li.moe_norm, s.dnb, a.x_mid, params + li.moe_norm, a.rstd_b,
                           rows, D);
  // Token mixer; dx is now ∂L/∂x_mid.
  k::causal_conv_backward(s.dna, grads + li.conv, dx, a.na, packed + li.conv, rows, D, d.K);
  k::rmsnorm_gain_backward(dx, grads + li.conv_norm, s.dna, x_in, params + li.conv_norm, a.rstd_a,
                           rows, D);
}

template void mixer_forward<float>(const Dims&, const LayerIndex&, const float*, const float*,
                                   LayerActs<float>&, const float*, int64_t);
template void mixer_forward<double>(const Dims&, const LayerIndex&, const double*, const double*,
                                    LayerActs<double>&, const double*, int64_t);
template void channel_forward<float>(const Dims&, const LayerIndex&, const float*, const float*,
                                     LayerActs<float>&, int64_t, float*);
template void channel_forward<double>(const Dims&, const LayerIndex&, const double*, const double*,
                                      LayerActs<double>&, int64_t, double*);
template void layer_backward<float>(const Dims&, const LayerIndex&, const float*, const float*,
                                    const LayerActs<float>&, const float*, int64_t, float*, float*,
                                    const LayerScratch<float>&, double);
template void layer_backward<double>(const Dims&, const LayerIndex&, const double*, const double*,
                                     const LayerActs<double>&, const double*, int64_t, double*,
                                     double*, const LayerScratch<double>&, double);

}  // namespace tinylm::evermind
