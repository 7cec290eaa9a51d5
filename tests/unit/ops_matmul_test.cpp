// Table cases for matmul/: microgpt's linear layer (exact.h), small.h's products, the
// streamed products of stream.h (and its tiles layout), bias.h, and oneDNN's gemm.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "finite_difference.h"
#include "ops_table.h"
#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/kernels/matmul/bias.h"
#include "tinylm/kernels/matmul/exact.h"
#include "tinylm/kernels/matmul/exact_reference.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/matmul/small.h"
#include "tinylm/kernels/matmul/small_reference.h"
#include "tinylm/kernels/matmul/stream.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// microgpt's linear layer (matmul/exact.h): rows, n = nin, k = nout; nin not a multiple of 8
// takes the plain loops.
const std::vector<Shape> kLinearShapes = {{1, 16, 16}, {7, 16, 64}, {7, 64, 16}, {5, 16, 27},
                                          {3, 12, 5},  {4, 8, 9},   {2, 32, 3},  {3, 17, 33}};

OpCase linear_forward_case() {
  return {
      "linear_forward_f64",
      Contract::exact,
      kLinearShapes,
      [](const Shape& s) {
        const Vec x = test::random_normal(s.rows * s.n, 1), w = test::random_normal(s.k * s.n, 2);
        Vec wt(s.n * padded_width(s.k)), y(s.rows * s.k);
        transpose_padded(wt.data(), w.data(), s.k, s.n);
        linear_forward_packed(y.data(), x.data(), wt.data(), s.rows, s.n, s.k);
        return std::vector<Out>{out("y", y)};
      },
      [](const Shape& s) {
        const Vec x = test::random_normal(s.rows * s.n, 1), w = test::random_normal(s.k * s.n, 2);
        Vec y(s.rows * s.k);
        for (int64_t r = 0; r < s.rows; ++r) {
          for (int64_t o = 0; o < s.k; ++o) {  // sum(wi * xi for wi, xi in zip(w, x))
            double acc = 0.0;
            for (int64_t i = 0; i < s.n; ++i) acc += w[o * s.n + i] * x[r * s.n + i];
            y[r * s.k + o] = acc;
          }
        }
        Vec header(y.size());  // exact_reference.h defines the same sums
        reference::linear_forward(header.data(), x.data(), w.data(), s.rows, s.n, s.k);
        EXPECT_EQ(header, y);
        return std::vector<Want>{exact("y", y)};
      },
      nullptr};
}

OpCase linear_backward_case() {
  const auto inputs = [](const Shape& s) {
    return std::tuple{test::random_normal(s.rows * s.n, 3), test::random_normal(s.k * s.n, 4),
                      test::random_normal(s.rows * s.k, 5), test::random_normal(s.rows * s.n, 6),
                      test::random_normal(s.k * s.n, 7)};
  };
  return {"linear_backward_f64",
          Contract::exact,
          kLinearShapes,
          [=](const Shape& s) {
            const auto [x, w, dy, dx0, dw0] = inputs(s);
            Vec dx = dx0, dw = dw0;
            linear_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), s.rows, s.n, s.k);
            return std::vector<Out>{out("dx", dx), out("dw", dw)};
          },
          [=](const Shape& s) {
            const auto [x, w, dy, dx0, dw0] = inputs(s);
            Vec dx = dx0, dw = dw0;
            reference::linear_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), s.rows,
                                       s.n, s.k);
            return std::vector<Want>{exact("dx", dx), exact("dw", dw)};
          },
          [] {
            for (const Shape& s : kLinearShapes) {
              SCOPED_TRACE(describe(s));
              Vec x = test::random_normal(s.rows * s.n, 8), w = test::random_normal(s.k * s.n, 9);
              const Vec probe = test::random_normal(s.rows * s.k, 10);  // loss = sum(probe * y)
              Vec y(s.rows * s.k), dx(s.rows * s.n, 0.0), dw(s.k * s.n, 0.0);
              const auto loss = [&] {
                reference::linear_forward(y.data(), x.data(), w.data(), s.rows, s.n, s.k);
                return dot(probe, y);
              };
              reference::linear_backward(dx.data(), dw.data(), probe.data(), x.data(), w.data(),
                                         s.rows, s.n, s.k);
              test::expect_gradient(loss, x, dx, {.abs = 1e-6}, "dx", {.stride = 3});
              test::expect_gradient(loss, w, dw, {.abs = 1e-6}, "dw", {.stride = 5});
            }
          }};
}

// matmul/small.h: M = rows, N = n, K = k; h = 1 accumulates. Around the tiles (3 or 6 rows,
// 1-4 vectors of 16), K past the 256 block, K = 0.
const std::vector<Shape> kSmallGemmShapes = [] {
  std::vector<Shape> v;
  for (const Shape& s : std::vector<Shape>{{1, 1, 1},
                                           {7, 5, 3},
                                           {6, 64, 64},
                                           {13, 33, 17},
                                           {44, 128, 64},
                                           {5, 100, 300},
                                           {70, 8, 520},
                                           {3, 4, 0},
                                           {4, 130, 7}}) {
    v.push_back(s);
    v.push_back({s.rows, s.n, s.k, 1});
  }
  return v;
}();

// Padded strides: lda = (trans ? M : K) + 1, ldb = N + 2, ldc = N + 3.
template <class T>
struct SmallGemm {
  int64_t lda, ldb, ldc;
  std::vector<T> A, B, C;
};
template <class T>
SmallGemm<T> small_gemm_inputs(const Shape& s, bool trans) {
  const int64_t M = s.rows, N = s.n, K = s.k;
  SmallGemm<T> g{(trans ? M : K) + 1, N + 2, N + 3, {}, {}, {}};
  // doubles with all 53 bits (products of floats would be exact, and the chain trivial)
  const auto values = [](int64_t n, uint32_t seed) {
    if constexpr (std::is_same_v<T, double>) {
      return test::random_normal(n, seed);
    } else {
      return test::random_uniform(n, seed);
    }
  };
  const auto a = values((trans ? K : M) * g.lda + 1, 1), b = values(K * g.ldb + 1, 2),
             c = values(M * g.ldc + 1, 3);
  g.A.assign(a.begin(), a.end());
  g.B.assign(b.begin(), b.end());
  g.C.assign(c.begin(), c.end());
  return g;
}

OpCase small_gemm_case(bool trans) {
  const auto gemm = [=](const Shape& s, const float* A, int64_t lda, const float* B, int64_t ldb,
                        float* C, int64_t ldc, int64_t M) {
    if (trans) {
      gemm_tn(M, s.n, s.k, A, lda, B, ldb, C, ldc, s.h != 0);
    } else {
      gemm_nn(M, s.n, s.k, A, lda, B, ldb, C, ldc, s.h != 0);
    }
  };
  return {trans ? "gemm_tn_f32" : "gemm_nn_f32",
          Contract::single_chain,
          kSmallGemmShapes,
          [=](const Shape& s) {
            SmallGemm<float> g = small_gemm_inputs<float>(s, trans);
            Floats C = g.C;  // the whole buffer: padding must stay as it was
            gemm(s, g.A.data(), g.lda, g.B.data(), g.ldb, C.data(), g.ldc, s.rows);
            std::vector<Out> outs{out("C", C)};
            if (s.rows > 0) {  // the last row alone: the same bits as inside the batch
              const int64_t r = s.rows - 1;
              Floats row = g.C;
              gemm(s, g.A.data() + r * (trans ? 1 : g.lda), g.lda, g.B.data(), g.ldb,
                   row.data() + r * g.ldc, g.ldc, 1);
              std::copy(C.begin(), C.begin() + r * g.ldc, row.begin());
              outs.push_back(out("C_last_row_alone", row, "C"));
            }
            return outs;
          },
          [=](const Shape& s) {
            SmallGemm<float> g = small_gemm_inputs<float>(s, trans);
            // one float fused multiply-add chain per element (small_reference.h)
            reference::small_gemm(trans, s.rows, s.n, s.k, g.A.data(), g.lda, g.B.data(), g.ldb,
                                  g.C.data(), g.ldc, s.h != 0);
            return std::vector<Want>{exact("C", widen_all(g.C))};
          },
          nullptr};
}

// The double overloads (the reference) against plain products without fused multiply-adds.
OpCase small_gemm_f64_case() {
  return {"gemm_small_f64",
          Contract::exact,
          kSmallGemmShapes,
          [](const Shape& s) {
            std::vector<Out> outs;
            for (bool trans : {false, true}) {
              SmallGemm<double> g = small_gemm_inputs<double>(s, trans);
              if (trans) {
                gemm_tn(s.rows, s.n, s.k, g.A.data(), g.lda, g.B.data(), g.ldb, g.C.data(), g.ldc,
                        s.h != 0);
              } else {
                gemm_nn(s.rows, s.n, s.k, g.A.data(), g.lda, g.B.data(), g.ldb, g.C.data(), g.ldc,
                        s.h != 0);
              }
              outs.push_back(out(trans ? "C_tn" : "C_nn", g.C));
            }
            return outs;
          },
          [](const Shape& s) {
            std::vector<Want> wants;
            for (bool trans : {false, true}) {
              SmallGemm<double> g = small_gemm_inputs<double>(s, trans);
              Vec C = g.C;
              for (int64_t i = 0; i < s.rows; ++i) {
                for (int64_t j = 0; j < s.n; ++j) {
                  double acc = s.h ? g.C[i * g.ldc + j] : 0.0;
                  for (int64_t k = 0; k < s.k; ++k)
                    acc += (trans ? g.A[k * g.lda + i] : g.A[i * g.lda + k]) * g.B[k * g.ldb + j];
                  C[i * g.ldc + j] = acc;
                }
              }
              wants.push_back(
                  near(trans ? "C_tn" : "C_nn", C, 0, 1e-12 * static_cast<double>(s.k + 1)));
            }
            return wants;
          },
          nullptr};
}

// matmul/stream.h. rows, n = nin, k = nout. Decode (1-2 rows) and prefill; nin 37 leaves rows
// after the 16-row passes; nout 96 a 32-wide block, 100 a ragged 36 and a 4-column tail.
// Widths that tile take the banded prefill (320 x 256: five chunks of 64, two column groups of
// 128; 48 x 208: one short chunk, a last group of 80) and can be packed into tiles (208: three
// chunks and a short one; 384: three column groups). Rows below, at and past a multiple of the
// 4-row passes; 70 and 259 past the few rows' 64, 259 a second row block (256 a block) of
// three. Few rows go through register tiles of 8 rows (AVX-512) or 6 (AVX2) and what is left
// over: 7, 8, 9, 16, 33 leave 7, 0, 1, 0, 1 rows or 1, 2, 3, 4, 3.
const std::vector<Shape> kInOutShapes = {{1, 37, 96},  {2, 40, 64},    {7, 37, 96},   {1, 64, 100},
                                         {7, 40, 100}, {3, 320, 256},  {9, 48, 208},  {1, 48, 80},
                                         {2, 208, 80}, {7, 48, 80},    {1, 208, 384}, {16, 64, 384},
                                         {3, 48, 208}, {16, 208, 208}, {5, 64, 384},  {33, 48, 80},
                                         {70, 48, 80}, {8, 64, 384},   {259, 208, 80}};

template <class W>
struct StreamInputs {
  Floats x, b;
  std::vector<W> w, tiles;  // tiles: empty when the widths do not tile
};
template <class W>
StreamInputs<W> stream_inputs(const Shape& s, uint32_t seed) {
  StreamInputs<W> in{test::random_uniform(s.rows * s.n, seed),
                     test::random_uniform(s.k, seed + 1),
                     narrow<W>(test::random_uniform(s.n * s.k, seed + 2)),
                     {}};
  if (can_tile(s.n, s.k)) {
    in.tiles.resize(in.w.size());
    pack_tiles(in.tiles.data(), in.w.data(), s.n, s.k);
  }
  return in;
}

// y = x W + b over (nin, nout) W, in double; bound 2e-5 (1 + |y|).
template <class W>
Want in_out_reference(std::string name, const Floats& x, const std::vector<W>& w, const float* b,
                      int64_t rows, int64_t nin, int64_t nout) {
  Vec y(rows * nout);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < nout; ++c) {
      double acc = b ? b[c] : 0.0;
      for (int64_t i = 0; i < nin; ++i) acc += double(x[r * nin + i]) * widen(w[i * nout + c]);
      y[r * nout + c] = acc;
    }
  }
  return near(std::move(name), y, 2e-5, 2e-5);
}

template <class W>
OpCase matmul_in_out_case() {
  return {"matmul_in_out_" + dtype_suffix<W>(),
          Contract::row_invariant,
          kInOutShapes,
          [](const Shape& s) {
            const StreamInputs<W> in = stream_inputs<W>(s, 1);
            const int64_t rows = s.rows, nin = s.n, nout = s.k;
            std::vector<Out> outs;
            // The product, batched and one row at a time, in each layout, with and without bias.
            for (const Layout layout : {Layout::rows, Layout::tiles}) {
              if (layout == Layout::tiles && in.tiles.empty()) continue;
              const W* w = layout == Layout::rows ? in.w.data() : in.tiles.data();
              const std::string suffix = layout == Layout::rows ? "" : "_tiles";
              for (const float* bias : {in.b.data(), static_cast<const float*>(nullptr)}) {
                const std::string name = bias ? "y" : "y_nobias";
                Floats y(rows * nout);
                matmul_in_out(y.data(), in.x.data(), w, bias, rows, nin, nout, layout);
                outs.push_back(out(name + suffix, y, layout == Layout::rows ? "" : name));
                const Floats decode = row_by_row(rows, nout, [&](int64_t r, float* yr) {
                  matmul_in_out(yr, in.x.data() + r * nin, w, bias, 1, nin, nout, layout);
                });
                outs.push_back(out(name + suffix + "_row_by_row", decode, name));
              }
            }
            return outs;
          },
          [](const Shape& s) {
            const StreamInputs<W> in = stream_inputs<W>(s, 1);
            return std::vector<Want>{
                in_out_reference("y", in.x, in.w, in.b.data(), s.rows, s.n, s.k),
                in_out_reference("y_nobias", in.x, in.w, nullptr, s.rows, s.n, s.k)};
          },
          nullptr};
}

// Decode splits weight rows into chunks that threads take in whatever order they get to them,
// prefill and the head split outputs: none of it may change a bit. rows, n = nin, k = nout
// (452: eight chunks, the last short; 200 a ragged block; 464 x 208 tiles: the banded prefill).
template <class W>
OpCase threads_case() {
  std::vector<Shape> shapes;
  for (const int64_t rows : {1, 2, 7}) {
    shapes.push_back({rows, 452, 200});
    shapes.push_back({rows, 464, 208});
  }
  return {"matmul_threads_" + dtype_suffix<W>(),
          Contract::row_invariant,
          shapes,
          [](const Shape& s) {
            const StreamInputs<W> in = stream_inputs<W>(s, 12);
            const Floats xh = test::random_uniform(s.rows * s.k, 16);
            std::vector<Out> outs;
            for (const int threads : {1, 2, 3, 5}) {
              const std::string t = threads == 1 ? "" : "_threads" + std::to_string(threads);
              with_threads(threads, [&] {
                Floats y(s.rows * s.k), head(s.rows * s.n);
                matmul_in_out(y.data(), in.x.data(), in.w.data(), in.b.data(), s.rows, s.n, s.k);
                outs.push_back(out("y" + t, y, t.empty() ? "" : "y"));
                // the head reads W as (nout, nin) = (n, k)
                matmul_out_in(head.data(), xh.data(), in.w.data(), s.rows, s.k, s.n);
                outs.push_back(out("head" + t, head, t.empty() ? "" : "head"));
                if (!in.tiles.empty()) {
                  matmul_in_out(y.data(), in.x.data(), in.tiles.data(), in.b.data(), s.rows, s.n,
                                s.k, Layout::tiles);
                  outs.push_back(out("y_tiles" + t, y, "y"));
                }
              });
            }
            return outs;
          },
          [](const Shape& s) {
            const StreamInputs<W> in = stream_inputs<W>(s, 12);
            const Floats xh = test::random_uniform(s.rows * s.k, 16);
            Vec head(s.rows * s.n);
            for (int64_t r = 0; r < s.rows; ++r) {
              for (int64_t o = 0; o < s.n; ++o) {
                double acc = 0;
                for (int64_t i = 0; i < s.k; ++i)
                  acc += double(xh[r * s.k + i]) * widen(in.w[o * s.k + i]);
                head[r * s.n + o] = acc;
              }
            }
            return std::vector<Want>{
                in_out_reference("y", in.x, in.w, in.b.data(), s.rows, s.n, s.k),
                near("head", head, 2e-5, 2e-5)};
          },
          nullptr};
}

// The head, y = x W^T with W (nout, nin). rows, n = nin, k = nout: nout 13 three blocks of four
// outputs and one left over, 40 ten blocks of four, or six of six and four single outputs; nin
// 37 a tail after two vectors; from 3 rows on, register tiles and what is left over: on AVX-512
// 6 x 4 up to 16 rows (8, 10: 2, 4 rows over; 3 and 5 no whole tile), 4 x 6 beyond (67, 70: 3,
// 2 over); 67 and 70 rows: two row blocks. Then the head of perplexity's windows (every row's
// logits; GPT-2's vocabulary is odd): 1 to 300 rows against odd output counts, each row the
// bits it gets alone, at every level.
template <class W>
OpCase matmul_out_in_case() {
  return {"matmul_out_in_" + dtype_suffix<W>(),
          Contract::row_invariant,
          {{1, 37, 13},
           {2, 64, 13},
           {5, 48, 40},
           {8, 37, 13},
           {10, 48, 40},
           {67, 48, 40},
           {70, 40, 13},
           {3, 17, 1},
           {1, 15, 3},
           {2, 16, 5},
           {3, 768, 61},
           {7, 80, 333},
           {16, 64, 97},
           {17, 37, 101},
           {33, 32, 67},
           {64, 48, 257},
           {129, 64, 1001},
           {300, 16, 77}},
          [](const Shape& s) {
            const Floats x = test::random_uniform(s.rows * s.n, 7);
            const std::vector<W> w = narrow<W>(test::random_uniform(s.k * s.n, 8));
            Floats y(s.rows * s.k);
            matmul_out_in(y.data(), x.data(), w.data(), s.rows, s.n, s.k);
            const Floats one = row_by_row(s.rows, s.k, [&](int64_t r, float* yr) {
              matmul_out_in(yr, x.data() + r * s.n, w.data(), 1, s.n, s.k);
            });
            return std::vector<Out>{out("y", y), out("y_row_by_row", one, "y")};
          },
          [](const Shape& s) {
            const Floats x = test::random_uniform(s.rows * s.n, 7);
            const std::vector<W> w = narrow<W>(test::random_uniform(s.k * s.n, 8));
            Vec y(s.rows * s.k);
            for (int64_t r = 0; r < s.rows; ++r) {
              for (int64_t o = 0; o < s.k; ++o) {
                double acc = 0;
                for (int64_t i = 0; i < s.n; ++i)
                  acc += double(x[r * s.n + i]) * widen(w[o * s.n + i]);
                y[r * s.k + o] = acc;
              }
            }
            return std::vector<Want>{near("y", y, 2e-5, 2e-5)};
          },
          nullptr};
}

// bias.h: the forward one float addition, the backward each column summed in row order.
// rows x n (300: two column blocks of 256).
OpCase bias_case() {
  const auto inputs = [](const Shape& s) {
    return std::tuple{normal_floats(s.rows * s.n, 40), normal_floats(s.n, 41),
                      normal_floats(s.n, 42), normal_floats(s.rows * s.n, 43)};
  };
  return {"bias_f32",
          Contract::fixed_order,
          {{1, 1}, {3, 7}, {2, 16}, {5, 17}, {4, 33}, {3, 130}, {2, 300}},
          [=](const Shape& s) {
            auto [y, b, db, dy] = inputs(s);
            add_bias(y.data(), b.data(), s.rows, s.n);
            bias_backward(db.data(), dy.data(), s.rows, s.n);
            return std::vector<Out>{out("y", y), out("db", db)};
          },
          [=](const Shape& s) {
            const auto [y0, b, db0, dy] = inputs(s);
            Vec y(y0.size()), db(db0.size());
            for (int64_t r = 0; r < s.rows; ++r) {
              for (int64_t i = 0; i < s.n; ++i) y[r * s.n + i] = add_f(y0[r * s.n + i], b[i]);
            }
            for (int64_t i = 0; i < s.n; ++i) {
              float acc = db0[i];
              for (int64_t r = 0; r < s.rows; ++r) acc = add_f(acc, dy[r * s.n + i]);
              db[i] = acc;
            }
            return std::vector<Want>{exact("y", y), exact("db", db)};
          },
          [] {
            const int64_t rows = 4, n = 9;
            const Vec y0 = test::random_normal(rows * n, 44),
                      probe = test::random_normal(rows * n, 45);
            Vec b = test::random_normal(n, 46), y(rows * n), db(n, 0.0);
            const auto f = [&] {
              y = y0;
              add_bias(y.data(), b.data(), rows, n);
              return dot(probe, y);
            };
            bias_backward(db.data(), probe.data(), rows, n);
            test::expect_gradient(f, b, db, kGradTol, "db");
          }};
}

// matmul/gemm.h (oneDNN): held to the error bound of any float summation order,
//   |C - ref| <= (K + 2) u (|alpha| sum_k |a_ik b_kj| + |beta c_ij|),  u = 2^-24;
// bf16 against the product of the rounded inputs. M = rows, N = n, K = k, h: the transposes.
template <class In>
OpCase onednn_gemm_case() {
  std::vector<Shape> shapes;
  for (const Shape& s : std::vector<Shape>{{1, 1, 1}, {7, 33, 257}, {33, 7, 1}, {64, 64, 64}}) {
    for (int64_t t = 0; t < 4; ++t) shapes.push_back({s.rows, s.n, s.k, t});
  }
  struct Problem {
    Trans ta, tb;
    int64_t lda, ldb;
    Floats A, B, C;
  };
  const auto problem = [](const Shape& s) {
    const Trans ta = s.h & 1 ? Trans::Yes : Trans::No, tb = s.h & 2 ? Trans::Yes : Trans::No;
    const int64_t lda = ta == Trans::No ? s.k : s.rows, ldb = tb == Trans::No ? s.n : s.k;
    Floats A = test::random_uniform(s.rows * s.k, 51), B = test::random_uniform(s.k * s.n, 52);
    if constexpr (std::is_same_v<In, Bf16>) {  // values bf16 holds
      for (float& a : A) a = bf16_to_float(float_to_bf16(a));
      for (float& b : B) b = bf16_to_float(float_to_bf16(b));
    }
    return Problem{ta, tb, lda, ldb, A, B, test::random_uniform(s.rows * s.n, 53)};
  };
  return {"gemm_" + dtype_suffix<In>(),
          Contract::tolerance,
          shapes,
          [=](const Shape& s) {
            const Problem p = problem(s);
            const std::vector<In> A = narrow<In>(p.A), B = narrow<In>(p.B);
            Floats C1(p.C.size(), std::numeric_limits<float>::quiet_NaN()), C2 = p.C;
            gemm(p.ta, p.tb, s.rows, s.n, s.k, 1.0f, A.data(), p.lda, B.data(), p.ldb, 0.0f,
                 C1.data(), s.n);  // beta = 0 never reads C
            gemm(p.ta, p.tb, s.rows, s.n, s.k, -0.75f, A.data(), p.lda, B.data(), p.ldb, 1.0f,
                 C2.data(), s.n);
            return std::vector<Out>{out("C", C1), out("C_alpha_beta", C2)};
          },
          [=](const Shape& s) {
            const Problem p = problem(s);
            std::vector<Want> wants;
            for (const auto& [name, alpha, beta] :
                 {std::tuple{"C", 1.0, 0.0}, std::tuple{"C_alpha_beta", -0.75, 1.0}}) {
              Vec c(p.C.size()), bound(p.C.size());
              for (int64_t i = 0; i < s.rows; ++i) {
                for (int64_t j = 0; j < s.n; ++j) {
                  double sum = 0, mag = 0;
                  for (int64_t k = 0; k < s.k; ++k) {
                    const double a = p.ta == Trans::No ? p.A[i * p.lda + k] : p.A[k * p.lda + i];
                    const double b = p.tb == Trans::No ? p.B[k * p.ldb + j] : p.B[j * p.ldb + k];
                    sum += a * b;
                    mag += std::abs(a * b);
                  }
                  const double c0 = beta * p.C[i * s.n + j];
                  c[i * s.n + j] = alpha * sum + c0;
                  bound[i * s.n + j] = (static_cast<double>(s.k) + 2) * kF32 *
                                           (std::abs(alpha) * mag + std::abs(c0)) +
                                       1e-30;
                }
              }
              wants.push_back(bounded(name, c, bound));
            }
            return wants;
          },
          nullptr};
}

std::vector<OpCase> matmul_cases() {
  return {linear_forward_case(),      linear_backward_case(),    small_gemm_case(false),
          small_gemm_case(true),      small_gemm_f64_case(),     matmul_in_out_case<float>(),
          matmul_in_out_case<Bf16>(), matmul_in_out_case<F16>(), threads_case<float>(),
          threads_case<Bf16>(),       threads_case<F16>(),       matmul_out_in_case<float>(),
          matmul_out_in_case<Bf16>(), matmul_out_in_case<F16>(), bias_case(),
          onednn_gemm_case<float>(),  onednn_gemm_case<Bf16>()};
}

// The tiles layout: band-major, then column-major tiles, each a row-major 16 x 16 block; widths
// that do not tile are errors, for pack_tiles and for products asked to read tiles.
TEST(OpsStream, PackTilesLayoutAndErrors) {
  test::for_each_isa([](Isa) {
    const int64_t nin = 32, nout = 48, G = nout / 16;
    Floats src(nin * nout), dst(nin * nout, -1.0f);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
    pack_tiles(dst.data(), src.data(), nin, nout);
    for (int64_t i = 0; i < nin; ++i) {
      for (int64_t c = 0; c < nout; ++c) {
        const int64_t at = ((i / 16) * G + c / 16) * 256 + (i % 16) * 16 + c % 16;
        ASSERT_EQ(dst[at], src[i * nout + c]) << "row " << i << " column " << c;
      }
    }
    const std::vector<Bf16> hb = narrow<Bf16>(src);
    std::vector<Bf16> tb(hb.size());
    pack_tiles(tb.data(), hb.data(), nin, nout);
    for (int64_t i = 0; i < nin; ++i) {
      for (int64_t c = 0; c < nout; ++c) {
        ASSERT_EQ(tb[((i / 16) * G + c / 16) * 256 + (i % 16) * 16 + c % 16].bits,
                  hb[i * nout + c].bits);
      }
    }
    EXPECT_FALSE(can_tile(40, 48));
    EXPECT_FALSE(can_tile(48, 40));
    EXPECT_TRUE(can_tile(16, 2304));
    EXPECT_THROW(pack_tiles(dst.data(), src.data(), 24, 64), std::runtime_error);
    Floats y(64), x(24);
    EXPECT_THROW(matmul_in_out(y.data(), x.data(), src.data(), nullptr, 1, 24, 64, Layout::tiles),
                 std::runtime_error);
  });
}

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(matmul_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
