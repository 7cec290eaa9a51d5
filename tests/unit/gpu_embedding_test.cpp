// The Vulkan token and position embeddings (kernels/vulkan/embedding.h) on device 0 (lavapipe in
// CI) against the CPU kernel (kernels/embedding/embedding.h) byte for byte: the forward is one
// addition per element and the backward adds each column's rows in row order on both. Each op
// runs twice from the same inputs. Every test runs once without and once with the Khronos
// validation layer, which must report nothing.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/vulkan/devices.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/embedding.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

class GpuEmbedding : public GpuTest {
 public:
  using GpuTest::upload_values;  // (check_forward calls it from outside)
};

// The CPU case's shapes (rows x C) and its vocabulary of 11 with repeated tokens, 8 positions
// from 2 with period 3; more rows than tokens repeat them. C: 1, ragged ends, past one 64-wide
// column group; rows * C past one 256-wide workgroup.
const Shape kShapes[] = {{6, 1}, {6, 7}, {6, 16}, {7, 17}, {5, 33}, {7, 130}, {40, 70}};
const Ints kTokens = {1, 5, 1, 0, 3, 3, 10};
constexpr int64_t kVocab = 11, kPeriod = 3, kFirst = 2, kPositions = 8;

Ints tokens_for(int64_t rows) {
  Ints t(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) t[r] = kTokens[r % kTokens.size()];
  return t;
}

template <class W>
void check_forward(GpuEmbedding& test, Context& context, DType type) {
  for (const Shape& s : kShapes) {
    const int64_t rows = s.rows, C = s.n;
    const size_t n = static_cast<size_t>(rows * C);
    const std::string where = describe(s) + " " + std::string(dtype_name(type));
    const Ints tokens = tokens_for(rows);
    const std::vector<W> table = narrow<W>(normal_floats(kVocab * C, 60));
    // Positions: the training batch's (from kFirst, period kPeriod), and decoding's (one per
    // row from position 1, no period).
    const Floats positions = normal_floats((1 + rows + kPositions) * C, 61);
    const Buffer tb = test.upload_values(tokens), table_b = test.upload_values(table),
                 pb = vulkan::upload_floats(context, positions);
    Floats want[3] = {Floats(n), Floats(n), Floats(n)};
    kernels::embedding_forward(want[0].data(), tokens.data(), table.data(), positions.data(), rows,
                               C, kFirst, kPeriod);
    kernels::embedding_forward(want[1].data(), tokens.data(), table.data(), nullptr, rows, C);
    kernels::embedding_forward(want[2].data(), tokens.data(), table.data(), positions.data(), rows,
                               C, 1);
    for (int run = 0; run < 2; ++run) {  // twice: the same bytes (the CPU's) each time
      Buffer x[3] = {Buffer(context, n * 4), Buffer(context, n * 4), Buffer(context, n * 4)};
      vulkan::embedding_forward(context, x[0], tb, table_b, type, pb, rows, C, kVocab, kFirst,
                                kPeriod);
      vulkan::embedding_forward(context, x[1], tb, table_b, type, std::nullopt, rows, C, kVocab);
      vulkan::embedding_forward(context, x[2], tb, table_b, type, pb, rows, C, kVocab, 1);
      const char* names[] = {"x", "x without positions", "x decoding"};
      for (int i = 0; i < 3; ++i)
        expect_same_bytes(where + " " + names[i] + " run " + std::to_string(run), want[i],
                          vulkan::download_floats(x[i], n));
    }
    // The table stored transposed, (C, vocab): the same bits.
    std::vector<W> columns(table.size());
    for (int64_t v = 0; v < kVocab; ++v)
      for (int64_t i = 0; i < C; ++i) columns[i * kVocab + v] = table[v * C + i];
    const Buffer columns_b = test.upload_values(columns);
    Buffer xt(context, n * 4);
    vulkan::embedding_forward(context, xt, tb, columns_b, type, pb, rows, C, kVocab, kFirst,
                              kPeriod, vulkan::TableLayout::transposed);
    expect_same_bytes(where + " x from a transposed table", want[0],
                      vulkan::download_floats(xt, n));
    // Rows at positions of their own (a continuous batch's), read from (slot, position) pairs:
    // the CPU kernel's bits for each row at its position, from either layout.
    Ints where_pairs;
    Floats want_rows(n);
    const int64_t n_positions = 1 + rows + kPositions;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t position = (5 * r + 3) % n_positions;
      where_pairs.insert(where_pairs.end(),
                         {static_cast<int32_t>(r % 2), static_cast<int32_t>(position)});
      kernels::embedding_forward(want_rows.data() + r * C, tokens.data() + r, table.data(),
                                 positions.data(), 1, C, position);
    }
    const Buffer wb = test.upload_values(where_pairs);
    for (const auto& [layout, t] : {std::pair{vulkan::TableLayout::rows, &table_b},
                                    std::pair{vulkan::TableLayout::transposed, &columns_b}}) {
      Buffer xr(context, n * 4);
      vulkan::embedding_forward_rows(context, xr, tb, *t, type, layout, pb, wb, rows, C, kVocab,
                                     n_positions);
      expect_same_bytes(where + " rows at their positions", want_rows,
                        vulkan::download_floats(xr, n));
    }
  }
}

TEST_P(GpuEmbedding, ForwardGivesTheCpuKernelsBits) {
  check_forward<float>(*this, *context_, DType::f32);
  check_forward<Bf16>(*this, *context_, DType::bf16);
  check_forward<F16>(*this, *context_, DType::f16);
}

TEST_P(GpuEmbedding, BackwardGivesTheCpuKernelsBits) {
  for (const Shape& s : kShapes) {
    const int64_t rows = s.rows, C = s.n;
    const std::string where = describe(s);
    const Ints tokens = tokens_for(rows);
    const Floats dtable0 = normal_floats(kVocab * C, 62), dpos0 = normal_floats(kPeriod * C, 63),
                 dx = normal_floats(rows * C, 64), dpos_all0 = normal_floats(rows * C, 65);
    Floats want_table = dtable0, want_pos = dpos0, want_alone = dtable0, want_pos_all = dpos_all0,
           want_table_all = dtable0;
    kernels::embedding_backward(want_table.data(), want_pos.data(), dx.data(), tokens.data(), rows,
                                C, kPeriod);
    kernels::embedding_backward(want_alone.data(), nullptr, dx.data(), tokens.data(), rows, C);
    kernels::embedding_backward(want_table_all.data(), want_pos_all.data(), dx.data(),
                                tokens.data(), rows, C);
    const Buffer tb = upload_values(tokens), dxb = upload(dx);
    for (int run = 0; run < 2; ++run) {
      const std::string at = where + " run " + std::to_string(run);
      Buffer dtable = upload(dtable0), dpos = upload(dpos0), alone = upload(dtable0),
             dtable_all = upload(dtable0), dpos_all = upload(dpos_all0);
      vulkan::embedding_backward(*context_, dtable, dpos, dxb, tb, rows, C, kVocab, kPeriod);
      vulkan::embedding_backward(*context_, alone, std::nullopt, dxb, tb, rows, C, kVocab);
      vulkan::embedding_backward(*context_, dtable_all, dpos_all, dxb, tb, rows, C, kVocab);
      expect_same_bytes(at + " dtable", want_table,
                        vulkan::download_floats(dtable, dtable0.size()));
      expect_same_bytes(at + " dpositions", want_pos, vulkan::download_floats(dpos, dpos0.size()));
      expect_same_bytes(at + " dtable without positions", want_alone,
                        vulkan::download_floats(alone, dtable0.size()));
      expect_same_bytes(at + " dtable, no period", want_table_all,
                        vulkan::download_floats(dtable_all, dtable0.size()));
      expect_same_bytes(at + " dpositions, no period", want_pos_all,
                        vulkan::download_floats(dpos_all, dpos_all0.size()));
    }
  }
}

TEST_P(GpuEmbedding, OpsCheckTheirSizes) {
  const Buffer tokens = upload_values(Ints{1, 2, 3}), table = upload(normal_floats(4 * 5, 1)),
               positions = upload(normal_floats(2 * 5, 2));
  Buffer x = zeros(15), small = zeros(14);
  test::expect_error(
      [&] {
        vulkan::embedding_forward(*context_, small, tokens, table, DType::f32, std::nullopt, 3, 5,
                                  4);
      },
      {"vulkan embedding_forward: x holds 14 floats, needs 15"});
  test::expect_error(
      [&] {
        vulkan::embedding_forward(*context_, x, tokens, table, DType::f32, std::nullopt, 3, 5, 5);
      },
      {"vulkan embedding_forward: table holds 80 bytes, needs 100 (5 x 5 f32)"});
  test::expect_error(
      [&] {
        vulkan::embedding_forward(*context_, x, tokens, table, DType::q8_0, std::nullopt, 3, 5, 4);
      },
      {"vulkan embedding_forward: a table of q8_0 (f32, f16 or bf16 only)"});
  test::expect_error(
      [&] {
        vulkan::embedding_forward(*context_, x, tokens, table, DType::f32, positions, 3, 5, 4, 1,
                                  2);
      },
      {"vulkan embedding_forward: positions holds 10 floats, needs 15"});
  test::expect_error(
      [&] {
        vulkan::embedding_forward(*context_, x, tokens, table, DType::f32, std::nullopt, 4, 3, 4);
      },
      {"vulkan embedding_forward: tokens holds 3 ints, needs 4"});
  Buffer dtable = zeros(20), dpos = zeros(10);
  test::expect_error(
      [&] { vulkan::embedding_backward(*context_, dtable, dpos, x, tokens, 3, 5, 4); },
      {"vulkan embedding_backward: dpositions holds 10 floats, needs 15"});
  test::expect_error(
      [&] { vulkan::embedding_backward(*context_, dtable, dpos, x, tokens, 3, 5, 4, 0); },
      {"vulkan embedding_backward: period = 0 must be at least 1"});
  // No rows is nothing to do.
  vulkan::embedding_backward(*context_, dtable, dpos, x, tokens, 0, 5, 4, 3);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuEmbedding, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
