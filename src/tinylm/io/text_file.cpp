#include "tinylm/io/text_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tinylm/core/error.h"
#include "tinylm/tokenizers/utf8.h"

namespace tinylm::io {

std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open: ", std::strerror(errno));
  std::string bytes;
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode)) bytes.reserve(st.st_size);
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool error = std::ferror(f) != 0;
  std::fclose(f);
  if (error) fail(path, ": read error");
  return bytes;
}

Documents read_documents(const std::string& path) {
  auto bytes = std::make_shared<const std::string>(read_file(path));
  const std::string_view text(*bytes);
  size_t bad = 0;
  check(is_valid_utf8(text, &bad), path, ": invalid UTF-8 at byte ", bad);
  std::vector<std::string_view> docs;
  docs.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
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
    if (e > b) docs.push_back(text.substr(b, e - b));
    if (end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n') ++end;
    i = end + 1;
  }
  check(!docs.empty(), path, ": no documents (the file is empty or blank)");
  return Documents(std::move(bytes), std::move(docs));
}

}  // namespace tinylm::io
