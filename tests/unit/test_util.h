#pragma once
// Shared helpers for the test suite: fixture paths, temporary files, running the CLI,
// expected errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/kernels/cpu/isa.h"

namespace tinylm::test {

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

struct CommandResult {
  int exit_code;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs the tinylm CLI with the given argument string (shell syntax).
CommandResult run_cli(const std::string& args);

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

}  // namespace tinylm::test
