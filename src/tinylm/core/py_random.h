#pragma once
// PyRandom reproduces CPython 3.11's `random` module draw for draw: MT19937 seeded through
// init_by_array with the seed's 32-bit words, random() from two 32-bit outputs, gauss() with
// its cached second value, getrandbits, _randbelow, shuffle and choices. microgpt's data
// order, initial weights and samples come from it, so they match microgpt.py exactly.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>

namespace tinylm {

class PyRandom {
 public:
  explicit PyRandom(uint64_t seed = 0) { seed_with(seed); }

  // random.seed(n) for a non-negative int n < 2^64; also clears the gauss cache.
  void seed_with(uint64_t seed);

  uint32_t next_u32();  // one MT19937 output
  double random();      // [0, 1) with 53 random bits
  double gauss(double mu, double sigma);
  uint32_t getrandbits(int k);     // 1 <= k <= 32
  uint64_t randbelow(uint64_t n);  // uniform in [0, n), n >= 1, by rejection
  // random.choices(range(len(weights)), weights)[0]: cumulative sums left to right, then
  // bisect_right of random() * total. Throws Error when the total is not positive.
  size_t choices(std::span<const double> weights);

  template <class T>
  void shuffle(std::span<T> x) {
    for (size_t i = x.size(); i-- > 1;) {
      const size_t j = static_cast<size_t>(randbelow(i + 1));
      std::swap(x[i], x[j]);
    }
  }

 private:
  void init_genrand(uint32_t s);
  void init_by_array(std::span<const uint32_t> key);
  void twist();

  std::array<uint32_t, 624> mt_{};
  int index_ = 624;
  std::optional<double> gauss_next_;
};

}  // namespace tinylm
