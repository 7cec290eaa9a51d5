#include "tinylm/io/text_file.h"

#include <cerrno>
#include <cstring>
#include <cstdio>

#include "tinylm/core/error.h"
#include "tinylm/tokenizers/utf8.h"

namespace tinylm::io {

std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open: ", std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool error = std::ferror(f) != 0;
  std::fclose(f);
  if (error) fail(path, ": read error");
  return bytes;
}

std::vector<std::string> read_documents(const std::string& path) {
  const std::string bytes = read_file(path);
  size_t bad = 0;
  check(is_valid_utf8(bytes, &bad), path, ": invalid UTF-8 at byte ", bad);
  const std::string_view text(bytes);
  std::vector<std::string> docs;
  size_t i = 0;
  while (i <= text.size()) {
    // Universal newlines: \n, \r\n and a lone \r each end a line (all ASCII, so a byte scan
    // never lands inside a multi-byte character).
    size_t end = i;
    while (end < text.size() && text[end] != '\n' && text[end] != '\r') ++end;
    size_t b = i, e = end;
    int len = 0;
    while (b < e && is_python_space(utf8_at(text, b, &len))) b += len;
    while (e > b) {
      size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      if (!is_python_space(utf8_at(text, start, &len))) break;
      e = start;
    }
    if (e > b) docs.emplace_back(text.substr(b, e - b));
    if (end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n') ++end;
    i = end + 1;
  }
  check(!docs.empty(), path, ": no documents (the file is empty or blank)");
  return docs;
}

}  // namespace tinylm::io
