#pragma once
// What the GPU op tests (gpu_*_test.cpp) share: a fixture holding a Context on device 0 with the
// Khronos validation layer off or on (the parameter; with it on, the layer must report nothing
// by the end of the test), and comparisons against the op table's double references. Include
// only where TINYLM_HAVE_VULKAN is defined.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops_table.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::kernels::ops_table {

using vulkan::Buffer;
using vulkan::Context;
using vulkan::Validation;

// The first n values of T a buffer holds.
template <class T>
std::vector<T> download_values(const Buffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(std::as_writable_bytes(std::span<T>(v)));
  return v;
}

inline std::string fmt(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// Every element within its bound (the first three failures named).
inline void expect_within(const std::string& where, const Floats& got, const Want& want) {
  ASSERT_EQ(got.size(), want.values.size()) << where << " " << want.name;
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want.values[i];
    const double bound = want.bound.empty() ? 0 : want.bound[i];
    if (!(std::abs(g - w) <= bound) && bad++ < 3) {
      ADD_FAILURE() << where << " " << want.name << "[" << i << "] = " << fmt(g) << ", reference "
                    << fmt(w) << ", bound " << fmt(bound);
    }
  }
  EXPECT_EQ(bad, 0) << where << " " << want.name << ": " << bad << " of " << got.size();
}

// Floats compared as bytes: -0 is not 0, and NaN equals its own bits.
inline void expect_same_bytes(const std::string& what, const Floats& a, const Floats& b) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(bytes_of(a.data(), a.size()), bytes_of(b.data(), b.size())) << what;
}

// The fixture: a Context on device 0 with validation off or on (the parameter); with it on,
// the layer must have reported nothing by the end of the test.
class GpuTest : public ::testing::TestWithParam<Validation> {
 protected:
  void SetUp() override {
    if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
    context_ = std::make_unique<Context>(0, GetParam());
    ASSERT_EQ(context_->validation(), GetParam() == Validation::on);
  }
  void TearDown() override {
    if (!context_ || !context_->validation()) return;
    const std::vector<std::string> messages = context_->validation_messages();
    EXPECT_TRUE(messages.empty()) << messages.size()
                                  << " validation messages, the first: " << messages.front();
  }

  Buffer upload(const Floats& v) { return vulkan::upload_floats(*context_, v); }
  Buffer zeros(size_t n) { return upload(Floats(n, 0.0f)); }
  // Any array's bytes (ids, packed halves, words), padded with zeros to whole 32-bit words.
  template <class T>
  Buffer upload_values(const std::vector<T>& v) {
    Buffer b(*context_, (v.size() * sizeof(T) + 3) / 4 * 4);
    std::vector<std::byte> bytes(b.bytes());
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), v.size() * sizeof(T));
    b.upload(bytes);
    return b;
  }

  std::unique_ptr<Context> context_;
};

inline std::string validation_name(const ::testing::TestParamInfo<Validation>& info) {
  return info.param == Validation::on ? "WithValidation" : "WithoutValidation";
}

}  // namespace tinylm::kernels::ops_table
