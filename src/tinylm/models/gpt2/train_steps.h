#pragma once
// GPT-2's training forward and backward, written once against a backend (backend/cpu.h says what
// one provides): the arrays it plans, the ops it runs and their order. trainer.cpp runs it on the
// CPU backend, over host memory. Internal to models/gpt2/.
#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinylm/core/arena.h"
#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/cpu/half.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/models/gpt2/tensors.h"
#include "tinylm/models/gpt2/trainer.h"

namespace tinylm::gpt2 {

using kernels::Bf16;
using kernels::Trans;

// Offsets of one block's tensors in the flat parameter (and gradient) buffer.
using BlockOffsets = Block<size_t, size_t>;

// A matrix-product operand: T values (f32, or f16-rounded floats in f16 mode, or double), or
// their bf16 copy in bf16 mode.
template <class F, class H>
struct Operand {
  F f{};
  H h{};
  Operand offset(size_t n) const { return {f ? f + n : F{}, h ? h + n : H{}}; }
};

template <class T, class Be>
struct TrainSteps {
  template <class U>
  using Array = typename Be::template Array<U>;
  using Planner = typename Be::Planner;
  using Arena = typename Be::Arena;
  using Operand = gpt2::Operand<Array<const T>, Array<const Bf16>>;
  // Whether products may take bf16 operands (a backend with a native bf16 product).
  static constexpr bool kHalfOperands = std::is_same_v<T, float> && Be::kBf16Operands;

  Config config;
  TrainerOptions options;
  ParamLayout layout;
  int64_t B, Tn, BT, C, C3, F, V, H, L;
  size_t wte, wpe, lnf_w, lnf_b;
  std::vector<BlockOffsets> blocks;
  TrainerProfile prof;
  Be be;

  // Saved by the forward.
  struct Layer {
    Array<T> ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fchg,
        res3;
    Array<uint8_t> mask_attn, mask_mlp;
    // Half copies of the matrix-product inputs (bf16 mode: h; f16 mode: r).
    Array<Bf16> ln1_h, atty_h, ln2_h, fchg_h;
    Array<T> ln1_r, atty_r, ln2_r, fchg_r;
  };
  std::vector<Layer> layers;
  Array<T> enc, lnf, lnf_mean, lnf_rstd, logits, lse, losses, proj, attn_scratch;
  Array<uint8_t> mask_enc;
  Array<Bf16> lnf_h, dlogits_h, dy_h, weights_h;
  Array<T> lnf_r, dy_r, weights_r;
  // Backward scratch.
  Array<T> dres, dln, dqkv, datty, dfch, dproj;
  Array<int32_t> inputs, targets;
  Arena arena;
  size_t planned_bytes = 0, largest_block = 0;  // the activations' plan

  // The last forward's parameters and their per-step half copy.
  Array<const T> params{};
  bool have_forward = false;
  bool native_bf16 = false;  // bf16 compute on a CPU with a bf16 gemm
  bool accumulate = true;    // the running backward's gradient mode
  float rate = 0.0f;         // the dropout rate of the last forward (its masks are saved)

  // allocate false: the plan is counted (planned_bytes, largest_block) but no arena is made.
  TrainSteps(const Config& c, TrainerOptions o, Be backend = {}, bool allocate = true)
      : config(c), options(o), layout(param_layout(c, Be::kParamAlign)), be(std::move(backend)) {
    check(o.batch_size >= 1, "gpt2 trainer: batch_size must be positive, got ", o.batch_size);
    check(o.seq_len >= 1 && o.seq_len <= c.n_positions, "gpt2 trainer: seq_len must be in [1, ",
          c.n_positions, "] (n_positions), got ", o.seq_len);
    check_dropout(o.dropout);
    check(o.compute == DType::f32 || o.compute == DType::bf16 || o.compute == DType::f16,
          "gpt2 trainer: compute dtype must be f32, bf16 or f16, got ", dtype_name(o.compute));
    check(std::is_same_v<T, float> || o.compute == DType::f32,
          "gpt2 trainer: the double-precision trainer computes in f32 only");
    if constexpr (kHalfOperands) native_bf16 = o.compute == DType::bf16 && be.bf16_gemm_is_native();
    B = o.batch_size;
    Tn = o.seq_len;
    BT = B * Tn;
    C = c.n_embd;
    C3 = 3 * C;
    F = c.mlp_dim();
    V = c.vocab_size;
    H = c.n_head;
    L = c.n_layer;
    const Offsets offsets = param_offsets(c, Be::kParamAlign);
    wte = offsets.wte;
    wpe = offsets.wpe;
    lnf_w = offsets.lnf_w;
    lnf_b = offsets.lnf_b;
    blocks = offsets.layers;
    layers.resize(static_cast<size_t>(L));
    Planner count;
    plan(count);
    planned_bytes = count.bytes;
    largest_block = count.largest;
    if (!allocate) return;
    arena = be.make_arena(count.bytes);
    Planner real{&arena};
    plan(real);
  }

  static void check_dropout(float rate) {
    check(rate >= 0.0f && rate < 1.0f, "gpt2 trainer: dropout rate must be in [0, 1), got ", rate);
  }

  // How matrix-product operands are held: as bf16 (the native bf16 gemm), or as f32 values
  // rounded to f16 or bf16 (f16 compute; bf16 compute where the CPU has no bf16 gemm, which
  // multiplies the same values without widening its operands on every call).
  bool halves() const { return native_bf16; }
  bool rounded() const {
    return options.compute == DType::f16 || (options.compute == DType::bf16 && !native_bf16);
  }
  bool f16() const { return options.compute == DType::f16; }
  void round_operand(Array<T> dst, Array<const T> src, int64_t n) const {
    if constexpr (std::is_same_v<T, float>) {
      if (f16())
        be.round_to_f16(dst, src, n);
      else
        be.round_to_bf16(dst, src, n);
    }
  }

  void plan(Planner& p) {
    const auto n = [](int64_t v) { return static_cast<size_t>(v); };
    const bool hb = halves(), hr = rounded();
    const size_t BTC = n(BT * C);
    for (Layer& y : layers) {
      y.ln1 = p.template alloc<T>(BTC);
      y.ln1_mean = p.template alloc<T>(n(BT));
      y.ln1_rstd = p.template alloc<T>(n(BT));
      y.qkv = p.template alloc<T>(n(BT * C3));
      y.att = p.template alloc<T>(n(B * H * Tn * Tn));
      y.atty = p.template alloc<T>(BTC);
      y.res2 = p.template alloc<T>(BTC);
      y.ln2 = p.template alloc<T>(BTC);
      y.ln2_mean = p.template alloc<T>(n(BT));
      y.ln2_rstd = p.template alloc<T>(n(BT));
      y.fch = p.template alloc<T>(n(BT * F));
      y.fchg = p.template alloc<T>(n(BT * F));
      y.res3 = p.template alloc<T>(BTC);
      y.mask_attn = p.template alloc<uint8_t>(BTC);
      y.mask_mlp = p.template alloc<uint8_t>(BTC);
      y.ln1_h = p.template alloc<Bf16>(hb ? BTC : 0);
      y.atty_h = p.template alloc<Bf16>(hb ? BTC : 0);
      y.ln2_h = p.template alloc<Bf16>(hb ? BTC : 0);
      y.fchg_h = p.template alloc<Bf16>(hb ? n(BT * F) : 0);
      y.ln1_r = p.template alloc<T>(hr ? BTC : 0);
      y.atty_r = p.template alloc<T>(hr ? BTC : 0);
      y.ln2_r = p.template alloc<T>(hr ? BTC : 0);
      y.fchg_r = p.template alloc<T>(hr ? n(BT * F) : 0);
    }
    enc = p.template alloc<T>(BTC);
    mask_enc = p.template alloc<uint8_t>(BTC);
    lnf = p.template alloc<T>(BTC);
    lnf_mean = p.template alloc<T>(n(BT));
    lnf_rstd = p.template alloc<T>(n(BT));
    logits = p.template alloc<T>(n(BT * V));
    lse = p.template alloc<T>(n(BT));
    losses = p.template alloc<T>(n(BT));
    proj = p.template alloc<T>(BTC);
    attn_scratch = p.template alloc<T>(n(be.causal_attention_scratch_size(B, Tn, C, H)));
    const size_t widest = n(BT * std::max({C3, F, C}));
    lnf_h = p.template alloc<Bf16>(hb ? BTC : 0);
    dlogits_h = p.template alloc<Bf16>(hb ? n(BT * V) : 0);
    dy_h = p.template alloc<Bf16>(hb ? widest : 0);
    weights_h = p.template alloc<Bf16>(hb ? layout.size() : 0);
    lnf_r = p.template alloc<T>(hr ? BTC : 0);
    dy_r = p.template alloc<T>(hr ? widest : 0);
    weights_r = p.template alloc<T>(hr ? layout.size() : 0);
    dres = p.template alloc<T>(BTC);
    dln = p.template alloc<T>(BTC);
    dqkv = p.template alloc<T>(n(BT * C3));
    datty = p.template alloc<T>(BTC);
    dfch = p.template alloc<T>(n(BT * F));
    dproj = p.template alloc<T>(BTC);
    inputs = p.template alloc<int32_t>(n(BT));
    targets = p.template alloc<int32_t>(n(BT));
  }

  // x as a matrix-product operand: itself in f32, else rounded into the given half buffer.
  Operand operand(Array<const T> x, int64_t count, Array<Bf16> h, Array<T> r) {
    if constexpr (kHalfOperands) {
      if (halves()) {
        be.convert(x, h, count);
        return {{}, h};
      }
    }
    if constexpr (std::is_same_v<T, float>) {
      if (rounded()) {
        round_operand(r, x, count);
        return {r, {}};
      }
    }
    (void)count, (void)h, (void)r;
    return {x, {}};
  }

  // The weights as operands (the per-step half copy, or the parameters themselves).
  Operand weights() const {
    if (halves()) return {{}, weights_h};
    if (rounded()) return {weights_r, {}};
    return {params, {}};
  }

  // C = op(A) op(B) + beta C.
  void mm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, Operand A, int64_t lda, Operand Bm,
          int64_t ldb, T beta, Array<T> Cm, int64_t ldc) {
    const Timer timer;
    if constexpr (kHalfOperands) {
      if (A.h) {
        be.gemm(ta, tb, M, N, K, 1.0f, A.h, lda, Bm.h, ldb, beta, Cm, ldc);
        prof.gemm_ms += timer.elapsed_ms();
        return;
      }
    }
    be.gemm(ta, tb, M, N, K, T(1), A.f, lda, Bm.f, ldb, beta, Cm, ldc);
    prof.gemm_ms += timer.elapsed_ms();
  }

  // y = x W + b for a Conv1D weight at offset w (nin x nout) and bias at offset b (without
  // biases, b is zero and not added).
  void linear(Array<T> y, Operand x, size_t w, size_t b, int64_t nin, int64_t nout) {
    mm(Trans::No, Trans::No, BT, nout, nin, x, nin, weights().offset(w), nout, T(0), y, nout);
    if (options.biases) be.add_bias(y, params + b, BT, nout);
  }

  // Backward of linear(): dx = dy W^T (written); dW (+)= x^T dy; db (+)= colsum(dy) (without
  // biases, hold_biases sets db to zero).
  void linear_backward(Array<T> dx, Array<T> grads, Array<const T> dy, Operand dy_op, Operand x,
                       size_t w, size_t b, int64_t nin, int64_t nout) {
    mm(Trans::No, Trans::Yes, BT, nin, nout, dy_op, nout, weights().offset(w), nout, T(0), dx, nin);
    mm(Trans::Yes, Trans::No, nin, nout, BT, x, nin, dy_op, nout, accumulate ? T(1) : T(0),
       grads + w, nout);
    if (!options.biases) return;
    if (!accumulate) be.zero(grads + b, nout);
    be.bias_backward(grads + b, dy, BT, nout);
  }

  // Overwrite mode: a small tensor's gradient zeroed before its kernel accumulates into it.
  void clear_small(Array<T> g, size_t offset, int64_t n) {
    if (!accumulate) be.zero(g + offset, n);
  }

  // Without biases (options.biases false) a block's bias gradients are zero, in either mode:
  // set before the block's range is handed on, so zero biases stay zero.
  void hold_biases(Array<T> g, const BlockOffsets& o) {
    if (options.biases) return;
    const std::pair<size_t, int64_t> biases[] = {{o.ln1_b, C}, {o.attn_b, C3}, {o.proj_b, C},
                                                 {o.ln2_b, C}, {o.fc_b, F},    {o.fc_proj_b, C}};
    for (const auto& [offset, n] : biases) be.zero(g + offset, n);
  }

  // A [B, T, C] site's masks: rows counted from key.first_row, so a shard of a batch draws
  // its rows' share of the whole batch's masks.
  kernels::DropoutSite dropout_site(DropoutKey key, uint32_t site) const {
    return {key.seed, key.step, site, static_cast<uint64_t>(key.first_row) * Tn * C};
  }

  // Block l's attention weights, [B, H, T, T]: the sites after the [B, T, C] ones.
  kernels::DropoutSite attention_site(DropoutKey key, int64_t l) const {
    return {key.seed, key.step, static_cast<uint32_t>(1 + 2 * L + l),
            static_cast<uint64_t>(key.first_row) * H * Tn * Tn};
  }

  // res_out = res_in + dropout(proj) at the given site.
  void residual(Array<T> res_out, Array<const T> res_in, Array<uint8_t> mask, uint32_t site,
                DropoutKey key) {
    const int64_t n = BT * C;
    if (rate > 0.0f) {
      be.dropout_forward(proj, mask, proj, n, rate, dropout_site(key, site));
    }
    be.add(res_out, res_in, proj, BT, C);
  }

  // The batch's mean loss; p: the parameters (count of them, checked).
  T forward(Array<const T> p, size_t count, std::span<const int32_t> in,
            std::span<const int32_t> tg, DropoutKey key) {
    check(count == layout.size(), "gpt2 trainer: ", count, " parameters given, the model has ",
          layout.size());
    check(in.size() == static_cast<size_t>(BT) && tg.size() == static_cast<size_t>(BT),
          "gpt2 trainer: inputs and targets must hold batch_size x seq_len = ", BT, " ids, got ",
          in.size(), " and ", tg.size());
    for (int64_t i = 0; i < BT; ++i) {
      check(in[i] >= 0 && in[i] < V, "gpt2 trainer: input id ", in[i], " at ", i,
            " is outside the vocabulary [0, ", V, ")");
      check(tg[i] >= 0 && tg[i] < V, "gpt2 trainer: target id ", tg[i], " at ", i,
            " is outside the vocabulary [0, ", V, ")");
    }
    const Timer timer;
    be.copy_in(inputs, in);
    be.copy_in(targets, tg);
    params = p;
    if constexpr (std::is_same_v<T, float>) {
      const Timer cast_timer;
      if constexpr (kHalfOperands) {
        if (halves()) be.convert(params, weights_h, static_cast<int64_t>(layout.size()));
      }
      if (rounded()) round_operand(weights_r, params, static_cast<int64_t>(layout.size()));
      prof.cast_ms += cast_timer.elapsed_ms();
    }
    rate = options.dropout;
    be.embedding_forward(enc, inputs, params + wte, V, params + wpe, BT, C, 0, Tn);
    if (rate > 0.0f) be.dropout_forward(enc, mask_enc, enc, BT * C, rate, dropout_site(key, 0));
    Array<const T> x = enc;
    const T eps = static_cast<T>(config.layer_norm_epsilon);
    for (int64_t l = 0; l < L; ++l) {
      Layer& y = layers[static_cast<size_t>(l)];
      const BlockOffsets& o = blocks[static_cast<size_t>(l)];
      const uint32_t site = static_cast<uint32_t>(1 + 2 * l);
      be.layernorm_forward(y.ln1, y.ln1_mean, y.ln1_rstd, x, params + o.ln1_w, params + o.ln1_b, BT,
                           C, eps);
      linear(y.qkv, operand(y.ln1, BT * C, y.ln1_h, y.ln1_r), o.attn_w, o.attn_b, C, C3);
      be.causal_attention_forward(y.atty, y.att, y.qkv, attn_scratch, B, Tn, C, H, rate,
                                  attention_site(key, l));
      linear(proj, operand(y.atty, BT * C, y.atty_h, y.atty_r), o.proj_w, o.proj_b, C, C);
      residual(y.res2, x, y.mask_attn, site, key);
      be.layernorm_forward(y.ln2, y.ln2_mean, y.ln2_rstd, y.res2, params + o.ln2_w,
                           params + o.ln2_b, BT, C, eps);
      linear(y.fch, operand(y.ln2, BT * C, y.ln2_h, y.ln2_r), o.fc_w, o.fc_b, C, F);
      be.gelu_forward(y.fchg, y.fch, BT * F);
      linear(proj, operand(y.fchg, BT * F, y.fchg_h, y.fchg_r), o.fc_proj_w, o.fc_proj_b, F, C);
      residual(y.res3, y.res2, y.mask_mlp, site + 1, key);
      x = y.res3;
    }
    be.layernorm_forward(lnf, lnf_mean, lnf_rstd, x, params + lnf_w, params + lnf_b, BT, C, eps);
    // Tied head: logits = lnf wte^T.
    mm(Trans::No, Trans::Yes, BT, V, C, operand(lnf, BT * C, lnf_h, lnf_r), C,
       weights().offset(wte), C, T(0), logits, V);
    const double total = be.cross_entropy_forward(losses, lse, logits, targets, BT, V);
    have_forward = true;
    ++prof.steps;
    prof.forward_ms += timer.elapsed_ms();
    return static_cast<T>(total / static_cast<double>(BT));
  }

  // g (count of them, checked) += or = the gradient of loss_scale times the last forward's loss.
  void backward(Array<T> g, size_t count, float loss_scale, bool accumulate_grads,
                const GradDone& done) {
    check(have_forward, "gpt2 trainer: backward() needs a forward() first (once per forward)");
    check(count == layout.size(), "gpt2 trainer: ", count, " gradients given, the model has ",
          layout.size());
    have_forward = false;
    accumulate = accumulate_grads;
    const Timer timer;
    // d(scale * mean loss) / dlogits, over the logits.
    const T s = static_cast<T>(static_cast<double>(loss_scale) / static_cast<double>(BT));
    Operand dlog{logits, {}};
    if constexpr (kHalfOperands) {
      if (halves()) {
        be.cross_entropy_backward(dlogits_h, logits, lse, targets, BT, V, s);
        dlog = {{}, dlogits_h};
      }
    }
    if (!halves()) {
      be.cross_entropy_backward(logits, logits, lse, targets, BT, V, s);
      if (rounded()) dlog = operand(logits, BT * V, {}, logits);
    }
    // Head: dlnf = dlogits wte;  dwte += dlogits^T lnf.
    const Operand lnf_op = halves() ? Operand{{}, lnf_h} : Operand{rounded() ? lnf_r : lnf, {}};
    mm(Trans::No, Trans::No, BT, C, V, dlog, V, weights().offset(wte), C, T(0), dln, C);
    mm(Trans::Yes, Trans::No, V, C, BT, dlog, V, lnf_op, C, accumulate ? T(1) : T(0), g + wte, C);
    be.zero(dres, BT * C);
    clear_small(g, lnf_w, C);
    clear_small(g, lnf_b, C);
    Array<const T> x_last = L > 0 ? layers.back().res3 : enc;
    be.layernorm_backward(dres, g + lnf_w, g + lnf_b, dln, x_last, params + lnf_w, lnf_mean,
                          lnf_rstd, BT, C);
    // The layout holds the embeddings, the blocks in order, then ln_f, each block contiguous.
    const auto block_begin = [&](int64_t l) {
      return l < L ? blocks[static_cast<size_t>(l)].ln1_w : lnf_w;
    };
    if (!options.biases) be.zero(g + lnf_b, C);
    if (done) done(lnf_w, layout.size());
    for (int64_t l = L - 1; l >= 0; --l) {
      Layer& y = layers[static_cast<size_t>(l)];
      const BlockOffsets& o = blocks[static_cast<size_t>(l)];
      Array<const T> x_in = l == 0 ? enc : layers[static_cast<size_t>(l - 1)].res3;
      // MLP: the residual passes dres through; the branch gets dropout's backward of it.
      Array<const T> dp = dres;
      if (rate > 0.0f) {
        be.dropout_backward(dproj, dres, y.mask_mlp, BT * C, rate);
        dp = dproj;
      }
      linear_backward(dfch, g, dp, operand(dp, BT * C, dy_h, dy_r),
                      half_op(y.fchg, y.fchg_h, y.fchg_r), o.fc_proj_w, o.fc_proj_b, F, C);
      be.gelu_backward(dfch, dfch, y.fch, BT * F);
      linear_backward(dln, g, dfch, operand(dfch, BT * F, dy_h, dy_r),
                      half_op(y.ln2, y.ln2_h, y.ln2_r), o.fc_w, o.fc_b, C, F);
      clear_small(g, o.ln2_w, C);
      clear_small(g, o.ln2_b, C);
      be.layernorm_backward(dres, g + o.ln2_w, g + o.ln2_b, dln, y.res2, params + o.ln2_w,
                            y.ln2_mean, y.ln2_rstd, BT, C);
      // Attention.
      dp = dres;
      if (rate > 0.0f) {
        be.dropout_backward(dproj, dres, y.mask_attn, BT * C, rate);
        dp = dproj;
      }
      linear_backward(datty, g, dp, operand(dp, BT * C, dy_h, dy_r),
                      half_op(y.atty, y.atty_h, y.atty_r), o.proj_w, o.proj_b, C, C);
      be.causal_attention_backward(dqkv, datty, y.att, y.qkv, attn_scratch, B, Tn, C, H, rate);
      linear_backward(dln, g, dqkv, operand(dqkv, BT * C3, dy_h, dy_r),
                      half_op(y.ln1, y.ln1_h, y.ln1_r), o.attn_w, o.attn_b, C, C3);
      clear_small(g, o.ln1_w, C);
      clear_small(g, o.ln1_b, C);
      be.layernorm_backward(dres, g + o.ln1_w, g + o.ln1_b, dln, x_in, params + o.ln1_w, y.ln1_mean,
                            y.ln1_rstd, BT, C);
      hold_biases(g, o);
      if (done) done(block_begin(l), block_begin(l + 1));
    }
    if (rate > 0.0f) be.dropout_backward(dres, dres, mask_enc, BT * C, rate);
    clear_small(g, wpe, static_cast<int64_t>(config.n_positions) * C);  // rows >= seq_len stay 0
    be.embedding_backward(g + wte, V, g + wpe, dres, inputs, BT, C, Tn);
    if (done) done(0, block_begin(0));
    prof.backward_ms += timer.elapsed_ms();
  }

  // A saved matrix-product input as an operand (its half copy in the half modes).
  Operand half_op(Array<const T> f, Array<const Bf16> h, Array<const T> r) const {
    if (halves()) return {{}, h};
    if (rounded()) return {r, {}};
    return {f, {}};
  }
};

}  // namespace tinylm::gpt2
