#include "tinylm/io/json_strict.h"

#include <set>
#include <vector>

#include "tinylm/core/error.h"

namespace tinylm::io {

nlohmann::ordered_json parse_json_strict(std::string_view text, const std::string& what) {
  check(text.find('\0') == std::string_view::npos, what, ": invalid JSON: NUL byte at offset ",
        text.find('\0'));
  std::vector<std::set<std::string>> keys;  // one set per open object
  const auto callback = [&](int /*depth*/, nlohmann::ordered_json::parse_event_t event,
                            nlohmann::ordered_json& parsed) {
    using E = nlohmann::ordered_json::parse_event_t;
    if (event == E::object_start) {
      keys.emplace_back();
    } else if (event == E::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == E::key) {
      const std::string& k = parsed.get_ref<const std::string&>();
      check(!keys.empty() && keys.back().insert(k).second, what, ": duplicate key '", k, "'");
    }
    return true;
  };
  try {
    return nlohmann::ordered_json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::ordered_json::exception& e) {
    // nlohmann's messages start with "[json.exception.parse_error.101] "; keep the rest.
    std::string msg = e.what();
    if (const size_t p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    fail(what, ": invalid JSON: ", msg);
  }
}

}  // namespace tinylm::io
