// How AMX's TDPBF16PS rounds, measured against candidate models (docs/performance-history.md, "bf16
// products on AMX tiles"): random bf16 tiles through the instruction, every output compared
// with plain-C++ models of its arithmetic. Not part of the build:
//   g++ -O2 -mamx-tile -mamx-bf16 tools/amx_probe.cpp -o /tmp/amx_probe && /tmp/amx_probe
// Needs a CPU with AMX-BF16 and Linux 5.16 or later.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

float bf16_value(uint16_t b) {  // subnormals read as zero
  if ((b & 0x7f80) == 0) return 0.0f;
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t to_bf16(float v) {  // to nearest even
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

bool same(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// K pairs per row (tile A: 16 rows x K pairs; B: K rows x 16 pairs), C starting at c0.
void probe(int pairs, bool from_zero, int trials) {
  TileConfig cfg;
  cfg.rows[0] = 16, cfg.colsb[0] = 64;
  cfg.rows[1] = 16, cfg.colsb[1] = static_cast<uint16_t>(4 * pairs);
  cfg.rows[2] = static_cast<uint8_t>(pairs), cfg.colsb[2] = 64;
  _tile_loadconfig(&cfg);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  alignas(64) float c0[256], c[256];
  long outputs = 0, differ_pairs = 0, differ_products = 0, differ_exact = 0;
  for (int t = 0; t < trials; ++t) {
    for (int i = 0; i < 16 * 2 * pairs; ++i) a[i] = to_bf16(normal(rng));
    for (int i = 0; i < 32 * pairs; ++i) b[i] = to_bf16(normal(rng));
    for (float& v : c0) v = from_zero ? 0.0f : normal(rng);
    std::memcpy(c, c0, sizeof c);
    _tile_loadd(0, c, 64);
    _tile_loadd(1, a, 4 * pairs);
    _tile_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 16; ++n) {
        float by_pairs = c0[m * 16 + n], by_products = by_pairs;
        double exact = by_pairs;
        for (int k = 0; k < pairs; ++k) {
          const float p0 = bf16_value(a[m * 2 * pairs + 2 * k]) * bf16_value(b[k * 32 + 2 * n]);
          const float p1 =
              bf16_value(a[m * 2 * pairs + 2 * k + 1]) * bf16_value(b[k * 32 + 2 * n + 1]);
          by_pairs += p0 + p1;                   // c + fl(p0 + p1), pair by pair
          by_products = (by_products + p0) + p1;  // one rounding per product (VDPBF16PS-like)
          exact += static_cast<double>(p0) + p1;
        }
        const float got = c[m * 16 + n];
        ++outputs;
        differ_pairs += !same(got, by_pairs);
        differ_products += !same(got, by_products);
        differ_exact += !same(got, static_cast<float>(exact));
      }
    }
  }
  std::printf("%2d pair(s) a step, C from %s: %ld outputs; differ from c + fl(p0 + p1) pair by "
              "pair: %ld, one rounding per product: %ld, the exact sum rounded once: %ld\n",
              pairs, from_zero ? "zero  " : "random", outputs, differ_pairs, differ_products,
              differ_exact);
}

}  // namespace

int main() {
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) != 0) {
    std::fprintf(stderr, "amx_probe: the OS does not grant AMX tile data to this process\n");
    return 1;
  }
  for (int pairs : {1, 2, 4, 8, 16}) {
    probe(pairs, true, 2000);
    probe(pairs, false, 2000);
  }
}
