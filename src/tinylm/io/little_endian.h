#pragma once
// Little-endian fields and their hex spelling in messages, for the binary formats (GGUF,
// safetensors' header length, EVL0 checkpoints, EVD0 deltas). Byte by byte, so they read and
// write unaligned fields and do not depend on the host's byte order.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tinylm::io {

// The unsigned integer of `bytes` (1 to 8) bytes at p / appended to out.
inline uint64_t get_le(const std::byte* p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
inline void append_le(std::vector<std::byte>& out, uint64_t v, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i)
    out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffu));
}

inline void put_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}

inline void append_u32(std::vector<std::byte>& out, uint32_t v) { append_le(out, v, 4); }

inline uint32_t get_u32(const std::byte* p) { return static_cast<uint32_t>(get_le(p, 4)); }

// "0x0123abcd", as checksums and magics are named in errors.
inline std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace tinylm::io
