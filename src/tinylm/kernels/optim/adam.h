#pragma once
// Adam / AdamW updates over flat spans (optim/adam.h keeps the moments and the schedule):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g**2
//   p -= lr * (m / c1) / ((v / c2)**0.5 + eps),   c1 = 1 - b1**t, c2 = 1 - b2**t
// with decoupled weight decay p -= decay * p first (decay = lr * weight_decay). Each element's
// arithmetic is its own, so neither the thread count nor the level changes a bit. The
// gradients are zeroed for the next accumulation.
#include <cstdint>

namespace tinylm::kernels {

struct AdamStep {
  double lr, beta1, beta2, eps;
  double c1, c2;     // the bias corrections 1 - beta**t
  double decay = 0;  // lr * weight_decay (AdamW), 0 for Adam
  // Each gradient is first multiplied by this, rounded to the gradient's type (clipping's
  // factor: the bits of scaling the gradients in a pass of their own first).
  double grad_scale = 1;
};

// The step's scalars as the float update uses them, each rounded once from double (1 - beta
// too: closer to the double formula than 1 - float(beta)). The Vulkan shader takes this struct
// as its push constants, in this order, so the two compute with the same numbers.
struct AdamStepF32 {
  float lr, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, c1, c2, decay, grad_scale;
  explicit AdamStepF32(const AdamStep& s)
      : lr(static_cast<float>(s.lr)),
        beta1(static_cast<float>(s.beta1)),
        one_minus_beta1(static_cast<float>(1 - s.beta1)),
        beta2(static_cast<float>(s.beta2)),
        one_minus_beta2(static_cast<float>(1 - s.beta2)),
        eps(static_cast<float>(s.eps)),
        c1(static_cast<float>(s.c1)),
        c2(static_cast<float>(s.c2)),
        decay(static_cast<float>(s.decay)),
        grad_scale(static_cast<float>(s.grad_scale)) {}
};

// float: each element computed in float (as PyTorch's AdamW is; the formula above, which the
// Vulkan shader computes too) with AdamStepF32's scalars; in chunks split across threads.
void adam_update(float* p, float* g, float* m, float* v, int64_t n, const AdamStep& s);

// double, contract exact: CPython's arithmetic term for term (microgpt.py's Adam), `**` being
// the C library's pow. Fast passes compute g*g and sqrt and divide through exact reciprocals,
// flagging the few elements where pow could round differently (core/py_math.h says when), and
// those are redone with pow. scratch: n doubles; flags: n bytes.
void adam_update_exact(double* p, double* g, double* m, double* v, double* scratch, uint8_t* flags,
                       int64_t n, const AdamStep& s);

}  // namespace tinylm::kernels
