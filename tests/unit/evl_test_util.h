#pragma once
// What the EVL0 checkpoint and EVD0 delta tests share: the Python-written fixtures
// (tools/gen_evl_fixtures.py), raw bytes of files and float bit patterns.
#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/io/text_file.h"

namespace tinylm::test {

inline std::vector<std::byte> file_bytes(const std::string& path) {
  const std::string s = io::read_file(path);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

inline std::string evl_fixture(const std::string& name) {
  return source_path("tests/fixtures/evl/" + name);
}

// tests/fixtures/evl/tiny.json: the configuration, parameters as bit patterns, CRCs.
inline const nlohmann::json& evl_tiny() {
  static const nlohmann::json j = nlohmann::json::parse(io::read_file(evl_fixture("tiny.json")));
  return j;
}

inline std::vector<float> floats_from_bits(const nlohmann::json& bits) {
  std::vector<float> out;
  for (const auto& b : bits) out.push_back(bits_float(b.get<uint32_t>()));
  return out;
}

inline std::vector<uint32_t> bits_of(std::span<const float> v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(float_bits(f));
  return out;
}

}  // namespace tinylm::test
