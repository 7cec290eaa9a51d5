#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::io {

// The whole file as bytes; throws Error("PATH: cannot open: reason") on failure.
std::string read_file(const std::string& path);

// The documents of a text file: views into its bytes, which `text` keeps alive (copies
// share it). Views rather than strings: 32,000 small strings cost more in first-touch page
// faults than the rest of a microgpt run's start-up.
struct Documents {
  std::shared_ptr<const std::string> text;
  std::vector<std::string_view> docs;
};

// Documents of a text file the way microgpt.py reads them: universal newlines, split on
// newlines, each line stripped of (Unicode) whitespace, blank lines dropped. Throws Error
// naming the file when it cannot be read, is not UTF-8, or holds no document.
Documents read_documents(const std::string& path);

}  // namespace tinylm::io
