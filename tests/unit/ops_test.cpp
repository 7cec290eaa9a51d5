// One table of kernel cases (after ggml's test-backend-ops and CTranslate2's ops_test): every
// op x dtype runs through one test body at every kernel level this CPU supports, which
//  - compares each output with a reference computed by plain loops: in double, within the
//    output's bound, or exactly where the contract fixes the arithmetic (casts, single chains
//    of fused multiply-adds, fixed summation orders, microgpt's CPython order);
//  - expects the same bytes at every level, for every contract that promises bits (all but
//    matmul/gemm.h's "tolerance");
//  - expects outputs that must equal another output byte for byte to do so (a row alone and
//    in a batch, a decode step and the forward, tiles and rows, 1 and 5 threads);
// and, once per case, checks the double reference's backward against central differences.
// Bounds follow the result's type: float results within the op's float error growth of the
// double reference, results rounded to bf16 or f16 within that type's rounding; products with
// bf16 or f16 weights are compared with the product of the same rounded weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "finite_difference.h"
#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/philox.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/activation/gelu_reference.h"
#include "tinylm/kernels/activation/relu.h"
#include "tinylm/kernels/activation/softmax.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/attention/causal_reference.h"
#include "tinylm/kernels/attention/exact.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/loss/cross_entropy.h"
#include "tinylm/kernels/matmul/bias.h"
#include "tinylm/kernels/matmul/exact.h"
#include "tinylm/kernels/matmul/exact_reference.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/matmul/small.h"
#include "tinylm/kernels/matmul/small_reference.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/mixer/causal_conv.h"
#include "tinylm/kernels/mixer/causal_conv_reference.h"
#include "tinylm/kernels/mixer/ffn.h"
#include "tinylm/kernels/mixer/moe.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/kernels/norm/layernorm_reference.h"
#include "tinylm/kernels/norm/rmsnorm.h"
#include "tinylm/kernels/norm/rmsnorm_gain.h"
#include "tinylm/kernels/norm/rmsnorm_gain_reference.h"
#include "tinylm/kernels/optim/adam.h"

namespace tinylm::kernels {
namespace {

using Vec = std::vector<double>;
using Floats = std::vector<float>;
using Ints = std::vector<int32_t>;

// ---------------------------------------------------------------------------------------------
// The table's vocabulary.

enum class Contract { exact, row_invariant, single_chain, fixed_order, tolerance };

// Each case says what its four numbers mean (rows x n, k inner/taps/experts, h a variant).
struct Shape {
  int64_t rows = 1, n = 1, k = 1, h = 0;
};

std::string describe(const Shape& s) {
  return "shape rows=" + std::to_string(s.rows) + " n=" + std::to_string(s.n) +
         " k=" + std::to_string(s.k) + " h=" + std::to_string(s.h);
}

// What a kernel wrote: its values widened to double (checked against the reference) and its
// bytes (checked across levels). With same_as, the output is instead checked byte for byte
// against another output of the same run.
struct Out {
  std::string name;
  Vec values;
  std::vector<unsigned char> bytes;
  std::string same_as;
};

// What it should have written: values and a bound on each element's error (none: the same
// value, NaN matching NaN).
struct Want {
  std::string name;
  Vec values;
  Vec bound;
};

struct OpCase {
  std::string name;  // op_dtype, the test's name
  Contract contract;
  std::vector<Shape> shapes;
  std::function<std::vector<Out>(const Shape&)> run;         // the kernels, at the active level
  std::function<std::vector<Want>(const Shape&)> reference;  // plain loops
  std::function<void()> once;  // level-independent checks of the double reference (gradients)
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

double widen(double x) { return x; }
double widen(float x) { return x; }
double widen(Bf16 x) { return bf16_to_float(x.bits); }
double widen(F16 x) { return f16_to_float(x.bits); }
double widen(uint8_t x) { return x; }
double widen(int32_t x) { return x; }

double bits_of(float x) { return float_bits(x); }
double bits_of(Bf16 x) { return x.bits; }
double bits_of(F16 x) { return x.bits; }

template <class T>
std::vector<unsigned char> bytes_of(const T* p, size_t n) {
  std::vector<unsigned char> b(n * sizeof(T));
  if (n) std::memcpy(b.data(), p, b.size());
  return b;
}

template <class T>
Out out(std::string name, const std::vector<T>& v, std::string same_as = {}) {
  Out o{std::move(name), {}, bytes_of(v.data(), v.size()), std::move(same_as)};
  for (const T& x : v) o.values.push_back(widen(x));
  return o;
}

Out scalar_out(std::string name, double x) { return out(std::move(name), Vec{x}); }

// An output compared by its bit patterns (casts).
template <class T>
Out bits_out(std::string name, const std::vector<T>& v) {
  Out o{std::move(name), {}, bytes_of(v.data(), v.size()), {}};
  for (const T& x : v) o.values.push_back(bits_of(x));
  return o;
}

Want exact(std::string name, Vec v) { return {std::move(name), std::move(v), {}}; }

double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// |got - want| <= abs + rel |want| elementwise.
Want near(std::string name, Vec v, double rel, double abs = 0) {
  Vec bound(v.size());
  for (size_t i = 0; i < v.size(); ++i) bound[i] = abs + rel * std::abs(v[i]);
  return {std::move(name), std::move(v), std::move(bound)};
}

// |got - want| <= rel max |want|: sums whose terms cancel.
Want near_max(std::string name, Vec v, double rel) {
  const double m = max_abs(v);
  return near(std::move(name), std::move(v), 0, rel * m);
}

Want bounded(std::string name, Vec v, Vec bound) {
  return {std::move(name), std::move(v), std::move(bound)};
}

std::string fmt(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

void compare(const Out& got, const Want& want) {
  ASSERT_EQ(got.values.size(), want.values.size()) << got.name;
  int64_t bad = 0;
  for (size_t i = 0; i < got.values.size(); ++i) {
    const double g = got.values[i], w = want.values[i];
    const bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
                    (!want.bound.empty() && std::abs(g - w) <= want.bound[i]);
    if (!ok && bad++ < 3) {
      ADD_FAILURE() << got.name << "[" << i << "] = " << fmt(g) << ", reference " << fmt(w)
                    << (want.bound.empty() ? std::string(" (exact)")
                                           : ", bound " + fmt(want.bound[i]));
    }
  }
  EXPECT_EQ(bad, 0) << got.name << ": " << bad << " of " << got.values.size() << " elements";
}

template <class T>
const T* find_named(const std::vector<T>& v, const std::string& name) {
  for (const T& x : v) {
    if (x.name == name) return &x;
  }
  return nullptr;
}

std::string first_difference(const Out& a, const Out& b) {
  if (a.bytes.size() != b.bytes.size()) {
    return std::to_string(a.bytes.size()) + " bytes against " + std::to_string(b.bytes.size());
  }
  const size_t stride = a.values.empty() ? 1 : a.bytes.size() / a.values.size();
  for (size_t i = 0; i < a.bytes.size(); ++i) {
    if (a.bytes[i] != b.bytes[i]) {
      const size_t e = i / stride;
      return "element " + std::to_string(e) + ": " + fmt(a.values[e]) + " vs " + fmt(b.values[e]);
    }
  }
  return "";
}

class Kernel : public ::testing::TestWithParam<OpCase> {};

TEST_P(Kernel, MatchesReferenceWithTheSameBitsAtEveryLevel) {
  const OpCase& c = GetParam();
  if (c.once) {
    SCOPED_TRACE("double reference");
    c.once();
  }
  for (const Shape& s : c.shapes) {
    SCOPED_TRACE(describe(s));
    const std::vector<Want> want = c.reference(s);
    std::vector<Out> first;
    std::string first_level;
    const auto body = [&](Isa isa) {
      const std::vector<Out> got = c.run(s);
      for (const Out& o : got) {
        if (!o.same_as.empty()) {
          const Out* other = find_named(got, o.same_as);
          if (!other) {
            ADD_FAILURE() << o.name << ": no output " << o.same_as;
          } else if (o.bytes != other->bytes) {
            ADD_FAILURE() << o.name << " differs from " << o.same_as << " at "
                          << first_difference(o, *other);
          }
        } else if (const Want* w = find_named(want, o.name)) {
          compare(o, *w);
        } else {
          ADD_FAILURE() << o.name << ": no reference";
        }
      }
      for (const Want& w : want) {
        if (!find_named(got, w.name)) ADD_FAILURE() << w.name << ": not computed";
      }
      if (first.empty()) {
        first = got;
        first_level = isa_name(isa);
        return;
      }
      ASSERT_EQ(got.size(), first.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i].bytes == first[i].bytes)
            << got[i].name << " at level " << isa_name(isa) << " differs from " << first_level
            << " at " << first_difference(got[i], first[i]);
      }
    };
    // oneDNN fixes its instructions at its first product (matmul/gemm.h), so products held to
    // a tolerance run once, at the level in use.
    if (c.contract == Contract::tolerance) {
      body(active_isa());
    } else {
      test::for_each_isa(body);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs and conversions.

Floats normal_floats(size_t n, uint64_t seed, double scale = 1.0, double mean = 0.0) {
  const Vec d = test::random_normal(n, seed, scale, mean);
  return Floats(d.begin(), d.end());
}

template <class T>
Vec widen_all(const std::vector<T>& v) {
  Vec d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = widen(v[i]);
  return d;
}

template <class W>
std::vector<W> narrow(const Floats& v) {
  std::vector<W> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) from_float(w[i], v[i]);
  return w;
}

template <class W>
std::string dtype_suffix() {
  if constexpr (std::is_same_v<W, float>) return "f32";
  if constexpr (std::is_same_v<W, Bf16>) return "bf16";
  if constexpr (std::is_same_v<W, F16>) return "f16";
  if constexpr (std::is_same_v<W, double>) return "f64";
}

// float(a + b): the sum of two floats in double, rounded once, is the correctly rounded float sum.
float add_f(double a, double b) { return static_cast<float>(a + b); }

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// x ** y as CPython evaluates it: the C library's pow, the exponent hidden from the compiler
// (which would turn pow(x, 2.0) into x * x).
double cpython_pow(double x, double y) {
  volatile double opaque = y;
  return std::pow(x, opaque);
}

// Runs body(threads) with tinylm::set_num_threads(threads), then restores the count.
template <class F>
void with_threads(int threads, F&& body) {
  const int saved = num_threads();
  set_num_threads(threads);
  body();
  set_num_threads(saved);
}

// Each row computed alone, the rows concatenated: a row-invariant kernel's batch. On one
// thread: a fork costs a scheduler time slice on a loaded machine, and the threads cases
// cover thread counts.
template <class F>
Floats row_by_row(int64_t rows, int64_t width, F&& one_row) {
  Floats y(static_cast<size_t>(rows * width));
  with_threads(1, [&] {
    for (int64_t r = 0; r < rows; ++r) one_row(r, y.data() + r * width);
  });
  return y;
}

constexpr double kF32 = 1.0 / (1 << 24);  // unit roundoff of each result type
constexpr double kBf16 = 1.0 / (1 << 8);
constexpr double kF16 = 1.0 / (1 << 11);

// Central differences in double agree to ~1e-10 with h = 1e-5.
constexpr double kGradTol = 1e-7;

// ---------------------------------------------------------------------------------------------
// cast: exact, the bits of core/dtype.h's scalar conversions.

const std::vector<Shape> kLengths = {
    {.n = 1},  {.n = 7},   {.n = 16}, {.n = 17},
    {.n = 33}, {.n = 130}, {.n = 64}, {.n = 2 * 16384 + 5}};  // the last: three chunks

// Floats of every exponent and the values where rounding is delicate.
Floats cast_inputs(int64_t n, uint32_t seed) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Zeros and plain values; f16's largest, below and at its rounding edge, beyond; bf16 ties
  // (to even, and up); f16 subnormals and a float subnormal; infinities; NaNs with payloads.
  Floats specials = {0.0f,     -0.0f,    1.0f,   -3.0f,   0.1f,        65504.0f,
                     65519.0f, 65520.0f, 1e30f,  -1e-30f, 1.00390625f, 1.01171875f,
                     6e-8f,    3e-8f,    1e-45f, inf,     -inf,        nan};
  specials.push_back(bits_float(0x7f800001));
  specials.push_back(bits_float(0xffc00001));
  std::mt19937 rng(seed);
  Floats v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) {
    if (i < specials.size()) {
      v[i] = specials[i];
    } else if (i % 2) {
      v[i] = bits_float(rng());  // any exponent, NaNs included
    } else {                     // exponents around the 16-bit types' ranges
      v[i] = bits_float((rng() & 0x807fffffu) | ((100u + rng() % 52u) << 23));
    }
  }
  return v;
}

template <class Half>
std::vector<Half> half_patterns(int64_t n) {
  std::vector<Half> h(static_cast<size_t>(n));
  for (size_t i = 0; i < h.size(); ++i) h[i].bits = static_cast<uint16_t>(i * 40503u + 7u);
  return h;
}

template <class Half>
uint16_t scalar_round(float x) {
  return std::is_same_v<Half, Bf16> ? float_to_bf16(x) : float_to_f16(x);
}
template <class Half>
float scalar_widen(uint16_t h) {
  return std::is_same_v<Half, Bf16> ? bf16_to_float(h) : f16_to_float(h);
}

template <class Half>
OpCase cast_case() {
  const auto round_half = [](float* dst, const float* src, int64_t n) {
    if constexpr (std::is_same_v<Half, Bf16>) {
      round_to_bf16(dst, src, n);
    } else {
      round_to_f16(dst, src, n);
    }
  };
  return {"cast_" + dtype_suffix<Half>(),
          Contract::exact,
          kLengths,
          [=](const Shape& s) {
            const Floats x = cast_inputs(s.n, 1);
            std::vector<Half> h(x.size());
            convert(x.data(), h.data(), s.n);
            const std::vector<Half> patterns = half_patterns<Half>(s.n);
            Floats wide(x.size()), rounded(x.size()), in_place = x;
            convert(patterns.data(), wide.data(), s.n);
            round_half(rounded.data(), x.data(), s.n);
            round_half(in_place.data(), in_place.data(), s.n);
            Out same = bits_out("rounded_in_place", in_place);
            same.same_as = "rounded";
            return std::vector<Out>{bits_out("narrowed", h), bits_out("widened", wide),
                                    bits_out("rounded", rounded), same};
          },
          [](const Shape& s) {
            const Floats x = cast_inputs(s.n, 1);
            const std::vector<Half> patterns = half_patterns<Half>(s.n);
            Vec narrowed, widened, rounded;
            for (size_t i = 0; i < x.size(); ++i) {
              narrowed.push_back(scalar_round<Half>(x[i]));
              widened.push_back(float_bits(scalar_widen<Half>(patterns[i].bits)));
              rounded.push_back(float_bits(scalar_widen<Half>(scalar_round<Half>(x[i]))));
            }
            return std::vector<Want>{exact("narrowed", narrowed), exact("widened", widened),
                                     exact("rounded", rounded)};
          },
          nullptr};
}

// accumulate_and_clear: acc += src (rounded to f16 first when asked), src = 0.
OpCase accumulate_case(bool round_f16) {
  const auto inputs = [=](int64_t n) {
    Floats acc = normal_floats(static_cast<size_t>(n), 2, 10.0);
    Floats src = normal_floats(static_cast<size_t>(n), 3, 1000.0);
    if (n > 2) {
      src[0] = 70000.0f;  // beyond f16: inf when rounded
      src[1] = 1e-9f;     // below f16's subnormals: 0 when rounded
    }
    return std::pair{acc, src};
  };
  return {round_f16 ? "accumulate_and_clear_f16" : "accumulate_and_clear_f32",
          Contract::exact,
          kLengths,
          [=](const Shape& s) {
            auto [acc, src] = inputs(s.n);
            accumulate_and_clear(acc.data(), src.data(), s.n, round_f16);
            return std::vector<Out>{out("acc", acc), out("src", src)};
          },
          [=](const Shape& s) {
            const auto [acc, src] = inputs(s.n);
            Vec sum(acc.size());
            for (size_t i = 0; i < acc.size(); ++i) {
              const float g = round_f16 ? f16_to_float(float_to_f16(src[i])) : src[i];
              sum[i] = add_f(acc[i], g);
            }
            return std::vector<Want>{exact("acc", sum), exact("src", Vec(src.size(), 0.0))};
          },
          nullptr};
}

std::vector<OpCase> cast_cases() {
  return {cast_case<Bf16>(), cast_case<F16>(), accumulate_case(false), accumulate_case(true)};
}

// ---------------------------------------------------------------------------------------------
// activation

// x across [-12, 12]; at 8003 elements [-20, 20] in steps of 0.005 and +-50 (saturation).
Floats gelu_inputs(int64_t n) {
  Floats x(static_cast<size_t>(n));
  if (n == 8003) {
    for (int i = 0; i < 8001; ++i) x[i] = static_cast<float>(i - 4000) * 0.005f;
    x[8001] = 50.0f;
    x[8002] = -50.0f;
    return x;
  }
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(-12.0 + 24.0 * static_cast<double>(i) / std::max<double>(1, n - 1) +
                              0.013);
  return x;
}

OpCase gelu_case() {
  return {
      "gelu_f32",
      Contract::row_invariant,
      // 8003: two chunks of 4096
      {{.n = 1}, {.n = 7}, {.n = 16}, {.n = 17}, {.n = 33}, {.n = 130}, {.n = 1001}, {.n = 8003}},
      [](const Shape& s) {
        const Floats x = gelu_inputs(s.n), dy = normal_floats(x.size(), 24);
        Floats y(x.size()), y_in_place = x, dx(x.size()), dx_in_place = dy;
        gelu_forward(y.data(), x.data(), s.n);
        gelu_forward(y_in_place.data(), y_in_place.data(), s.n);
        gelu_backward(dx.data(), dy.data(), x.data(), s.n);
        gelu_backward(dx_in_place.data(), dx_in_place.data(), x.data(), s.n);
        return std::vector<Out>{out("y", y), out("y_in_place", y_in_place, "y"), out("dx", dx),
                                out("dx_in_place", dx_in_place, "dx")};
      },
      [](const Shape& s) {
        const Vec x = widen_all(gelu_inputs(s.n)), dy = widen_all(normal_floats(x.size(), 24));
        Vec y(x.size()), dx(x.size()), by(x.size()), bdx(x.size());
        reference::gelu_forward(y.data(), x.data(), s.n);
        reference::gelu_backward(dx.data(), dy.data(), x.data(), s.n);
        for (size_t i = 0; i < x.size(); ++i) {
          // tanh through exp: ~1e-7 of max(1, |y|); the derivative ~1e-6, times dy.
          by[i] = 2e-7 * std::max(1.0, std::abs(y[i]));
          bdx[i] = std::min(4e-7 * (1 + std::abs(x[i])) * (1 + std::abs(dy[i])),
                            1e-6 * std::max(std::abs(dy[i]), std::abs(dx[i])));
        }
        return std::vector<Want>{bounded("y", y, by), bounded("dx", dx, bdx)};
      },
      [] {
        Vec x(61);
        for (size_t i = 0; i < x.size(); ++i) x[i] = -6.0 + 0.2 * static_cast<double>(i) + 0.013;
        const Vec probe = test::random_normal(x.size(), 6);
        const int64_t n = static_cast<int64_t>(x.size());
        Vec y(x.size()), dx(x.size());
        const auto f = [&] {
          gelu_forward(y.data(), x.data(), n);
          return dot(probe, y);
        };
        gelu_backward(dx.data(), probe.data(), x.data(), n);
        test::expect_gradient(f, x, dx, kGradTol, "gelu dx");
        gelu_forward(y.data(), x.data(), n);  // and the forward is the tanh GELU
        for (size_t i = 0; i < x.size(); ++i) {
          const double v = x[i];
          EXPECT_DOUBLE_EQ(
              y[i], 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
        }
      }};
}

const float kRates[] = {0.0f, 0.1f, 0.25f, 0.5f, 0.9f};
// A step past 2^32 so the counter's high word is used.
const DropoutSite kSite{0x123456789abcull, (uint64_t{1} << 32) + 3, 2};

// The mask by core/philox.h's scalar Philox: element e keeps unless (w >> 8) / 2^24 < rate,
// w word e mod 4 of the block at counter {e / 4, site, step low, step high}, key seed.
Vec philox_mask(int64_t n, float rate, DropoutSite w) {
  Vec mask(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) {
    const PhiloxCounter block =
        philox4x32_10({static_cast<uint32_t>(e / 4), w.site, static_cast<uint32_t>(w.step),
                       static_cast<uint32_t>(w.step >> 32)},
                      {static_cast<uint32_t>(w.seed), static_cast<uint32_t>(w.seed >> 32)});
    const double u = static_cast<double>(block[static_cast<size_t>(e % 4)] >> 8) / 16777216.0;
    mask[e] = u < static_cast<double>(rate) ? 0.0 : 1.0;
  }
  return mask;
}

template <class T>
OpCase dropout_case() {
  const auto inputs = [](int64_t n) {
    const Vec x = test::random_normal(static_cast<size_t>(n), 16),
              dy = test::random_normal(static_cast<size_t>(n), 17);
    return std::pair{std::vector<T>(x.begin(), x.end()), std::vector<T>(dy.begin(), dy.end())};
  };
  return {"dropout_" + dtype_suffix<T>(),
          Contract::exact,
          // h: the rate; 3 * 4096 + 37: three chunks and a partial Philox group
          {{.n = 1, .h = 2},
           {.n = 7, .h = 1},
           {.n = 63, .h = 3},
           {.n = 64, .h = 2},
           {.n = 65, .h = 4},
           {.n = 130, .h = 0},
           {.n = 3 * 4096 + 37, .h = 2}},
          [=](const Shape& s) {
            const float rate = kRates[s.h];
            const auto [x, dy] = inputs(s.n);
            std::vector<uint8_t> mask(x.size()), mask_fwd(x.size()), mask_in_place(x.size());
            std::vector<T> y(x.size()), y_in_place = x, dx(x.size()), dx_in_place = dy;
            dropout_mask(mask.data(), s.n, rate, kSite);
            dropout_forward(y.data(), mask_fwd.data(), x.data(), s.n, rate, kSite);
            dropout_forward(y_in_place.data(), mask_in_place.data(), y_in_place.data(), s.n, rate,
                            kSite);
            dropout_backward(dx.data(), dy.data(), mask.data(), s.n, rate);
            dropout_backward(dx_in_place.data(), dx_in_place.data(), mask.data(), s.n, rate);
            return std::vector<Out>{out("mask", mask),
                                    out("mask_forward", mask_fwd, "mask"),
                                    out("mask_in_place", mask_in_place, "mask"),
                                    out("y", y),
                                    out("y_in_place", y_in_place, "y"),
                                    out("dx", dx),
                                    out("dx_in_place", dx_in_place, "dx")};
          },
          [=](const Shape& s) {
            const float rate = kRates[s.h];
            const auto [x, dy] = inputs(s.n);
            const Vec mask = philox_mask(s.n, rate, kSite);
            // 1 / (1 - rate) in T; then one rounded product per kept element
            const double scale = std::is_same_v<T, float> ? 1.0f / (1.0f - rate)
                                                          : 1.0 / (1.0 - static_cast<double>(rate));
            Vec y(x.size()), dx(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
              y[i] = mask[i] ? static_cast<T>(static_cast<double>(x[i]) * scale) : 0.0;
              dx[i] = mask[i] ? static_cast<T>(static_cast<double>(dy[i]) * scale) : 0.0;
            }
            return std::vector<Want>{exact("mask", mask), exact("y", y), exact("dx", dx)};
          },
          [] {
            // About 1 - rate of the elements are kept.
            const int64_t n = 1000;
            const Vec x = test::random_normal(n, 16);
            Vec y(n);
            std::vector<uint8_t> mask(n);
            dropout_forward(y.data(), mask.data(), x.data(), n, 0.25f, {7, 3, 2});
            EXPECT_NEAR(std::count(mask.begin(), mask.end(), 1), 750, 60);
            EXPECT_THROW(dropout_mask(mask.data(), n, 1.0f, kSite), std::runtime_error);
            // The backward is the gradient of the forward with the same site (the same mask).
            Vec xs = test::random_normal(40, 18), dx(40);
            const Vec probe = test::random_normal(40, 19);
            const auto f = [&] {
              dropout_forward(y.data(), mask.data(), xs.data(), 40, 0.3f, kSite);
              return dot(probe, Vec(y.begin(), y.begin() + 40));
            };
            f();
            dropout_backward(dx.data(), probe.data(), mask.data(), 40, 0.3f);
            test::expect_gradient(f, xs, dx, kGradTol, "dropout dx");
          }};
}

// microgpt's ReLU and softmax (activation/relu.h, softmax.h): exact, CPython's operations.
OpCase relu_case() {
  const auto inputs = [](int64_t n) {
    Vec x = test::random_normal(static_cast<size_t>(n), 30), dy = test::random_normal(x.size(), 31);
    const Vec head = {-1.0, 0.0, 2.5, std::nan("")};
    for (size_t i = 0; i < std::min(head.size(), x.size()); ++i) {
      x[i] = head[i];
      dy[i] = 1.0;
    }
    return std::pair{x, dy};
  };
  return {"relu_f64",
          Contract::exact,
          {{.n = 4}, {.n = 17}},
          [=](const Shape& s) {
            const auto [x, dy] = inputs(s.n);
            Vec y(x.size()), dx(x.size(), 0.5);
            relu_forward(y.data(), x.data(), s.n);
            relu_backward(dx.data(), dy.data(), x.data(), s.n);
            return std::vector<Out>{out("y", y), out("dx", dx)};
          },
          [=](const Shape& s) {
            const auto [x, dy] = inputs(s.n);
            Vec y(x.size()), dx(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
              y[i] = x[i] > 0 ? x[i] : 0.0;  // NaN -> 0, as Python's max(0, x)
              dx[i] = 0.5 + (x[i] > 0 ? dy[i] : 0.0);
            }
            if (s.n == 4) {  // spelled out
              EXPECT_EQ(y, (Vec{0.0, 0.0, 2.5, 0.0}));
              EXPECT_EQ(dx, (Vec{0.5, 0.5, 1.5, 0.5}));
            }
            return std::vector<Want>{exact("y", y), exact("dx", dx)};
          },
          [] {  // away from the kink at 0
            Vec x = test::random_normal(17, 32), y(17), dx(17, 0.0);
            const Vec probe = test::random_normal(17, 33);
            const auto f = [&] {
              relu_forward(y.data(), x.data(), 17);
              return dot(probe, y);
            };
            relu_backward(dx.data(), probe.data(), x.data(), 17);
            test::expect_gradient(f, x, dx, kGradTol, "relu dx");
          }};
}

// microgpt.py's softmax, literally: max, exp(x - max), a sum from 0, times total ** -1.
Vec literal_softmax(const Vec& x) {
  double mx = x[0];
  for (double v : x) mx = std::max(mx, v);
  Vec e(x.size());
  double total = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e[i] = std::exp(x[i] - mx);
    total += e[i];
  }
  const double inv = cpython_pow(total, -1.0);
  for (double& v : e) v = v * inv;
  return e;
}

OpCase softmax_case() {
  // h = 1: logits near 1000 (the maximum keeps exp finite)
  const auto inputs = [](const Shape& s) {
    Vec x = test::random_normal(static_cast<size_t>(s.n), 13, 3.0, s.h ? 1000.0 : 0.0);
    return std::pair{x, test::random_normal(x.size(), 14)};
  };
  return {"softmax_f64",
          Contract::exact,
          {{.n = 1}, {.n = 3}, {.n = 27}, {.n = 27, .h = 1}, {.n = 130}},
          [=](const Shape& s) {
            const auto [x, dp] = inputs(s);
            Vec p(x.size()), p_in_place = x, dx(x.size(), 0.25);
            softmax_forward(p.data(), x.data(), s.n);
            softmax_forward(p_in_place.data(), p_in_place.data(), s.n);
            softmax_backward(dx.data(), dp.data(), p.data(), s.n);
            return std::vector<Out>{out("p", p), out("p_in_place", p_in_place, "p"), out("dx", dx)};
          },
          [=](const Shape& s) {
            const auto [x, dp] = inputs(s);
            const Vec p = literal_softmax(x);
            const double pdp = dot(p, dp);
            Vec dx(x.size());
            for (size_t i = 0; i < x.size(); ++i) dx[i] = 0.25 + p[i] * (dp[i] - pdp);
            return std::vector<Want>{exact("p", p), near("dx", dx, 1e-15, 1e-16)};
          },
          [] {
            Vec x = test::random_normal(27, 13, 3.0);
            const Vec probe = test::random_normal(27, 14);
            Vec p(27), dx(27, 0.0);
            softmax_forward(p.data(), x.data(), 27);
            EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-15);
            const auto f = [&] {
              softmax_forward(p.data(), x.data(), 27);
              return dot(probe, p);
            };
            f();
            softmax_backward(dx.data(), probe.data(), p.data(), 27);
            test::expect_gradient(f, x, dx, {.abs = 1e-8}, "softmax dx");
            Vec big{1000.0, 1001.0, 999.0}, pb(3);  // no overflow: the maximum is subtracted
            softmax_forward(pb.data(), big.data(), 3);
            EXPECT_TRUE(std::isfinite(pb[0]) && std::isfinite(pb[1]) && pb[1] > pb[0]);
          }};
}

std::vector<OpCase> activation_cases() {
  return {gelu_case(), dropout_case<float>(), dropout_case<double>(), relu_case(), softmax_case()};
}

// ---------------------------------------------------------------------------------------------
// norm

// An accumulated output: within rel of the largest change from its start, plus two roundings
// of its own size.
Want near_change(std::string name, Vec v, const Vec& start, double rel) {
  double m = 0;
  for (size_t i = 0; i < v.size(); ++i) m = std::max(m, std::abs(v[i] - start[i]));
  Vec bound(v.size());
  for (size_t i = 0; i < v.size(); ++i) bound[i] = rel * m + 2 * kF32 * std::abs(v[i]);
  return bounded(std::move(name), std::move(v), std::move(bound));
}

// rows x n = C
const std::vector<Shape> kNormShapes = {{1, 1},  {3, 7},  {5, 16},  {2, 17},
                                        {3, 33}, {5, 83}, {2, 130}, {2, 768}};

struct NormInputs {
  Floats x, w, b, dy, dx0, dw0, db0;
};
NormInputs norm_inputs(const Shape& s) {
  const size_t n = static_cast<size_t>(s.rows * s.n), C = static_cast<size_t>(s.n);
  return {normal_floats(n, 20, 1.5, 0.3),
          normal_floats(C, 21, 0.2, 1.0),
          normal_floats(C, 22),
          normal_floats(n, 23),
          normal_floats(n, 25),
          normal_floats(C, 26),
          normal_floats(C, 27)};
}

OpCase layernorm_case() {
  return {"layernorm_f32",
          Contract::row_invariant,
          kNormShapes,
          [](const Shape& s) {
            const NormInputs in = norm_inputs(s);
            const int64_t rows = s.rows, C = s.n;
            Floats y(in.x.size()), y_no_stats(in.x.size()), mean(rows), rstd(rows);
            layernorm_forward(y.data(), mean.data(), rstd.data(), in.x.data(), in.w.data(),
                              in.b.data(), rows, C, 1e-5f);
            layernorm_forward(y_no_stats.data(), nullptr, nullptr, in.x.data(), in.w.data(),
                              in.b.data(), rows, C, 1e-5f);
            const Floats y_rows = row_by_row(rows, C, [&](int64_t r, float* yr) {
              layernorm_forward(yr, nullptr, nullptr, in.x.data() + r * C, in.w.data(), in.b.data(),
                                1, C, 1e-5f);
            });
            Floats dx = in.dx0, dw = in.dw0, db = in.db0;
            layernorm_backward(dx.data(), dw.data(), db.data(), in.dy.data(), in.x.data(),
                               in.w.data(), mean.data(), rstd.data(), rows, C);
            return std::vector<Out>{out("y", y),
                                    out("y_no_stats", y_no_stats, "y"),
                                    out("y_rows", y_rows, "y"),
                                    out("mean", mean),
                                    out("rstd", rstd),
                                    out("dx", dx),
                                    out("dw", dw),
                                    out("db", db)};
          },
          [](const Shape& s) {
            const NormInputs in = norm_inputs(s);
            const int64_t rows = s.rows, C = s.n;
            const Vec x = widen_all(in.x), w = widen_all(in.w), b = widen_all(in.b),
                      dy = widen_all(in.dy), dx0 = widen_all(in.dx0), dw0 = widen_all(in.dw0),
                      db0 = widen_all(in.db0);
            Vec y(x.size()), mean(rows), rstd(rows), dx = dx0, dw = dw0, db = db0;
            reference::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                         b.data(), rows, C, 1e-5);
            reference::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(),
                                          w.data(), mean.data(), rstd.data(), rows, C);
            return std::vector<Want>{
                near_max("y", y, 1e-6),           near("mean", mean, 1e-6, 1e-7),
                near("rstd", rstd, 1e-6),         near_change("dx", dx, dx0, 1e-5),
                near_change("dw", dw, dw0, 1e-6), near_change("db", db, db0, 1e-6)};
          },
          [] {
            const int64_t rows = 3, C = 19;
            Vec x = test::random_normal(rows * C, 1, 2.0, 0.5),
                w = test::random_normal(C, 2, 0.3, 1.0), b = test::random_normal(C, 3);
            const Vec probe = test::random_normal(rows * C, 4);
            Vec y(rows * C), mean(rows), rstd(rows);
            const auto f = [&] {
              layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                                rows, C, 1e-5);
              return dot(probe, y);
            };
            f();
            // dx accumulates: start from a known offset and subtract it.
            Vec dx = test::random_normal(rows * C, 5), dw(C, 0.0), db(C, 0.0);
            const Vec dx0 = dx;
            layernorm_backward(dx.data(), dw.data(), db.data(), probe.data(), x.data(), w.data(),
                               mean.data(), rstd.data(), rows, C);
            for (size_t i = 0; i < dx.size(); ++i) dx[i] -= dx0[i];
            test::expect_gradient(f, x, dx, kGradTol, "dx");
            test::expect_gradient(f, w, dw, kGradTol, "dw");
            test::expect_gradient(f, b, db, kGradTol, "db");
          }};
}

OpCase rmsnorm_gain_case() {
  return {
      "rmsnorm_gain_f32",
      Contract::row_invariant,
      kNormShapes,
      [](const Shape& s) {
        const NormInputs in = norm_inputs(s);
        const int64_t rows = s.rows, n = s.n;
        Floats y(in.x.size()), rstd(rows), scratch(1);
        rmsnorm_gain_forward(y.data(), rstd.data(), in.x.data(), in.w.data(), rows, n, 1e-5f);
        const Floats y_rows = row_by_row(rows, n, [&](int64_t r, float* yr) {
          rmsnorm_gain_forward(yr, scratch.data(), in.x.data() + r * n, in.w.data(), 1, n, 1e-5f);
        });
        Floats dx = in.dx0, dg = in.dw0;
        rmsnorm_gain_backward(dx.data(), dg.data(), in.dy.data(), in.x.data(), in.w.data(),
                              rstd.data(), rows, n);
        return std::vector<Out>{out("y", y), out("y_rows", y_rows, "y"), out("rstd", rstd),
                                out("dx", dx), out("dg", dg)};
      },
      [](const Shape& s) {
        const NormInputs in = norm_inputs(s);
        const int64_t rows = s.rows, n = s.n;
        const Vec x = widen_all(in.x), g = widen_all(in.w), dy = widen_all(in.dy),
                  dx0 = widen_all(in.dx0), dg0 = widen_all(in.dw0);
        Vec y(x.size()), rstd(rows), dx = dx0, dg = dg0;
        reference::rmsnorm_gain_forward(y.data(), rstd.data(), x.data(), g.data(), rows, n, 1e-5);
        reference::rmsnorm_gain_backward(dx.data(), dg.data(), dy.data(), x.data(), g.data(),
                                         rstd.data(), rows, n);
        return std::vector<Want>{near_max("y", y, 1e-6), near("rstd", rstd, 1e-6),
                                 near_change("dx", dx, dx0, 1e-5),
                                 near_change("dg", dg, dg0, 1e-6)};
      },
      [] {
        const int64_t rows = 3, n = 19;
        Vec x = test::random_normal(rows * n, 7, 1.5, 0.2), g = test::random_normal(n, 8, 0.3, 1.0);
        const Vec probe = test::random_normal(rows * n, 9);
        Vec y(rows * n), rstd(rows);
        const auto f = [&] {
          rmsnorm_gain_forward(y.data(), rstd.data(), x.data(), g.data(), rows, n, 1e-5);
          return dot(probe, y);
        };
        f();
        Vec dx = test::random_normal(rows * n, 10), dg(n, 0.0);
        const Vec dx0 = dx;
        rmsnorm_gain_backward(dx.data(), dg.data(), probe.data(), x.data(), g.data(), rstd.data(),
                              rows, n);
        for (size_t i = 0; i < dx.size(); ++i) dx[i] -= dx0[i];
        test::expect_gradient(f, x, dx, kGradTol, "dx");
        test::expect_gradient(f, g, dg, kGradTol, "dg");
      }};
}

// microgpt's RMSNorm (norm/rmsnorm.h): exact, microgpt.py's operations.
OpCase rmsnorm_case() {
  const auto inputs = [](const Shape& s) {
    const size_t n = static_cast<size_t>(s.rows * s.n);
    return std::tuple{test::random_normal(n, 11), test::random_normal(n, 12),
                      test::random_normal(n, 13)};
  };
  return {
      "rmsnorm_f64",
      Contract::exact,
      {{3, 16}, {1, 1}, {2, 7}, {2, 27}},
      [=](const Shape& s) {
        const auto [x, dy, dx0] = inputs(s);
        Vec y(x.size()), scale(s.rows), dx = dx0;
        rmsnorm_forward(y.data(), scale.data(), x.data(), s.rows, s.n, 1e-5);
        rmsnorm_backward(dx.data(), dy.data(), x.data(), scale.data(), s.rows, s.n, 1e-5);
        return std::vector<Out>{out("y", y), out("scale", scale), out("dx", dx)};
      },
      [=](const Shape& s) {
        const auto [x, dy, dx0] = inputs(s);
        const int64_t n = s.n;
        Vec y(x.size()), scale(s.rows), dx(x.size());
        for (int64_t r = 0; r < s.rows; ++r) {
          double ss = 0;  // sum(xi * xi for xi in x) / len(x), then (ms + eps) ** -0.5
          for (int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
          const double sc =
              cpython_pow(ss * cpython_pow(static_cast<double>(n), -1.0) + 1e-5, -0.5);
          scale[r] = sc;
          double xdy = 0;
          for (int64_t i = 0; i < n; ++i) {
            y[r * n + i] = x[r * n + i] * sc;
            xdy += x[r * n + i] * dy[r * n + i];
          }
          // dx = s dy - x s^3 (x . dy) / n
          for (int64_t i = 0; i < n; ++i) {
            dx[r * n + i] = dx0[r * n + i] + sc * dy[r * n + i] -
                            x[r * n + i] * sc * sc * sc * xdy / static_cast<double>(n);
          }
        }
        return std::vector<Want>{exact("y", y), exact("scale", scale), near_max("dx", dx, 1e-14)};
      },
      [] {
        const int rows = 3, n = 16;
        Vec x = test::random_normal(rows * n, 11);
        const Vec probe = test::random_normal(rows * n, 12);
        Vec y(rows * n), s(rows), dx(rows * n, 0.0);
        const auto f = [&] {
          rmsnorm_forward(y.data(), s.data(), x.data(), rows, n, 1e-5);
          return dot(probe, y);
        };
        f();
        rmsnorm_backward(dx.data(), probe.data(), x.data(), s.data(), rows, n, 1e-5);
        test::expect_gradient(f, x, dx, {.abs = 1e-7}, "dx");
      }};
}

std::vector<OpCase> norm_cases() { return {layernorm_case(), rmsnorm_gain_case(), rmsnorm_case()}; }

// ---------------------------------------------------------------------------------------------
// matmul

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
// 4-row passes; 70: two row blocks, the second of six.
const std::vector<Shape> kInOutShapes = {
    {1, 37, 96},  {2, 40, 64},    {7, 37, 96},  {1, 64, 100}, {7, 40, 100},  {3, 320, 256},
    {9, 48, 208}, {1, 48, 80},    {2, 208, 80}, {7, 48, 80},  {1, 208, 384}, {16, 64, 384},
    {3, 48, 208}, {16, 208, 208}, {5, 64, 384}, {33, 48, 80}, {70, 48, 80}};

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
// outputs and one left over; nin 37 a tail after two vectors; 67 and 70 rows: pairs, a single
// row, two row blocks.
template <class W>
OpCase matmul_out_in_case() {
  return {"matmul_out_in_" + dtype_suffix<W>(),
          Contract::row_invariant,
          {{1, 37, 13}, {2, 64, 13}, {5, 48, 40}, {67, 48, 40}, {70, 40, 13}, {3, 17, 1}},
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

// ---------------------------------------------------------------------------------------------
// attention

// microgpt's attention (attention/exact.h): exact, microgpt.py's loops. rows = T, n = C,
// k = n_head; scale 1 / sqrt(head width).
OpCase attention_exact_case() {
  const auto inputs = [](const Shape& s) {
    const size_t n = static_cast<size_t>(s.rows * s.n);
    return std::tuple{test::random_normal(n, 15), test::random_normal(n, 16),
                      test::random_normal(n, 17), test::random_normal(n, 18)};
  };
  return {
      "attention_exact_f64",
      Contract::exact,
      {{5, 8, 2}, {1, 4, 1}, {7, 12, 3}, {16, 16, 4}},
      [=](const Shape& s) {
        const auto [q, k, v, dout] = inputs(s);
        const int64_t T = s.rows, C = s.n, H = s.k;
        const double scale = 1.0 / std::sqrt(static_cast<double>(C / H));
        Vec o(T * C), att(H * T * T, 0.0), o_rows(T * C), att_rows(H * T * T, 0.0);
        attention_forward(o.data(), att.data(), q.data(), k.data(), v.data(), 0, T, C, H, T, scale);
        for (int64_t t = 0; t < T; ++t) {  // one row at a time against the cache
          attention_forward(o_rows.data(), att_rows.data(), q.data(), k.data(), v.data(), t, t + 1,
                            C, H, T, scale);
        }
        Vec dq(T * C, 0.0), dk(T * C, 0.0), dv(T * C, 0.0), scratch(T);
        attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), dout.data(), att.data(),
                           q.data(), k.data(), v.data(), T, C, H, T, scale);
        return std::vector<Out>{
            out("out", o), out("att", att), out("out_row_by_row", o_rows, "out"),
            out("dq", dq), out("dk", dk),   out("dv", dv)};
      },
      [=](const Shape& s) {
        const auto [q, k, v, dout] = inputs(s);
        const int64_t T = s.rows, C = s.n, H = s.k, hd = C / H;
        const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
        Vec o(T * C), att(H * T * T, 0.0);
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t t = 0; t < T; ++t) {
            Vec logits(t + 1);
            for (int64_t j = 0; j <= t; ++j) {
              double d = 0;  // sum(q[i] * k[j][i] for i in range(hd)), then * scale
              for (int64_t i = 0; i < hd; ++i) d += q[t * C + h * hd + i] * k[j * C + h * hd + i];
              logits[j] = d * scale;
            }
            const Vec a = literal_softmax(logits);
            for (int64_t j = 0; j <= t; ++j) att[(h * T + t) * T + j] = a[j];
            for (int64_t i = 0; i < hd; ++i) {
              double acc = 0;
              for (int64_t j = 0; j <= t; ++j) acc += a[j] * v[j * C + h * hd + i];
              o[t * C + h * hd + i] = acc;
            }
          }
        }
        // The gradients through causal_reference.h's backward, on q | k | v rows.
        Vec qkv(T * 3 * C), dqkv(T * 3 * C), ds(T), dq(T * C), dk(T * C), dv(T * C);
        for (int64_t t = 0; t < T; ++t) {
          std::copy_n(q.begin() + t * C, C, qkv.begin() + t * 3 * C);
          std::copy_n(k.begin() + t * C, C, qkv.begin() + t * 3 * C + C);
          std::copy_n(v.begin() + t * C, C, qkv.begin() + t * 3 * C + 2 * C);
        }
        for (int64_t h = 0; h < H; ++h) {
          reference::attention_head_backward(dqkv.data() + h * hd, dout.data() + h * hd,
                                             att.data() + h * T * T, qkv.data() + h * hd, ds.data(),
                                             T, C, hd);
        }
        for (int64_t t = 0; t < T; ++t) {
          std::copy_n(dqkv.begin() + t * 3 * C, C, dq.begin() + t * C);
          std::copy_n(dqkv.begin() + t * 3 * C + C, C, dk.begin() + t * C);
          std::copy_n(dqkv.begin() + t * 3 * C + 2 * C, C, dv.begin() + t * C);
        }
        return std::vector<Want>{exact("out", o), exact("att", att), near_max("dq", dq, 1e-13),
                                 near_max("dk", dk, 1e-13), near_max("dv", dv, 1e-13)};
      },
      [] {
        const int T = 5, C = 8, H = 2;
        Vec q = test::random_normal(T * C, 15), k = test::random_normal(T * C, 16),
            v = test::random_normal(T * C, 17);
        const Vec probe = test::random_normal(T * C, 18);
        Vec o(T * C), att(H * T * T), dq(T * C, 0.0), dk(T * C, 0.0), dv(T * C, 0.0), scratch(T);
        const double scale = 0.5;
        const auto loss = [&] {
          attention_forward(o.data(), att.data(), q.data(), k.data(), v.data(), 0, T, C, H, T,
                            scale);
          return dot(probe, o);
        };
        loss();
        for (int c = 0; c < C; ++c) EXPECT_DOUBLE_EQ(o[c], v[c]);  // position 0 sees itself only
        const Vec before = o;  // changing a future key leaves earlier outputs alone
        k[4 * C] += 1.0;
        loss();
        for (int i = 0; i < 4 * C; ++i) EXPECT_EQ(o[i], before[i]);
        k[4 * C] -= 1.0;
        loss();
        attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), probe.data(),
                           att.data(), q.data(), k.data(), v.data(), T, C, H, T, scale);
        test::expect_gradient(loss, q, dq, {.abs = 1e-7}, "dq");
        test::expect_gradient(loss, k, dk, {.abs = 1e-7}, "dk");
        test::expect_gradient(loss, v, dv, {.abs = 1e-7}, "dv");
      }};
}

template <class W>
W nan_of() {
  W w;
  if constexpr (std::is_same_v<W, float>) {
    w = std::numeric_limits<float>::quiet_NaN();
  } else {
    w.bits = std::is_same_v<W, Bf16> ? 0x7fc0 : 0x7e00;
  }
  return w;
}

// GPT-2's training attention (attention/causal.h). B = rows, T = n, C = k, n_head = h: head
// widths 4, 12, 24 (not multiples of 16: plain loops in the backward), 16, 32, 48, 128; T = 1.
OpCase attention_train_case() {
  const auto inputs = [](const Shape& s) {
    return std::pair{normal_floats(s.rows * s.n * 3 * s.k, 25),
                     normal_floats(s.rows * s.n * s.k, 26)};
  };
  return {
      "attention_causal_f32",
      Contract::row_invariant,
      {{2, 5, 8, 2},
       {1, 1, 32, 2},
       {1, 17, 36, 3},
       {2, 37, 48, 2},
       {1, 33, 32, 2},
       {2, 37, 64, 2},
       {2, 37, 96, 2},
       {1, 16, 256, 2}},
      [=](const Shape& s) {
        const auto [qkv, dout] = inputs(s);
        const int64_t B = s.rows, T = s.n, C = s.k, H = s.h;
        Floats o(B * T * C), att(B * H * T * T), scratch(causal_attention_scratch_size(B, T, C, H));
        causal_attention_forward(o.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H);
        Floats dqkv(qkv.size(), 99.0f);  // written, not accumulated
        causal_attention_backward(dqkv.data(), dout.data(), att.data(), qkv.data(), scratch.data(),
                                  B, T, C, H);
        // Inference over the same rows: a float cache (NaN where nothing is stored), rows
        // [0, T/2) then [T/2, T), computes the training forward's bits.
        Floats cached(o.size());
        const int64_t ldk = kv_key_stride(T), t0 = T / 2;
        for (int64_t b = 0; b < B; ++b) {
          Floats keys(C * ldk, nan_of<float>()), values(T * C, nan_of<float>()), q(T * C);
          for (int64_t t = 0; t < T; ++t) {
            const float* row = qkv.data() + (b * T + t) * 3 * C;
            kv_store(keys.data(), values.data(), row + C, row + 2 * C, t, T, C);
            std::copy_n(row, C, q.begin() + t * C);
          }
          float* ob = cached.data() + b * T * C;
          if (t0 > 0) attention_cached(ob, q.data(), keys.data(), values.data(), 0, t0, T, C, H);
          attention_cached(ob + t0 * C, q.data() + t0 * C, keys.data(), values.data(), t0, T, T, C,
                           H);
        }
        return std::vector<Out>{out("out", o), out("att", att), out("dqkv", dqkv),
                                out("out_cached", cached, "out")};
      },
      [=](const Shape& s) {
        const auto [qkv, dout] = inputs(s);
        const int64_t B = s.rows, T = s.n, C = s.k, H = s.h;
        const Vec q = widen_all(qkv), d = widen_all(dout);
        Vec o(B * T * C), att(B * H * T * T), scratch(T), dqkv(q.size());
        causal_attention_forward(o.data(), att.data(), q.data(), scratch.data(), B, T, C, H);
        causal_attention_backward(dqkv.data(), d.data(), att.data(), q.data(), scratch.data(), B, T,
                                  C, H);
        return std::vector<Want>{near_max("out", o, 1e-6), near("att", att, 0, 1e-6),
                                 near_max("dqkv", dqkv, 1e-5)};
      },
      [] {
        const int64_t B = 2, T = 5, C = 8, H = 2;
        Vec qkv = test::random_normal(B * T * 3 * C, 11);
        const Vec probe = test::random_normal(B * T * C, 12);
        Vec o(B * T * C), att(B * H * T * T), scratch(causal_attention_scratch_size(B, T, C, H));
        const auto f = [&] {
          causal_attention_forward(o.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H);
          return dot(probe, o);
        };
        f();
        Vec dqkv(qkv.size(), 99.0);
        causal_attention_backward(dqkv.data(), probe.data(), att.data(), qkv.data(), scratch.data(),
                                  B, T, C, H);
        test::expect_gradient(f, qkv, dqkv, kGradTol, "dqkv");
        const Vec o0 = o;  // causality: the output at t does not depend on later positions
        qkv[(1 * T + 4) * 3 * C + C + 3] += 1.0;      // a key of sequence 1, position 4
        qkv[(1 * T + 4) * 3 * C + 2 * C + 5] += 1.0;  // and a value
        f();
        for (int64_t i = 0; i < (1 * T + 4) * C; ++i) EXPECT_EQ(o[i], o0[i]) << i;
      }};
}

// attention_cached: rows [t0, t1) = [rows, n) against a W cache of capacity h, head width k,
// 3 heads. Widths 32, 16, 48 (vector paths) and 12, 24; caches longer than the rows (stride
// padding, NaN in every slot not stored); more than 16 and 32 positions.
template <class W>
OpCase attention_cached_case() {
  const int64_t H = 3;
  const auto inputs = [=](const Shape& s) {
    const int64_t C = H * s.k;
    return std::tuple{test::random_uniform((s.n - s.rows) * C, 9),
                      test::random_uniform(s.n * C, 10), test::random_uniform(s.n * C, 11)};
  };
  return {"attention_cached_" + dtype_suffix<W>(),
          Contract::row_invariant,
          {{3, 7, 32, 7},
           {3, 7, 12, 7},
           {0, 5, 16, 20},
           {5, 9, 24, 40},
           {0, 1, 12, 1},
           {16, 19, 32, 19},
           {0, 33, 48, 40}},
          [=](const Shape& s) {
            const auto [q, k, v] = inputs(s);
            const int64_t t0 = s.rows, t1 = s.n, C = H * s.k, cap = s.h;
            std::vector<W> keys(C * kv_key_stride(cap), nan_of<W>()), values(cap * C, nan_of<W>());
            for (int64_t t = 0; t < t1; ++t)
              kv_store(keys.data(), values.data(), k.data() + t * C, v.data() + t * C, t, cap, C);
            Floats o((t1 - t0) * C);
            attention_cached(o.data(), q.data(), keys.data(), values.data(), t0, t1, cap, C, H);
            const Floats decode = row_by_row(t1 - t0, C, [&](int64_t r, float* yr) {
              attention_cached(yr, q.data() + r * C, keys.data(), values.data(), t0 + r, t0 + r + 1,
                               cap, C, H);
            });
            return std::vector<Out>{bits_out("keys", keys), bits_out("values", values),
                                    out("out", o), out("out_row_by_row", decode, "out")};
          },
          [=](const Shape& s) {
            const auto [q, k, v] = inputs(s);
            const int64_t t0 = s.rows, t1 = s.n, C = H * s.k, cap = s.h, hd = s.k,
                          ldk = kv_key_stride(cap);
            // keys transposed per head, (n_head, D, ldk); values as rows
            Vec keys(C * ldk, bits_of(nan_of<W>())), values(cap * C, bits_of(nan_of<W>()));
            std::vector<W> kw(k.size()), vw(v.size());
            for (size_t i = 0; i < k.size(); ++i) {
              from_float(kw[i], k[i]);
              from_float(vw[i], v[i]);
            }
            for (int64_t t = 0; t < t1; ++t) {
              for (int64_t c = 0; c < C; ++c) {
                keys[c * ldk + t] = bits_of(kw[t * C + c]);
                values[t * C + c] = bits_of(vw[t * C + c]);
              }
            }
            Vec o((t1 - t0) * C);
            for (int64_t h = 0; h < H; ++h) {
              for (int64_t t = t0; t < t1; ++t) {
                Vec a(t + 1);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j <= t; ++j) {
                  double d = 0;
                  for (int64_t i = 0; i < hd; ++i)
                    d += double(q[(t - t0) * C + h * hd + i]) * widen(kw[j * C + h * hd + i]);
                  a[j] = d / std::sqrt(double(hd));
                  mx = std::max(mx, a[j]);
                }
                for (double& e : a) sum += e = std::exp(e - mx);
                for (int64_t i = 0; i < hd; ++i) {
                  double acc = 0;
                  for (int64_t j = 0; j <= t; ++j)
                    acc += a[j] / sum * widen(vw[j * C + h * hd + i]);
                  o[(t - t0) * C + h * hd + i] = acc;
                }
              }
            }
            return std::vector<Want>{exact("keys", keys), exact("values", values),
                                     near("out", o, 1e-5, 1e-5)};
          },
          nullptr};
}

std::vector<OpCase> attention_cases() {
  return {attention_exact_case(), attention_train_case(), attention_cached_case<float>(),
          attention_cached_case<Bf16>(), attention_cached_case<F16>()};
}

// ---------------------------------------------------------------------------------------------
// loss

// rows x n = V; h = 1: logits uniform in [-30, 30], far below the maximum included. Targets
// the first, the last and a middle class.
const std::vector<Shape> kLossShapes = {{1, 1},  {3, 7},   {3, 16},   {2, 17},
                                        {3, 23}, {2, 130}, {3, 1037}, {2, 1000, 1, 1}};

std::pair<Floats, Ints> loss_inputs(const Shape& s) {
  Floats logits = s.h ? test::random_uniform(s.rows * s.n, 2, -30.0f, 30.0f)
                      : normal_floats(s.rows * s.n, 27, 8.0);
  Ints targets(s.rows);
  for (int64_t r = 0; r < s.rows; ++r)
    targets[r] = static_cast<int32_t>(r % 3 == 0 ? 0 : r % 3 == 1 ? s.n - 1 : s.n / 2);
  return {logits, targets};
}

constexpr float kLossScale = 0.37f;

OpCase cross_entropy_case() {
  return {"cross_entropy_f32",
          Contract::row_invariant,
          kLossShapes,
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const int64_t rows = s.rows, V = s.n;
            Floats losses(rows), lse(rows), lse2(rows), g(logits.size()), g_in_place = logits;
            const double total = cross_entropy_forward(losses.data(), lse.data(), logits.data(),
                                                       targets.data(), rows, V);
            const double total2 =
                cross_entropy_forward(nullptr, lse2.data(), logits.data(), targets.data(), rows, V);
            cross_entropy_backward(g.data(), logits.data(), lse.data(), targets.data(), rows, V,
                                   kLossScale);
            cross_entropy_backward(g_in_place.data(), g_in_place.data(), lse.data(), targets.data(),
                                   rows, V, kLossScale);
            return std::vector<Out>{scalar_out("total", total),
                                    scalar_out("total_no_losses", total2),
                                    out("losses", losses),
                                    out("lse", lse),
                                    out("lse_no_losses", lse2, "lse"),
                                    out("dlogits", g),
                                    out("dlogits_in_place", g_in_place, "dlogits")};
          },
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const int64_t rows = s.rows, V = s.n;
            const Vec l = widen_all(logits);
            Vec losses(rows), lse(rows), g(l.size());
            const double total =
                cross_entropy_forward(losses.data(), lse.data(), l.data(), targets.data(), rows, V);
            cross_entropy_backward(g.data(), l.data(), lse.data(), targets.data(), rows, V,
                                   static_cast<double>(kLossScale));
            // exp through vec_math.h (~2e-7), differences to the maximum rounded in float
            const double gmax = max_abs(g);
            Vec bound(g.size());
            for (size_t i = 0; i < g.size(); ++i)
              bound[i] = std::min(1e-6 * gmax, 1e-5 * std::abs(g[i]) + 1e-37);
            return std::vector<Want>{near("total", {total}, 1e-5, 1e-6),
                                     near("total_no_losses", {total}, 1e-5, 1e-6),
                                     near("losses", losses, 1e-5, 1e-6),
                                     near("lse", lse, 1e-6, 1e-6), bounded("dlogits", g, bound)};
          },
          [] {
            const int64_t rows = 3, V = 23;
            Vec logits = test::random_normal(rows * V, 13, 3.0);
            const Ints targets = {4, 0, 22};
            Vec losses(rows), lse(rows);
            const double scale = 0.37;
            const auto f = [&] {
              return scale * cross_entropy_forward(losses.data(), lse.data(), logits.data(),
                                                   targets.data(), rows, V);
            };
            f();
            for (int64_t r = 0; r < rows; ++r) {
              double z = 0;
              for (int64_t j = 0; j < V; ++j) z += std::exp(logits[r * V + j]);
              EXPECT_NEAR(losses[r], std::log(z) - logits[r * V + targets[r]], 1e-12);
            }
            Vec grad(logits.size());
            cross_entropy_backward(grad.data(), logits.data(), lse.data(), targets.data(), rows, V,
                                   scale);
            test::expect_gradient(f, logits, grad, kGradTol, "dlogits");
          }};
}

// The backward straight into bf16 (the bf16 path's operand): one rounding of the float value.
OpCase cross_entropy_bf16_case() {
  return {"cross_entropy_bf16",
          Contract::row_invariant,
          kLossShapes,
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            Floats lse(s.rows);
            cross_entropy_forward(nullptr, lse.data(), logits.data(), targets.data(), s.rows, s.n);
            std::vector<Bf16> g(logits.size());
            cross_entropy_backward(g.data(), logits.data(), lse.data(), targets.data(), s.rows, s.n,
                                   kLossScale);
            return std::vector<Out>{out("dlogits", g)};
          },
          [](const Shape& s) {
            const auto [logits, targets] = loss_inputs(s);
            const Vec l = widen_all(logits);
            Vec lse(s.rows), g(l.size());
            cross_entropy_forward(nullptr, lse.data(), l.data(), targets.data(), s.rows, s.n);
            cross_entropy_backward(g.data(), l.data(), lse.data(), targets.data(), s.rows, s.n,
                                   static_cast<double>(kLossScale));
            // bf16's rounding of the float value (whose error, ~1e-5, is much smaller); the
            // target's p - 1 may cancel in float.
            return std::vector<Want>{near("dlogits", g, kBf16 + 4e-5, 1e-6 * kLossScale + 1e-37)};
          },
          nullptr};
}

std::vector<OpCase> loss_cases() { return {cross_entropy_case(), cross_entropy_bf16_case()}; }

// ---------------------------------------------------------------------------------------------
// embedding

// rows x n = C over a vocabulary of 11 (tokens repeat) and 8 positions; the forward's
// positions start at 2 with period 3, the backward's positions have period 3. C: the 64-wide
// column blocks of the backward, ragged ends.
const std::vector<Shape> kEmbeddingShapes = {{6, 1}, {6, 7}, {6, 16}, {7, 17}, {5, 33}, {7, 130}};
const Ints kTokens = {1, 5, 1, 0, 3, 3, 10};
constexpr int64_t kVocab = 11, kPeriod = 3, kFirst = 2;

template <class W>
OpCase embedding_case() {
  const auto inputs = [](const Shape& s) {
    return std::pair{narrow<W>(normal_floats(kVocab * s.n, 60)), normal_floats(8 * s.n, 61)};
  };
  return {"embedding_" + dtype_suffix<W>(),
          Contract::exact,
          kEmbeddingShapes,
          [=](const Shape& s) {
            const auto [table, positions] = inputs(s);
            Floats x(s.rows * s.n), x_plain(x.size());
            embedding_forward(x.data(), kTokens.data(), table.data(), positions.data(), s.rows, s.n,
                              kFirst, kPeriod);
            embedding_forward(x_plain.data(), kTokens.data(), table.data(), nullptr, s.rows, s.n);
            return std::vector<Out>{out("x", x), out("x_no_positions", x_plain)};
          },
          [=](const Shape& s) {
            const auto [table, positions] = inputs(s);
            const int64_t C = s.n;
            Vec x(s.rows * C), x_plain(x.size());
            for (int64_t r = 0; r < s.rows; ++r) {
              for (int64_t i = 0; i < C; ++i) {
                const double e = widen(table[kTokens[r] * C + i]);
                x[r * C + i] = add_f(e, positions[(kFirst + r % kPeriod) * C + i]);
                x_plain[r * C + i] = e;
              }
            }
            return std::vector<Want>{exact("x", x), exact("x_no_positions", x_plain)};
          },
          nullptr};
}

OpCase embedding_backward_case() {
  const auto inputs = [](const Shape& s) {
    return std::tuple{normal_floats(kVocab * s.n, 62), normal_floats(kPeriod * s.n, 63),
                      normal_floats(s.rows * s.n, 64)};
  };
  return {
      "embedding_backward_f32", Contract::fixed_order, kEmbeddingShapes,
      [=](const Shape& s) {
        auto [dtable, dpos, dx] = inputs(s);
        Floats dtable_alone = dtable;
        embedding_backward(dtable.data(), dpos.data(), dx.data(), kTokens.data(), s.rows, s.n,
                           kPeriod);
        embedding_backward(dtable_alone.data(), nullptr, dx.data(), kTokens.data(), s.rows, s.n);
        return std::vector<Out>{out("dtable", dtable), out("dpositions", dpos),
                                out("dtable_without_positions", dtable_alone, "dtable")};
      },
      [=](const Shape& s) {
        const auto [dtable, dpos, dx] = inputs(s);
        Floats t = dtable, p = dpos;  // a repeated token's rows added in row order
        for (int64_t r = 0; r < s.rows; ++r) {
          for (int64_t i = 0; i < s.n; ++i) {
            float& e = t[kTokens[r] * s.n + i];
            e = add_f(e, dx[r * s.n + i]);
            float& q = p[(r % kPeriod) * s.n + i];
            q = add_f(q, dx[r * s.n + i]);
          }
        }
        return std::vector<Want>{exact("dtable", widen_all(t)), exact("dpositions", widen_all(p))};
      },
      // Lookup and the tied head: logits = (wte[tok] + wpe[pos]) wte^T, mean cross-entropy;
      // wte's gradient has a lookup part and a head part.
      [] {
        const int64_t B = 2, T = 3, V = 6, C = 4;
        const Ints tokens = {1, 5, 1, 0, 3, 3}, targets = {5, 1, 0, 3, 3, 2};
        Vec wte = test::random_normal(V * C, 14), wpe = test::random_normal(T * C, 15);
        Vec x(B * T * C), logits(B * T * V), losses(B * T), lse(B * T);
        const auto f = [&] {
          embedding_forward(x.data(), tokens.data(), wte.data(), wpe.data(), B * T, C, 0, T);
          gemm(Trans::No, Trans::Yes, B * T, V, C, 1.0, x.data(), C, wte.data(), C, 0.0,
               logits.data(), V);
          return cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(),
                                       B * T, V) /
                 (B * T);
        };
        f();
        Vec dlogits(logits.size()), dx(x.size()), dwte(wte.size(), 0.0), dwpe(wpe.size(), 0.0);
        cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), B * T, V,
                               1.0 / (B * T));
        gemm(Trans::No, Trans::No, B * T, C, V, 1.0, dlogits.data(), V, wte.data(), C, 0.0,
             dx.data(), C);
        gemm(Trans::Yes, Trans::No, V, C, B * T, 1.0, dlogits.data(), V, x.data(), C, 1.0,
             dwte.data(), C);
        embedding_backward(dwte.data(), dwpe.data(), dx.data(), tokens.data(), B * T, C, T);
        test::expect_gradient(f, wte, dwte, kGradTol, "dwte (lookup + head)");
        test::expect_gradient(f, wpe, dwpe, kGradTol, "dwpe");
      }};
}

// The tied head (EvermindLM): small.h's single chains. rows, n = D, k = V.
OpCase tied_logits_case() {
  const auto inputs = [](const Shape& s) {
    const Floats table = normal_floats(s.k * s.n, 71);
    Floats tableT(table.size());
    for (int64_t v = 0; v < s.k; ++v) {
      for (int64_t d = 0; d < s.n; ++d) tableT[d * s.k + v] = table[v * s.n + d];
    }
    return std::tuple{normal_floats(s.rows * s.n, 70), table, tableT,
                      normal_floats(s.rows * s.k, 72), normal_floats(s.k * s.n, 73)};
  };
  return {"tied_logits_f32",
          Contract::single_chain,
          {{1, 8, 11}, {5, 17, 33}, {7, 64, 130}, {3, 16, 16}},
          [=](const Shape& s) {
            const auto [x, table, tableT, dlogits, dtable0] = inputs(s);
            Floats logits(s.rows * s.k), dx(s.rows * s.n), dtable = dtable0;
            tied_logits_forward(logits.data(), x.data(), tableT.data(), s.rows, s.n, s.k);
            const Floats alone = row_by_row(s.rows, s.k, [&](int64_t r, float* lr) {
              tied_logits_forward(lr, x.data() + r * s.n, tableT.data(), 1, s.n, s.k);
            });
            tied_logits_backward(dx.data(), dtable.data(), dlogits.data(), x.data(), table.data(),
                                 s.rows, s.n, s.k);
            return std::vector<Out>{out("logits", logits),
                                    out("logits_row_by_row", alone, "logits"), out("dx", dx),
                                    out("dtable", dtable)};
          },
          [=](const Shape& s) {
            const auto [x, table, tableT, dlogits, dtable0] = inputs(s);
            Floats logits(s.rows * s.k), dx(s.rows * s.n), dtable = dtable0;
            reference::small_gemm(false, s.rows, s.k, s.n, x.data(), s.n, tableT.data(), s.k,
                                  logits.data(), s.k, false);
            reference::small_gemm(false, s.rows, s.n, s.k, dlogits.data(), s.k, table.data(), s.n,
                                  dx.data(), s.n, false);
            reference::small_gemm(true, s.k, s.n, s.rows, dlogits.data(), s.k, x.data(), s.n,
                                  dtable.data(), s.n, true);
            return std::vector<Want>{exact("logits", widen_all(logits)), exact("dx", widen_all(dx)),
                                     exact("dtable", widen_all(dtable))};
          },
          [] {
            const int64_t rows = 3, D = 5, V = 7;
            Vec x = test::random_normal(rows * D, 74), table = test::random_normal(V * D, 75);
            const Vec probe = test::random_normal(rows * V, 76);
            Vec tableT(V * D), logits(rows * V);
            const auto f = [&] {
              for (int64_t v = 0; v < V; ++v) {
                for (int64_t d = 0; d < D; ++d) tableT[d * V + v] = table[v * D + d];
              }
              tied_logits_forward(logits.data(), x.data(), tableT.data(), rows, D, V);
              return dot(probe, logits);
            };
            Vec dx(rows * D), dtable(V * D, 0.0);
            tied_logits_backward(dx.data(), dtable.data(), probe.data(), x.data(), table.data(),
                                 rows, D, V);
            test::expect_gradient(f, x, dx, kGradTol, "dx");
            test::expect_gradient(f, table, dtable, kGradTol, "dtable");
          }};
}

std::vector<OpCase> embedding_cases() {
  return {embedding_case<float>(), embedding_case<Bf16>(), embedding_case<F16>(),
          embedding_backward_case(), tied_logits_case()};
}

// ---------------------------------------------------------------------------------------------
// mixer

// causal_conv: each output one fused multiply-add chain over the taps, so against
// causal_conv_reference.h run in float, exactly. rows, n = D, k = K (rows < K included).
OpCase causal_conv_case() {
  const auto inputs = [](const Shape& s) {
    return std::tuple{normal_floats(s.rows * s.n, 80), normal_floats(s.k * s.n, 81, 0.5),
                      normal_floats(s.rows * s.n, 82), normal_floats(s.n * s.k, 83)};
  };
  return {"causal_conv_f32",
          Contract::row_invariant,
          {{1, 1, 1}, {7, 7, 3}, {20, 16, 5}, {9, 17, 3}, {12, 33, 4}, {5, 40, 1}, {3, 130, 5}},
          [=](const Shape& s) {
            const auto [x, kerT, dy, dker0] = inputs(s);
            const int64_t rows = s.rows, D = s.n, K = s.k;
            Floats y(rows * D), dx(rows * D), dker = dker0;
            causal_conv_forward(y.data(), x.data(), kerT.data(), rows, D, K);
            // incremental decoding: one step per position over the inputs j steps back
            const Floats steps = row_by_row(rows, D, [&](int64_t t, float* yt) {
              std::vector<const float*> hist;
              for (int64_t j = 0; j < std::min(t + 1, K); ++j)
                hist.push_back(x.data() + (t - j) * D);
              causal_conv_step(yt, hist.data(), static_cast<int64_t>(hist.size()), kerT.data(), D);
            });
            causal_conv_backward(dx.data(), dker.data(), dy.data(), x.data(), kerT.data(), rows, D,
                                 K);
            return std::vector<Out>{out("y", y), out("y_steps", steps, "y"), out("dx", dx),
                                    out("dker", dker)};
          },
          [=](const Shape& s) {
            const auto [x, kerT, dy, dker0] = inputs(s);
            Floats y(s.rows * s.n), dx(s.rows * s.n), dker = dker0;
            reference::causal_conv_forward(y.data(), x.data(), kerT.data(), s.rows, s.n, s.k);
            reference::causal_conv_backward(dx.data(), dker.data(), dy.data(), x.data(),
                                            kerT.data(), s.rows, s.n, s.k);
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
            causal_conv_backward(dx.data(), dker.data(), probe.data(), x.data(), kerT.data(), rows,
                                 D, K);
            for (int64_t j = 0; j < K; ++j) {
              for (int64_t c = 0; c < D; ++c)
                dkerT[j * D + c] = dker[c * K + j];  // to kerT's layout
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
        const Floats alone = row_by_row(n, D, [&](int64_t r, float* yr) {
          ffn_forward(yr, hr.data(), ar.data(), x.data() + r * D, upT.data(), downT.data(), 1, D,
                      H);
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

// ---------------------------------------------------------------------------------------------
// optim

// n elements at step k; h = 1 adds weight decay (AdamW).
AdamStep adam_step(const Shape& s) {
  AdamStep st{0.01, 0.9, 0.95, 1e-8, 1 - std::pow(0.9, s.k), 1 - std::pow(0.95, s.k)};
  st.decay = s.h ? st.lr * 0.1 : 0.0;
  return st;
}

// float state, each element computed in double: against a double loop.
OpCase adam_case() {
  const auto inputs = [](const Shape& s) {
    Floats v = normal_floats(s.n, 123, 1e-3);
    for (float& x : v) x = std::abs(x);
    return std::tuple{normal_floats(s.n, 120), normal_floats(s.n, 121),
                      normal_floats(s.n, 122, 0.1), v};
  };
  return {"adam_f32",
          Contract::exact,
          {{.n = 1, .k = 1},
           {.n = 7, .k = 3, .h = 1},
           {.n = 17, .k = 10},
           {.n = 130, .k = 1000, .h = 1},
           {.n = (1 << 16) + 3, .k = 2, .h = 1}},  // two tasks
          [=](const Shape& s) {
            auto [p, g, m, v] = inputs(s);
            adam_update(p.data(), g.data(), m.data(), v.data(), s.n, adam_step(s));
            return std::vector<Out>{out("p", p), out("g", g), out("m", m), out("v", v)};
          },
          [=](const Shape& s) {
            const auto [pf, gf, mf, vf] = inputs(s);
            const AdamStep st = adam_step(s);
            Vec p(pf.size()), m(pf.size()), v(pf.size()), pb(pf.size());
            for (size_t i = 0; i < pf.size(); ++i) {
              const double p0 = double(pf[i]) - st.decay * pf[i], g = gf[i];
              m[i] = st.beta1 * mf[i] + (1 - st.beta1) * g;
              v[i] = st.beta2 * vf[i] + (1 - st.beta2) * g * g;
              const double step = st.lr * (m[i] / st.c1) / (std::sqrt(v[i] / st.c2) + st.eps);
              p[i] = p0 - step;
              pb[i] = 2 * kF32 * (std::abs(p0) + std::abs(p[i]));  // p rounds to float twice
            }
            return std::vector<Want>{bounded("p", p, pb), exact("g", Vec(pf.size(), 0.0)),
                                     near("m", m, 2 * kF32), near("v", v, 2 * kF32)};
          },
          nullptr};
}

// adam_update_exact: microgpt.py's Adam term for term, every ** the C library's pow. Gradients
// include values whose squares or roots sit near a rounding midpoint (a few percent of random
// doubles), zeros, and magnitudes outside the reciprocal trick's range.
OpCase adam_exact_case() {
  const auto inputs = [](const Shape& s) {
    Vec p = test::random_normal(s.n, 130), g = test::random_normal(s.n, 131, 0.1),
        m = test::random_normal(s.n, 132, 0.01), v = test::random_normal(s.n, 133, 1e-3);
    for (double& x : v) x = std::abs(x);
    const Vec special = {0.0, -0.0, 1e-160, 1e150, -3e140, 5e-324, 1e-300, 2.5};
    for (size_t i = 0; i < std::min(special.size(), g.size()); ++i) g[i] = special[i];
    return std::tuple{p, g, m, v};
  };
  return {"adam_exact_f64",
          Contract::exact,
          {{.n = 1, .k = 1},
           {.n = 8, .k = 3, .h = 1},
           {.n = 130, .k = 1000},
           {.n = 2000, .k = 2, .h = 1}},
          [=](const Shape& s) {
            auto [p, g, m, v] = inputs(s);
            Vec scratch(s.n);
            std::vector<uint8_t> flags(s.n);
            adam_update_exact(p.data(), g.data(), m.data(), v.data(), scratch.data(), flags.data(),
                              s.n, adam_step(s));
            return std::vector<Out>{out("p", p), out("g", g), out("m", m), out("v", v)};
          },
          [=](const Shape& s) {
            auto [p, g, m, v] = inputs(s);
            const AdamStep st = adam_step(s);
            for (int64_t i = 0; i < s.n; ++i) {
              if (st.decay != 0) p[i] = p[i] - st.decay * p[i];
              m[i] = st.beta1 * m[i] + (1 - st.beta1) * g[i];
              v[i] = st.beta2 * v[i] + (1 - st.beta2) * cpython_pow(g[i], 2.0);
              const double m_hat = m[i] / st.c1, v_hat = v[i] / st.c2;
              p[i] -= st.lr * m_hat / (cpython_pow(v_hat, 0.5) + st.eps);
              g[i] = 0.0;
            }
            return std::vector<Want>{exact("p", p), exact("g", g), exact("m", m), exact("v", v)};
          },
          nullptr};
}

std::vector<OpCase> optim_cases() { return {adam_case(), adam_exact_case()}; }

std::vector<OpCase> all_cases() {
  std::vector<OpCase> all;
  for (auto group : {cast_cases, activation_cases, norm_cases, matmul_cases, attention_cases,
                     loss_cases, embedding_cases, mixer_cases, optim_cases}) {
    for (OpCase& c : group()) all.push_back(std::move(c));
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace tinylm::kernels
