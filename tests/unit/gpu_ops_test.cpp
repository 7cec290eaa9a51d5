// The Vulkan ops (kernels/vulkan/ops.h) on device 0 (lavapipe in CI) against the op table's
// double references (ops_table.h) within the bounds the CPU kernels' cases use; each op run
// twice from the same inputs must give the same bytes. Every test runs once without and once
// with the Khronos validation layer, which must report nothing. Skipped, with the reason, where
// the build has no Vulkan or there is no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/activation/gelu_reference.h"
#include "tinylm/kernels/norm/layernorm_reference.h"
#include "tinylm/kernels/vulkan/devices.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/context_impl.h"  // a raw Vulkan call, to provoke the layer
#include "tinylm/kernels/vulkan/ops.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

#ifndef TINYLM_HAVE_VULKAN

// The one skip a build without Vulkan reports, for every GPU test (gpu_*_test.cpp).
TEST(GpuOps, NeedVulkan) { GTEST_SKIP() << "no GPU tests: tinylm was built without Vulkan"; }

#else

class GpuOps : public GpuTest {};

TEST_P(GpuOps, GeluMatchesTheReferenceWithTheSameBitsEachRun) {
  for (const int64_t n : {1, 7, 255, 256, 257, 1001, 8003}) {
    const std::string where = "n=" + std::to_string(n);
    const Floats x = gelu_inputs(n), dy = normal_floats(x.size(), 24);
    const Buffer xb = upload(x), dyb = upload(dy);
    Buffer y = zeros(x.size()), dx = zeros(x.size()), y2 = zeros(x.size()), dx2 = zeros(x.size());
    vulkan::gelu_forward(*context_, y, xb, n);
    vulkan::gelu_backward(*context_, dx, dyb, xb, n);
    vulkan::gelu_forward(*context_, y2, xb, n);
    vulkan::gelu_backward(*context_, dx2, dyb, xb, n);
    // In place: y over x, dx over dy.
    Buffer in_place = upload(x), dx_in_place = upload(dy);
    vulkan::gelu_forward(*context_, in_place, in_place, n);
    vulkan::gelu_backward(*context_, dx_in_place, dx_in_place, xb, n);

    const Floats got_y = vulkan::download_floats(y, x.size()),
                 got_dx = vulkan::download_floats(dx, x.size());
    const Vec xd = widen_all(x), dyd = widen_all(dy);
    Vec ry(x.size()), rdx(x.size()), by(x.size()), bdx(x.size());
    reference::gelu_forward(ry.data(), xd.data(), n);
    reference::gelu_backward(rdx.data(), dyd.data(), xd.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {  // gelu_f32's bounds (ops_activation_test.cpp)
      by[i] = 2e-7 * std::max(1.0, std::abs(ry[i]));
      bdx[i] = std::min(4e-7 * (1 + std::abs(xd[i])) * (1 + std::abs(dyd[i])),
                        1e-6 * std::max(std::abs(dyd[i]), std::abs(rdx[i])));
    }
    expect_within(where, got_y, bounded("y", ry, by));
    expect_within(where, got_dx, bounded("dx", rdx, bdx));
    expect_same_bytes(where + " y twice", got_y, vulkan::download_floats(y2, x.size()));
    expect_same_bytes(where + " dx twice", got_dx, vulkan::download_floats(dx2, x.size()));
    expect_same_bytes(where + " y in place", got_y, vulkan::download_floats(in_place, x.size()));
    expect_same_bytes(where + " dx in place", got_dx,
                      vulkan::download_floats(dx_in_place, x.size()));
  }
}

// layernorm_f32's shapes and inputs (ops_norm_test.cpp), and rows wider than a workgroup.
TEST_P(GpuOps, LayerNormMatchesTheReferenceWithTheSameBitsEachRun) {
  const Shape shapes[] = {{1, 1},  {3, 7},   {5, 16},  {2, 17},   {3, 33},
                          {5, 83}, {2, 130}, {2, 768}, {3, 1000}, {70, 64}};
  for (const Shape& s : shapes) {
    const int64_t rows = s.rows, C = s.n;
    const size_t n = static_cast<size_t>(rows * C), c = static_cast<size_t>(C),
                 r = static_cast<size_t>(rows);
    const std::string where = describe(s);
    const Floats x = normal_floats(n, 20, 1.5, 0.3), w = normal_floats(c, 21, 0.2, 1.0),
                 b = normal_floats(c, 22), dy = normal_floats(n, 23), dx0 = normal_floats(n, 25),
                 dw0 = normal_floats(c, 26), db0 = normal_floats(c, 27);
    const Buffer xb = upload(x), wb = upload(w), bb = upload(b), dyb = upload(dy);

    // Twice from the same inputs: the same bytes.
    Floats outs[2][6];
    for (Floats(&o)[6] : outs) {
      Buffer y = zeros(n), mean = zeros(r), rstd = zeros(r), dx = upload(dx0), dw = upload(dw0),
             db = upload(db0);
      vulkan::layernorm_forward(*context_, y, mean, rstd, xb, wb, bb, rows, C, 1e-5f);
      vulkan::layernorm_backward(*context_, dx, dw, db, dyb, xb, wb, mean, rstd, rows, C);
      o[0] = vulkan::download_floats(y, n);
      o[1] = vulkan::download_floats(mean, r);
      o[2] = vulkan::download_floats(rstd, r);
      o[3] = vulkan::download_floats(dx, n);
      o[4] = vulkan::download_floats(dw, c);
      o[5] = vulkan::download_floats(db, c);
    }
    const char* names[] = {"y", "mean", "rstd", "dx", "dw", "db"};
    for (int i = 0; i < 6; ++i)
      expect_same_bytes(where + " " + names[i] + " twice", outs[0][i], outs[1][i]);

    const Vec xd = widen_all(x), wd = widen_all(w), bd = widen_all(b), dyd = widen_all(dy),
              rdx0 = widen_all(dx0), rdw0 = widen_all(dw0), rdb0 = widen_all(db0);
    Vec y(n), mean(r), rstd(r), dx = rdx0, dw = rdw0, db = rdb0;
    reference::layernorm_forward(y.data(), mean.data(), rstd.data(), xd.data(), wd.data(),
                                 bd.data(), rows, C, 1e-5);
    reference::layernorm_backward(dx.data(), dw.data(), db.data(), dyd.data(), xd.data(), wd.data(),
                                  mean.data(), rstd.data(), rows, C);
    // layernorm_f32's bounds (ops_norm_test.cpp).
    expect_within(where, outs[0][0], near_max("y", y, 1e-6));
    expect_within(where, outs[0][1], near("mean", mean, 1e-6, 1e-7));
    expect_within(where, outs[0][2], near("rstd", rstd, 1e-6));
    expect_within(where, outs[0][3], near_change("dx", dx, rdx0, 1e-5));
    expect_within(where, outs[0][4], near_change("dw", dw, rdw0, 1e-6));
    expect_within(where, outs[0][5], near_change("db", db, rdb0, 1e-6));
  }
}

TEST_P(GpuOps, BuffersRoundTripAndOpsCheckTheirSizes) {
  const Floats v = normal_floats(1000, 3);
  const Buffer b = upload(v);
  EXPECT_EQ(b.bytes(), v.size() * sizeof(float));
  expect_same_bytes("round trip", v, vulkan::download_floats(b, v.size()));
  Buffer small = zeros(10);
  test::expect_error([&] { vulkan::gelu_forward(*context_, small, b, 11); },
                     {"vulkan gelu_forward: y holds 10 floats, needs 11"});
  test::expect_error([&] { vulkan::gelu_forward(*context_, small, b, -1); },
                     {"vulkan gelu_forward: n = -1 is out of range"});
  test::expect_error([&] { small.upload(std::as_bytes(std::span<const float>(v))); },
                     {"Vulkan: upload of 4000 bytes at offset 0 of a buffer of 40"});
  // Nothing to do is not an error.
  vulkan::gelu_forward(*context_, small, b, 0);
}

// Ops record and return; the work runs in order when a result is read. A chain longer than
// one submission holds (so it is split) gives the bits of the same chain waited for op by op,
// and an upload over an input waits for the ops recorded before it that read it.
TEST_P(GpuOps, RecordedOpsRunInOrderAcrossSubmissions) {
  const int64_t n = 1000;
  const Floats x = gelu_inputs(n);
  Buffer a = upload(x), b = zeros(x.size()), c = upload(x), d = zeros(x.size());
  for (int i = 0; i < 300; ++i) {  // 600 dispatches: more than one submission's 256
    vulkan::gelu_forward(*context_, b, a, n);
    vulkan::gelu_backward(*context_, a, b, a, n);
    vulkan::gelu_forward(*context_, d, c, n);
    context_->finish();
    vulkan::gelu_backward(*context_, c, d, c, n);
    context_->finish();
  }
  expect_same_bytes("recorded vs waited", vulkan::download_floats(a, x.size()),
                    vulkan::download_floats(c, x.size()));

  Buffer in = upload(x), out = zeros(x.size());
  vulkan::gelu_forward(*context_, out, in, n);
  in.upload(std::as_bytes(std::span<const float>(normal_floats(x.size(), 5))));
  Vec want(x.size());
  reference::gelu_forward(want.data(), widen_all(x).data(), n);
  expect_within("upload after a recorded read", vulkan::download_floats(out, x.size()),
                near_max("y", want, 1e-6));
}

// A recording (Context::record) runs nothing until replayed; each replay runs its ops on what
// the buffers hold then (new inputs uploaded between replays), with the bits of the same ops
// run directly, also when it holds more dispatches than one submission (several descriptor
// pools). Uploads and downloads are refused while recording.
TEST_P(GpuOps, RecordedOpsReplayOnNewInputs) {
  const int64_t n = 1000;
  Buffer in = zeros(n), mid = zeros(n), out = zeros(n);
  const auto ops = [&] {
    for (int i = 0; i < 150; ++i) {  // 300 dispatches
      vulkan::gelu_forward(*context_, mid, i == 0 ? in : out, n);
      vulkan::gelu_forward(*context_, out, mid, n);
    }
  };
  const Floats zero(n, 0.0f);
  const vulkan::Context::Recording recording = context_->record(ops);
  EXPECT_EQ(recording.dispatches(), 300);
  context_->finish();
  expect_same_bytes("nothing ran", vulkan::download_floats(out, n), zero);
  for (uint64_t seed : {1, 2, 3}) {
    const Floats x = normal_floats(n, seed);
    in.upload(std::as_bytes(std::span<const float>(x)));
    context_->replay(recording);
    const Floats replayed = vulkan::download_floats(out, n);
    in.upload(std::as_bytes(std::span<const float>(x)));
    ops();
    expect_same_bytes("replay " + std::to_string(seed), replayed, vulkan::download_floats(out, n));
  }
  EXPECT_THROW(context_->record([&] { in.upload(std::as_bytes(std::span<const float>(zero))); }),
               Error);
  EXPECT_THROW(context_->record([&] { vulkan::download_floats(out, n); }), Error);
  // After a refused recording, ops run as before.
  vulkan::gelu_forward(*context_, out, in, n);
  EXPECT_EQ(vulkan::download_floats(out, n).size(), static_cast<size_t>(n));
}

// Ops read and write Views: ranges of a larger buffer at aligned offsets, the rest untouched.
TEST_P(GpuOps, OpsWorkOnViewsOfALargerBuffer) {
  const int64_t n = 100, at = vulkan::kViewAlignment / sizeof(float);  // 64 floats in
  const Floats x = gelu_inputs(n), fill = normal_floats(400, 9);
  Buffer big = upload(fill);
  big.upload(std::as_bytes(std::span<const float>(x)), at * sizeof(float));
  const vulkan::View in(big, at * sizeof(float), n * sizeof(float)),
      out(big, 3 * at * sizeof(float), n * sizeof(float));
  vulkan::gelu_forward(*context_, out, in, n);
  Floats got(fill.size());
  big.download(std::as_writable_bytes(std::span<float>(got)));
  Vec want(x.size());
  reference::gelu_forward(want.data(), widen_all(x).data(), n);
  expect_within("view", Floats(got.begin() + 3 * at, got.begin() + 3 * at + n),
                near_max("y", want, 1e-6));
  for (size_t i = 0; i < fill.size(); ++i) {
    const bool input = i >= static_cast<size_t>(at) && i < static_cast<size_t>(at + n),
               output = i >= static_cast<size_t>(3 * at) && i < static_cast<size_t>(3 * at + n);
    if (!input && !output) {
      ASSERT_EQ(got[i], fill[i]) << "element " << i << " outside the views";
    }
  }
  // A download from an offset reads that range.
  Floats part(static_cast<size_t>(n));
  big.download(std::as_writable_bytes(std::span<float>(part)), at * sizeof(float));
  expect_same_bytes("download at an offset", part, x);

  test::expect_error([&] { vulkan::View(big, 1600, 4); },
                     {"Vulkan: a view of 4 bytes at offset 1600 of a buffer of 1600"});
  test::expect_error([&] { big.upload(std::as_bytes(std::span<const float>(x)), 1300); },
                     {"Vulkan: upload of 400 bytes at offset 1300 of a buffer of 1600"});
  if (context_->impl().offset_alignment > 4) {
    const vulkan::View odd(big, 4, 40);
    test::expect_error(
        [&] { vulkan::gelu_forward(*context_, odd, odd, 10); },
        {"Vulkan: shader gelu_forward's buffer 0 starts at byte 4, not a multiple of "
         "the device's"});
  }
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuOps, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

TEST(GpuRuntime, ANumberPastTheDevicesIsAOneLineError) {
  if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
  const vulkan::DeviceList list = vulkan::list_devices();
  test::expect_error([&] { Context c(static_cast<int>(list.devices.size())); },
                     {"Vulkan: no device " + std::to_string(list.devices.size()) + " (there are "});
}

// More memory than the device has is a one-line error naming the amount and the device.
TEST(GpuRuntime, OutOfDeviceMemoryIsAOneLineError) {
  if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
  const vulkan::DeviceList list = vulkan::list_devices();
  Context context(0, Validation::off);
  const size_t too_much = size_t{1} << 40;  // 1 TiB
  test::expect_error([&] { Buffer b(context, too_much); },
                     {"Vulkan: out of device memory: cannot allocate 1024.0 GiB on '" +
                      list.devices[0].name + "' ("});
}

// The messenger hears the layer (so the tests' "nothing reported" can fail): a buffer of size 0
// is invalid usage (VUID-VkBufferCreateInfo-size-00912).
TEST(GpuRuntime, TheValidationLayerReportsAMisuse) {
  if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
  Context context(0, Validation::on);
  EXPECT_TRUE(context.validation_messages().empty());
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = 0;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  const VkDevice device = context.impl().device;
  if (vulkan::vkCreateBuffer(device, &info, nullptr, &buffer) == VK_SUCCESS)
    vulkan::vkDestroyBuffer(device, buffer, nullptr);
  const std::vector<std::string> messages = context.validation_messages();
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages.front().find("VkBufferCreateInfo-size"), std::string::npos)
      << messages.front();
}

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
