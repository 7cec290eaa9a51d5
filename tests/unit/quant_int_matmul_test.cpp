// The quantized products with 8-bit activations (kernels/quant/int_matmul.h): the contract's
// bits, computed here by plain loops from the blocks' bytes, at every level, for any row grouping
// and thread count; and within the rounding of the activations of the exact product.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/kernels/quant/int_matmul.h"

namespace tinylm::kernels {
namespace TINYLM_TEST_LOCAL {

struct Case {
  int64_t rows, nin, nout;
  bool bias;
};

struct Operands {
  std::vector<float> x, b;
  std::vector<uint8_t> w;  // blocks
};

Operands operands(DType t, const Case& c, uint32_t seed) {
  Operands o;
  o.x = test::random_uniform(static_cast<size_t>(c.rows * c.nin), seed, -2.0f, 2.0f);
  if (c.rows > 1) {  // a block of zeros (scale 0) in the second row
    std::fill_n(o.x.begin() + c.nin, 32, 0.0f);
  }
  if (c.bias) o.b = test::random_uniform(static_cast<size_t>(c.nout), seed + 1);
  const std::vector<float> w =
      test::random_uniform(static_cast<size_t>(c.nout * c.nin), seed + 2, -0.5f, 0.5f);
  o.w.resize(storage_bytes(t, c.nout * c.nin));
  quantize(t, w.data(), o.w.data(), c.nout * c.nin);
  if (t == DType::q8_0) {  // -128, which ggml's quantizer never writes but a file may hold
    for (size_t k = 0; k < o.w.size() / sizeof(BlockQ8_0); k += 3)
      reinterpret_cast<BlockQ8_0*>(o.w.data())[k].qs[k % 32] = -128;
  }
  return o;
}

// Block k of an output's row as its 32 integers and scale, read from ggml's byte layout.
void block_ints(DType t, const uint8_t* row, int64_t k, int* q, float& d) {
  const size_t size = t == DType::q8_0 ? 34 : 18;
  const uint8_t* p = row + k * size;
  d = f16_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
  for (int j = 0; j < 32; ++j) {
    q[j] = t == DType::q8_0 ? static_cast<int8_t>(p[2 + j])
                            : (j < 16 ? (p[2 + j] & 15) : (p[2 + j - 16] >> 4)) - 8;
  }
}

// The contract, by plain loops: one chain over the blocks' whole integer sums.
std::vector<float> reference(DType t, const Operands& o, const Case& c) {
  const int64_t nb = c.nin / 32;
  std::vector<BlockQ8_0> xq(static_cast<size_t>(c.rows * nb));
  quantize_q8_0(o.x.data(), xq.data(), c.rows * c.nin);
  const size_t row_bytes = storage_bytes(t, c.nin);
  std::vector<float> y(static_cast<size_t>(c.rows * c.nout));
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t n = 0; n < c.nout; ++n) {
      float chain = 0.0f;
      for (int64_t k = 0; k < nb; ++k) {
        int q[32];
        float dw;
        block_ints(t, o.w.data() + n * row_bytes, k, q, dw);
        const BlockQ8_0& xb = xq[static_cast<size_t>(r * nb + k)];
        int p = 0;
        for (int j = 0; j < 32; ++j) p += q[j] * xb.qs[j];
        const float s = dw * f16_to_float(static_cast<uint16_t>(xb.d[0] | (xb.d[1] << 8)));
        chain = std::fma(static_cast<float>(p), s, chain);
      }
      y[r * c.nout + n] = chain + (c.bias ? o.b[n] : 0.0f);
    }
  }
  return y;
}

// The weights as quant_matmul_int8 reads them: packed.
std::vector<uint8_t> packed(DType t, const Operands& o, int64_t nin, int64_t nout) {
  std::vector<uint8_t> p(o.w.size(), 0xee);
  pack_int8(t, p.data(), o.w.data(), nin, nout);
  return p;
}

std::vector<float> product(DType t, const Operands& o, const Case& c) {
  const std::vector<uint8_t> w = packed(t, o, c.nin, c.nout);
  std::vector<float> y(static_cast<size_t>(c.rows * c.nout), -1.0f);
  quant_matmul_int8(t, y.data(), o.x.data(), w.data(), c.bias ? o.b.data() : nullptr, c.rows, c.nin,
                    c.nout);
  return y;
}

// (Odd counts of blocks: 32, 96, 160 inputs.)
const Case kCases[] = {{1, 32, 1, false},   {1, 768, 100, true},  {2, 96, 67, true},
                       {3, 64, 5, false},   {5, 160, 64, true},   {17, 256, 37, true},
                       {70, 96, 130, true}, {300, 64, 29, false}, {20, 3072, 33, true}};

TEST(QuantMatmulInt8, EqualsTheContractAtEveryLevel) {
  for (DType t : {DType::q8_0, DType::q4_0}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " rows " + std::to_string(c.rows) + " nin " +
                   std::to_string(c.nin) + " nout " + std::to_string(c.nout));
      const Operands o = operands(t, c, 5);
      const std::vector<float> got =
          test::expect_same_at_every_level([&] { return product(t, o, c); }, "quant_matmul_int8");
      const std::vector<float> want = reference(t, o, c);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
    }
  }
}

// The activations' quantization, vectorized at the avx2 and avx512 levels, gives
// quantize_q8_0's bytes on the values where rounding is closest to going wrong: exact halves
// (a block whose largest magnitude is 127 has scale 1), ties in magnitude, zeros of either sign,
// subnormal scales (whose reciprocal can be infinite), the largest floats, and blocks with a NaN
// or an infinity (whose products are NaN alike).
TEST(QuantMatmulInt8, QuantizesEdgeActivationsAsQuantizeQ8_0) {
  const Case c{16, 64, 19, true};  // a row's two blocks alike: a NaN spoils only its own row
  Operands o = operands(DType::q8_0, c, 13);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (int64_t blk = 0; blk < c.rows * c.nin / 32; ++blk) {
    float* x = o.x.data() + 32 * blk;
    for (int j = 0; j < 32; ++j) {
      const float half = static_cast<float>(j - 16) + 0.5f;  // -15.5 .. 15.5
      switch (blk / 2) {
        case 0:
          x[j] = j == 0 ? 127.0f : half;
          break;
        case 1:
          x[j] = j == 31 ? -127.0f : -2.0f * half;
          break;
        case 2:
          x[j] = j % 2 ? 127.0f : -127.0f;
          break;
        case 3:
          x[j] = std::ldexp(static_cast<float>(j), -149);
          break;  // subnormals
        case 4:
          x[j] = std::ldexp(static_cast<float>(j % 3) - 1.0f, -140);
          break;
        case 5:
          x[j] = (j % 2 ? 1.0f : -1.0f) * std::numeric_limits<float>::max();
          break;
        case 6:
          x[j] = j == 7 ? nan : half;
          break;
        case 7:
          x[j] = j == 0 ? nan : half;
          break;
        case 8:
          x[j] = j == 5 ? inf : half;
          break;
        case 9:
          x[j] = j == 30 ? -inf : (j == 3 ? nan : half);
          break;
        case 10:
          x[j] = -0.0f;
          break;
        case 11:
          x[j] = 5.0f;
          break;
        case 12:
          x[j] = 63.5f * static_cast<float>(j % 5) - 127.0f;
          break;
        default:
          break;  // random (rows 13 to 15)
      }
    }
  }
  for (DType t : {DType::q8_0, DType::q4_0}) {
    SCOPED_TRACE(dtype_name(t));
    Operands ot = o;
    if (t == DType::q4_0) ot.w = operands(t, c, 13).w;
    const std::vector<float> want = reference(t, ot, c);
    test::for_each_isa([&](Isa) {
      const std::vector<float> got = product(t, ot, c);
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(got[i]) && std::isnan(want[i])) continue;
        ASSERT_EQ(float_bits(got[i]), float_bits(want[i])) << "element " << i;
      }
    });
  }
}

using UnitScope = test::UnitScope<Int8Unit, int8_dot_unit, set_int8_dot_unit>;

bool cpu_has_vnni() { return cpu_has_avx_vnni() || cpu_has_avx512_vnni(); }

// Every unit gives the contract's bits (the integer sums are exact on each), at every level and
// for rows alone or together; VPDPBUSD where the CPU has AVX-VNNI (the avx2 level's) or
// AVX512-VNNI (the avx512 level's), AMX where it has AMX-INT8 (the cases' 17, 20, 70 and 300
// rows fill tiles of 16 and leave rows over for VPDPBUSD).
TEST(QuantMatmulInt8, EitherUnitGivesTheContractsBits) {
  std::vector<Int8Unit> units = {Int8Unit::vpmaddubsw};
  if (cpu_has_vnni()) units.push_back(Int8Unit::vpdpbusd);
  if (cpu_has_amx_int8()) units.push_back(Int8Unit::amx);
  for (const Int8Unit unit : units) {
    const UnitScope scope(unit);
    for (DType t : {DType::q8_0, DType::q4_0}) {
      for (const Case& c : kCases) {
        SCOPED_TRACE(std::string(int8_unit_name(unit)) + " " + std::string(dtype_name(t)) +
                     " rows " + std::to_string(c.rows) + " nin " + std::to_string(c.nin) +
                     " nout " + std::to_string(c.nout));
        const Operands o = operands(t, c, 11);
        const std::vector<float> want = reference(t, o, c);
        test::for_each_isa([&](Isa) {
          const std::vector<float> got = product(t, o, c);
          ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
          // Row by row (decode) too.
          for (int64_t r = 0; r < c.rows; r += std::max<int64_t>(1, c.rows / 3)) {
            Operands one = o;
            one.x.assign(o.x.begin() + r * c.nin, o.x.begin() + (r + 1) * c.nin);
            const std::vector<float> row = product(t, one, {1, c.nin, c.nout, c.bias});
            ASSERT_EQ(std::memcmp(row.data(), want.data() + r * c.nout, row.size() * 4), 0);
          }
        });
      }
    }
  }
  if (!cpu_has_avx_vnni() || !cpu_has_avx512_vnni() || !cpu_has_amx_int8()) {
    GTEST_SKIP() << "untested here, the CPU lacking it: "
                 << (cpu_has_avx_vnni() ? "" : "vpdpbusd at avx2 (AVX-VNNI) ")
                 << (cpu_has_avx512_vnni() ? "" : "vpdpbusd at avx512 (AVX512-VNNI) ")
                 << (cpu_has_amx_int8() ? "" : "amx (AMX-INT8)");
  }
}

TEST(QuantMatmulInt8, UnitIsTheBestTheCpuOffersAndCanBeForced) {
  EXPECT_EQ(int8_unit_name(Int8Unit::vpmaddubsw), "vpmaddubsw");
  EXPECT_EQ(int8_unit_name(Int8Unit::vpdpbusd), "vpdpbusd");
  EXPECT_EQ(int8_unit_name(Int8Unit::amx), "amx");
  if (std::getenv("TINYLM_INT8_UNIT") == nullptr) {
    EXPECT_EQ(int8_dot_unit(), cpu_has_amx_int8() ? Int8Unit::amx
                               : cpu_has_vnni()   ? Int8Unit::vpdpbusd
                                                  : Int8Unit::vpmaddubsw);
  }
  const UnitScope plain(Int8Unit::vpmaddubsw);
  EXPECT_EQ(int8_dot_unit(), Int8Unit::vpmaddubsw);
  if (!cpu_has_vnni())
    test::expect_error([] { set_int8_dot_unit(Int8Unit::vpdpbusd); }, {"AVX-VNNI or AVX512-VNNI"});
  if (!cpu_has_amx_int8())
    test::expect_error([] { set_int8_dot_unit(Int8Unit::amx); }, {"AMX-INT8"});
  // Through the CLI: the environment variable, and --version naming the unit in use.
  const test::CommandResult forced =
      test::run_shell(std::string("TINYLM_INT8_UNIT=vpmaddubsw ") + TINYLM_CLI_PATH + " --version");
  EXPECT_NE(forced.out.find("\nint8 products: "), std::string::npos) << forced.out;
  EXPECT_EQ(forced.out.find("vpdpbusd"), std::string::npos) << forced.out;
  const test::CommandResult bad =
      test::run_shell(std::string("TINYLM_INT8_UNIT=vnni ") + TINYLM_CLI_PATH + " --version");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("TINYLM_INT8_UNIT=vnni: unknown unit"), std::string::npos) << bad.err;
  // Each level names the unit it runs where the CPU has it: the best, or the one asked for.
  struct Level {
    const char* env;
    bool has;
    const char* summary;
  };
  for (const Level& l :
       {Level{"TINYLM_INT8_UNIT= TINYLM_ISA=avx512", cpu_has_amx_int8(), "amx (AMX-INT8)"},
        Level{"TINYLM_INT8_UNIT=vpdpbusd TINYLM_ISA=avx512", cpu_has_avx512_vnni(),
              "vpdpbusd (AVX512-VNNI)"},
        Level{"TINYLM_INT8_UNIT= TINYLM_ISA=avx2", cpu_has_avx_vnni(), "vpdpbusd (AVX-VNNI)"}}) {
    if (!l.has) continue;
    const test::CommandResult best =
        test::run_shell(std::string(l.env) + " " + TINYLM_CLI_PATH + " --version");
    EXPECT_NE(best.out.find(std::string("int8 products: ") + l.summary), std::string::npos)
        << best.out;
  }
}

// Against the exact product over the dequantized weights and the unrounded activations: each
// activation moves by at most half its block's step (amax / 127 / 2), so the error is within
// sum |w| * step / 2, plus f32 rounding.
TEST(QuantMatmulInt8, IsWithinTheActivationsRoundingOfTheExactProduct) {
  for (DType t : {DType::q8_0, DType::q4_0}) {
    const Case c{6, 768, 40, true};
    const Operands o = operands(t, c, 9);
    std::vector<float> wd(static_cast<size_t>(c.nout * c.nin));
    dequantize(t, o.w.data(), wd.data(), c.nout * c.nin);
    const std::vector<float> got = product(t, o, c);
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t n = 0; n < c.nout; ++n) {
        double s = o.b[n], bound = 0, mag = std::abs(s);
        for (int64_t k = 0; k < c.nin / 32; ++k) {
          double amax = 0;
          for (int j = 0; j < 32; ++j)
            amax = std::max(amax, std::abs(double(o.x[r * c.nin + 32 * k + j])));
          for (int j = 0; j < 32; ++j) {
            const int64_t i = 32 * k + j;
            const double p = double(o.x[r * c.nin + i]) * wd[n * c.nin + i];
            s += p;
            mag += std::abs(p);
            bound += std::abs(double(wd[n * c.nin + i])) * amax / 127 * 0.5 * 1.01;
          }
        }
        EXPECT_NEAR(got[r * c.nout + n], s, bound + mag * c.nin * 6e-8) << r << " " << n;
        EXPECT_NE(got[r * c.nout + n], static_cast<float>(s)) << "suspiciously exact";
      }
    }
  }
}

TEST(QuantMatmulInt8, RowsAloneEqualRowsTogetherAtAnyThreadCount) {
  for (DType t : {DType::q8_0, DType::q4_0}) {
    const Case all{141, 192, 70, true};  // (row blocks of 64, tiles of 4 or 8, a remainder)
    const Operands o = operands(t, all, 3);
    const std::vector<uint8_t> w = packed(t, o, all.nin, all.nout);
    test::for_each_isa([&](Isa) {
      set_num_threads(1);
      const std::vector<float> one_thread = product(t, o, all);
      set_num_threads(2);
      const std::vector<float> batch = product(t, o, all);
      EXPECT_EQ(std::memcmp(one_thread.data(), batch.data(), batch.size() * 4), 0)
          << dtype_name(t) << ": 1 vs 2 threads";
      for (int64_t group : {1, 2, 3, 7}) {
        for (int64_t r0 = 0; r0 < all.rows; r0 += group) {
          const int64_t n = std::min(group, all.rows - r0);
          std::vector<float> y(static_cast<size_t>(n * all.nout));
          quant_matmul_int8(t, y.data(), o.x.data() + r0 * all.nin, w.data(), o.b.data(), n,
                            all.nin, all.nout);
          ASSERT_EQ(std::memcmp(y.data(), batch.data() + r0 * all.nout, y.size() * 4), 0)
              << dtype_name(t) << ": rows " << r0 << " +" << n;
        }
      }
    });
    set_num_threads(0);
  }
}

TEST(QuantMatmulInt8, RejectsOtherTypesAndPartialBlocks) {
  std::vector<float> x(64), y(2, 7.0f);
  std::vector<BlockQ8_0> w(4);
  test::expect_error(
      [&] { quant_matmul_int8(DType::q8_0, y.data(), x.data(), w.data(), nullptr, 1, 48, 2); },
      {"48", "multiple of 32"});
  test::expect_error(
      [&] { quant_matmul_int8(DType::q6_k, y.data(), x.data(), w.data(), nullptr, 1, 256, 1); },
      {"q6_k", "q8_0 or q4_0"});
  test::expect_error([&] { pack_int8(DType::q4_0, y.data(), w.data(), 48, 1); },
                     {"48", "multiple of 32"});
  test::expect_error([&] { pack_int8(DType::bf16, y.data(), w.data(), 32, 1); },
                     {"bf16", "q8_0 or q4_0"});
  quant_matmul_int8(DType::q8_0, y.data(), x.data(), w.data(), nullptr, 0, 64, 2);
  EXPECT_EQ(y, std::vector<float>(2, 7.0f));
}

// The packed layout, byte by byte as int_matmul.h states it (the last 3 outputs as ggml's rows),
// packed apart and in place, and unpacked back.
TEST(QuantMatmulInt8, PacksAsTheLayoutStatesAndBack) {
  for (DType t : {DType::q8_0, DType::q4_0}) {
    const int64_t nin = 64, nout = 35, nb = 2, size = t == DType::q8_0 ? 34 : 18;
    const int steps = t == DType::q8_0 ? 8 : 4;
    std::vector<uint8_t> w(static_cast<size_t>(nout * nb * size));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 7 + 3);
    std::vector<uint8_t> p(w.size(), 0xee);
    pack_int8(t, p.data(), w.data(), nin, nout);
    for (int64_t g = 0; g < 2; ++g) {
      for (int64_t k = 0; k < nb; ++k) {
        const uint8_t* blk = p.data() + (g * nb + k) * 16 * size;
        for (int lane = 0; lane < 16; ++lane) {
          const uint8_t* src = w.data() + ((g * 16 + lane) * nb + k) * size;
          for (int i = 0; i < 2; ++i) ASSERT_EQ(blk[2 * lane + i], src[i]) << dtype_name(t);
          for (int s = 0; s < steps; ++s) {
            for (int i = 0; i < 4; ++i)
              ASSERT_EQ(blk[32 + 64 * s + 4 * lane + i], src[2 + 4 * s + i]) << dtype_name(t);
          }
        }
      }
    }
    const size_t tail = static_cast<size_t>(32 * nb * size);
    EXPECT_EQ(std::memcmp(p.data() + tail, w.data() + tail, w.size() - tail), 0);
    std::vector<uint8_t> in_place = w;
    pack_int8(t, in_place.data(), in_place.data(), nin, nout);
    EXPECT_EQ(in_place, p);
    unpack_int8(t, in_place.data(), in_place.data(), nin, nout);
    EXPECT_EQ(in_place, w);
    std::vector<uint8_t> back(w.size());
    unpack_int8(t, back.data(), p.data(), nin, nout);
    EXPECT_EQ(back, w);
    const auto row_bytes = static_cast<size_t>(nb * size);
    std::vector<uint8_t> row(row_bytes);
    for (int64_t o = 0; o < nout; ++o) {
      unpack_int8_row(t, row.data(), p.data(), nin, nout, o);
      ASSERT_EQ(std::memcmp(row.data(), w.data() + o * row_bytes, row_bytes), 0) << "row " << o;
    }
    test::expect_error([&] { unpack_int8_row(t, row.data(), p.data(), nin, nout, nout); },
                       {"row 35 of 35"});
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels
