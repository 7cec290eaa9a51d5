#pragma once
#include <string>
#include <vector>

namespace tinylm::io {

// The whole file as bytes; throws Error("PATH: cannot open: reason") on failure.
std::string read_file(const std::string& path);

// Documents of a text file the way microgpt.py reads them: universal newlines, split on
// newlines, each line stripped of (Unicode) whitespace, blank lines dropped. Throws Error
// naming the file when it cannot be read, is not UTF-8, or holds no document.
std::vector<std::string> read_documents(const std::string& path);

}  // namespace tinylm::io
