#pragma once
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
//
// This header holds the table's vocabulary and input helpers; ops_table_test.cpp holds the one
// test body, and each ops_<group>_test.cpp a group of cases, which it instantiates as
// Ops/Kernel.MatchesReferenceWithTheSameBitsAtEveryLevel/<case name>.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/half.h"

// Named, not anonymous: the fixture and its parameter must be one type in every file.
namespace tinylm::kernels::ops_table {

using Vec = std::vector<double>;
using Floats = std::vector<float>;
using Ints = std::vector<int32_t>;

inline constexpr double kF32 = 1.0 / (1 << 24);  // unit roundoff of each result type
inline constexpr double kBf16 = 1.0 / (1 << 8);
inline constexpr double kF16 = 1.0 / (1 << 11);

// Central differences in double agree to ~1e-10 with h = 1e-5.
inline constexpr double kGradTol = 1e-7;

// ---------------------------------------------------------------------------------------------
// The table's vocabulary.

enum class Contract { exact, row_invariant, single_chain, fixed_order, tolerance };

// Each case says what its four numbers mean (rows x n, k inner/taps/experts, h a variant).
struct Shape {
  int64_t rows = 1, n = 1, k = 1, h = 0;
};

inline std::string describe(const Shape& s) {
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

inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// A value as double (what references and bounds are in); bits_of: its bit pattern.
inline double widen(double x) { return x; }
inline double widen(float x) { return x; }
inline double widen(Bf16 x) { return bf16_to_float(x.bits); }
inline double widen(F16 x) { return f16_to_float(x.bits); }
inline double widen(uint8_t x) { return x; }
inline double widen(int32_t x) { return x; }

inline double bits_of(float x) { return float_bits(x); }
inline double bits_of(Bf16 x) { return x.bits; }
inline double bits_of(F16 x) { return x.bits; }

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

inline Out scalar_out(std::string name, double x) { return out(std::move(name), Vec{x}); }

// An output compared by its bit patterns (casts).
template <class T>
Out bits_out(std::string name, const std::vector<T>& v) {
  Out o{std::move(name), {}, bytes_of(v.data(), v.size()), {}};
  for (const T& x : v) o.values.push_back(bits_of(x));
  return o;
}

// The reference's values, to be matched exactly.
inline Want exact(std::string name, Vec v) { return {std::move(name), std::move(v), {}}; }

inline double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// |got - want| <= abs + rel |want| elementwise.
inline Want near(std::string name, Vec v, double rel, double abs = 0) {
  Vec bound(v.size());
  for (size_t i = 0; i < v.size(); ++i) bound[i] = abs + rel * std::abs(v[i]);
  return {std::move(name), std::move(v), std::move(bound)};
}

// |got - want| <= rel max |want|: sums whose terms cancel.
inline Want near_max(std::string name, Vec v, double rel) {
  const double m = max_abs(v);
  return near(std::move(name), std::move(v), 0, rel * m);
}

// Each element within its own bound.
inline Want bounded(std::string name, Vec v, Vec bound) {
  return {std::move(name), std::move(v), std::move(bound)};
}

// An accumulated output: within rel of the largest change from its start, plus two roundings
// of its own size.
inline Want near_change(std::string name, Vec v, const Vec& start, double rel) {
  double m = 0;
  for (size_t i = 0; i < v.size(); ++i) m = std::max(m, std::abs(v[i] - start[i]));
  Vec bound(v.size());
  for (size_t i = 0; i < v.size(); ++i) bound[i] = rel * m + 2 * kF32 * std::abs(v[i]);
  return bounded(std::move(name), std::move(v), std::move(bound));
}

// One fixture for the whole table: ops_table_test.cpp defines its test, each group file
// instantiates it with its cases.
class Kernel : public ::testing::TestWithParam<OpCase> {};

// The test's name: the case's.
inline std::string case_name(const ::testing::TestParamInfo<OpCase>& info) {
  return info.param.name;
}

// ---------------------------------------------------------------------------------------------
// Inputs and conversions.

inline Floats normal_floats(size_t n, uint64_t seed, double scale = 1.0, double mean = 0.0) {
  const Vec d = test::random_normal(n, seed, scale, mean);
  return Floats(d.begin(), d.end());
}

// GELU's inputs (gelu_f32 in ops_activation_test.cpp, and the GPU op's test): x across
// [-12, 12]; at 8003 elements [-20, 20] in steps of 0.005 and +-50 (saturation).
inline Floats gelu_inputs(int64_t n) {
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
inline float add_f(double a, double b) { return static_cast<float>(a + b); }

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// x ** y as CPython evaluates it: the C library's pow, the exponent hidden from the compiler
// (which would turn pow(x, 2.0) into x * x).
inline double cpython_pow(double x, double y) {
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

// microgpt.py's softmax, literally: max, exp(x - max), a sum from 0, times total ** -1.
inline Vec literal_softmax(const Vec& x) {
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

}  // namespace tinylm::kernels::ops_table
