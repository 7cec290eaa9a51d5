#include "tinylm/hub/http.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <mutex>

namespace tinylm::hub {

namespace {

constexpr int kMaxRedirects = 10;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct UrlHandle {
  CURLU* h = curl_url();
  ~UrlHandle() { curl_url_cleanup(h); }
};

std::string url_part(CURLU* u, CURLUPart part, unsigned flags = 0) {
  char* text = nullptr;
  if (curl_url_get(u, part, &text, flags) != CURLUE_OK) return "";
  std::string out = text;
  curl_free(text);
  return out;
}

// One exchange: what the callbacks collect while curl runs.
struct Exchange {
  const HttpRequest* request = nullptr;
  HttpResponse response;
  bool started = false;    // on_start was called
  std::string sink_error;  // what the sink threw, to rethrow after curl returns
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<Exchange*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue, say)
    x->response.headers.clear();
    const size_t space = line.find(' ');
    x->response.status = space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1);
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t begin = colon + 1, end = line.size();
  while (begin < end && (line[begin] == ' ' || line[begin] == '\t')) ++begin;
  while (end > begin && (line[end - 1] == '\r' || line[end - 1] == '\n' || line[end - 1] == ' '))
    --end;
  x->response.headers[name] = line.substr(begin, end - begin);
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<Exchange*>(user);
  const size_t n = size * count;
  const long status = x->response.status;
  if (x->request->sink && status >= 200 && status < 300) {
    try {
      if (!x->started && x->request->on_start) x->request->on_start(x->response);
      x->started = true;
      x->request->sink(std::span<const char>(data, n));
    } catch (const std::exception& e) {
      x->sink_error = e.what();
      return 0;  // curl stops with CURLE_WRITE_ERROR
    }
  } else if (x->response.body.size() < (64u << 20)) {  // a listing; an error's text
    x->response.body.append(data, n);
  }
  return n;
}

struct CurlList {
  curl_slist* list = nullptr;
  ~CurlList() { curl_slist_free_all(list); }
  void add(const std::string& s) { list = curl_slist_append(list, s.c_str()); }
};

// One request without following redirects.
HttpResponse exchange_once(const HttpRequest& r, const std::string& url) {
  init_curl_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  check(curl != nullptr, url, ": cannot start libcurl");
  CURL* c = curl.get();
  Exchange x;
  x.request = &r;
  char errbuf[CURL_ERROR_SIZE] = {0};
  CurlList headers;
  if (!r.token.empty() && origin_of(url) == r.token_origin)
    headers.add("Authorization: Bearer " + r.token);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOBODY, r.head ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "tinylm");
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 byte/s for a minute) is a failure, which a resume can pick up.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
  const std::string range = std::to_string(r.range_from) + "-";  // Range: bytes=N-
  if (r.range_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (!x.sink_error.empty()) throw Error(x.sink_error);
  if (rc != CURLE_OK) {
    const std::string why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    throw TransferError(cat(url, ": ", why));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.response.status);
  x.response.url = url;
  return std::move(x.response);
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_request(const HttpRequest& request) {
  std::string url = request.url;
  for (int hop = 0;; ++hop) {
    HttpResponse r = exchange_once(request, url);
    const bool redirect = r.status >= 300 && r.status < 400 && !r.header("location").empty();
    if (!request.follow_redirects || !redirect) return r;
    check(hop < kMaxRedirects, request.url, ": more than ", kMaxRedirects, " redirects");
    url = resolve_url(url, r.header("location"));
  }
}

std::string origin_of(const std::string& url) {
  UrlHandle u;
  if (curl_url_set(u.h, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "";
  std::string host = url_part(u.h, CURLUPART_HOST);
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return url_part(u.h, CURLUPART_SCHEME) + "://" + host + ":" +
         url_part(u.h, CURLUPART_PORT, CURLU_DEFAULT_PORT);
}

std::string resolve_url(const std::string& base, const std::string& location) {
  UrlHandle u;
  check(curl_url_set(u.h, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK, base, ": not a URL");
  check(curl_url_set(u.h, CURLUPART_URL, location.c_str(), 0) == CURLUE_OK, base,
        ": redirect to a location that is not a URL: ", location);
  return url_part(u.h, CURLUPART_URL);
}

std::string escape_segment(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace tinylm::hub
