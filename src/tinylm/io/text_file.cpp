#include "tinylm/io/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tinylm/core/error.h"
#include "tinylm/tokenizers/utf8.h"

namespace tinylm::io {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, ": read error");
  return ss.str();
}

std::vector<std::string> read_documents(const std::string& path) {
  const std::string bytes = read_file(path);
  std::u32string text;
  size_t bad = 0;
  check(decode_utf8(bytes, text, &bad), path, ": invalid UTF-8 at byte ", bad);
  std::vector<std::string> docs;
  size_t i = 0;
  while (i <= text.size()) {
    size_t end = i;
    while (end < text.size() && text[end] != U'\n' && text[end] != U'\r') ++end;
    size_t b = i, e = end;
    while (b < e && is_python_space(text[b])) ++b;
    while (e > b && is_python_space(text[e - 1])) --e;
    if (e > b) docs.push_back(to_utf8(std::u32string_view(text).substr(b, e - b)));
    if (end < text.size() && text[end] == U'\r' && end + 1 < text.size() && text[end + 1] == U'\n') ++end;
    i = end + 1;
  }
  check(!docs.empty(), path, ": no documents (the file is empty or blank)");
  return docs;
}

}  // namespace tinylm::io
