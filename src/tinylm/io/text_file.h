#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::io {

// Ceilings on what is read whole into memory (docs/limits.md, "Files read"): far above any
// real input, low enough that /dev/zero, a runaway pipe or a wrong file is a one-line refusal
// rather than std::bad_alloc or a machine swapping.
inline constexpr uint64_t kMaxFileBytes = uint64_t{16} << 30;  // any file read whole
inline constexpr uint64_t kMaxTextBytes = uint64_t{1} << 30;   // a text to tokenize or prompt

// The whole file as bytes, at most max_bytes of them. A regular file is checked against the
// limit before it is read; a FIFO (a pipe, /dev/stdin on one) is read until the limit is
// passed, then refused; anything else (a directory, a device such as /dev/zero, a socket) is
// refused before it is opened. Throws Error("PATH: ...") naming the problem.
std::string read_file(const std::string& path, uint64_t max_bytes = kMaxFileBytes);

// All of stdin ("stdin" in errors), under read_file's rules; a terminal is read as a pipe is.
std::string read_stdin(uint64_t max_bytes = kMaxTextBytes);

// "1 GiB", "512 MiB", "1000 bytes": a limit as the errors and docs/limits.md write it.
std::string size_text(uint64_t bytes);

// The documents of a text file: views into its bytes, which the object keeps alive (copies
// share them). Views rather than strings: 32,000 small strings cost more in first-touch page
// faults than the rest of a microgpt run's start-up. The views are only handed out from a
// named object, so they cannot outlive it by accident.
class Documents {
 public:
  Documents(std::shared_ptr<const std::string> text, std::vector<std::string_view> docs)
      : text_(std::move(text)), docs_(std::move(docs)) {}

  size_t size() const { return docs_.size(); }
  std::string_view operator[](size_t i) const { return docs_[i]; }
  std::span<const std::string_view> views() const& { return docs_; }
  std::span<std::string_view> views() & { return docs_; }  // e.g. to shuffle
  std::span<const std::string_view> views() const&& = delete;
  std::span<std::string_view> views() && = delete;

 private:
  std::shared_ptr<const std::string> text_;
  std::vector<std::string_view> docs_;
};

// Documents of a text file the way microgpt.py reads them: universal newlines, split on
// newlines, each line stripped of (Unicode) whitespace, blank lines dropped. Throws Error
// naming the file when it cannot be read (read_file's rules, at most kMaxTextBytes), is not
// UTF-8, or holds no document.
Documents read_documents(const std::string& path);

}  // namespace tinylm::io
