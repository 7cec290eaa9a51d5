#include "tinylm/serve/http/parser.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace tinylm::serve::http {

namespace {

bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!is_tchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// A control byte (HTAB aside) in a header value: a NUL, CR or LF there would let a value mean
// something else to whoever reads it next.
bool has_control_byte(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return true;
  }
  return false;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether the comma-separated list (Connection's) holds `token`.
bool list_has(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<uint64_t> parse_number(std::string_view s, int base, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint64_t v = 0;
  for (const char c : s) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (base == 16 && lower(c) >= 'a' && lower(c) <= 'f') d = lower(c) - 'a' + 10;
    if (d < 0) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  return v;
}

// Reads lines ending in LF (a CR before it is dropped) from a position in the bytes.
struct Lines {
  std::string_view bytes;
  size_t pos = 0;
  bool next(std::string_view& line) {
    const size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) return false;
    line = bytes.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    return true;
  }
};

ParseResult error(ParseResult r, int status, std::string message) {
  r.status = ParseStatus::error;
  r.error_status = status;
  r.error = std::move(message);
  return r;
}

ParseResult incomplete(ParseResult r, size_t need, bool headers_done) {
  r.status = ParseStatus::incomplete;
  r.need = need;
  r.headers_done = headers_done;
  return r;
}

// "METHOD /target HTTP/1.x" into r.request; "" when valid, else the problem (status in *status).
std::string request_line(std::string_view line, Request& req, int* status) {
  *status = 400;
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return "malformed request line";
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return "malformed method";
  req.method = method;
  if (target.empty() || target.front() != '/' || has_control_byte(target) ||
      target.find(' ') != std::string_view::npos) {
    return "malformed request target";
  }
  req.target = target;
  req.path = target.substr(0, target.find('?'));
  if (version == "HTTP/1.1" || version == "HTTP/1.0") {
    req.minor_version = version.back() - '0';
    return "";
  }
  if (version.size() == 8 && version.substr(0, 5) == "HTTP/") {
    *status = 505;
    return "only HTTP/1.0 and HTTP/1.1 are served";
  }
  return "malformed HTTP version";
}

// The chunked body from `pos` on: the data's (offset, size) spans, or incomplete / an error.
ParseResult chunked_body(ParseResult r, std::string_view bytes, size_t pos, const Limits& limits) {
  std::vector<std::pair<size_t, size_t>> spans;
  size_t data = 0, framing = 0;
  Lines lines{bytes, pos};
  std::string_view line;
  // The next line of framing (a size line or a trailer), counted against its limit: true when
  // it is whole and within it; else `r` holds the answer (wait for more bytes, or 413).
  const auto framing_line = [&]() {
    const size_t start = lines.pos;
    const bool whole = lines.next(line);
    framing += (whole ? lines.pos : bytes.size()) - start;
    if (framing > limits.max_chunk_framing) {
      r = error(std::move(r), 413, "chunk framing too large");
    } else if (!whole) {
      r = incomplete(std::move(r), bytes.size() + 1, true);
    }
    return whole && framing <= limits.max_chunk_framing;
  };
  for (;;) {  // chunks: a size line, its data, CRLF; a zero size ends them
    if (!framing_line()) return r;
    const std::string_view size_text = trim(line.substr(0, line.find(';')));
    const std::optional<uint64_t> size = parse_number(size_text, 16, 15);
    if (!size) return error(std::move(r), 400, "malformed chunk size");
    if (*size > limits.max_body - data) return error(std::move(r), 413, "body too large");
    if (*size == 0) break;
    const size_t at = lines.pos, end = at + *size;
    if (bytes.size() < end + 2) {
      if (bytes.size() > end && bytes[end] != '\r' && bytes[end] != '\n')
        return error(std::move(r), 400, "chunk data longer than its size");
      if (bytes.size() <= end || bytes[end] == '\r') return incomplete(std::move(r), end + 2, true);
    }
    const size_t crlf = bytes[end] == '\n' ? 1 : bytes.substr(end, 2) == "\r\n" ? 2 : 0;
    if (crlf == 0) return error(std::move(r), 400, "chunk data longer than its size");
    spans.emplace_back(at, *size);
    data += *size;
    framing += crlf;
    lines.pos = end + crlf;
  }
  for (;;) {  // trailers, up to a blank line; their content is not used
    if (!framing_line()) return r;
    if (line.empty()) break;
  }
  r.request.body.reserve(data);
  for (const auto& [at, size] : spans) r.request.body.append(bytes.substr(at, size));
  r.status = ParseStatus::complete;
  r.consumed = lines.pos;
  return r;
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
  for (const Header& h : headers) {
    if (iequals(h.name, name)) return h.value;
  }
  return {};
}

bool Request::has_header(std::string_view name) const {
  for (const Header& h : headers) {
    if (iequals(h.name, name)) return true;
  }
  return false;
}

ParseResult parse_request(std::string_view bytes, const Limits& limits) {
  ParseResult r;
  Request& req = r.request;
  Lines lines{bytes, 0};
  std::string_view line;
  const auto headers_incomplete = [&](ParseResult res) {
    if (bytes.size() > limits.max_header_bytes)
      return error(std::move(res), 431, "request headers too large");
    return incomplete(std::move(res), bytes.size() + 1, false);
  };
  // Empty lines before the request line are ignored (RFC 9112, 2.2).
  do {
    if (!lines.next(line)) return headers_incomplete(std::move(r));
    if (lines.pos > limits.max_header_bytes)
      return error(std::move(r), 431, "request headers too large");
  } while (line.empty());
  int status = 400;
  if (std::string problem = request_line(line, req, &status); !problem.empty())
    return error(std::move(r), status, std::move(problem));
  for (;;) {
    if (!lines.next(line)) return headers_incomplete(std::move(r));
    if (lines.pos > limits.max_header_bytes)
      return error(std::move(r), 431, "request headers too large");
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t')
      return error(std::move(r), 400, "folded header line");
    const size_t colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    if (colon == std::string_view::npos || !is_token(name))
      return error(std::move(r), 400, "malformed header line");
    const std::string_view value = trim(line.substr(colon + 1));
    if (has_control_byte(value))
      return error(std::move(r), 400, "control byte in header " + std::string(name));
    req.headers.push_back({std::string(name), std::string(value)});
  }
  const size_t header_end = lines.pos;

  const std::string_view connection = req.header("Connection");
  req.keep_alive =
      req.minor_version == 1 ? !list_has(connection, "close") : list_has(connection, "keep-alive");
  std::optional<uint64_t> length;
  int te_count = 0;
  for (const Header& h : req.headers) {
    if (iequals(h.name, "Transfer-Encoding")) {
      if (++te_count > 1 || !iequals(h.value, "chunked"))
        return error(std::move(r), 501, "unsupported transfer coding");
    } else if (iequals(h.name, "Content-Length")) {
      const std::optional<uint64_t> n = parse_number(h.value, 10, 19);
      if (!n || (length && *length != *n)) return error(std::move(r), 400, "bad Content-Length");
      length = n;
    }
  }
  if (te_count > 0 && length)  // which one frames the body would be ambiguous (smuggling)
    return error(std::move(r), 400, "both Transfer-Encoding and Content-Length");
  if (te_count > 0) return chunked_body(std::move(r), bytes, header_end, limits);
  const uint64_t n = length.value_or(0);
  if (n > limits.max_body) return error(std::move(r), 413, "body too large");
  if (bytes.size() - header_end < n) return incomplete(std::move(r), header_end + n, true);
  req.body = bytes.substr(header_end, n);
  r.status = ParseStatus::complete;
  r.consumed = header_end + n;
  return r;
}

}  // namespace tinylm::serve::http
