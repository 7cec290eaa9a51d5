// Table cases for mixer/: the causal convolution, the mixture of experts' routing and
// dispatch (moe.h), and EvermindLM's expert (ffn.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "finite_difference.h"
#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/mixer/causal_conv.h"
#include "tinylm/kernels/mixer/causal_conv_reference.h"
#include "tinylm/kernels/mixer/ffn.h"
#include "tinylm/kernels/mixer/moe.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// causal_conv: each output one fused multiply-add chain over the taps, so against
// causal_conv_reference.h run in float, exactly. rows, n = D, k = K (rows < K included).
OpCase causal_conv_case() {
  const auto inputs = [](const Shape& s) {
    return std::tuple{normal_floats(s.rows * s.n, 80), normal_floats(s.k * s.n, 81, 0.5),
                      normal_floats(s.rows * s.n, 82), normal_floats(s.n * s.k, 83)};
  };
  return {
      "causal_conv_f32",
      Contract::row_invariant,
      {{1, 1, 1}, {7, 7, 3}, {20, 16, 5}, {9, 17, 3}, {12, 33, 4}, {5, 40, 1}, {3, 130, 5}},
      [=](const Shape& s) {
        const auto [x, kerT, dy, dker0] = inputs(s);
        const int64_t rows = s.rows, D = s.n, K = s.k;
        Floats y(rows * D), dx(rows * D), dker = dker0;
        causal_conv_forward(y.data(), x.data(), kerT.data(), rows, D, K);
        // incremental decoding: one step per position over the inputs j steps back
        // Structured bindings named in the capture: clang before 16 cannot capture them implicitly.
        const Floats steps = row_by_row(rows, D, [&, &x = x, &kerT = kerT](int64_t t, float* yt) {
          std::vector<const float*> hist;
          for (int64_t j = 0; j < std::min(t + 1, K); ++j) hist.push_back(x.data() + (t - j) * D);
          causal_conv_step(yt, hist.data(), static_cast<int64_t>(hist.size()), kerT.data(), D);
        });
        causal_conv_backward(dx.data(), dker.data(), dy.data(), x.data(), kerT.data(), rows, D, K);
        return std::vector<Out>{out("y", y), out("y_steps", steps, "y"), out("dx", dx),
                                out("dker", dker)};
      },
      [=](const Shape& s) {
        const auto [x, kerT, dy, dker0] = inputs(s);
        Floats y(s.rows * s.n), dx(s.rows * s.n), dker = dker0;
        reference::causal_conv_forward(y.data(), x.data(), kerT.data(), s.rows, s.n, s.k);
        reference::causal_conv_backward(dx.data(), dker.data(), dy.data(), x.data(), kerT.data(),
                                        s.rows, s.n, s.k);
        return std::vector<Want>{exact("y", widen_all(y)), exact("dx", widen_all(dx)),
                                 exact("dker", widen_all(dker))};
      },
      [] {
        const int64_t rows = 9, D = 5, K = 3;
        Vec x = test::random_normal(rows * D, 84), kerT = test::random_normal(K * D, 85, 0.5);
        const Vec probe = test::random_normal(rows * D, 86);
        Vec y(rows * D);
        const auto f = [&] {
          causal_conv_forward(y.data(), x.data(), kerT.data(), rows, D, K);
          return dot(probe, y);
        };
        Vec dx(rows * D), dker(D * K, 0.0), dkerT(K * D);
        causal_conv_backward(dx.data(), dker.data(), probe.data(), x.data(), kerT.data(), rows, D,
                             K);
        for (int64_t j = 0; j < K; ++j) {
          for (int64_t c = 0; c < D; ++c) dkerT[j * D + c] = dker[c * K + j];  // to kerT's layout
        }
        test::expect_gradient(f, x, dx, kGradTol, "dx");
        test::expect_gradient(f, kerT, dkerT, kGradTol, "dker");
        // a step over the last K inputs is the forward's row
        Vec step(D);
        std::vector<const double*> hist;
        for (int64_t j = 0; j < K; ++j) hist.push_back(x.data() + (rows - 1 - j) * D);
        causal_conv_step(step.data(), hist.data(), K, kerT.data(), D);
        f();
        EXPECT_TRUE(std::equal(step.begin(), step.end(), y.begin() + (rows - 1) * D));
      }};
}

// The routing of moe.h, in double: softmax, the top k by descending p (ties to the lower
// index), gates renormalized over the k.
struct Routing {
  Vec probs, gates;
  Ints topk;
};
Routing route(const Vec& z, int64_t rows, int64_t E, int64_t k) {
  Routing r{Vec(z.size()), Vec(rows * k), Ints(rows * k)};
  for (int64_t i = 0; i < rows; ++i) {
    const double mx = *std::max_element(z.begin() + i * E, z.begin() + (i + 1) * E);
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += r.probs[i * E + e] = std::exp(z[i * E + e] - mx);
    for (int64_t e = 0; e < E; ++e) r.probs[i * E + e] /= sum;
    std::vector<int32_t> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return r.probs[i * E + a] > r.probs[i * E + b]; });
    double total = 0;
    for (int64_t s = 0; s < k; ++s) total += r.probs[i * E + order[s]];
    for (int64_t s = 0; s < k; ++s) {
      r.topk[i * k + s] = order[s];
      r.gates[i * k + s] = r.probs[i * E + order[s]] / total;
    }
  }
  return r;
}

// The dispatch plan: (row, slot) pairs by expert, rows ascending within one.
struct Plan {
  Ints offsets, row_token, row_slot;
};
Plan plan_of(const Ints& topk, int64_t rows, int64_t E, int64_t k) {
  Plan p{Ints(E + 1, 0), {}, {}};
  for (int32_t e = 0; e < E; ++e) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t s = 0; s < k; ++s) {
        if (topk[r * k + s] != e) continue;
        p.row_token.push_back(static_cast<int32_t>(r));
        p.row_slot.push_back(static_cast<int32_t>(s));
      }
    }
    p.offsets[e + 1] = static_cast<int32_t>(p.row_token.size());
  }
  return p;
}

// rows, n = D, k = top_k, h = E. Router logits: row 0 all equal (ties), the rest spread. The
// dispatch functions run on a fixed choice of experts and random gates.
struct MoeInputs {
  Floats z, dgates, dprobs, gates, x, ye, out0, dout, dx0, dxs;
  Ints topk;
  Plan plan;
};
MoeInputs moe_inputs(const Shape& s) {
  const int64_t rows = s.rows, D = s.n, k = s.k, E = s.h, n = rows * k;
  MoeInputs in{normal_floats(rows * E, 90, 1.5),
               normal_floats(n, 91),
               normal_floats(rows * E, 92),
               normal_floats(n, 99, 0.5, 0.5),
               normal_floats(rows * D, 93),
               normal_floats(n * D, 94),
               normal_floats(rows * D, 95),
               normal_floats(rows * D, 96),
               normal_floats(rows * D, 97),
               normal_floats(n * D, 98),
               Ints(n),
               {}};
  std::fill(in.z.begin(), in.z.begin() + E, 0.5f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t sl = 0; sl < k; ++sl) in.topk[r * k + sl] = static_cast<int32_t>((r * 3 + sl) % E);
  }
  in.plan = plan_of(in.topk, rows, E, k);
  return in;
}

OpCase moe_case() {
  return {
      "moe_f32",
      Contract::row_invariant,
      {{1, 8, 1, 4}, {7, 17, 2, 4}, {16, 33, 2, 5}, {9, 16, 4, 4}, {5, 130, 3, 6}},
      [](const Shape& s) {
        const MoeInputs in = moe_inputs(s);
        const int64_t rows = s.rows, D = s.n, k = s.k, E = s.h, n = rows * k;
        std::vector<Out> outs;
        // router
        Floats probs = in.z, gates(n), dprobs(rows * E), dlogits(rows * E), dl_in_place = in.dprobs;
        Ints topk(n);
        router_forward(probs.data(), topk.data(), gates.data(), rows, E, k);
        router_gates_backward(dprobs.data(), in.dgates.data(), probs.data(), topk.data(),
                              gates.data(), rows, E, k);
        router_softmax_backward(dlogits.data(), in.dprobs.data(), probs.data(), rows, E);
        router_softmax_backward(dl_in_place.data(), dl_in_place.data(), probs.data(), rows, E);
        Floats f(E), balance = in.dprobs;
        const double aux = load_balance_forward(f.data(), probs.data(), topk.data(), rows, E, k);
        load_balance_backward(balance.data(), f.data(), rows, E, 0.3);
        outs.insert(outs.end(), {out("probs", probs), out("topk", topk), out("gates", gates),
                                 out("dprobs_gates", dprobs), out("dlogits", dlogits),
                                 out("dlogits_in_place", dl_in_place, "dlogits"), out("f", f),
                                 scalar_out("aux", aux), out("dprobs_balance", balance)});
        // dispatch
        Ints offsets(E + 1), row_token(n), row_slot(n);
        moe_plan(offsets.data(), row_token.data(), row_slot.data(), in.topk.data(), rows, E, k);
        const int32_t* tok = in.plan.row_token.data();
        const int32_t* slot = in.plan.row_slot.data();
        Floats xs(n * D), combined = in.out0, dye(n * D), dgates(n), dx = in.dx0;
        moe_gather(xs.data(), in.x.data(), tok, n, D);
        moe_combine_forward(combined.data(), in.ye.data(), tok, slot, in.gates.data(), n, D, k);
        moe_combine_backward(dye.data(), dgates.data(), in.dout.data(), in.ye.data(), tok, slot,
                             in.gates.data(), n, D, k);
        moe_scatter_add(dx.data(), in.dxs.data(), tok, n, D);
        outs.insert(outs.end(),
                    {out("offsets", offsets), out("row_token", row_token),
                     out("row_slot", row_slot), out("xs", xs), out("combined", combined),
                     out("dye", dye), out("dgates", dgates), out("dx", dx)});
        return outs;
      },
      [](const Shape& s) {
        const MoeInputs in = moe_inputs(s);
        const int64_t rows = s.rows, D = s.n, k = s.k, E = s.h, n = rows * k;
        const Routing rt = route(widen_all(in.z), rows, E, k);
        Vec dprobs(rows * E, 0.0), dlogits(rows * E), f(E), balance(rows * E);
        for (int64_t r = 0; r < rows; ++r) {
          double total = 0, gdg = 0, pdp = 0;
          for (int64_t sl = 0; sl < k; ++sl) {
            total += rt.probs[r * E + rt.topk[r * k + sl]];
            gdg += rt.gates[r * k + sl] * in.dgates[r * k + sl];
          }
          for (int64_t sl = 0; sl < k; ++sl)
            dprobs[r * E + rt.topk[r * k + sl]] = (in.dgates[r * k + sl] - gdg) / total;
          for (int64_t e = 0; e < E; ++e) pdp += rt.probs[r * E + e] * in.dprobs[r * E + e];
          for (int64_t e = 0; e < E; ++e)
            dlogits[r * E + e] = rt.probs[r * E + e] * (in.dprobs[r * E + e] - pdp);
        }
        double aux = 0;  // E sum_i f_i P_i
        for (int64_t e = 0; e < E; ++e) {
          f[e] = static_cast<float>(std::count(rt.topk.begin(), rt.topk.end(), e) /
                                    static_cast<double>(n));
          double P = 0;
          for (int64_t r = 0; r < rows; ++r) P += rt.probs[r * E + e];
          aux += f[e] * P / static_cast<double>(rows);
          for (int64_t r = 0; r < rows; ++r)
            balance[r * E + e] = in.dprobs[r * E + e] + 0.3 * static_cast<double>(E) * f[e] / rows;
        }
        aux *= static_cast<double>(E);
        // dispatch: gathers and additions in plan order, one fused multiply-add per element
        Vec xs(n * D), dye(n * D), dgates(n), dgb(n);
        Floats combined = in.out0, dx = in.dx0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t r = in.plan.row_token[i], sl = in.plan.row_slot[i];
          const float g = in.gates[r * k + sl];
          double acc = 0, mag = 0;
          for (int64_t c = 0; c < D; ++c) {
            xs[i * D + c] = in.x[r * D + c];
            combined[r * D + c] = std::fma(g, in.ye[i * D + c], combined[r * D + c]);
            dye[i * D + c] = static_cast<float>(double(g) * in.dout[r * D + c]);
            acc += double(in.dout[r * D + c]) * in.ye[i * D + c];
            mag += std::abs(double(in.dout[r * D + c]) * in.ye[i * D + c]);
            dx[r * D + c] = add_f(dx[r * D + c], in.dxs[i * D + c]);
          }
          dgates[r * k + sl] = acc;
          dgb[r * k + sl] = 1e-6 * mag;
        }
        const Vec ofs(in.plan.offsets.begin(), in.plan.offsets.end()),
            tok(in.plan.row_token.begin(), in.plan.row_token.end()),
            slot(in.plan.row_slot.begin(), in.plan.row_slot.end()),
            topk(rt.topk.begin(), rt.topk.end());
        return std::vector<Want>{near("probs", rt.probs, 1e-6, 1e-9),
                                 exact("topk", topk),
                                 near("gates", rt.gates, 2e-6),
                                 near("dprobs_gates", dprobs, 1e-5, 1e-7 * max_abs(dprobs)),
                                 near("dlogits", dlogits, 1e-5, 1e-6 * max_abs(dlogits)),
                                 exact("f", f),
                                 near("aux", {aux}, 1e-6),
                                 near("dprobs_balance", balance, 1e-6, 1e-7),
                                 exact("offsets", ofs),
                                 exact("row_token", tok),
                                 exact("row_slot", slot),
                                 exact("xs", xs),
                                 exact("combined", widen_all(combined)),
                                 exact("dye", dye),
                                 bounded("dgates", dgates, dgb),
                                 exact("dx", widen_all(dx))};
      },
      [] {
        // Through the router: loss = probe . gates + 0.3 aux, by the logits (the top k
        // fixed: well-separated probabilities).
        const int64_t rows = 5, E = 4, k = 2, D = 3;
        Vec z = test::random_normal(rows * E, 100, 1.5);
        const Vec probe = test::random_normal(rows * k, 101);
        Vec probs(rows * E), gates(rows * k), f(E);
        Ints topk(rows * k);
        const auto loss = [&] {
          probs = z;
          router_forward(probs.data(), topk.data(), gates.data(), rows, E, k);
          return dot(probe, gates) +
                 0.3 * load_balance_forward(f.data(), probs.data(), topk.data(), rows, E, k);
        };
        loss();
        Vec dprobs(rows * E), dz(rows * E);
        router_gates_backward(dprobs.data(), probe.data(), probs.data(), topk.data(), gates.data(),
                              rows, E, k);
        load_balance_backward(dprobs.data(), f.data(), rows, E, 0.3);
        router_softmax_backward(dz.data(), dprobs.data(), probs.data(), rows, E);
        test::expect_gradient(loss, z, dz, kGradTol, "router logits");
        // Combine, by the experts' outputs and the gates; gather, by its input (the scatter).
        const Plan plan = plan_of(topk, rows, E, k);
        const int64_t n = rows * k;
        Vec ye = test::random_normal(n * D, 102), x = test::random_normal(rows * D, 103);
        const Vec pout = test::random_normal(rows * D, 104), pxs = test::random_normal(n * D, 105);
        Vec combined(rows * D), xs(n * D);
        const auto combine = [&] {
          std::fill(combined.begin(), combined.end(), 0.0);
          moe_combine_forward(combined.data(), ye.data(), plan.row_token.data(),
                              plan.row_slot.data(), gates.data(), n, D, k);
          return dot(pout, combined);
        };
        Vec dye(n * D), dgates(n), dx(rows * D, 0.0);
        moe_combine_backward(dye.data(), dgates.data(), pout.data(), ye.data(),
                             plan.row_token.data(), plan.row_slot.data(), gates.data(), n, D, k);
        test::expect_gradient(combine, ye, dye, kGradTol, "combine dye");
        test::expect_gradient(combine, gates, dgates, kGradTol, "combine dgates");
        const auto gather = [&] {
          moe_gather(xs.data(), x.data(), plan.row_token.data(), n, D);
          return dot(pxs, xs);
        };
        moe_scatter_add(dx.data(), pxs.data(), plan.row_token.data(), n, D);
        test::expect_gradient(gather, x, dx, kGradTol, "gather dx");
        // With top_k = E every expert gets every row: f_i = 1 / E and aux = sum_i P_i = 1.
        Vec all(rows * E), g4(rows * E), f4(E);
        Ints t4(rows * E);
        all = z;
        router_forward(all.data(), t4.data(), g4.data(), rows, E, E);
        EXPECT_NEAR(load_balance_forward(f4.data(), all.data(), t4.data(), rows, E, E), 1.0, 1e-12);
      }};
}

// EvermindLM's expert: y = W_down gelu(W_up x). rows = n, n = D, k = H.
OpCase ffn_case() {
  const auto inputs = [](const Shape& s) {
    const int64_t n = s.rows, D = s.n, H = s.k;
    const Floats up = normal_floats(H * D, 111, 0.3), down = normal_floats(D * H, 112, 0.3);
    Floats upT(D * H), downT(H * D);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t d = 0; d < D; ++d) {
        upT[d * H + h] = up[h * D + d];
        downT[h * D + d] = down[d * H + h];
      }
    }
    return std::tuple{normal_floats(n * D, 110),
                      up,
                      down,
                      upT,
                      downT,
                      normal_floats(n * D, 113),
                      normal_floats(H * D, 114),
                      normal_floats(D * H, 115)};
  };
  return {
      "ffn_f32",
      Contract::row_invariant,
      {{1, 8, 12}, {7, 17, 33}, {5, 64, 128}, {3, 16, 40}},
      [=](const Shape& s) {
        const auto [x, up, down, upT, downT, dy, dup0, ddown0] = inputs(s);
        const int64_t n = s.rows, D = s.n, H = s.k;
        Floats y(n * D), h(n * H), a(n * H), dx(n * D), dup = dup0, ddown = ddown0, scratch(n * H);
        ffn_forward(y.data(), h.data(), a.data(), x.data(), upT.data(), downT.data(), n, D, H);
        Floats hr(H), ar(H);
        // Structured bindings named in the capture: clang before 16 cannot capture them implicitly.
        const Floats alone =
            row_by_row(n, D, [&, &x = x, &upT = upT, &downT = downT](int64_t r, float* yr) {
              ffn_forward(yr, hr.data(), ar.data(), x.data() + r * D, upT.data(), downT.data(), 1,
                          D, H);
            });
        ffn_backward(dx.data(), dup.data(), ddown.data(), scratch.data(), dy.data(), x.data(),
                     h.data(), a.data(), up.data(), down.data(), n, D, H);
        return std::vector<Out>{out("y", y),        out("y_row_by_row", alone, "y"),
                                out("h", h),        out("a", a),
                                out("dx", dx),      out("dup", dup),
                                out("ddown", ddown)};
      },
      [=](const Shape& s) {
        const auto [xf, upf, downf, upTf, downTf, dyf, dup0f, ddown0f] = inputs(s);
        const int64_t n = s.rows, D = s.n, H = s.k;
        const Vec x = widen_all(xf), up = widen_all(upf), down = widen_all(downf),
                  upT = widen_all(upTf), downT = widen_all(downTf), dy = widen_all(dyf),
                  dup0 = widen_all(dup0f), ddown0 = widen_all(ddown0f);
        Vec y(n * D), h(n * H), a(n * H), dx(n * D), dup = dup0, ddown = ddown0, scratch(n * H);
        ffn_forward(y.data(), h.data(), a.data(), x.data(), upT.data(), downT.data(), n, D, H);
        ffn_backward(dx.data(), dup.data(), ddown.data(), scratch.data(), dy.data(), x.data(),
                     h.data(), a.data(), up.data(), down.data(), n, D, H);
        return std::vector<Want>{near_max("y", y, 2e-6),
                                 near_max("h", h, 1e-6),
                                 near_max("a", a, 1e-6),
                                 near_max("dx", dx, 2e-6),
                                 near_change("dup", dup, dup0, 2e-6),
                                 near_change("ddown", ddown, ddown0, 2e-6)};
      },
      [] {
        const int64_t n = 3, D = 5, H = 7;
        Vec x = test::random_normal(n * D, 116), up = test::random_normal(H * D, 117, 0.5),
            down = test::random_normal(D * H, 118, 0.5);
        const Vec probe = test::random_normal(n * D, 119);
        Vec upT(D * H), downT(H * D), y(n * D), h(n * H), a(n * H);
        const auto f = [&] {
          for (int64_t i = 0; i < H; ++i) {
            for (int64_t d = 0; d < D; ++d) {
              upT[d * H + i] = up[i * D + d];
              downT[i * D + d] = down[d * H + i];
            }
          }
          ffn_forward(y.data(), h.data(), a.data(), x.data(), upT.data(), downT.data(), n, D, H);
          return dot(probe, y);
        };
        f();
        Vec dx(n * D), dup(H * D, 0.0), ddown(D * H, 0.0), scratch(n * H);
        ffn_backward(dx.data(), dup.data(), ddown.data(), scratch.data(), probe.data(), x.data(),
                     h.data(), a.data(), up.data(), down.data(), n, D, H);
        test::expect_gradient(f, x, dx, kGradTol, "dx");
        test::expect_gradient(f, up, dup, kGradTol, "dup");
        test::expect_gradient(f, down, ddown, kGradTol, "ddown");
      }};
}

std::vector<OpCase> mixer_cases() { return {causal_conv_case(), moe_case(), ffn_case()}; }

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(mixer_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
