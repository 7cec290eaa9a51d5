// The GPT-2 inference kernels (kernels/matmul/stream.h, the cached attention of
// kernels/attention/causal.h) against plain double-precision loops, on
// shapes that reach every path: decode (1-2 rows) and prefill (banded, blocked) products, row
// counts that leave a remainder after the 16-row passes, column counts with a ragged last block,
// and attention heads that are and are not a multiple of 16 wide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/matmul/stream.h"

namespace tinylm::kernels {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<Bf16> to_bf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i].bits = float_to_bf16(v[i]);
  return out;
}
std::vector<float> as_f32(const std::vector<float>& v) { return v; }
std::vector<F16> to_f16(const std::vector<float>& v) {
  std::vector<F16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i].bits = float_to_f16(v[i]);
  return out;
}

// |got - want| <= tol * (1 + |want|) for every element.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
  }
}

struct Shape3 {
  int64_t rows, nin, nout;
};
// Decode (1, 2 rows) and prefill (7 rows: a 6-row block and a remainder); nin 37 leaves rows
// after the 16-row passes (a pair and a single one per thread); nout 96 leaves a 32-wide
// prefill block, 100 a ragged 36 and a 4-column tail after the vectors. Shapes whose widths
// are multiples of 16 take the banded prefill: 768 x 256 (twelve chunks, two column groups)
// and 48 x 208 (one short chunk; a last group of 80 columns) with row quads and a remainder.
const Shape3 kShapes[] = {{1, 37, 96},  {2, 40, 64},   {7, 37, 96}, {1, 64, 100},
                          {7, 40, 100}, {3, 768, 256}, {9, 48, 208}};

template <class W, class Convert>
void check_matmul_in_out(Convert convert, double tol) {
  for (const Shape3& s : kShapes) {
    const std::vector<float> x = random_floats(s.rows * s.nin, 1),
                             wf = random_floats(s.nin * s.nout, 2), b = random_floats(s.nout, 3);
    const std::vector<W> w = convert(wf);
    std::vector<double> want(s.rows * s.nout);
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t c = 0; c < s.nout; ++c) {
        double acc = b[c];
        for (int64_t i = 0; i < s.nin; ++i)
          acc += double(x[r * s.nin + i]) * to_float(w[i * s.nout + c]);
        want[r * s.nout + c] = acc;
      }
    }
    std::vector<float> y(s.rows * s.nout);
    matmul_in_out(y.data(), x.data(), w.data(), b.data(), s.rows, s.nin, s.nout);
    expect_close(y, want, tol,
                 "rows " + std::to_string(s.rows) + " nin " + std::to_string(s.nin) + " nout " +
                     std::to_string(s.nout));
  }
}

TEST(GptOps, MatmulInOutMatchesDoubleLoops) {
  check_matmul_in_out<float>(as_f32, 2e-5);
  check_matmul_in_out<Bf16>(to_bf16, 2e-5);  // against the same (bf16) weights
  check_matmul_in_out<F16>(to_f16, 2e-5);
}

TEST(GptOps, PackTilesPlacesEachSixteenBySixteenTileContiguously) {
  // Band-major, then column-major tiles, each a row-major 16 x 16 block.
  const int64_t nin = 32, nout = 48, G = nout / 16;
  std::vector<float> src(nin * nout), dst(nin * nout, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  pack_tiles(dst.data(), src.data(), nin, nout);
  for (int64_t i = 0; i < nin; ++i) {
    for (int64_t c = 0; c < nout; ++c) {
      const int64_t at = ((i / 16) * G + c / 16) * 256 + (i % 16) * 16 + c % 16;
      ASSERT_EQ(dst[at], src[i * nout + c]) << "row " << i << " column " << c;
    }
  }
  EXPECT_FALSE(can_tile(40, 48));
  EXPECT_FALSE(can_tile(48, 40));
  EXPECT_THROW(pack_tiles(dst.data(), src.data(), 24, 64), std::runtime_error);
  std::vector<float> y(64), x(24);
  EXPECT_THROW(matmul_in_out(y.data(), x.data(), src.data(), nullptr, 1, 24, 64, Layout::tiles),
               std::runtime_error);
}

// Inputs, bias and weights (seeds seed, seed + 1, seed + 2) of a product of shape s, the
// weights both row-major and packed into tiles.
template <class W>
struct TiledProduct {
  std::vector<float> x, b;
  std::vector<W> rows, tiles;
};
template <class W, class Convert>
TiledProduct<W> tiled_product(const Shape3& s, Convert convert, uint32_t seed) {
  TiledProduct<W> p{random_floats(s.rows * s.nin, seed),
                    random_floats(s.nout, seed + 1),
                    convert(random_floats(s.nin * s.nout, seed + 2)),
                    {}};
  p.tiles.resize(p.rows.size());
  pack_tiles(p.tiles.data(), p.rows.data(), s.nin, s.nout);
  return p;
}

// The tiles layout only changes where the weights sit: decode and prefill products are the
// same bits as from the row-major matrix.
template <class W, class Convert>
void check_tiles_equal_rows(Convert convert) {
  // nin 48: one short chunk; 704: eleven chunks; nout 80: a 64-column prefill block and a
  // ragged 16; 2304: GPT-2's attention width.
  for (const Shape3& s : {Shape3{1, 48, 80}, Shape3{2, 704, 80}, Shape3{7, 48, 80},
                          Shape3{1, 704, 2304}, Shape3{16, 64, 2304}}) {
    const TiledProduct<W> p = tiled_product<W>(s, convert, 15);
    std::vector<float> want(s.rows * s.nout), got(s.rows * s.nout);
    matmul_in_out(want.data(), p.x.data(), p.rows.data(), p.b.data(), s.rows, s.nin, s.nout,
                  Layout::rows);
    matmul_in_out(got.data(), p.x.data(), p.tiles.data(), p.b.data(), s.rows, s.nin, s.nout,
                  Layout::tiles);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
        << s.rows << " x " << s.nin << " x " << s.nout;
  }
}

TEST(GptOps, TiledProductsEqualRowMajorBitForBit) {
  check_tiles_equal_rows<Bf16>(to_bf16);
  check_tiles_equal_rows<F16>(to_f16);
  check_tiles_equal_rows<float>(as_f32);
}

// A prefill computes each row's bits exactly as decoding that row alone does (widths that
// tile), in both layouts and every weight type, with and without a bias.
template <class W, class Convert>
void check_prefill_rows_equal_decode(Convert convert) {
  // nin 48: one short chunk; 704: eleven chunks; nout 208: a last column group of 80; 2304:
  // GPT-2's attention width. Rows: below, at and past a multiple of the 4-row passes; 70:
  // two blocks of rows, the second of six.
  for (const Shape3& s : {Shape3{3, 48, 208}, Shape3{16, 704, 208}, Shape3{5, 64, 2304},
                          Shape3{33, 48, 80}, Shape3{70, 48, 80}}) {
    const TiledProduct<W> p = tiled_product<W>(s, convert, 18);
    for (const Layout layout : {Layout::rows, Layout::tiles}) {
      const W* wl = layout == Layout::rows ? p.rows.data() : p.tiles.data();
      for (const float* bias : {p.b.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> batch(s.rows * s.nout), one(s.nout);
        matmul_in_out(batch.data(), p.x.data(), wl, bias, s.rows, s.nin, s.nout, layout);
        for (int64_t r = 0; r < s.rows; ++r) {
          matmul_in_out(one.data(), p.x.data() + r * s.nin, wl, bias, 1, s.nin, s.nout, layout);
          ASSERT_EQ(std::memcmp(one.data(), batch.data() + r * s.nout, s.nout * sizeof(float)), 0)
              << s.rows << " x " << s.nin << " x " << s.nout << " row " << r
              << (layout == Layout::tiles ? " tiles" : " rows") << (bias ? "" : " no bias");
        }
      }
    }
  }
}

TEST(GptOps, PrefillRowsEqualDecodeBitForBit) {
  check_prefill_rows_equal_decode<float>(as_f32);
  check_prefill_rows_equal_decode<Bf16>(to_bf16);
  check_prefill_rows_equal_decode<F16>(to_f16);
}

// The head computes each row's outputs exactly as for that row alone, in the passes over
// two rows and one, and across blocks of rows (70 rows: blocks of 64 and 6).
TEST(GptOps, HeadRowsEqualOneRowBitForBit) {
  const int64_t rows = 70, nin = 40, nout = 13;  // nout 13: a last block of one output
  const std::vector<float> x = random_floats(rows * nin, 21);
  const std::vector<Bf16> w = to_bf16(random_floats(nout * nin, 22));
  std::vector<float> batch(rows * nout), one(nout);
  matmul_out_in(batch.data(), x.data(), w.data(), rows, nin, nout);
  for (int64_t r = 0; r < rows; ++r) {
    matmul_out_in(one.data(), x.data() + r * nin, w.data(), 1, nin, nout);
    ASSERT_EQ(std::memcmp(one.data(), batch.data() + r * nout, nout * sizeof(float)), 0)
        << "row " << r;
  }
}

TEST(GptOps, MatmulOutInMatchesDoubleLoops) {
  // nout 13: three blocks of four outputs and one left over; nin 37: a tail after 2 vectors.
  for (const Shape3& s :
       {Shape3{1, 37, 13}, Shape3{2, 64, 13}, Shape3{5, 48, 40}, Shape3{67, 48, 40}}) {
    const std::vector<float> x = random_floats(s.rows * s.nin, 7),
                             wf = random_floats(s.nout * s.nin, 8);
    const std::vector<Bf16> wb = to_bf16(wf);
    std::vector<double> want(s.rows * s.nout), want_b(s.rows * s.nout);
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t o = 0; o < s.nout; ++o) {
        double acc = 0, acc_b = 0;
        for (int64_t i = 0; i < s.nin; ++i) {
          acc += double(x[r * s.nin + i]) * wf[o * s.nin + i];
          acc_b += double(x[r * s.nin + i]) * to_float(wb[o * s.nin + i]);
        }
        want[r * s.nout + o] = acc;
        want_b[r * s.nout + o] = acc_b;
      }
    }
    std::vector<float> y(s.rows * s.nout);
    matmul_out_in(y.data(), x.data(), wf.data(), s.rows, s.nin, s.nout);
    expect_close(y, want, 2e-5, "f32");
    matmul_out_in(y.data(), x.data(), wb.data(), s.rows, s.nin, s.nout);
    expect_close(y, want_b, 2e-5, "bf16");
  }
}

// Decode splits weight rows into chunks that threads take in whatever order they get to
// them, and prefill and the head split outputs: none of it may change a single bit of the
// result, at any thread count.
TEST(GptOps, ResultsDoNotDependOnTheThreadCount) {
  const int saved = num_threads();
  const auto run = [](int threads, int64_t rows, int64_t nin, int64_t nout) {
    set_num_threads(threads);
    const std::vector<float> x = random_floats(rows * nin, 12), w = random_floats(nin * nout, 13),
                             b = random_floats(nout, 14);
    const std::vector<Bf16> wb = to_bf16(w);
    std::vector<float> y(rows * nout), yb(rows * nout), head(rows * nin);
    matmul_in_out(y.data(), x.data(), w.data(), b.data(), rows, nin, nout);
    matmul_in_out(yb.data(), x.data(), wb.data(), b.data(), rows, nin, nout);
    matmul_out_in(head.data(), y.data(), w.data(), rows, nout, nin);  // w read as (nin, nout)
    y.insert(y.end(), yb.begin(), yb.end());
    y.insert(y.end(), head.begin(), head.end());
    return y;
  };
  // nin 700: eleven 64-row chunks, the last one short; nout 200: a ragged column block.
  // 704 x 208 tiles: the banded prefill, whose column groups threads also take in any order.
  for (const auto& [nin, nout] : {std::pair<int64_t, int64_t>{700, 200}, {704, 208}}) {
    for (const int64_t rows : {1, 2, 7}) {
      const std::vector<float> one = run(1, rows, nin, nout);
      for (const int threads : {2, 3, 5}) {
        const std::vector<float> many = run(threads, rows, nin, nout);
        ASSERT_EQ(one.size(), many.size());
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
            << rows << " x " << nin << " x " << nout << ", " << threads << " threads";
      }
    }
  }
  set_num_threads(saved);
}

TEST(GptOps, CachedAttentionMatchesDoubleLoops) {
  // Head widths 32 (vector path) and 12 (scalar path); rows [3, 7) against a cache of 7.
  for (const int64_t hd : {32, 12}) {
    const int64_t H = 3, C = H * hd, t0 = 3, t1 = 7;
    const std::vector<float> q = random_floats((t1 - t0) * C, 9), k = random_floats(t1 * C, 10),
                             v = random_floats(t1 * C, 11);
    std::vector<double> want((t1 - t0) * C);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t t = t0; t < t1; ++t) {
        std::vector<double> a(t + 1);
        double mx = -INFINITY, sum = 0;
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t j = 0; j < hd; ++j)
            dot += double(q[(t - t0) * C + h * hd + j]) * k[s * C + h * hd + j];
          a[s] = dot / std::sqrt(double(hd));
          mx = std::max(mx, a[s]);
        }
        for (double& e : a) sum += e = std::exp(e - mx);
        for (int64_t j = 0; j < hd; ++j) {
          double o = 0;
          for (int64_t s = 0; s <= t; ++s) o += a[s] / sum * v[s * C + h * hd + j];
          want[(t - t0) * C + h * hd + j] = o;
        }
      }
    }
    std::vector<float> out((t1 - t0) * C), keys(C * kv_key_stride(t1)), values(t1 * C);
    for (int64_t t = 0; t < t1; ++t)
      kv_store(keys.data(), values.data(), k.data() + t * C, v.data() + t * C, t, t1, C);
    attention_cached(out.data(), q.data(), keys.data(), values.data(), t0, t1, t1, C, H);
    expect_close(out, want, 1e-5, "head width " + std::to_string(hd));
  }
}

}  // namespace
}  // namespace tinylm::kernels
