// Table cases for cast/cast.h: the conversions to and from bf16 and f16 and
// accumulate_and_clear, exact: the bits of core/dtype.h's scalar conversions.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops_table.h"
#include "tinylm/core/dtype.h"
#include "tinylm/kernels/cast/cast.h"

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

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

INSTANTIATE_TEST_SUITE_P(Ops, Kernel, ::testing::ValuesIn(cast_cases()), case_name);

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
