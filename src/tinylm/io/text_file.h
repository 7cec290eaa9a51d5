#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::io {

// The whole file as bytes; throws Error("PATH: cannot open: reason") on failure.
std::string read_file(const std::string& path);

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
// naming the file when it cannot be read, is not UTF-8, or holds no document.
Documents read_documents(const std::string& path);

}  // namespace tinylm::io
