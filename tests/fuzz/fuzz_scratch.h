#pragma once
// A per-process scratch file for fuzz targets whose loader takes a path (parallel fuzzing
// jobs must not share it), removed at exit.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tinylm::fuzz {

// The path /tmp/tinylm-fuzz-<tag>-<pid>.<ext>. The string is never destroyed, so the exit
// handler can still read it.
inline std::string* scratch_path(const char* tag, const char* ext) {
  auto* p = new std::string(std::string("/tmp/tinylm-fuzz-") + tag + "-" +
                            std::to_string(::getpid()) + "." + ext);
  return p;
}

inline void write_scratch(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size != 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

inline void require(bool cond) {
  if (!cond) std::abort();
}

}  // namespace tinylm::fuzz
