#pragma once
// Shared helpers for the test suite: fixture paths, temporary files, running the CLI,
// expected errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cpu/isa.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::test {

// Why the GPU tests cannot run here (no Vulkan device, or a build without Vulkan), or nothing:
//   if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
inline std::optional<std::string> no_gpu() {
  const kernels::vulkan::DeviceList list = kernels::vulkan::list_devices();
  if (!list.devices.empty()) return std::nullopt;
  return "no GPU tests: " + list.why_none;
}

inline std::string source_path(const std::string& rel) {
  return std::string(TINYLM_SOURCE_DIR) + "/" + rel;
}

// A fresh directory under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Sets a kernel unit (get/set: bf16_dot_unit and set_bf16_dot_unit, ...) until the scope ends,
// then restores the one before.
template <class Unit, Unit (*Get)(), void (*Set)(Unit)>
class UnitScope {
 public:
  explicit UnitScope(Unit unit) : saved_(Get()) { Set(unit); }
  ~UnitScope() { Set(saved_); }
  UnitScope(const UnitScope&) = delete;
  UnitScope& operator=(const UnitScope&) = delete;

 private:
  Unit saved_;
};

// A shell command line that starts `serve_command` (a `tinylm serve ... --port 0`; its stderr to
// err_file) in the background, waits for its "listening on" line, runs `clients` with $port
// set to the port it took, then stops it with SIGTERM and exits with its status.
inline std::string serve_then(const std::string& serve_command, const std::string& err_file,
                              const std::string& clients) {
  return "( " + serve_command + " 2>" + err_file +
         " & pid=$!; for i in $(seq 300); do grep -q 'listening on' " + err_file +
         " && break; sleep 0.1; done; port=$(grep -o 'listening on http://[^ ]*' " + err_file +
         " | sed 's/.*://'); " + clients + "; kill -TERM $pid; wait $pid )";
}

// The number of lines of a command's output.
inline int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

struct CommandResult {
  int exit_code;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs the tinylm CLI with the given argument string (shell syntax).
CommandResult run_cli(const std::string& args);
// Runs a shell command line (stdin from /dev/null).
CommandResult run_shell(const std::string& command);

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

// f() must throw a one-line tinylm::Error containing every phrase.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& phrases) {
  try {
    f();
    ADD_FAILURE() << "no error"
                  << (phrases.empty() ? std::string() : "; expected: " + phrases.front());
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    for (const std::string& p : phrases)
      EXPECT_NE(what.find(p), std::string::npos) << what << "\n  lacks: " << p;
  }
}

// Runs body(isa) once for every kernel level this CPU supports, with that level active, and
// restores the level that was active before.
template <class F>
void for_each_isa(F&& body) {
  const kernels::Isa saved = kernels::active_isa();
  for (kernels::Isa isa : kernels::supported_isas()) {
    SCOPED_TRACE(std::string("kernel level ") + std::string(kernels::isa_name(isa)));
    kernels::set_active_isa(isa);
    body(isa);
  }
  kernels::set_active_isa(saved);
}

// Skips the test, saying why, unless kernels/matmul/bf16_dot.h can run here (AVX512_BF16 at
// the avx512 level).
#define TINYLM_SKIP_UNLESS_BF16_DOT()                                                  \
  if (!::tinylm::kernels::bf16_dot_available())                                        \
  GTEST_SKIP() << "bf16 products need AVX512_BF16 at the avx512 level; level in use: " \
               << ::tinylm::kernels::isa_summary()                                     \
               << (::tinylm::kernels::cpu_has_avx512_bf16() ? "" : ", no AVX512_BF16")

// n draws of normal(mean, scale) from a fixed seed.
inline std::vector<double> random_normal(size_t n, uint64_t seed, double scale = 1.0,
                                         double mean = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, scale);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// n floats uniform in [lo, hi) from a fixed seed.
inline std::vector<float> random_uniform(size_t n, uint32_t seed, float lo = -1.0f,
                                         float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The bytes of n ggml k-quant blocks of type t (q6_k: ql, qh, 16 int8 scales, fp16 d; q4_k /
// q5_k: fp16 d and dmin, packed scales, (qh,) qs; tinylm has no quantizer for them): random
// bits, each fp16 scale (d, and dmin) a random value in [1e-4, 1e-3) (weights within about +-4;
// every q and scale value occurs).
inline std::vector<std::byte> random_k_quant(DType t, size_t nblocks, uint32_t seed) {
  const size_t bytes = dtype_block_bytes(t);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  std::vector<std::byte> q(nblocks * bytes);
  const auto put_scale = [&](std::byte* p) {
    const uint16_t d = float_to_f16(scale(rng));
    p[0] = static_cast<std::byte>(d & 0xff);
    p[1] = static_cast<std::byte>(d >> 8);
  };
  for (size_t b = 0; b < nblocks; ++b) {
    std::byte* block = q.data() + b * bytes;
    for (size_t i = 0; i < bytes; ++i) block[i] = static_cast<std::byte>(rng() >> 24);
    if (t == DType::q6_k) {
      put_scale(block + bytes - 2);
    } else {
      put_scale(block);
      put_scale(block + 2);
    }
  }
  return q;
}

// Runs compute() (returning a std::vector of plain values) at every supported level and
// expects the same bytes from each; returns the first level's result.
template <class F>
auto expect_same_at_every_level(F&& compute, const std::string& what) {
  using Result = decltype(compute());
  std::optional<Result> first;
  for_each_isa([&](kernels::Isa isa) {
    const Result got = compute();
    if (!first) {
      first = got;
      return;
    }
    ASSERT_EQ(got.size(), first->size()) << what;
    EXPECT_EQ(std::memcmp(got.data(), first->data(), got.size() * sizeof(got[0])), 0)
        << what << ": level " << kernels::isa_name(isa) << " differs from "
        << kernels::isa_name(kernels::supported_isas().front());
  });
  return *first;
}

}  // namespace tinylm::test
