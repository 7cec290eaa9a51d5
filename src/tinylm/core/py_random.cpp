#include "tinylm/core/py_random.h"

#include <bit>
#include <cmath>
#include <numbers>
#include <vector>

#include "tinylm/core/error.h"

namespace tinylm {

namespace {
constexpr int kN = 624;
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpper = 0x80000000u;
constexpr uint32_t kLower = 0x7fffffffu;
}  // namespace

void PyRandom::init_genrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kN;
}

void PyRandom::init_by_array(std::span<const uint32_t> key) {
  init_genrand(19650218u);
  int i = 1;
  size_t j = 0;
  const int len = static_cast<int>(key.size());
  for (int k = kN > len ? kN : len; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;  // guarantees a non-zero initial state
  index_ = kN;
}

void PyRandom::seed_with(uint64_t seed) {
  // CPython splits abs(n) into 32-bit words, least significant first; zero is one word.
  std::vector<uint32_t> key{static_cast<uint32_t>(seed)};
  if (seed >> 32) key.push_back(static_cast<uint32_t>(seed >> 32));
  init_by_array(key);
  gauss_next_.reset();
}

void PyRandom::twist() {
  for (int k = 0; k < kN; ++k) {
    const uint32_t y = (mt_[k] & kUpper) | (mt_[(k + 1) % kN] & kLower);
    mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  index_ = 0;
}

uint32_t PyRandom::next_u32() {
  if (index_ >= kN) twist();
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

double PyRandom::random() {
  const uint32_t a = next_u32() >> 5;
  const uint32_t b = next_u32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

double PyRandom::gauss(double mu, double sigma) {
  double z;
  if (gauss_next_) {
    z = *gauss_next_;
    gauss_next_.reset();
  } else {
    const double x2pi = random() * (2.0 * std::numbers::pi);
    const double g2rad = std::sqrt(-2.0 * std::log(1.0 - random()));
    z = std::cos(x2pi) * g2rad;
    gauss_next_ = std::sin(x2pi) * g2rad;
  }
  return mu + z * sigma;
}

uint32_t PyRandom::getrandbits(int k) {
  check(k >= 1 && k <= 32, "[PyRandom::getrandbits] k must be in 1..32, got ", k);
  return next_u32() >> (32 - k);
}

uint64_t PyRandom::randbelow(uint64_t n) {
  check(n >= 1, "[PyRandom::randbelow] n must be positive");
  const int k = std::bit_width(n);
  if (k <= 32) {
    uint32_t r = getrandbits(k);
    while (r >= n) r = getrandbits(k);
    return r;
  }
  // CPython's getrandbits(k > 32) fills 32-bit words least significant first and drops the
  // excess high bits of the last word.
  for (;;) {
    const uint64_t lo = next_u32();
    const uint64_t hi = next_u32() >> (64 - k);
    const uint64_t r = lo | (hi << 32);
    if (r < n) return r;
  }
}

size_t PyRandom::choices(std::span<const double> weights) {
  check(!weights.empty(), "[PyRandom::choices] empty population");
  std::vector<double> cum(weights.size());
  double acc = 0.0;
  for (size_t i = 0; i < weights.size(); ++i)
    cum[i] = acc = (i == 0 ? weights[0] : acc + weights[i]);
  const double total = cum.back() + 0.0;
  check(total > 0.0, "[PyRandom::choices] total of weights must be greater than zero");
  check(std::isfinite(total), "[PyRandom::choices] total of weights must be finite");
  const double x = random() * total;
  // bisect_right(cum, x, 0, n - 1)
  size_t lo = 0, hi = weights.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (x < cum[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace tinylm
