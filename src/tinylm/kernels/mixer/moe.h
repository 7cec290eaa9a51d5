#pragma once
// Mixture-of-experts routing for EvermindLM, forward next to backward:
//
//  - router: p = softmax(z) over the E experts of each row (z = W_r · n), the top k experts
//    by p (descending; equal p goes to the lower index), gates = their p / Σ of the k p's.
//  - dispatch: the (row, slot) pairs sorted by expert (a stable counting sort, so rows
//    ascend within an expert), the selected rows gathered into one contiguous block per
//    expert, and the experts' outputs added back to their rows times the gate, experts in
//    ascending order.
//  - load balancing (Switch Transformer): aux = E · Σ_i f_i · P_i with f_i the fraction of
//    the rows·k routing slots sent to expert i and P_i the mean of p_i over the rows. f is
//    piecewise constant in the parameters, so the gradient flows through P only:
//    ∂aux/∂p[r][i] = E · f_i / rows.
//
// Indices are int32. Contract: row-invariant. Every function works row by row, so a single
// row (incremental decoding) gives the same numbers as that row inside a batch, at every
// level; the combine and scatter passes add rows in plan order. Instantiated for float and
// double (the reference for finite-difference checks, same code).
#include <cstdint>

namespace tinylm::kernels {

// In: probs holds the router logits z [rows × E]. Out: probs = softmax(z); topk [rows × k]
// expert ids by descending p; gates [rows × k].
template <class T>
void router_forward(T* probs, int32_t* topk, T* gates, int64_t rows, int64_t E, int64_t k);

// From dgates [rows × k] through the renormalization g_s = p_s / S: writes dprobs
// [rows × E] = (dg_s − Σ_r g_r dg_r) / S at the selected experts, 0 elsewhere.
template <class T>
void router_gates_backward(T* dprobs, const T* dgates, const T* probs, const int32_t* topk,
                           const T* gates, int64_t rows, int64_t E, int64_t k);

// Through the softmax: writes dlogits = p ⊙ (dp − Σ_j p_j dp_j). dlogits may alias dprobs.
template <class T>
void router_softmax_backward(T* dlogits, const T* dprobs, const T* probs, int64_t rows, int64_t E);

// Returns aux = E · Σ_i f_i P_i (in double) and writes f [E].
template <class T>
double load_balance_forward(T* f, const T* probs, const int32_t* topk, int64_t rows, int64_t E,
                            int64_t k);

// dprobs[r][i] += scale · E · f_i / rows (scale: the coefficient times the incoming gradient).
template <class T>
void load_balance_backward(T* dprobs, const T* f, int64_t rows, int64_t E, double scale);

// The dispatch plan: offsets [E + 1] (expert e owns plan rows offsets[e] .. offsets[e+1]),
// row_token and row_slot [rows·k]: the row and the top-k slot of each plan row.
void moe_plan(int32_t* offsets, int32_t* row_token, int32_t* row_slot, const int32_t* topk,
              int64_t rows, int64_t E, int64_t k);

// xs[i] = x[row_token[i]] for the n plan rows (rows of D).
template <class T>
void moe_gather(T* xs, const T* x, const int32_t* row_token, int64_t n, int64_t D);

// out[row_token[i]] += gates[row_token[i]][row_slot[i]] · ye[i], i = 0..n-1 in order.
template <class T>
void moe_combine_forward(T* out, const T* ye, const int32_t* row_token, const int32_t* row_slot,
                         const T* gates, int64_t n, int64_t D, int64_t k);

// Writes dye[i] = gate · dout[row] and dgates[row][slot] = dout[row] · ye[i].
template <class T>
void moe_combine_backward(T* dye, T* dgates, const T* dout, const T* ye, const int32_t* row_token,
                          const int32_t* row_slot, const T* gates, int64_t n, int64_t D, int64_t k);

// dx[row_token[i]] += dxs[i], i = 0..n-1 in order.
template <class T>
void moe_scatter_add(T* dx, const T* dxs, const int32_t* row_token, int64_t n, int64_t D);

}  // namespace tinylm::kernels
