#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tinylm::io {

// Parses JSON, rejecting what nlohmann would silently accept: a key repeated within one
// object (the last one would win) and a NUL byte (its parser stops there). Objects keep
// their keys in file order. `what` names the source in error messages.
nlohmann::ordered_json parse_json_strict(std::string_view text, const std::string& what);

}  // namespace tinylm::io
